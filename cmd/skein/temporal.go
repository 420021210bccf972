//go:build temporal

package main

// The Temporal engine on the command line, in a skein built with -tags
// temporal: skein worker, and skein run --engine temporal (and, in
// temporal_runs.go, approve, show, logs and runs).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

func init() {
	onTemporal = &temporalCommands{run: runOnTemporal, approve: approveOnTemporal, cancel: cancelOnTemporal, show: showOnTemporal,
		logs: logsOnTemporal, list: listOnTemporal, worker: serveWorker, resolve: resolveOnTemporal}
}

// dial connects to the Temporal frontend, with an error that says which
// address and what to start.
func (e *engineFlags) dial(ctx context.Context) (*temporal.Client, error) {
	return e.dialLogging(ctx, slog.New(slog.DiscardHandler))
}

// dialLogging is dial with the SDK's log going to l.
func (e *engineFlags) dialLogging(ctx context.Context, l *slog.Logger) (*temporal.Client, error) {
	c, err := temporal.Dial(ctx, e.address, e.namespace, l)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %v\nstart a server (for a local one: temporal server start-dev) or pass --address HOST:PORT", e.address, e.namespace, shortErr(err))
	}
	return c, nil
}

func shortErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within 5s"
	}
	return err.Error()
}

func serveWorker(ctx context.Context, io stdio, opts *workerOptions) int {
	acts := &temporal.Activities{Dir: opts.dir}
	if opts.cassette != "" {
		cas, err := openCassette(opts.cassette, opts.replayOnly)
		if err != nil {
			fmt.Fprintf(io.err, "skein worker: %v\n", err)
			return exitUsage
		}
		acts.Models = cas
	}
	// What goes wrong on the worker (a workflow task that fails, the
	// server gone, a task's heartbeat not reaching it) is for its
	// operator to see: the SDK's warnings and errors go to stderr.
	c, err := opts.dialLogging(ctx, slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(io.err, "skein worker: %v\n", err)
		return exitFail
	}
	defer c.Close()
	err = c.Serve(ctx, opts.taskQueue, opts.parallel, acts, func() {
		fmt.Fprintf(io.err, "skein worker: serving task queue %s at %s (namespace %s)\n", opts.taskQueue, opts.address, opts.namespace)
	})
	if err != nil {
		fmt.Fprintf(io.err, "skein worker: %v\n", err)
		return exitFail
	}
	return exitOK
}

// runOnTemporal starts the run as a workflow and follows it to its end
// (or, with --detach, prints the workflow id), showing the same progress,
// events and result as a local run: it reads the event logs of the
// workflow and its child workflows as the run goes. The first Ctrl-C
// cancels the workflow (its exit handler still runs there) and goes on
// following it; a second one stops following.
func runOnTemporal(ctx, exitCtx context.Context, io stdio, opts *runOptions, g *graphir.Graph, src *frontend.Sources, inputs *stdlib.Map) int {
	c, err := opts.dial(context.Background())
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitFail
	}
	defer c.Close()
	// The workflow loads the flow under the names this load read it by,
	// so its messages name files as a local run's do; tasks run in
	// directories made absolute with cwd.
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitFail
	}
	given := map[string]starlark.Value{}
	for _, k := range inputs.Keys() {
		v, _, _ := inputs.Get(starlark.String(k))
		given[k] = v
	}
	in, err := temporal.EncodeInputs(given)
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitUsage
	}
	id := vm.NewRunID(time.Now())
	// The run's spans, from the events it follows (docs/observability.md).
	tp, _ := telemetry.Default()
	tel := tp.Start(g, telemetry.RunInfo{File: confine.Abs(g.File), Engine: "temporal"})
	defer tel.End(nil)
	run, err := c.Start(ctx, opts.taskQueue, id, g,
		temporal.RunInput{Flow: g.File, Root: g.Root, Cwd: cwd, Sources: src.ByName(), Inputs: in, Parallel: opts.parallel, Timeout: opts.timeout,
			HeartbeatTimeout: opts.heartbeat, ModelEnv: temporal.ModelEnv(os.Environ()), MaxTokens: opts.maxTokens, Traced: tel != nil && !opts.detach})
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitFail
	}
	// A run no worker takes waits without a word: say so at once.
	lonely := ""
	if !c.HasWorker(opts.taskQueue) {
		lonely = fmt.Sprintf("skein run: no worker serves task queue %s at %s (namespace %s): run %s waits until one does (skein worker%s --task-queue %s)", opts.taskQueue, opts.address, opts.namespace, id, opts.connArgs(), opts.taskQueue)
	}
	if opts.detach {
		if lonely != "" {
			fmt.Fprintln(io.err, lonely)
		}
		fmt.Fprintln(io.out, run.ID)
		return exitOK
	}

	var prog *progress
	var enc *eventWriter
	switch {
	case opts.events:
		enc = newEventWriter(io.out)
	case !opts.json:
		prog = newProgress(io.out, isTerminal(io.out))
		prog.start()
		fmt.Fprintf(io.err, "skein: run %s started on Temporal (task queue %s)\n", id, opts.taskQueue)
	}
	note := func(s string) {
		if prog != nil {
			prog.note(s)
		} else {
			fmt.Fprintln(io.err, s)
		}
	}
	if lonely != "" {
		note(lonely)
	}
	f := c.Follower(id)
	f.OnEvent = func(raw json.RawMessage, ev vm.Event) {
		tel.Event(&ev)
		switch {
		case enc != nil:
			enc.writeRaw(raw, &ev)
		case prog != nil:
			prog.event(&ev)
		}
	}
	f.OnApproval = func(_ string, a *temporal.Approval) {
		name := a.Step
		if w := a.Where(); w != a.Step {
			name = "'" + w + "'" // a place in a child flow, loop or map
		}
		msg := fmt.Sprintf("approval %q waits for a decision: %s\n  decide with: skein approve %s %s%s", a.Where(), visible.Text(a.Message, false), id, name, opts.connArgs())
		if dl := a.Deadline(); !dl.IsZero() {
			msg += fmt.Sprintf("\n  (it times out at %s)", dl.Local().Format("2006-01-02 15:04:05"))
		}
		note(msg)
	}
	f.OnDropped = func(w string, n int) {
		note(fmt.Sprintf("(%s of %s not shown: the run's event log keeps the latest only)", plural(n, "event"), w))
	}

	var out *temporal.RunOutput
	ended := make(chan error, 1)
	go func() {
		var err error
		out, err = run.Wait(context.Background())
		ended <- err
	}()
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	cancelled := false
	var getErr error
follow:
	for {
		select {
		case getErr = <-ended:
			break follow
		case <-tick.C:
			pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			f.Poll(pctx) // a query that fails is asked again on the next tick
			cancel()
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := c.Cancel(cctx, id); err != nil {
					note(fmt.Sprintf("skein run: cannot cancel run %s: %v", id, err))
				}
				cancel()
			}
		case <-exitCtx.Done():
			if prog != nil {
				prog.stop()
			}
			if enc != nil {
				enc.close()
			}
			fmt.Fprintf(io.err, "skein run: stopped following run %s; it goes on ending on Temporal (skein show %s%s)\n", id, id, opts.connArgs())
			return exitFail
		}
	}
	if getErr == nil && (prog != nil || enc != nil || tel != nil) {
		// The rest of the events: the workflow is closed, its logs final.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		f.Drain(dctx)
		cancel()
	}
	if prog != nil {
		prog.stop()
	}
	if enc != nil {
		enc.close()
	}
	if getErr != nil {
		fmt.Fprintf(io.err, "skein run: run %s on Temporal: %v\n", id, getErr)
		return exitFail
	}
	return printTemporalResult(io, opts.json, prog, out)
}

// followEvery is how often a followed run's event logs are read.
const followEvery = 200 * time.Millisecond

// writeRaw writes an event already in the --events format.
func (e *eventWriter) writeRaw(raw json.RawMessage, ev *vm.Event) {
	e.mu.Lock()
	e.w.Write(raw)
	e.w.WriteByte('\n')
	if mustShow(ev) {
		e.w.sync()
	}
	e.mu.Unlock()
}

// printTemporalResult prints a workflow's result: the result object with
// --json (the same object as a local run's), else the summary of a local
// run when prog shows progress.
func printTemporalResult(io stdio, asJSON bool, prog *progress, out *temporal.RunOutput) int {
	if asJSON {
		var b bytes.Buffer
		if err := json.Indent(&b, out.Result, "", "  "); err != nil {
			fmt.Fprintf(io.err, "skein run: the run's result: %v\n", err)
			return exitFail
		}
		b.WriteByte('\n')
		io.out.Write(b.Bytes())
	} else if prog != nil {
		res, err := vm.DecodeResult(out.Result)
		if err != nil {
			fmt.Fprintf(io.err, "skein run: the run's result: %v\n", err)
			return exitFail
		}
		prog.summary(res)
	}
	switch vm.Status(out.Status) {
	case vm.Succeeded:
		return exitOK
	case vm.Waiting:
		return exitWaiting
	}
	return exitFail
}
