package main

// This file defines --engine and how to reach Temporal (the flags every
// build of skein has), skein worker's command line, and the hooks through
// which a skein built with -tags temporal runs the Temporal halves of its
// commands (temporal.go). Without the tag, skein links neither Temporal's
// SDK nor gRPC, and --engine temporal says how to get a skein that has it.

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/engine/temporal/limits"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// onTemporal are the commands' --engine temporal halves: set by
// temporal.go in a skein built with -tags temporal, nil in one without.
var onTemporal *temporalCommands

type temporalCommands struct {
	run     func(ctx, exitCtx context.Context, io stdio, opts *runOptions, g *graphir.Graph, src *frontend.Sources, inputs *stdlib.Map) int
	approve func(ctx context.Context, io stdio, opts *approveOptions, args []string) int
	cancel  func(ctx context.Context, io stdio, opts *cancelOptions, ref string) int
	show    func(ctx context.Context, io stdio, opts *showOptions, ref string) int
	logs    func(ctx context.Context, io stdio, opts *logsOptions, args []string) int
	// list lists the runs on the namespace; cut says that older ones
	// were not read.
	list   func(ctx context.Context, opts *runsOptions, f store.Filter) (list []*store.Run, cut string, err error)
	worker func(ctx context.Context, io stdio, opts *workerOptions) int
	// resolve finds the workflow id of the run ref names (an id, a unique
	// prefix of one, or last).
	resolve func(ctx context.Context, e *engineFlags, ref string) (string, error)
}

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
	s := " --engine temporal"
	if e.address != defaultAddress {
		s += " --address " + e.address
	}
	if e.namespace != defaultNamespace {
		s += " --namespace " + e.namespace
	}
	return s
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
	case e.engine == "temporal" && onTemporal == nil:
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
	if onTemporal == nil {
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
	return onTemporal.worker(ctx, io, opts)
}
