package main

// This file defines --engine and how to reach Temporal (the flags every
// build of skein has), skein worker's command line, and what the commands
// show of a run on an engine other than this process (runs.Engine). The
// Temporal engine is linked in by temporal.go, in a skein built with -tags
// temporal; without the tag, skein links neither Temporal's SDK nor gRPC,
// and --engine temporal says how to get a skein that has it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/vm/model"

	"github.com/skeinlang/skein/engine/temporal/limits"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// temporalInstall is how to get a skein with the Temporal engine.
const temporalInstall = "go install -tags temporal github.com/skeinlang/skein/cmd/skein@latest"

// errNoTemporal is what a skein built without the Temporal engine says
// when a command asks for it.
func errNoTemporal(cmd string) error {
	return fmt.Errorf("skein %s: this skein is built without the Temporal engine (it is opt-in, which keeps skein small); get a skein that has it with\n    %s\n(in a clone: make build TAGS=temporal)", cmd, temporalInstall)
}

// engineFlags choose the engine a command uses and how to reach it.
type engineFlags struct {
	engine    string
	address   string
	namespace string
	taskQueue string
}

func (e *engineFlags) define(fs *pflag.FlagSet) {
	e.defineConn(fs, "where the run runs: local (this process) or temporal (a Temporal cluster's workers)")
	fs.StringVar(&e.taskQueue, "task-queue", limits.DefaultTaskQueue, "with --engine temporal, the task queue the workers serve")
}

// defineConn defines --engine (described by what) and how to reach
// Temporal, for commands that find a run rather than start one.
func (e *engineFlags) defineConn(fs *pflag.FlagSet, what string) {
	fs.StringVar(&e.engine, "engine", "local", what)
	fs.StringVar(&e.address, "address", defaultAddress, "with --engine temporal, the Temporal frontend HOST:PORT")
	fs.StringVar(&e.namespace, "namespace", defaultNamespace, "with --engine temporal, the Temporal namespace")
}

const (
	defaultAddress   = "127.0.0.1:7233"
	defaultNamespace = "default"
)

// connArgs are the flags that reach the same Temporal again, for the
// commands skein prints: --engine temporal and any --address or
// --namespace that is not the default.
func (e *engineFlags) connArgs() string {
	return " --engine temporal" + e.temporalArgs()
}

// temporalArgs are the flags that reach the same server and namespace
// with Temporal's own CLI, each after a space; "" for the defaults.
func (e *engineFlags) temporalArgs() string {
	s := ""
	if e.address != defaultAddress {
		s += " --address " + e.address
	}
	if e.namespace != defaultNamespace {
		s += " --namespace " + e.namespace
	}
	return s
}

// check reports a bad --engine, and --engine temporal in a skein built
// without it.
func (e *engineFlags) check(cmd string) error {
	switch {
	case e.engine == "temporal" && !runs.HasEngine("temporal"):
		return errNoTemporal(cmd)
	case e.engine == "local", e.engine == "temporal":
		return nil
	}
	return fmt.Errorf("skein %s: unknown --engine %q; want local or temporal", cmd, e.engine)
}

type workerOptions struct {
	engineFlags
	cassetteFlags
	dir      string
	parallel int
}

func init() {
	register(&command{
		name:    "worker",
		args:    "--engine temporal [--address HOST:PORT] [--namespace N] [--task-queue Q] [--dir ROOT] [--parallel N] [--cassette F [--replay-only]]",
		summary: "serve Skein's workflow and activities to a Temporal cluster",
		long: `Connects to the Temporal frontend at --address and serves the task queue:
the workflow that runs flows (their sources travel with each run) and the
activities that run task and shell steps and model calls on this machine.
Tasks run under --dir: a task whose directory is under the flow's root on
the machine that started the run runs at the same place under --dir.
Model calls read their API keys from this worker's environment;
--cassette FILE records them into FILE and answers from it when it has
them (--replay-only: only from it). --parallel bounds the activities
running at once. Ctrl-C stops the worker; Temporal hands its unfinished
work to the other workers.

The Temporal engine is opt-in: a skein built without it (the default)
says how to get one that has it (` + temporalInstall + `).`,
		flags: withOptions(func(fs *pflag.FlagSet, o *workerOptions) {
			o.engineFlags.define(fs)
			fs.StringVar(&o.dir, "dir", "", "where this worker keeps the flows' files (default: the paths as given)")
			fs.IntVar(&o.parallel, "parallel", vm.DefaultParallel, "activities (tasks, shells, model calls) running at once")
			o.cassetteFlags.define(fs, cassetteHelp, replayOnlyHelp)
		}, runWorker, nil),
	})
}

func runWorker(ctx context.Context, io stdio, opts *workerOptions, args []string) int {
	if !runs.HasEngine("temporal") {
		fmt.Fprintln(io.err, errNoTemporal("worker"))
		return exitUsage
	}
	if len(args) != 0 {
		fmt.Fprintln(io.err, "skein worker: takes no arguments\nusage: skein worker --engine temporal [--address HOST:PORT]")
		return exitUsage
	}
	if opts.engine != "temporal" {
		fmt.Fprintln(io.err, "skein worker: only the temporal engine has workers; pass --engine temporal")
		return exitUsage
	}
	if opts.parallel < 1 {
		fmt.Fprintf(io.err, "skein worker: --parallel must be at least 1, got %d\n", opts.parallel)
		return exitUsage
	}
	if opts.replayOnly && opts.cassette == "" {
		fmt.Fprintln(io.err, "skein worker: --replay-only needs --cassette FILE, the recorded exchanges to answer from")
		return exitUsage
	}
	var models model.Provider
	if opts.cassette != "" {
		cas, err := openCassette(opts.cassette, opts.replayOnly)
		if err != nil {
			fmt.Fprintf(io.err, "skein worker: %v\n", err)
			return exitUsage
		}
		models = cas
	}
	// What goes wrong on the worker (a workflow task that fails, the
	// server gone, a task's heartbeat not reaching it) is for its
	// operator to see: the SDK's warnings and errors go to stderr.
	eng, err := opts.dial(ctx, slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(io.err, "skein worker: %v\n", err)
		return exitFail
	}
	defer eng.Close()
	// Ctrl-C or SIGTERM stops the worker: it stops polling, the tasks it
	// runs are ended and fail their activities retryably (another worker
	// runs them again, at once, not once their heartbeats time out), and
	// the spans it made are exported, before it exits 0.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = eng.Serve(ctx, &runs.Worker{Dir: opts.dir, Parallel: opts.parallel, Models: models, Started: func() {
		fmt.Fprintf(io.err, "skein worker: serving task queue %s at %s (namespace %s)\n", opts.taskQueue, opts.address, opts.namespace)
	}})
	if err != nil {
		fmt.Fprintf(io.err, "skein worker: %v\n", err)
		return exitFail
	}
	fmt.Fprintln(io.err, "skein worker: stopped")
	return exitOK
}

// dialEngine connects to an engine (a variable for tests).
var dialEngine = runs.DialEngine

// dial connects to the engine the flags name, with an error that says
// what to start; the engine's client log goes to l (nil: nowhere).
func (e *engineFlags) dial(ctx context.Context, l *slog.Logger) (runs.Engine, error) {
	eng, err := dialEngine(ctx, e.engine, runs.Conn{Address: e.address, Namespace: e.namespace, TaskQueue: e.taskQueue, Log: l})
	if err != nil {
		return nil, fmt.Errorf("%v\nstart a server (for a local one: temporal server start-dev) or pass --address HOST:PORT", err)
	}
	return eng, nil
}

// service is the run service on the engine the flags name: on the store
// storeFlag names (as localService finds it), or on the engine
// dialled; closeSvc closes either. It prints what went wrong for command
// cmd.
func (e *engineFlags) service(ctx context.Context, io stdio, cmd, storeFlag string) (svc *runs.Service, closeSvc func(), ok bool) {
	if e.engine != "local" {
		eng, err := e.dial(ctx, nil)
		if err != nil {
			fmt.Fprintf(io.err, "skein %s: %v\n", cmd, err)
			return nil, nil, false
		}
		return &runs.Service{Engine: eng}, eng.Close, true
	}
	svc, err := localService(storeFlag)
	if err != nil {
		fmt.Fprintf(io.err, "skein %s: %v\n", cmd, err)
		return nil, nil, false
	}
	return svc, func() { svc.Store.Close() }, true
}

// runOnEngine starts the run on the engine and follows it to its end
// (or, with --detach, prints its id), showing the same progress, events
// and result as a local run. The first Ctrl-C cancels the run (its exit
// handler still runs there) and goes on following it; a second one stops
// following.
func runOnEngine(ctx, exitCtx context.Context, io stdio, opts *runOptions, spec *runs.Spec) int {
	eng, err := opts.dial(context.Background(), nil)
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitFail
	}
	defer eng.Close()
	run, err := eng.Start(ctx, spec)
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		if errors.As(err, new(*runs.UsageError)) {
			return exitUsage
		}
		return exitFail
	}
	return followOnEngine(ctx, exitCtx, io, "run", &opts.engineFlags, opts.outputFlags, opts.detach, run, "")
}

// followOnEngine follows run, which command cmd started on the engine
// e names (a fork of run forked, when not ""), as runOnEngine says.
func followOnEngine(ctx, exitCtx context.Context, io stdio, cmd string, opts *engineFlags, out outputFlags, detach bool, run runs.Remote, forked string) int {
	id := run.ID()
	// A run no worker takes waits without a word: say so at once.
	lonely := ""
	if run.Unserved() {
		lonely = fmt.Sprintf("skein %s: no worker serves task queue %s at %s (namespace %s): run %s waits until one does (skein worker%s --task-queue %s)", cmd, opts.taskQueue, opts.address, opts.namespace, id, opts.connArgs(), opts.taskQueue)
	}
	if detach {
		if lonely != "" {
			fmt.Fprintln(io.err, lonely)
		}
		fmt.Fprintln(io.out, id)
		return exitOK
	}

	var prog *progress
	var enc *eventWriter
	h := &runs.Follow{}
	switch {
	case out.events:
		enc = newEventWriter(io.out)
		h.OnEvent = func(raw json.RawMessage, ev *vm.Event) { enc.writeRaw(raw, ev) }
	case !out.json:
		prog = newProgress(io.out, isTerminal(io.out))
		prog.start()
		h.OnEvent = func(_ json.RawMessage, ev *vm.Event) { prog.event(ev) }
		if forked != "" {
			fmt.Fprintf(io.err, "forking run %s as run %s on Temporal (task queue %s)\n", forked, id, opts.taskQueue)
		} else {
			fmt.Fprintf(io.err, "skein: run %s started on Temporal (task queue %s)\n", id, opts.taskQueue)
		}
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
	h.OnWaiting = func(a *runs.Waiting) {
		name := a.Step
		if a.Where != a.Step {
			name = "'" + a.Where + "'" // a place in a child flow, loop or map
		}
		msg := fmt.Sprintf("approval %q waits for a decision: %s\n  decide with: skein approve %s %s%s", a.Where, visible.Text(a.Message, false), id, name, opts.connArgs())
		if !a.Deadline.IsZero() {
			msg += fmt.Sprintf("\n  (it times out at %s)", a.Deadline.Local().Format("2006-01-02 15:04:05"))
		}
		note(msg)
	}
	h.OnDropped = func(w string, n int) {
		note(fmt.Sprintf("(%s of %s not shown: the run's event log keeps the latest only)", plural(n, "event"), w))
	}
	h.OnCancelFailed = func(err error) { note("skein " + cmd + ": " + err.Error()) }
	ended, err := run.Follow(ctx, exitCtx, h)
	if prog != nil {
		prog.stop()
	}
	if enc != nil {
		enc.close()
	}
	if errors.Is(err, runs.ErrStopped) {
		fmt.Fprintf(io.err, "skein %s: stopped following run %s; it goes on ending on Temporal (skein show %s%s)\n", cmd, id, id, opts.connArgs())
		return exitFail
	}
	if err != nil {
		fmt.Fprintf(io.err, "skein %s: %v\n", cmd, err)
		return exitFail
	}
	return printEngineResult(io, out.json, prog, ended)
}

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

// printEngineResult prints how a run on an engine ended: the result
// object with --json (the same object as a local run's), else the summary
// of a local run when prog shows progress.
func printEngineResult(io stdio, asJSON bool, prog *progress, out *runs.Ended) int {
	if asJSON {
		if err := writeIndented(io.out, out.Result); err != nil {
			fmt.Fprintf(io.err, "skein run: the run's result: %v\n", err)
			return exitFail
		}
	} else if prog != nil {
		res, err := vm.DecodeResult(out.Result)
		if err != nil {
			fmt.Fprintf(io.err, "skein run: the run's result: %v\n", err)
			return exitFail
		}
		prog.summary(res)
	}
	switch out.Status {
	case vm.Succeeded:
		return exitOK
	case vm.Waiting:
		return exitWaiting
	}
	return exitFail
}

// writeIndented writes the JSON object raw to w, indented, on its lines.
func writeIndented(w io.Writer, raw json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// showOnEngine shows a run on an engine: what the engine has of it (for a
// run still going, its steps as their latest events left them), the steps
// of child flows under their step, and its approvals.
func showOnEngine(ctx context.Context, io stdio, opts *showOptions, ref string) int {
	eng, err := opts.dial(ctx, nil)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	defer eng.Close()
	sum, err := eng.Summary(ctx, ref)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	if opts.json {
		if err := writeIndented(io.out, sum.JSON); err != nil {
			fmt.Fprintf(io.err, "skein show: the run's result: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	res, id := sum.Result, sum.ID
	file := res.File
	if sum.File != "" {
		file = sum.File // absolute, as a local run's record has it
	}
	fmt.Fprintf(io.out, "run %s\nflow %s (%s)\nstatus %s\n", res.RunID, res.Flow, file, res.Status)
	fmt.Fprintf(io.out, "started %s", sum.Started.Local().Format("2006-01-02 15:04:05.000"))
	if !sum.Ended.IsZero() {
		fmt.Fprintf(io.out, ", took %s", sum.Ended.Sub(sum.Started).Round(time.Millisecond))
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
	if as, err := eng.Approvals(ctx, id); err == nil && (len(as.Approvals) > 0 || len(as.Refused) > 0) {
		fmt.Fprintln(io.out, "approvals:")
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		for _, a := range as.Approvals {
			state := a.Outcome
			if a.Waiting {
				state = fmt.Sprintf("waiting since %s: skein approve %s %s%s", a.Requested.Local().Format("2006-01-02 15:04:05"), id, a.Step, opts.connArgs())
			}
			fmt.Fprintf(tw, "  %s\tvisit %d\t%s\n", a.Where, a.Visit, visible.Text(state, false))
		}
		tw.Flush()
		for _, r := range as.Refused {
			fmt.Fprintf(io.out, "  refused at %s, from %s: %s\n", r.At.Local().Format("2006-01-02 15:04:05"), r.By, visible.Text(r.Why, false))
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
