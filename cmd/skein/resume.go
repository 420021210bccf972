package main

// This file is skein resume: continuing a recorded run by replaying its
// journal.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/temporal/limits"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

type resumeOptions struct {
	engineFlags
	outputFlags
	store    string
	from     string
	set      []string // --set STEP=VALUE
	reload   bool
	noPrompt bool
	by       string   // --by
	secrets  []string // --input NAME=VALUE: the secret inputs, given again

	// The run-time options, each the recorded one unless given.
	fs *pflag.FlagSet // nil: none given (approve --resume)
	limitFlags
	cassetteFlags
	model string // --model
}

func init() {
	register(&command{
		name:    "resume",
		args:    "RUN [--from STEP] [--set STEP=VALUE]... [--input NAME=VALUE]... [--reload] [--json | --events] [--no-prompt] [--by NAME] [--parallel N] [--timeout D] [--max-load-steps N] [--cassette F [--replay-only] | --model stub[:F]] [--max-tokens N] [--engine local|temporal [--task-queue Q]]",
		summary: "continue a recorded run after a failure, a crash or an approval",
		long: `Continues a run from its record. Every task, shell or other effect whose
successful completion was recorded is not run again: its recorded outcome is
fed back in, fn steps and conditions are computed again from it, and the
first effect without a successful record runs for real. Tasks see
SKEIN_ATTEMPT counting earlier attempts, so a step that was running when its
process died sees 2.

An interrupted run (its process died) or a waiting one continues under its
own id; a failed, cancelled or succeeded run is never changed: resuming it
starts a new run that names it in resumed_from. A succeeded run has nothing
left to run: resuming it is refused unless --from (or --reload) is given.

The run uses the sources recorded with it, not the files on disk; --reload
takes the files on disk instead, and the run fails with resume_diverged when
the changed flow asks for something the record cannot answer. --from STEP
runs STEP again, and everything that completed after it: STEP may be of any
kind (a task, a fn step, a loop, a map, a router...); for one without a
recorded completion of its own (fn, loop, map, router) the replay stops
answering from the record where STEP starts.

--set STEP=VALUE (repeatable) forks the run, a what-if: a new run, naming
the original in resumed_from (which is left as it was), in which STEP does
not run but ends with output VALUE (JSON; text that is not JSON is a
string), and what runs after it runs again with that value. Everything
before it is answered from the record: no task or model call is made
again. STEP is a top-level step, not a router (set what it reads).

A secret input (input(secret = True)) is not recorded: --input NAME=VALUE
gives it again, and a resume without it is refused before anything runs, as
is one whose secret() has no value (docs/security.md).

--by names who resumes the run, as skein show and skein serve show it
(default $SKEIN_USER, else $USER, else $LOGNAME).

The run's options are the ones it was started with (--parallel, --timeout,
--max-load-steps, --cassette, --replay-only, --max-tokens, as recorded);
each of these flags, given, replaces the recorded value for the resumed run
(and is recorded with it). Model calls the record answers are not made
again; the others go to the cassette, when there is one, else to the model.

With --engine temporal, --from and --set fork a run on Temporal the same
way: a new workflow, answered from the run's journal (which each run keeps
of its effects, its child flows' included) up to STEP, with no task or
model call made again, and naming the run in resumed_from; the fork runs
with the run's own input and options. Without them, a run on Temporal is
not resumed (--engine temporal says how to run it again there).

Exit status: as skein run; 1 also when the run is not found, still running,
or succeeded (without --from or --reload); 2 for --engine temporal without
--from or --set.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *resumeOptions) {
			o.fs = fs
			o.limitFlags.define(fs, true)
			o.cassetteFlags.define(fs, "answer model calls from this file and record new ones into it (default: as recorded)", "answer model calls only from the cassette (default: as recorded)")
			fs.StringVar(&o.model, "model", "", modelHelp+" (default: as recorded)")
			fs.StringVar(&o.from, "from", "", "run this step again, and everything that completed after it")
			fs.StringArrayVar(&o.set, "set", nil, "fork the run with STEP's output replaced by VALUE (JSON, or a string), running what follows it again (repeatable)")
			fs.StringArrayVarP(&o.secrets, "input", "i", nil, "a secret input, which the record does not keep, as name=value (repeatable)")
			fs.BoolVar(&o.reload, "reload", false, "use the flow's files on disk instead of the recorded sources")
			o.outputFlags.define(fs)
			fs.BoolVar(&o.noPrompt, "no-prompt", false, "never ask for approvals on the terminal: park the run instead")
			fs.StringVar(&o.by, "by", "", "who resumes the run, as recorded (default $SKEIN_USER, else $USER, else $LOGNAME)")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "local (the run store); temporal forks a run on Temporal (--from, --set), and otherwise says how to run again there")
			fs.StringVar(&o.taskQueue, "task-queue", limits.DefaultTaskQueue, "with --engine temporal, the task queue a fork runs on")
		}, runResume, nil),
	})
}

func runResume(ctx context.Context, io stdio, opts *resumeOptions, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(io.err, "skein resume: want one run (an id, a prefix of one, or last)\nusage: skein resume RUN [--from STEP] [--reload]")
		return exitUsage
	}
	if err := opts.check(); err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitUsage
	}
	if err := opts.engineFlags.check("resume"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	if opts.engine != "local" {
		if opts.from != "" || len(opts.set) > 0 {
			return forkOnEngine(ctx, io, opts, args[0])
		}
		// Temporal keeps a run going itself; what is left to ask for is
		// a new run, or Temporal's own reset of the workflow, which
		// knows the run by its workflow id only (not last, not a prefix:
		// those are looked up; a whole id is passed on without dialling).
		id := args[0]
		if !vm.IsRunID(id) {
			eng, err := opts.dial(ctx, nil)
			if err != nil {
				fmt.Fprintf(io.err, "skein resume: %v\n", err)
				return exitFail
			}
			defer eng.Close()
			r, err := eng.Find(ctx, id)
			if err != nil {
				fmt.Fprintf(io.err, "skein resume: %v\n", err)
				return exitFail
			}
			id = r.ID
		}
		fmt.Fprintf(io.err, "skein resume: --engine temporal: a run on Temporal is not resumed by skein: it goes on by itself when a worker dies, and once it has ended it stays ended\n"+
			"to run its flow again, start a new run (skein run FILE --engine temporal); to run it again from a point in its history, reset its workflow with Temporal's CLI (temporal workflow reset%s --workflow-id %s --type FirstWorkflowTask --reason REASON, or --event-id N for a later point; skein show %s%s shows the run)\n",
			opts.temporalArgs(), id, id, opts.connArgs())
		return exitUsage
	}
	set, err := parseSet(opts.set)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitUsage
	}
	svc, err := localService(opts.store)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitFail
	}
	defer svc.Store.Close()
	secrets := map[string]string{}
	for _, kv := range opts.secrets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			fmt.Fprintf(io.err, "skein resume: --input %q: want NAME=VALUE\n", kv)
			return exitUsage
		}
		secrets[k] = v
	}
	return resumeRun(ctx, io, svc, &runs.ResumeSpec{Ref: args[0], Set: set, Secrets: secrets}, opts)
}

// forkOnEngine forks the run ref names on the engine (resume --from,
// --set): a new run there, answered from the run's journal up to the
// step, followed as skein run follows one.
func forkOnEngine(ctx context.Context, io stdio, opts *resumeOptions, ref string) int {
	set, err := parseSet(opts.set)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitUsage
	}
	for _, name := range []string{"input", "reload", "parallel", "timeout", "max-load-steps", "max-tokens", "cassette", "replay-only", "model", "no-prompt", "by"} {
		if opts.changed(name) {
			fmt.Fprintf(io.err, "skein resume: --%s is for the local engine: a fork on Temporal runs with its run's input and options, its model calls on the workers\n", name)
			return exitUsage
		}
	}
	eng, err := opts.dial(context.Background(), nil)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitFail
	}
	defer eng.Close()
	run, err := eng.Fork(ctx, &runs.ForkSpec{Ref: ref, From: opts.from, Set: set})
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		if errors.As(err, new(*runs.UsageError)) {
			return exitUsage
		}
		return exitFail
	}
	ctx, exitCtx, stop := interrupts(ctx)
	defer stop()
	return followOnEngine(ctx, exitCtx, io, "resume", &opts.engineFlags, opts.outputFlags, false, run, ref)
}

// changed reports whether flag name was given.
func (o *resumeOptions) changed(name string) bool { return o.fs != nil && o.fs.Changed(name) }

// check refuses flag values run would refuse.
func (o *resumeOptions) check() error {
	if err := o.limitFlags.check(o.fs); err != nil {
		return err
	}
	if o.changed("cassette") && o.cassette == "" {
		return fmt.Errorf("--cassette wants a file")
	}
	return o.outputFlags.check()
}

// runOptions are the options of the resumed run: the recorded ones, each
// replaced by its flag when given.
func (o *resumeOptions) runOptions(rec store.RunOptions) (store.RunOptions, error) {
	// The new run is started by who resumes it, not who started the old.
	rec.By = o.by
	if rec.By == "" {
		rec.By = envUser()
	}
	if o.changed("parallel") {
		rec.Parallel = o.parallel
	}
	if o.changed("timeout") {
		rec.Timeout = o.timeout
	}
	if o.changed("max-load-steps") {
		rec.MaxLoadSteps = o.maxLoad
	}
	if o.changed("max-tokens") {
		rec.MaxTokens = o.maxTokens
	}
	if o.changed("cassette") {
		rec.Cassette = confine.Abs(o.cassette)
	}
	if o.changed("replay-only") {
		rec.ReplayOnly = o.replayOnly
	}
	if o.changed("model") {
		m, err := parseModelFlag(o.model)
		if err != nil {
			return rec, err
		}
		rec.Model = m
	}
	if o.changed("cassette") && !o.changed("model") {
		rec.Model = ""
	}
	if rec.ReplayOnly && rec.Cassette == "" {
		return rec, fmt.Errorf("--replay-only needs --cassette FILE, the recorded exchanges to answer from")
	}
	if rec.Model != "" && rec.Cassette != "" {
		return rec, fmt.Errorf("--model stub answers every model call itself: it does not go with --cassette")
	}
	return rec, nil
}

// usageError is an error of the flags, found once the run they resume
// is read.
type usageError struct{ error }

// resumeRun continues the run spec names (spec.Run, or the one spec.Ref
// names) with svc, as opts say.
func resumeRun(ctx context.Context, io stdio, svc *runs.Service, spec *runs.ResumeSpec, opts *resumeOptions) int {
	spec.From, spec.Reload, spec.NoDecision = opts.from, opts.reload, noDecision
	spec.Adjust = func(r *store.Run, spec *runs.ResumeSpec) error {
		ropts, err := opts.runOptions(r.Options)
		if err != nil {
			return usageError{err}
		}
		spec.Options = ropts
		switch {
		case ropts.Cassette != "":
			spec.Models, err = openCassette(ropts.Cassette, ropts.ReplayOnly)
		case ropts.Model != "":
			spec.Models, err = openStub(ropts.Model)
		}
		return err
	}
	prompt := newPrompter(io, opts.noPrompt)
	if prompt != nil {
		spec.Ask = prompt
	}
	svc.Load = loadOptions("", 0)
	run, ds, err := svc.Resume(spec)
	check.WriteText(io.err, ds)
	var invalid *runs.InvalidFlowError
	switch {
	case errors.Is(err, runs.ErrNothingLeft):
		// Resuming it would replay every step and end as it did: a
		// new run identical to the old one, done silently. (--reload
		// may run steps the flow gained since.)
		fmt.Fprintf(io.err, "skein resume: run %s succeeded: there is nothing left to run; to run a step again, and everything that completed after it, give --from STEP (skein resume %s --from STEP)\n", spec.Run.ID, spec.Run.ID)
		return exitFail
	case errors.As(err, new(usageError)):
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitUsage
	case errors.As(err, &invalid):
		fmt.Fprintf(io.err, "skein: %v\n", err)
		return exitUsage
	case errors.Is(err, runs.ErrReloadDiverged):
		fmt.Fprintf(io.err, "skein resume: --reload: %v\n", err)
		return exitFail
	case err != nil:
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitFail
	}
	r := spec.Run
	if !opts.json && !opts.events {
		if len(spec.Set) > 0 {
			fmt.Fprintf(io.err, "forking run %s as run %s\n", r.ID, run.ID)
		} else if run.ResumedFrom != "" {
			fmt.Fprintf(io.err, "resuming run %s as run %s\n", r.ID, run.ID)
		} else {
			fmt.Fprintf(io.err, "resuming run %s\n", r.ID)
		}
	}
	ctx, exitCtx, stop := interrupts(ctx)
	defer stop()
	run.ExitCtx = exitCtx
	return execute(ctx, io, svc, run, runHooks{prompt: prompt}, opts.json, opts.events)
}

// parseSet reads --set STEP=VALUE flags: VALUE is JSON, or else a string.
func parseSet(flags []string) (map[string]json.RawMessage, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	set := map[string]json.RawMessage{}
	for _, f := range flags {
		step, value, ok := strings.Cut(f, "=")
		if !ok || step == "" {
			return nil, fmt.Errorf("--set wants STEP=VALUE, got %q", f)
		}
		if _, dup := set[step]; dup {
			return nil, fmt.Errorf("--set %s given twice", step)
		}
		if !json.Valid([]byte(value)) {
			b, _ := json.Marshal(value)
			value = string(b)
		}
		set[step] = json.RawMessage(value)
	}
	return set, nil
}
