package main

// The Temporal engine on the command line: skein worker, and the
// --engine temporal flags of skein run.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"
	"go.starlark.net/starlark"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// engineFlags choose the engine a command uses and how to reach it.
type engineFlags struct {
	engine    string
	address   string
	namespace string
	taskQueue string
}

func (e *engineFlags) define(fs *pflag.FlagSet) {
	fs.StringVar(&e.engine, "engine", "local", "where the run runs: local (this process) or temporal (a Temporal cluster's workers)")
	fs.StringVar(&e.address, "address", "127.0.0.1:7233", "with --engine temporal, the Temporal frontend HOST:PORT")
	fs.StringVar(&e.namespace, "namespace", "default", "with --engine temporal, the Temporal namespace")
	fs.StringVar(&e.taskQueue, "task-queue", temporal.DefaultTaskQueue, "with --engine temporal, the task queue the workers serve")
}

// check reports a bad --engine.
func (e *engineFlags) check(cmd string) error {
	switch e.engine {
	case "local", "temporal":
		return nil
	}
	return fmt.Errorf("skein %s: unknown --engine %q; want local or temporal", cmd, e.engine)
}

// dial connects to the Temporal frontend, with an error that says which
// address and what to start.
func (e *engineFlags) dial(ctx context.Context) (client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(dctx, client.Options{HostPort: e.address, Namespace: e.namespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
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

type workerOptions struct {
	engineFlags
	dir        string
	parallel   int
	cassette   string
	replayOnly bool
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
work to the other workers.`,
		flags: func(fs *pflag.FlagSet) any {
			o := &workerOptions{}
			o.define(fs)
			fs.StringVar(&o.dir, "dir", "", "where this worker keeps the flows' files (default: the paths as given)")
			fs.IntVar(&o.parallel, "parallel", vm.DefaultParallel, "activities (tasks, shells, model calls) running at once")
			fs.StringVar(&o.cassette, "cassette", "", "record model exchanges into this file, and answer from it when it has them")
			fs.BoolVar(&o.replayOnly, "replay-only", false, "with --cassette: answer model calls only from the cassette (a missing one is replay_miss)")
			return o
		},
		run: runWorker,
	})
}

func runWorker(ctx context.Context, io stdio, o any, args []string) int {
	opts := o.(*workerOptions)
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
	acts := &temporal.Activities{Dir: opts.dir}
	if opts.cassette != "" {
		var live model.Provider
		if !opts.replayOnly {
			live = &model.Client{}
		}
		cas, err := model.OpenCassette(opts.cassette, opts.replayOnly, live)
		if err != nil {
			fmt.Fprintf(io.err, "skein worker: %v\n", err)
			return exitUsage
		}
		acts.Models = cas
	}
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein worker: %v\n", err)
		return exitFail
	}
	defer c.Close()
	w := worker.New(c, opts.taskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: opts.parallel,
		MaxHeartbeatThrottleInterval:       time.Second,
	})
	temporal.Register(w, acts)
	if err := w.Start(); err != nil {
		fmt.Fprintf(io.err, "skein worker: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(io.err, "skein worker: serving task queue %s at %s (namespace %s)\n", opts.taskQueue, opts.address, opts.namespace)
	<-ctx.Done()
	w.Stop()
	return exitOK
}

// runOnTemporal starts the run as a workflow and waits for its result
// (or, with --detach, prints the workflow id). Ctrl-C cancels the
// workflow; its exit handler still runs there.
func runOnTemporal(ctx context.Context, io stdio, opts *runOptions, g *graphir.Graph, src *sourceRecorder, inputs *stdlib.Map) int {
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitFail
	}
	defer c.Close()
	sources := map[string]string{}
	for _, s := range src.sources() {
		sources[s.Path] = string(s.Text)
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
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: opts.taskQueue}, temporal.WorkflowName,
		temporal.RunInput{Flow: absPath(g.File), Root: absPath(g.Root), Sources: sources, Inputs: in, Parallel: opts.parallel, Timeout: opts.timeout,
			HeartbeatTimeout: opts.heartbeat, ModelEnv: temporal.ModelEnv(os.Environ()), MaxTokens: opts.maxTokens})
	if err != nil {
		fmt.Fprintf(io.err, "skein run: cannot start the run on Temporal at %s: %v\n", opts.address, err)
		return exitFail
	}
	if opts.detach {
		fmt.Fprintln(io.out, run.GetID())
		return exitOK
	}
	if !opts.json {
		fmt.Fprintf(io.err, "skein: run %s started on Temporal (task queue %s); waiting for a worker to finish it\n", id, opts.taskQueue)
	}
	var out temporal.RunOutput
	err = run.Get(ctx, &out)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C: cancel the workflow and wait for its result.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.CancelWorkflow(cctx, id, "")
		err = run.Get(cctx, &out)
	}
	if err != nil {
		fmt.Fprintf(io.err, "skein run: run %s on Temporal: %v\n", id, err)
		return exitFail
	}
	return printTemporalResult(io, opts.json, &out)
}

// printTemporalResult prints a workflow's result: the result object with
// --json (the same object as a local run's), else its status and error.
func printTemporalResult(io stdio, asJSON bool, out *temporal.RunOutput) int {
	if asJSON {
		var b bytes.Buffer
		if err := json.Indent(&b, out.Result, "", "  "); err != nil {
			fmt.Fprintf(io.err, "skein run: the run's result: %v\n", err)
			return exitFail
		}
		b.WriteByte('\n')
		io.out.Write(b.Bytes())
	} else {
		var r struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
			Error  *struct {
				Code    string `json:"code"`
				Step    string `json:"step"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(out.Result, &r)
		fmt.Fprintf(io.out, "run %s %s\n", r.RunID, r.Status)
		if r.Error != nil {
			fmt.Fprintf(io.out, "error [%s]: %s\n", r.Error.Code, r.Error.Message)
		}
	}
	switch vm.Status(out.Status) {
	case vm.Succeeded:
		return exitOK
	case vm.Waiting:
		return exitWaiting
	}
	return exitFail
}
