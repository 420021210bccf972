package main

// This file defines the flag groups that several commands share, each in
// one place: where runs are recorded (--store, --no-store), how a run's
// end is printed (--json, --events), the bounds of a run (--parallel,
// --timeout, --max-tokens, --max-load-steps) and the cassette of model
// exchanges (--cassette, --replay-only). --input and --inputs-file are
// [inputFlags]; --engine and how to reach Temporal are [engineFlags].

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// storeFlag defines --store on a command that names a recorded run rather
// than a flow (approve, resume, runs, show, logs, gc).
func storeFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "store", "", "the run store (default: $SKEIN_STORE, else the nearest .skein/runs.db at or above the current directory)")
}

// recordFlags are --store and --no-store of the commands that start runs
// (run, repl, watch).
type recordFlags struct {
	store   string
	noStore bool
}

// define adds the flags; what names the runs recorded (":run's runs"),
// dflt the store used without --store.
func (f *recordFlags) define(fs *pflag.FlagSet, what, dflt string) {
	fs.StringVar(&f.store, "store", "", "record "+what+" in this store (default: "+dflt+")")
	fs.BoolVar(&f.noStore, "no-store", false, "do not record "+what)
}

// conflict refuses --store given with --no-store: the run would otherwise
// go unrecorded although a store was named.
func (f *recordFlags) conflict(cmd string) error {
	if f.store != "" && f.noStore {
		return fmt.Errorf("skein %s: --store and --no-store do not go together: --store PATH records the run in PATH, --no-store records nothing", cmd)
	}
	return nil
}

// outputFlags choose how a run is printed (run, resume): progress, the
// result as JSON at the end, or events as they come.
type outputFlags struct {
	json   bool
	events bool
}

func (f *outputFlags) define(fs *pflag.FlagSet) {
	fs.BoolVar(&f.json, "json", false, "print only the result, as JSON, when the run ends")
	fs.BoolVar(&f.events, "events", false, "print one JSON object per event per line as the run goes")
}

// check refuses --json with --events.
func (f *outputFlags) check() error {
	if f.json && f.events {
		return fmt.Errorf("--json and --events do not go together: --json prints one object when the run ends, --events one line per event as it goes")
	}
	return nil
}

// limitFlags bound a run (run, resume): the steps at once, its time, the
// tokens of its model calls and the load-time steps of its flows.
type limitFlags struct {
	parallel  int
	timeout   time.Duration
	maxTokens int
	maxLoad   uint64
}

// define adds the flags; asRecorded: their defaults are the values
// recorded with the run being resumed.
func (f *limitFlags) define(fs *pflag.FlagSet, asRecorded bool) {
	if asRecorded {
		fs.IntVarP(&f.parallel, "parallel", "p", 0, "task, shell and model-call steps run at once (default: as recorded)")
		fs.DurationVar(&f.timeout, "timeout", 0, "stop the run after this long (default: as recorded)")
		fs.IntVar(&f.maxTokens, "max-tokens", 0, "bound the tokens the run's model calls may spend (default: as recorded)")
		fs.Uint64Var(&f.maxLoad, "max-load-steps", 0, "Starlark steps loading the flow may take, for flows that generate very many steps (default: as recorded)")
		return
	}
	fs.IntVarP(&f.parallel, "parallel", "p", 0, fmt.Sprintf("task, shell and model-call steps run at once in the whole run tree (default %d)", vm.DefaultParallel))
	fs.DurationVar(&f.timeout, "timeout", 0, "stop the run after this long (overrides the flow's timeout)")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "bound the tokens the run's model calls may spend (overrides flow(max_tokens=))")
	defineMaxLoadSteps(fs, &f.maxLoad)
}

// check refuses bounds no run can have; fs tells a flag given as 0 from
// one not given.
func (f *limitFlags) check(fs *pflag.FlagSet) error {
	changed := func(name string) bool { return fs != nil && fs.Changed(name) }
	switch {
	case changed("parallel") && f.parallel < 1:
		return fmt.Errorf("--parallel must be at least 1, got %d", f.parallel)
	case f.timeout < 0:
		return fmt.Errorf("--timeout must not be negative, got %s", f.timeout)
	case f.maxTokens < 0 || (changed("max-tokens") && f.maxTokens < 1):
		return fmt.Errorf("--max-tokens must be at least 1, got %d", f.maxTokens)
	}
	return nil
}

// defineMaxLoadSteps adds --max-load-steps, the load-time step budget
// (check, and run through [limitFlags]).
func defineMaxLoadSteps(fs *pflag.FlagSet, v *uint64) {
	fs.Uint64Var(v, "max-load-steps", 0, fmt.Sprintf("Starlark steps loading the flow may take, for flows that generate very many steps (default %d)", lang.DefaultMaxSteps))
}

// cassetteFlags are --cassette and --replay-only: the file that records
// model exchanges and answers from them (run, resume, worker, compose).
type cassetteFlags struct {
	cassette   string
	replayOnly bool
}

// Their help, as run and worker give it.
const (
	cassetteHelp   = "record model exchanges into this file, and answer from it when it has them"
	replayOnlyHelp = "with --cassette: answer model calls only from the cassette (a missing one is replay_miss)"
)

func (f *cassetteFlags) define(fs *pflag.FlagSet, cassette, replayOnly string) {
	fs.StringVar(&f.cassette, "cassette", "", cassette)
	fs.BoolVar(&f.replayOnly, "replay-only", false, replayOnly)
}

// open opens the cassette (nil for none), recording through a live client
// unless --replay-only.
func (f *cassetteFlags) open() (model.Provider, error) {
	if f.cassette == "" {
		return nil, nil
	}
	return openCassette(f.cassette, f.replayOnly)
}

// modelFlag is --model (run and resume): "stub" or "stub:FILE", the
// built-in offline model answering every model call of the run.
const modelHelp = "answer every model call with Skein's built-in offline model: stub, or stub:FILE for the rules it answers from (docs/models.md); no key or server is needed"

// parseModelFlag checks --model's value and returns it as a run records it
// (the rules file made absolute).
func parseModelFlag(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if v == model.ProviderStub {
		return v, nil
	}
	file, ok := strings.CutPrefix(v, model.ProviderStub+":")
	if !ok || file == "" {
		return "", fmt.Errorf("--model takes stub or stub:FILE (the offline model and its rules), got %q; a real model is chosen with model() in the flow or $SKEIN_MODEL", v)
	}
	return model.ProviderStub + ":" + confine.Abs(file), nil
}

// openStub returns the offline model of a --model value as recorded.
func openStub(v string) (model.Provider, error) {
	file, _ := strings.CutPrefix(v, model.ProviderStub)
	file = strings.TrimPrefix(file, ":")
	if file == "" {
		return model.Stub{}, nil
	}
	rules, err := model.ReadAnswers(file)
	if err != nil {
		return nil, fmt.Errorf("--model: %v", err)
	}
	return model.Stub{Rules: rules}, nil
}

// openCassette opens the cassette at path, recording through a live client
// unless replayOnly (skein run, resume, worker and compose's --cassette).
func openCassette(path string, replayOnly bool) (model.Provider, error) {
	var live model.Provider
	if !replayOnly {
		live = &model.Client{}
	}
	c, err := model.OpenCassette(path, replayOnly, live)
	if err != nil {
		return nil, err
	}
	return c, nil
}
