//go:build temporal

package main

// skein approve and skein show for runs on Temporal: the run is the
// workflow (its id is the run id), asked by query and decided by signal.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// cancelOnTemporal cancels the workflow of the run ref names: Temporal
// cancels its running activities (their tasks are killed on their
// workers), and the run ends cancelled after its exit handler.
func cancelOnTemporal(ctx context.Context, io stdio, opts *cancelOptions, ref string) int {
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein cancel: %v\n", err)
		return exitFail
	}
	defer c.Close()
	w, err := c.Describe(ctx, ref)
	if err != nil {
		fmt.Fprintf(io.err, "skein cancel: %v\n", err)
		return exitFail
	}
	if st := w.Status(); st != "running" {
		fmt.Fprintf(io.err, "skein cancel: run %s has ended (%s): there is nothing to cancel\n", w.ID, st)
		return exitFail
	}
	if err := c.Cancel(ctx, w.ID); err != nil {
		fmt.Fprintf(io.err, "skein cancel: run %s: %v\n", w.ID, err)
		return exitFail
	}
	fmt.Fprintf(io.err, "asked Temporal to cancel run %s\n", w.ID)
	return exitOK
}

func approveOnTemporal(ctx context.Context, io stdio, opts *approveOptions, args []string) int {
	if opts.resume {
		fmt.Fprintln(io.err, "skein approve: --resume is for the local engine: a run on Temporal goes on by itself once decided")
		return exitUsage
	}
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
	}
	defer c.Close()
	step := ""
	if len(args) == 2 {
		step = args[1]
	}
	by := byOrUser(opts.by)
	values, err := opts.values()
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitUsage
	}
	sent, err := c.Approve(ctx, args[0], step, by, opts.reject, opts.reason, values)
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
	}
	what := "approved"
	if opts.reject {
		what = "rejected"
	}
	if sent.Read {
		fmt.Fprintf(io.err, "%s %q of run %s\n", what, sent.Where, sent.ID)
		return exitOK
	}
	fmt.Fprintf(io.err, "sent: %s %q of run %s; the run has not read it yet (is a worker running?): skein show %s%s tells\n", what, sent.Where, sent.ID, sent.ID, opts.connArgs())
	return exitOK
}

// resolveOnTemporal finds the workflow id of the run ref names.
func resolveOnTemporal(ctx context.Context, e *engineFlags, ref string) (string, error) {
	c, err := e.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	wr, err := c.Describe(ctx, ref)
	if err != nil {
		return "", err
	}
	return wr.ID, nil
}

func showOnTemporal(ctx context.Context, io stdio, opts *showOptions, id string) int {
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	defer c.Close()
	wr, raw, err := c.Result(ctx, id)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	started, closed, id := wr.Started, wr.Closed, wr.ID
	if opts.json {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			fmt.Fprintf(io.err, "skein show: the run's result: %v\n", err)
			return exitFail
		}
		b.WriteByte('\n')
		io.out.Write(b.Bytes())
		return exitOK
	}
	res, err := vm.DecodeResult(raw)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	file := res.File
	if wr.File != "" {
		file = wr.File // absolute, as a local run's record has it
	}
	fmt.Fprintf(io.out, "run %s\nflow %s (%s)\nstatus %s\n", res.RunID, res.Flow, file, res.Status)
	fmt.Fprintf(io.out, "started %s", started.Local().Format("2006-01-02 15:04:05.000"))
	if !closed.IsZero() {
		fmt.Fprintf(io.out, ", took %s", closed.Sub(started).Round(time.Millisecond))
	}
	fmt.Fprintln(io.out)
	if e := res.Error; e != nil {
		fmt.Fprintf(io.out, "error %s: %s\n", e.Code, visible.Text(e.Msg, false))
	}
	if res.Status == vm.Succeeded {
		fmt.Fprintf(io.out, "output %s\n", valueJSON(res.Output))
	}
	if len(res.Steps) > 0 || res.OnExit != nil {
		fmt.Fprintln(io.out, "steps:")
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		writeStepRows(tw, "", res)
		tw.Flush()
	}
	if as, err := c.Approvals(ctx, id); err == nil && (len(as.Approvals) > 0 || len(as.Refused) > 0) {
		fmt.Fprintln(io.out, "approvals:")
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		for _, a := range as.Approvals {
			state := a.Outcome()
			if a.State == temporal.ApprovalWaiting {
				state = fmt.Sprintf("waiting since %s: skein approve %s %s%s", a.Requested.Local().Format("2006-01-02 15:04:05"), id, a.Step, opts.connArgs())
			}
			fmt.Fprintf(tw, "  %s\tvisit %d\t%s\n", a.Where(), a.Visit, visible.Text(state, false))
		}
		tw.Flush()
		for _, r := range as.Refused {
			fmt.Fprintf(io.out, "  refused at %s, from %s: %s\n", r.At.Local().Format("2006-01-02 15:04:05"), r.Decision.By, visible.Text(r.Why, false))
		}
	}
	return exitOK
}

// writeStepRows writes one row per step of res, and under a child-flow
// step the rows of its child's steps, prefixed by where they are.
func writeStepRows(tw *tabwriter.Writer, prefix string, res *vm.Result) {
	for _, s := range res.Steps {
		writeStepRow(tw, prefix, s.Name, s)
	}
	if s := res.OnExit; s != nil {
		// The exit handler's record, named as the result's key is (it
		// does not carry its step's name).
		name := "on_exit"
		if s.Name != "" {
			name = s.Name + " (on_exit)"
		}
		writeStepRow(tw, prefix, name, s)
	}
}

// writeStepRow writes the row of step record s, named name, and those
// of its child flow's steps.
func writeStepRow(tw *tabwriter.Writer, prefix, name string, s *vm.StepRecord) {
	detail := s.Error
	if s.Status == vm.StepSucceeded && s.Output != nil {
		detail = valueJSON(s.Output)
	}
	fmt.Fprintf(tw, "  %s%s\t%s\tvisits %d\t%s\t%s\n", prefix, name, s.Status, s.Visits, s.Duration.Round(time.Millisecond), visible.Text(oneLine(detail, 60), false))
	if s.Child != nil {
		writeStepRows(tw, prefix+s.Name+" › ", s.Child)
	}
}

// valueJSON is a flow value as compact JSON.
func valueJSON(v starlark.Value) string {
	b, err := stdlib.AppendJSON(nil, v, "", 0)
	if err != nil {
		return v.String()
	}
	return string(b)
}

// listOnTemporal lists the runs on the namespace for skein runs; cut,
// when it is not "", says that older runs were not read.
func listOnTemporal(ctx context.Context, opts *runsOptions, f store.Filter) (list []*store.Run, cut string, err error) {
	c, err := dialRuns(ctx, &opts.engineFlags)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	list, more, err := c.List(ctx, f)
	if more {
		cut = fmt.Sprintf("listed from the latest %s on Temporal; older runs are not shown", plural(temporal.ListCap, "workflow execution"))
	}
	return list, cut, err
}

// dialRuns is how skein runs reaches Temporal (a variable for tests).
var dialRuns = func(ctx context.Context, e *engineFlags) (*temporal.Client, error) { return e.dial(ctx) }

// logsOnTemporal prints what a run's tasks printed, from the event logs
// of its workflow and its child workflows: each task attempt's stdout and
// stderr as its step_finished event has them, and those of an attempt
// that was retried as its log entry of a failed attempt has them.
func logsOnTemporal(ctx context.Context, io stdio, opts *logsOptions, args []string) int {
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein logs: %v\n", err)
		return exitFail
	}
	defer c.Close()
	wr, err := c.Describe(ctx, args[0])
	if err != nil {
		fmt.Fprintf(io.err, "skein logs: %v\n", err)
		return exitFail
	}
	id, step := wr.ID, ""
	if len(args) == 2 {
		step = args[1]
	}
	tty := isTerminal(io.out)
	var steps []string
	printed := 0
	// The visit and the retries so far of each place (a step with its
	// child flows and scope), from its latest step_started, and what its
	// latest failed attempt printed.
	visits, attempts := map[string]int{}, map[string]int{}
	failed := map[string]*temporal.FailedAttempt{}
	f := c.Follower(id)
	f.OnEvent = func(_ json.RawMessage, ev vm.Event) {
		if ev.Kind != "task" && ev.Kind != "shell" {
			return
		}
		where := ev.Where()
		switch ev.Type {
		case vm.StepStarted:
			visits[where], attempts[where] = ev.Visit, 0
		case vm.StepRetrying:
			if step == "" || ev.Step == step {
				printed++
				var stdout, stderr string
				if a := failed[where]; a != nil && a.Attempt == ev.Attempt-1 {
					stdout, stderr = a.Stdout, a.Stderr
				}
				writeLog(io.out, tty, where, visits[where], ev.Attempt-1, "failed", ev.Error, stdout, stderr)
			}
			attempts[where] = ev.Attempt - 1
		case vm.StepFinished:
			if !slices.Contains(steps, ev.Step) {
				steps = append(steps, ev.Step)
			}
			if step != "" && ev.Step != step {
				return
			}
			printed++
			var stdout, stderr string
			if m, ok := ev.Output.(starlark.Mapping); ok {
				if v, ok, _ := m.Get(starlark.String("stdout")); ok {
					stdout, _ = starlark.AsString(v)
				}
				if v, ok, _ := m.Get(starlark.String("stderr")); ok {
					stderr, _ = starlark.AsString(v)
				}
			}
			writeLog(io.out, tty, where, ev.Visit, attempts[where]+1, ev.Status, ev.Error, stdout, stderr)
		}
	}
	f.OnFailed = func(_ string, a *temporal.FailedAttempt) { failed[a.Where()] = a }
	f.OnDropped = func(w string, n int) {
		fmt.Fprintf(io.err, "(%s of %s not shown: the run's event log keeps the latest only)\n", plural(n, "event"), w)
	}
	for wr.Running() {
		qctx, cancel := context.WithTimeout(ctx, temporal.AskTimeout)
		err := f.Poll(qctx)
		cancel()
		if err != nil {
			fmt.Fprintf(io.err, "skein logs: %v\n", temporal.AskErr(id, err))
			return exitFail
		}
		if !opts.follow {
			break
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(followEvery):
		}
		if wr, err = c.Describe(ctx, id); err != nil {
			fmt.Fprintf(io.err, "skein logs: %v\n", err)
			return exitFail
		}
	}
	if !wr.Running() {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f.Drain(dctx)
		cancel()
		if err != nil {
			fmt.Fprintf(io.err, "skein logs: %v\n", temporal.AskErr(id, err))
			return exitFail
		}
	}
	if step != "" && printed == 0 && !slices.Contains(steps, step) {
		msg := fmt.Sprintf("skein logs: run %s has no task or shell step %q that ran", id, step)
		msg += spell.Suggest(step, steps)
		fmt.Fprintln(io.err, msg)
		return exitFail
	}
	return exitOK
}
