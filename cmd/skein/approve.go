package main

// This file is approvals on the command line: the prompt that asks on a
// terminal, and skein approve.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// exitWaiting is skein run's status for a run parked on an approval.
const exitWaiting = 3

// prompter asks on a terminal, one question at a time: skein run's and
// skein resume's [runs.Asker].
type prompter struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out io.Writer
	// hold pauses the live progress, if any, while a question is up: its
	// block is erased and not drawn, so the question and the answer typed
	// after it stay where they are.
	hold func(on bool)
}

// Ask implements [runs.Asker]: y or n (anything else is no, with what was
// answered as the reason).
// Approved, the step's fields are asked for one by one (see [askFields]).
func (p *prompter) Ask(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (runs.Decision, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	d := runs.Decision{By: currentUser()}
	q := fmt.Sprintf("approve %q: %s [y/N] ", req.Step, visible.Text(req.Message, false))
	if p.hold != nil {
		p.hold(true)
		defer p.hold(false)
	}
	fmt.Fprint(p.out, q)
	s, ok := p.line(ctx)
	if !ok {
		return d, true
	}
	switch strings.ToLower(s) {
	case "y", "yes":
		d.Approved = true
		d.Values, _ = askFields(ctx, p.out, req, p.line)
	default:
		d.Reason = "answered " + fmt.Sprintf("%q", s) + " at the prompt"
	}
	return d, true
}

// line reads one line, trimmed; false when ctx ends first.
func (p *prompter) line(ctx context.Context) (string, bool) {
	line := make(chan string, 1)
	go func() {
		s, _ := p.in.ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		return s, true
	case <-ctx.Done():
		return "", false
	}
}

// askFields asks for the values of the fields of the approval req, one
// a line, read by read, until each is one its field takes (Enter leaves a
// field with a default to it); false when the input ends or ctx does
// first.
func askFields(ctx context.Context, out io.Writer, req *vm.EffectRequest, read func(context.Context) (string, bool)) (map[string]any, bool) {
	fields := req.Fields()
	if len(fields) == 0 {
		return nil, true
	}
	values := map[string]any{}
	for _, f := range fields {
		f.Field = true
		for {
			fmt.Fprintf(out, "  %s: ", f.Describe())
			s, ok := read(ctx)
			if !ok {
				return values, false
			}
			if s == "" && !f.Required {
				break
			}
			if s == "" {
				fmt.Fprintf(out, "  %s is required\n", f.Name)
				continue
			}
			if _, err := f.Parse(s); err != nil {
				fmt.Fprintf(out, "  %v\n", err)
				continue
			}
			values[f.Name] = s
			break
		}
	}
	return values, true
}

// byOrUser is who a --by flag names, else the current user: the default
// every command that records a decider shares.
func byOrUser(by string) string {
	if by != "" {
		return by
	}
	return currentUser()
}

func currentUser() string {
	if u := envUser(); u != "" {
		return u
	}
	return "unknown"
}

// envUser is the user the environment names ($SKEIN_USER, else $USER,
// else $LOGNAME), "" when none does.
func envUser() string {
	for _, k := range []string{"SKEIN_USER", "USER", "LOGNAME"} {
		if u := os.Getenv(k); u != "" {
			return u
		}
	}
	return ""
}

type approveOptions struct {
	engineFlags
	store    string
	reject   bool
	reason   string
	by       string
	set      []string // NAME=VALUE, the values of the step's fields
	resume   bool
	noPrompt bool
}

// values are the decision's values that --set gives, by field name.
func (o *approveOptions) values() (map[string]any, error) {
	if len(o.set) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	for _, kv := range o.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want NAME=VALUE, a field of the approval step and its value", kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--set: field %q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

func init() {
	register(&command{
		name:    "approve",
		args:    "RUN [STEP] [--reject] [--reason R] [--by NAME] [--set NAME=VALUE]... [--resume] [--engine temporal [--address HOST:PORT] [--namespace N]]",
		summary: "decide an approval a run waits for",
		long: `Records the decision for an approval step of a waiting run: approved, or with
--reject rejected (the step fails with code rejected, which on = "failure"
can route). STEP may be left out when the run waits for one approval
only; it may also be the approval's place as skein show prints it
('per_env[1] › deploy'), which tells apart the approvals of one step in a
map's items. A decision is recorded once: a second one is refused, saying
what was decided, by whom and when. --by defaults to $SKEIN_USER, else $USER, else $LOGNAME.
--set NAME=VALUE gives the value of one of the step's fields (fields=;
repeat it for each): the text is read by the field's type, as --input
reads an input's. Values that do not fit (an unknown field, a wrong type,
not a choice, a required field missing when approving) are refused and
nothing is recorded.
--resume then continues the run in the foreground, as skein resume does. A
run still going (another branch still runs) takes the decision itself
(with --resume too: there is nothing to resume).

With --engine temporal, RUN is the id of a run on Temporal (the workflow id
skein run --engine temporal --detach prints) and the decision goes to it as
a signal, to the workflow waiting for it (the run's or a child flow's); the
run goes on by itself. skein approve waits until the run has read the
decision, and says so when it refuses it (the step is no longer waiting, or
was decided already).

Exit status: 0; 1 when the run or approval is not found or already decided;
with --resume, as skein resume.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *approveOptions) {
			fs.BoolVar(&o.reject, "reject", false, "reject instead of approving")
			fs.StringVar(&o.reason, "reason", "", "why, recorded with the decision")
			fs.StringVar(&o.by, "by", "", "who decides (default $SKEIN_USER, else $USER, else $LOGNAME)")
			fs.StringArrayVar(&o.set, "set", nil, "NAME=VALUE: the value of a field of the approval step (repeatable), read by the field's type")
			fs.BoolVar(&o.resume, "resume", false, "continue the run once the decision is recorded")
			fs.BoolVar(&o.noPrompt, "no-prompt", false, "with --resume: park on further approvals instead of asking on the terminal")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "where the run runs: local (the run store) or temporal (RUN is the workflow id skein run --engine temporal printed)")
		}, runApprove, nil),
	})
}

func runApprove(ctx context.Context, io stdio, opts *approveOptions, args []string) int {
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(io.err, "skein approve: want a run and optionally a step\nusage: skein approve RUN [STEP] [--reject] [--reason R] [--by NAME] [--set NAME=VALUE]... [--resume]")
		return exitUsage
	}
	if err := opts.engineFlags.check("approve"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	if opts.resume && opts.engine != "local" {
		fmt.Fprintln(io.err, "skein approve: --resume is for the local engine: a run on Temporal goes on by itself once decided")
		return exitUsage
	}
	step := ""
	if len(args) == 2 {
		step = args[1]
	}
	svc, closeSvc, ok := opts.service(ctx, io, "approve", opts.store)
	if !ok {
		return exitFail
	}
	defer closeSvc()
	by := byOrUser(opts.by)
	values, err := opts.values()
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitUsage
	}
	done, err := svc.Approve(ctx, args[0], step, runs.Decision{Approved: !opts.reject, By: by, Reason: opts.reason, Values: values})
	var choice *runs.ChoiceError
	switch {
	case errors.As(err, &choice) && len(choice.Pending) > 0:
		var steps []string
		for _, a := range choice.Pending {
			steps = append(steps, approveArg(a.Path, a.Step))
		}
		fmt.Fprintf(io.err, "skein approve: run %s waits for %d approvals (%s): name the step, or its place as skein show prints it\n", choice.Run, len(choice.Pending), strings.Join(steps, ", "))
		return exitFail
	case errors.Is(err, store.ErrTimedOut) && done != nil && (done.Run.Status == store.Waiting || done.Run.Status == store.Interrupted):
		// A decision after the deadline is refused whatever the run's
		// state: a run still going times the approval out itself.
		fmt.Fprintf(io.err, "skein approve: %v; skein resume %s routes the timeout\n", err, done.Run.ID)
		return exitFail
	case err != nil:
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
	}
	r := done.Run
	what := "approved"
	if opts.reject {
		what = "rejected"
	}
	if done.Unread {
		fmt.Fprintf(io.err, "sent: %s %q of run %s; the run has not read it yet (is a worker running?): skein show %s%s tells\n", what, done.Where, r.ID, r.ID, opts.connArgs())
		return exitOK
	}
	fmt.Fprintf(io.err, "%s %q of run %s\n", what, done.Where, r.ID)
	if svc.Engine != nil {
		return exitOK // it goes on by itself
	}
	if r.Status == store.Running {
		// Nothing to resume, --resume or not: the run goes on by itself.
		fmt.Fprintf(io.err, "run %s is still going: it takes the decision\n", r.ID)
		return exitOK
	}
	if !opts.resume {
		if r.Status == store.Waiting || r.Status == store.Interrupted {
			fmt.Fprintf(io.err, "continue it with: skein resume %s\n", r.ID)
		}
		return exitOK
	}
	return resumeRun(ctx, io, svc, &runs.ResumeSpec{Run: r}, &resumeOptions{noPrompt: opts.noPrompt})
}

// approveArg is the STEP of the skein approve command that decides an
// approval: its step, or its place quoted for the shell (a step of a map's
// items, a loop's body or a child flow, which the step alone may not tell
// apart).
func approveArg(path, step string) string {
	if path == "" {
		return step
	}
	return "'" + runs.Place(path, step) + "'"
}
