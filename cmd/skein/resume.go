package main

// This file is skein resume: continuing a recorded run by replaying its
// journal.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

type resumeOptions struct {
	engineFlags
	store    string
	from     string
	reload   bool
	json     bool
	events   bool
	noPrompt bool

	// The run-time options, each the recorded one unless given.
	fs         *pflag.FlagSet // nil: none given (approve --resume)
	parallel   int
	timeout    time.Duration
	maxLoad    uint64
	maxTokens  int
	cassette   string
	replayOnly bool
}

func init() {
	register(&command{
		name:    "resume",
		args:    "RUN [--from STEP] [--reload] [--json | --events] [--no-prompt] [--parallel N] [--timeout D] [--max-load-steps N] [--cassette F [--replay-only]] [--max-tokens N] [--engine local]",
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
runs STEP again, and everything that completed after it.

The run's options are the ones it was started with (--parallel, --timeout,
--max-load-steps, --cassette, --replay-only, --max-tokens, as recorded);
each of these flags, given, replaces the recorded value for the resumed run
(and is recorded with it). Model calls the record answers are not made
again; the others go to the cassette, when there is one, else to the model.

A run on Temporal is not resumed (--engine temporal says how to run it
again there).

Exit status: as skein run; 1 also when the run is not found, still running,
or succeeded (without --from or --reload); 2 for --engine temporal.`,
		flags: func(fs *pflag.FlagSet) any {
			o := &resumeOptions{fs: fs}
			fs.IntVarP(&o.parallel, "parallel", "p", 0, "task, shell and model-call steps run at once (default: as recorded)")
			fs.DurationVar(&o.timeout, "timeout", 0, "stop the run after this long (default: as recorded)")
			fs.Uint64Var(&o.maxLoad, "max-load-steps", 0, "Starlark steps loading the flow may take, for flows that generate very many steps (default: as recorded)")
			fs.StringVar(&o.cassette, "cassette", "", "answer model calls from this file and record new ones into it (default: as recorded)")
			fs.BoolVar(&o.replayOnly, "replay-only", false, "answer model calls only from the cassette (default: as recorded)")
			fs.IntVar(&o.maxTokens, "max-tokens", 0, "bound the tokens the run's model calls may spend (default: as recorded)")
			fs.StringVar(&o.from, "from", "", "run this step again, and everything that completed after it")
			fs.BoolVar(&o.reload, "reload", false, "use the flow's files on disk instead of the recorded sources")
			fs.BoolVar(&o.json, "json", false, "print only the result, as JSON, when the run ends")
			fs.BoolVar(&o.events, "events", false, "print one JSON object per event per line as the run goes")
			fs.BoolVar(&o.noPrompt, "no-prompt", false, "never ask for approvals on the terminal: park the run instead")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "local (the run store); temporal is refused, saying how to run again on Temporal")
			return o
		},
		run: runResume,
	})
}

func runResume(ctx context.Context, io stdio, o any, args []string) int {
	opts := o.(*resumeOptions)
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
	if opts.engine == "temporal" {
		// Temporal keeps a run going itself; what is left to ask for is
		// a new run, or Temporal's own reset of the workflow.
		fmt.Fprintf(io.err, "skein resume: --engine temporal: a run on Temporal is not resumed by skein: it goes on by itself when a worker dies, and once it has ended it stays ended\n"+
			"to run its flow again, start a new run (skein run FILE --engine temporal); to run it again from a point in its history, reset its workflow with Temporal's CLI (temporal workflow reset --workflow-id %s --type FirstWorkflowTask --reason REASON, or --event-id N for a later point; skein show %s%s shows the run)\n",
			args[0], args[0], opts.connArgs())
		return exitUsage
	}
	st, r, ok := getRun(io, "resume", opts.store, args[0])
	if !ok {
		return exitFail
	}
	defer st.Close()
	return resumeRun(ctx, io, st, r, opts)
}

// changed reports whether flag name was given.
func (o *resumeOptions) changed(name string) bool { return o.fs != nil && o.fs.Changed(name) }

// check refuses flag values run would refuse.
func (o *resumeOptions) check() error {
	switch {
	case o.changed("parallel") && o.parallel < 1:
		return fmt.Errorf("--parallel must be at least 1, got %d", o.parallel)
	case o.timeout < 0:
		return fmt.Errorf("--timeout must not be negative, got %s", o.timeout)
	case o.changed("max-tokens") && o.maxTokens < 1:
		return fmt.Errorf("--max-tokens must be at least 1, got %d", o.maxTokens)
	case o.changed("cassette") && o.cassette == "":
		return fmt.Errorf("--cassette wants a file")
	case o.json && o.events:
		return fmt.Errorf("--json and --events do not go together: --json prints one object when the run ends, --events one line per event as it goes")
	}
	return nil
}

// runOptions are the options of the resumed run: the recorded ones, each
// replaced by its flag when given.
func (o *resumeOptions) runOptions(rec store.RunOptions) (store.RunOptions, error) {
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
		rec.Cassette = absPath(o.cassette)
	}
	if o.changed("replay-only") {
		rec.ReplayOnly = o.replayOnly
	}
	if rec.ReplayOnly && rec.Cassette == "" {
		return rec, fmt.Errorf("--replay-only needs --cassette FILE, the recorded exchanges to answer from")
	}
	return rec, nil
}

// resumeRun continues run r of store st.
func resumeRun(ctx context.Context, io stdio, st *store.Store, r *store.Run, opts *resumeOptions) int {
	if r.Status == store.Running {
		fmt.Fprintf(io.err, "skein resume: run %s is still running\n", r.ID)
		return exitFail
	}
	if r.Status == string(vm.Succeeded) && opts.from == "" && !opts.reload {
		// Resuming it would replay every step and end as it did: a new
		// run identical to the old one, done silently. (--reload may
		// run steps the flow gained since.)
		fmt.Fprintf(io.err, "skein resume: run %s succeeded: there is nothing left to run; to run a step again, and everything that completed after it, give --from STEP (skein resume %s --from STEP)\n", r.ID, r.ID)
		return exitFail
	}
	ropts, err := opts.runOptions(r.Options)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitUsage
	}
	sources, err := st.Sources(r.ID)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitFail
	}
	lo := loadOptions(r.Root, ropts.MaxLoadSteps)
	if !opts.reload {
		lo.Recorded = frontend.RecordedSources(sources)
	}
	loaded := frontend.Load(r.File, lo)
	g, ds := loaded.Graph, loaded.Diagnostics
	if errs, _ := check.Count(ds); errs > 0 || g == nil {
		check.WriteText(io.err, ds)
		fmt.Fprintf(io.err, "skein: run %s not resumed: its flow has %s\n", r.ID, plural(max(errs, 1), "error"))
		return exitUsage
	}
	check.WriteText(io.err, ds)
	if opts.reload {
		if err := followable(st, r.ID, g); err != nil {
			fmt.Fprintf(io.err, "skein resume: --reload: %v\n", err)
			return exitFail
		}
	}
	inputs, err := recordedInputs(g, r)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: run %s: %v\n", r.ID, err)
		return exitFail
	}

	replay, err := st.Replay(r.ID, opts.from)
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitFail
	}
	var rec *store.Recorder
	resumedFrom := ""
	if r.HasEnded() {
		started := time.Now()
		resumedFrom = r.ID
		rec, err = st.Begin(&store.NewRun{ID: vm.NewRunID(started), Flow: g.Name, File: absPath(g.File), Root: absPath(g.Root),
			Sources: loaded.Sources.List(), Inputs: inputs, Started: started, Options: ropts, ResumedFrom: r.ID})
	} else {
		rec, err = st.Continue(r.ID, ropts)
		if err == nil && opts.reload {
			for _, s := range loaded.Sources.List() {
				if err = rec.AddSource(s); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		fmt.Fprintf(io.err, "skein resume: %v\n", err)
		return exitFail
	}
	prompt := newPrompter(io, opts.noPrompt)
	rec.Inner = &approver{inner: vm.Local{}, rec: rec, st: st, runID: rec.ID(), prompt: prompt}
	replay.Inner = rec
	if resumedFrom != "" {
		replay.CopyTo = rec
	}
	if !opts.json && !opts.events {
		if resumedFrom != "" {
			fmt.Fprintf(io.err, "resuming run %s as run %s\n", r.ID, rec.ID())
		} else {
			fmt.Fprintf(io.err, "resuming run %s\n", r.ID)
		}
	}
	ctx, exitCtx, stop := interrupts(ctx)
	defer stop()
	// A child flow the run loaded loads again from its record; one it
	// never did (or any, with --reload) from the disk, recorded.
	vopts := vm.Options{Parallel: ropts.Parallel, Timeout: ropts.Timeout, MaxTokens: ropts.MaxTokens, RunID: rec.ID(), Effects: replay, ExitCtx: exitCtx,
		LoadFlow: lo.ChildLoader(rec.AddSource)}
	if ropts.Cassette != "" {
		if vopts.Models, err = openCassette(ropts.Cassette, ropts.ReplayOnly); err != nil {
			fmt.Fprintf(io.err, "skein resume: %v\n", err)
			return exitFail
		}
	}
	return execute(ctx, io, g, inputs, vopts, rec, runHooks{prompt: prompt}, resumedFrom, opts.json, opts.events)
}

// recordedInputs binds the inputs recorded with run r to g.
func recordedInputs(g *graphir.Graph, r *store.Run) (*stdlib.Map, error) {
	var in frontend.Inputs
	if err := in.SetRecorded(r.Inputs); err != nil {
		return nil, err
	}
	return in.Bind(g)
}

// followable refuses a reloaded flow that lacks a step the record has a
// completion for, or has it as a different kind of step.
func followable(st *store.Store, id string, g *graphir.Graph) error {
	effects, err := st.Effects(id, 0)
	if err != nil {
		return err
	}
	var names []string
	for _, n := range g.Steps() {
		names = append(names, n.Name)
	}
	for _, e := range effects {
		if e.Status != "succeeded" || isChildPath(e.Path) {
			continue
		}
		n := g.Node(e.Step)
		if n == nil {
			msg := fmt.Sprintf("the flow on disk has no step %q, which run %s completed", e.Step, id)
			msg += spell.Suggest(e.Step, names)
			return fmt.Errorf("%s; run it afresh instead", msg)
		}
		if n.Kind.String() != e.Kind {
			return fmt.Errorf("step %q is a %s step on disk but was a %s step in run %s; run it afresh instead", e.Step, n.Kind, e.Kind, id)
		}
	}
	return nil
}

// isChildPath reports whether a journal path is inside a child flow: its
// last element is a step name rather than a loop iteration or map item.
func isChildPath(path string) bool {
	if path == "" {
		return false
	}
	last := filepath.Base(path)
	n := len(last)
	return !(last[n-1] == ']' || strings.Contains(last, "#"))
}
