package main

// This file is approvals on the command line: the producer that answers
// approve= steps (a recorded decision, the inline prompt, or parking the
// run), and skein approve.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// exitWaiting is skein run's status for a run parked on an approval.
const exitWaiting = 3

// approver answers approval steps and hands every other effect to inner.
type approver struct {
	inner vm.EffectProducer
	rec   *store.Recorder // nil without a store
	st    *store.Store
	runID string

	// The inline prompt, when asking on a terminal.
	prompt *prompter
	// inline asks in the REPL and watch --run (inline.go); it wins over
	// prompt.
	inline *inlineAsker

	// With a store and nobody to ask, an approval is held open while
	// other work of its run is outstanding, so that a decision skein
	// approve records meanwhile is taken by this run: the store is read
	// again whenever the run is about to wait ([vm.EffectIdler]), and the
	// approvals held park once nothing else of their run is outstanding
	// ([vm.EffectRequest.Outstanding]: effects in flight, retries waiting
	// out their backoff). A held approval with a timeout times out by its
	// own timer, at its deadline.
	//
	// A run's approvals park only once the whole run tree has nothing
	// else: a child flow whose run waits for held approvals alone is
	// quiet, and tells its parent (which counts it as held); the run at
	// the top of the tree parks what is held in it.
	mu    sync.Mutex
	held  map[string][]*heldApproval   // by child-flow chain
	subs  map[string]*vm.EffectRequest // child flows in flight, by the child's chain: the parent's request
	quiet map[string]bool              // child runs that, at their latest Idle, waited for held approvals alone
}

// heldApproval is an approval held open until a decision comes, its
// deadline passes or its run can do nothing else.
type heldApproval struct {
	req   *vm.EffectRequest
	done  func(*vm.EffectCompletion)
	timer *time.Timer // at the deadline, if it has one
}

// prompter asks on a terminal, one question at a time.
type prompter struct {
	mu   sync.Mutex
	in   *bufio.Reader
	out  io.Writer
	note func(string) // prints above the live progress, if any
}

func (a *approver) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.Kind == graphir.KindSubflow && a.rec != nil {
		child := strings.Join(append(append(slices.Clone(req.Flow), req.Scope...), req.Step), "/")
		a.mu.Lock()
		if a.subs == nil {
			a.subs, a.quiet = map[string]*vm.EffectRequest{}, map[string]bool{}
		}
		a.subs[child] = req
		a.mu.Unlock()
		a.inner.Start(ctx, req, func(c *vm.EffectCompletion) {
			a.mu.Lock()
			if a.subs[child] == req {
				delete(a.subs, child)
				delete(a.quiet, child)
			}
			a.mu.Unlock()
			done(c)
		})
		return
	}
	if req.Kind != graphir.KindApproval {
		a.inner.Start(ctx, req, done)
		return
	}
	go func() {
		c, deadline := a.decide(ctx, req)
		if c == nil {
			a.hold(ctx, req, deadline, done)
			return
		}
		done(c)
	}()
}

// hold holds the approval req open until a decision comes, its deadline
// (zero for never) passes or nothing else of its run is outstanding, and
// has the run look at it again (it may be waiting for it alone now).
func (a *approver) hold(ctx context.Context, req *vm.EffectRequest, deadline time.Time, done func(*vm.EffectCompletion)) {
	key := strings.Join(req.Flow, "/")
	h := &heldApproval{req: req, done: done}
	a.mu.Lock()
	if a.held == nil {
		a.held = map[string][]*heldApproval{}
	}
	a.held[key] = append(a.held[key], h)
	if !deadline.IsZero() {
		h.timer = time.AfterFunc(time.Until(deadline), func() { a.expire(key, h) })
	}
	a.mu.Unlock()
	go func() {
		<-ctx.Done()
		if a.release(key, h) {
			done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		}
	}()
	req.Nudge()
}

// expire is a held approval's timer: its deadline has come, so it times
// out, unless a decision was recorded before (the store has the one
// outcome: see [store.Store.Expire]).
func (a *approver) expire(key string, h *heldApproval) {
	c, _, deadline := a.fromStore(h.req)
	if c == nil {
		// The wall clock is behind the timer: look again at the
		// deadline.
		a.mu.Lock()
		if h.timer != nil {
			h.timer.Reset(max(time.Until(deadline), time.Millisecond))
		}
		a.mu.Unlock()
		return
	}
	if a.release(key, h) {
		h.done(c)
	}
}

// release takes h out of the held approvals, stopping its timer; false if
// it was already.
func (a *approver) release(key string, h *heldApproval) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	hs := a.held[key]
	for i, x := range hs {
		if x == h {
			a.unquiet(key)
			a.held[key] = append(hs[:i:i], hs[i+1:]...)
			if h.timer != nil {
				h.timer.Stop()
				h.timer = nil
			}
			return true
		}
	}
	return false
}

// unquiet marks the run with key, and the runs above it, as not quiet: it
// goes on. It is called holding a.mu.
func (a *approver) unquiet(key string) {
	for {
		delete(a.quiet, key)
		sr, ok := a.subs[key]
		if !ok {
			return
		}
		key = strings.Join(sr.Flow, "/")
	}
}

// Idle implements [vm.EffectIdler]: the run with the child-flow chain flow
// is about to wait, so its held approvals read the store again. A decision
// recorded meanwhile (by skein approve) is taken, as if answered here; a
// timeout passed times the approval out; and once nothing else of the run
// tree is outstanding, the approvals park.
func (a *approver) Idle(flow []string) {
	key := strings.Join(flow, "/")
	a.mu.Lock()
	hs := slices.Clone(a.held[key])
	a.mu.Unlock()
	for _, h := range hs {
		c, _, _ := a.fromStore(h.req)
		if c == nil {
			continue
		}
		if a.release(key, h) {
			// Decided (or timed out): the run goes on with it, and may
			// start more, so none parks now; its next Idle decides.
			h.done(c)
			return
		}
	}
	a.mu.Lock()
	// What is outstanding in the run is held here, or a quiet child
	// flow (an approval still being answered is not held yet: it
	// holds, or completes, and the run looks again).
	var probe *vm.EffectRequest
	if hs := a.held[key]; len(hs) > 0 {
		probe = hs[0].req
	}
	n := len(a.held[key])
	for child, sr := range a.subs {
		if strings.Join(sr.Flow, "/") == key {
			probe = sr
			if a.quiet[child] {
				n++
			}
		}
	}
	if probe == nil || probe.Outstanding() != n || n == 0 {
		a.unquiet(key)
		a.mu.Unlock()
		return
	}
	if sr, ok := a.subs[key]; ok {
		// A child flow: its parent decides, counting it as held.
		a.quiet[key] = true
		a.mu.Unlock()
		sr.Nudge()
		return
	}
	// The top of the run tree: everything held in it parks.
	var park []*heldApproval
	var keys []string
	for k, hs := range a.held {
		if k == key || key == "" || strings.HasPrefix(k, key+"/") {
			for _, h := range hs {
				park = append(park, h)
				keys = append(keys, k)
			}
		}
	}
	a.mu.Unlock()
	// The child flows' approvals read the store again first (their runs
	// wait, and do not): a decision taken there goes on instead.
	for i, h := range park {
		if keys[i] == key {
			continue // read above
		}
		if c, _, _ := a.fromStore(h.req); c != nil {
			if a.release(keys[i], h) {
				h.done(c)
				return
			}
		}
	}
	for i, h := range park {
		if a.release(keys[i], h) {
			h.done(&vm.EffectCompletion{Park: true})
		}
	}
}

// fromStore reads the approval req from the store: the completion its
// recorded decision or timeout makes (recording the timeout when its
// deadline has passed), or a store error makes, else nil with the
// approval and its deadline (zero without a timeout).
func (a *approver) fromStore(req *vm.EffectRequest) (*vm.EffectCompletion, *store.Approval, time.Time) {
	ap, err := a.rec.Ask(req)
	if err != nil {
		return &vm.EffectCompletion{Stop: &graphir.Error{Code: codes.StoreError, Msg: err.Error()}}, nil, time.Time{}
	}
	var deadline time.Time
	if req.Timeout > 0 {
		deadline = ap.Requested.Add(req.Timeout)
	}
	if c := outcome(req, ap, deadline); c != nil {
		return c, ap, deadline
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		if ap, err = a.st.Expire(a.runID, ap, deadline); err != nil {
			return &vm.EffectCompletion{Stop: &graphir.Error{Code: codes.StoreError, Msg: err.Error()}}, nil, time.Time{}
		}
		if c := outcome(req, ap, deadline); c != nil {
			return c, ap, deadline
		}
		return vm.ApprovalTimedOut(req.Timeout), ap, deadline
	}
	return nil, ap, deadline
}

// outcome is the completion approval ap's record makes: its decision, if
// it came before the deadline; a timeout, if it was recorded as timed out
// or decided too late (a decision an older skein let through); else nil.
func outcome(req *vm.EffectRequest, ap *store.Approval, deadline time.Time) *vm.EffectCompletion {
	switch {
	case !ap.Decided.IsZero() && (deadline.IsZero() || ap.Decided.Before(deadline)):
		return vm.ApprovalDecision(ap.Approved, ap.By, ap.Reason, ap.Decided)
	case !ap.Decided.IsZero() || !ap.Expired.IsZero():
		return vm.ApprovalTimedOut(req.Timeout)
	}
	return nil
}

// decide answers an approval: from the store, on a terminal, or nil when
// nobody can decide now (the caller holds it open or parks it), with the
// approval's deadline (zero for none).
func (a *approver) decide(ctx context.Context, req *vm.EffectRequest) (*vm.EffectCompletion, time.Time) {
	if a.rec == nil {
		approved, reason, ok := a.ask(ctx, req, time.Time{})
		if ctx.Err() != nil {
			return &vm.EffectCompletion{Cancelled: true, Error: "cancelled"}, time.Time{}
		}
		if !ok {
			return &vm.EffectCompletion{Code: codes.StepFailed,
				Error: fmt.Sprintf("approval %q needs a decision: run on a terminal, or with the run store (without --no-store) to park the run", req.Step)}, time.Time{}
		}
		return vm.ApprovalDecision(approved, currentUser(), reason, time.Now()), time.Time{}
	}
	c, ap, deadline := a.fromStore(req)
	if c != nil {
		return c, deadline
	}
	approved, reason, ok := a.ask(ctx, req, deadline)
	if ctx.Err() != nil {
		return &vm.EffectCompletion{Cancelled: true, Error: "cancelled"}, deadline
	}
	if !ok {
		// Nobody to ask: held open (nil) until a decision comes or
		// nothing else can.
		return nil, deadline
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		// Timed out at the prompt (or answered too late): recorded as
		// such, unless skein approve decided before.
		if c, _, _ := a.fromStore(req); c != nil {
			return c, deadline
		}
		return vm.ApprovalTimedOut(req.Timeout), deadline
	}
	by := currentUser()
	if err := a.st.Decide(a.runID, ap, approved, by, reason); err != nil {
		if !errors.Is(err, store.ErrDecided) && !errors.Is(err, store.ErrTimedOut) {
			return &vm.EffectCompletion{Stop: &graphir.Error{Code: codes.StoreError, Msg: err.Error()}}, deadline
		}
		// Decided meanwhile by skein approve, or the deadline passed
		// while the answer was recorded: the store's outcome stands.
		if c, _, _ := a.fromStore(req); c != nil {
			return c, deadline
		}
		return vm.ApprovalTimedOut(req.Timeout), deadline
	}
	return vm.ApprovalDecision(approved, by, reason, time.Now()), deadline
}

// ask puts the approval's question on the terminal and reads y or n
// (anything else is no), until ctx ends or the deadline passes.
func (p *prompter) ask(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := fmt.Sprintf("approve %q: %s [y/N] ", req.Step, req.Message)
	if p.note != nil {
		p.note(strings.TrimSpace(q))
	} else {
		fmt.Fprint(p.out, q)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := p.in.ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var expire <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expire = t.C
	}
	select {
	case s := <-line:
		switch strings.ToLower(s) {
		case "y", "yes":
			return true, ""
		}
		return false, "answered " + fmt.Sprintf("%q", s) + " at the prompt"
	case <-ctx.Done():
	case <-expire:
	}
	return false, ""
}

func currentUser() string {
	for _, k := range []string{"SKEIN_USER", "USER", "LOGNAME"} {
		if u := os.Getenv(k); u != "" {
			return u
		}
	}
	return "unknown"
}

type approveOptions struct {
	engineFlags
	store    string
	reject   bool
	reason   string
	by       string
	resume   bool
	noPrompt bool
}

func init() {
	register(&command{
		name:    "approve",
		args:    "RUN [STEP] [--reject] [--reason R] [--by NAME] [--resume] [--engine temporal [--address HOST:PORT] [--namespace N]]",
		summary: "decide an approval a run waits for",
		long: `Records the decision for an approval step of a waiting run: approved, or with
--reject rejected (the step fails with code rejected, which on = "failure"
can route). STEP may be left out when the run waits for one approval
only; it may also be the approval's place as skein show prints it
('per_env[1] › deploy'), which tells apart the approvals of one step in a
map's items. A decision is recorded once: a second one is refused, saying
what was decided, by whom and when. --by defaults to $SKEIN_USER, else $USER, else $LOGNAME.
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
		flags: func(fs *pflag.FlagSet) any {
			o := &approveOptions{}
			fs.BoolVar(&o.reject, "reject", false, "reject instead of approving")
			fs.StringVar(&o.reason, "reason", "", "why, recorded with the decision")
			fs.StringVar(&o.by, "by", "", "who decides (default $SKEIN_USER, else $USER, else $LOGNAME)")
			fs.BoolVar(&o.resume, "resume", false, "continue the run once the decision is recorded")
			fs.BoolVar(&o.noPrompt, "no-prompt", false, "with --resume: park on further approvals instead of asking on the terminal")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "where the run runs: local (the run store) or temporal (RUN is the workflow id skein run --engine temporal printed)")
			return o
		},
		run: runApprove,
	})
}

func runApprove(ctx context.Context, io stdio, o any, args []string) int {
	opts := o.(*approveOptions)
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(io.err, "skein approve: want a run and optionally a step\nusage: skein approve RUN [STEP] [--reject] [--reason R] [--by NAME] [--resume]")
		return exitUsage
	}
	if err := opts.engineFlags.check("approve"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	if opts.engine == "temporal" {
		return approveOnTemporal(ctx, io, opts, args)
	}
	st, r, ok := getRun(io, "approve", opts.store, args[0])
	if !ok {
		return exitFail
	}
	defer st.Close()
	all, err := st.Approvals(r.ID)
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
	}
	var pending, named []*store.Approval
	for _, a := range all {
		if len(args) == 2 && !namesApproval(args[1], a) {
			continue
		}
		named = append(named, a)
		if a.Pending(time.Now()) {
			pending = append(pending, a)
		}
	}
	var target *store.Approval
	switch {
	case len(pending) == 1:
		target = pending[0]
	case len(pending) > 1:
		var steps []string
		for _, a := range pending {
			steps = append(steps, approveArg(a.Path, a.Step))
		}
		fmt.Fprintf(io.err, "skein approve: run %s waits for %d approvals (%s): name the step, or its place as skein show prints it\n", r.ID, len(pending), strings.Join(steps, ", "))
		return exitFail
	case len(named) > 0:
		// Only decided or timed out ones: let Decide say which.
		target = named[len(named)-1]
	default:
		var steps []string
		for _, a := range all {
			steps = append(steps, a.Step, approvalPlace(a.Path, a.Step))
		}
		msg := fmt.Sprintf("skein approve: run %s waits for no approval", r.ID)
		if len(args) == 2 {
			msg = fmt.Sprintf("skein approve: run %s has no approval step %q", r.ID, args[1])
			msg += spell.Suggest(args[1], steps)
		}
		fmt.Fprintln(io.err, msg)
		return exitFail
	}
	by := opts.by
	if by == "" {
		by = currentUser()
	}
	if err := st.Decide(r.ID, target, !opts.reject, by, opts.reason); err != nil {
		// A decision after the deadline is refused whatever the run's
		// state: a run still going times the approval out itself.
		msg := err.Error()
		if errors.Is(err, store.ErrTimedOut) && (r.Status == store.Waiting || r.Status == store.Interrupted) {
			msg += fmt.Sprintf("; skein resume %s routes the timeout", r.ID)
		}
		fmt.Fprintf(io.err, "skein approve: %s\n", msg)
		return exitFail
	}
	what := "approved"
	if opts.reject {
		what = "rejected"
	}
	fmt.Fprintf(io.err, "%s %q of run %s\n", what, approvalPlace(target.Path, target.Step), r.ID)
	if r, err = st.Get(r.ID); err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
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
	return resumeRun(ctx, io, st, r, &resumeOptions{noPrompt: opts.noPrompt})
}

// approvalPlace names an approval as skein show prints it: its step, or
// with the child-flow chain and scope leading to it, "per_env[1] › deploy".
func approvalPlace(path, step string) string {
	if path == "" {
		return step
	}
	return strings.ReplaceAll(path, "/", " › ") + " › " + step
}

// approveArg is the STEP of the skein approve command that decides an
// approval: its step, or its place quoted for the shell (a step of a map's
// items, a loop's body or a child flow, which the step alone may not tell
// apart).
func approveArg(path, step string) string {
	if path == "" {
		return step
	}
	return "'" + approvalPlace(path, step) + "'"
}

// namesApproval reports whether skein approve's STEP arg names approval a:
// its step, or its place (as skein show prints it, or with "/" between the
// parts).
func namesApproval(arg string, a *store.Approval) bool {
	return arg == a.Step || arg == approvalPlace(a.Path, a.Step) || (a.Path != "" && arg == a.Path+"/"+a.Step)
}
