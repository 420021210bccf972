package runs

// This file is resuming a recorded run: its flow loaded again from the
// recorded sources (or the disk), its journal replayed, and the first
// effect without a successful record run for real.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/store"
	"go.starlark.net/starlark"
)

// ResumeSpec is what a resume continues, and how.
type ResumeSpec struct {
	// Secrets are the values of the flow's secret inputs, which the
	// record does not keep: each must be given again.
	Secrets map[string]string
	// Run is the recorded run to continue: an interrupted or waiting one
	// continues under its own id; an ended one (failed, cancelled,
	// succeeded) is never changed: a new run continues it and names it
	// in its resumed_from.
	Run *store.Run
	// Ref, when Run is nil, names the run to continue (an id, a unique
	// prefix of one, or "last"): [Service.Resume] reads it and sets Run.
	Ref string
	// Adjust, when set, is called with the run once it is known to be
	// resumable, before its flow is loaded: a front end sets Options and
	// Models there from the recorded options (some replaced by its own),
	// or refuses with an error, which Resume returns.
	Adjust func(r *store.Run, spec *ResumeSpec) error
	// From, when set, runs that step again, and everything that
	// completed after it: for a step with a recorded completion (a task,
	// a model call...), from that completion on; for any other (a fn
	// step, a loop, a map, a router), from where it starts in the replay.
	From string
	// Set, when given, forks the run (a what-if): a new run that names
	// it in resumed_from, in which each named top-level step does not run
	// but ends with the given output (JSON text), and what runs after it
	// (as for From) runs again; everything before it is answered from
	// the record. The values are recorded with the fork's options, so a
	// resume of the fork keeps them.
	Set map[string]json.RawMessage
	// Reload loads the flow's files from the disk instead of the sources
	// recorded with the run; the run then fails with resume_diverged when
	// the changed flow asks for something its record cannot answer.
	Reload bool
	// Options are the resumed run's: the recorded ones, or others given.
	Options store.RunOptions
	// Models, Effects, Ask and NoDecision are as in [Spec].
	Models     model.Provider
	Effects    vm.EffectProducer
	Ask        Asker
	NoDecision string
}

// ErrStillRunning is returned (wrapped) for a resume of a run that is
// still running: its process runs it, or another resume has just taken
// it over (one resume per run); the message names the process.
var ErrStillRunning = errors.New("still running")

// stillRunning is the [ErrStillRunning] of run id, held by process pid
// on host.
func stillRunning(id string, pid int, host string) error {
	return fmt.Errorf("run %s is %w (process %d on %s holds it)", id, ErrStillRunning, pid, host)
}

// ErrNothingLeft is returned (wrapped) for a resume of a succeeded run
// with neither From nor Reload: it would replay every step and end as it
// did.
var ErrNothingLeft = errors.New("succeeded: there is nothing left to run")

// ErrReloadDiverged is returned (wrapped) when the flow on the disk lacks
// a step the record has a completion for, or has it as another kind of
// step (ResumeSpec.Reload).
var ErrReloadDiverged = errors.New("the flow on disk differs from the record")

// InvalidFlowError is returned when a run's flow, loaded again, does not
// load or check; its diagnostics are returned beside it.
type InvalidFlowError struct {
	Run    string
	Errors int
}

func (e *InvalidFlowError) Error() string {
	if e.Errors == 1 {
		return fmt.Sprintf("run %s not resumed: its flow has 1 error", e.Run)
	}
	return fmt.Sprintf("run %s not resumed: its flow has %d errors", e.Run, e.Errors)
}

// Resumable says why run r cannot be resumed (with from and reload as in
// [ResumeSpec]), or nil.
func Resumable(r *store.Run, from string, reload bool) error {
	switch {
	case r.Status == store.Running:
		return stillRunning(r.ID, r.OwnerPID, r.OwnerHost)
	case r.Status == string(vm.Succeeded) && from == "" && !reload:
		return fmt.Errorf("run %s %w", r.ID, ErrNothingLeft)
	}
	return nil
}

// Resume prepares the resume of spec.Run (or of the run spec.Ref names,
// read into spec.Run): its flow loaded again and
// checked (the diagnostics are returned, warnings included, whatever the
// error), its inputs bound again, and its record taken over (or a new
// run begun). Nothing runs until [Run.Run].
func (s *Service) Resume(spec *ResumeSpec) (*Run, []check.Diagnostic, error) {
	if spec.Run == nil {
		r, err := s.Store.Get(spec.Ref)
		if err != nil {
			return nil, nil, err
		}
		spec.Run = r
	}
	r := spec.Run
	what := spec.From
	if what == "" && len(spec.Set) > 0 {
		what = "--set" // something to run again
	}
	if err := Resumable(r, what, spec.Reload); err != nil {
		return nil, nil, err
	}
	if spec.Adjust != nil {
		if err := spec.Adjust(r, spec); err != nil {
			return nil, nil, err
		}
	}
	ropts := spec.Options
	sources, err := s.Store.Sources(r.ID)
	if err != nil {
		return nil, nil, err
	}
	lo := s.Load
	lo.Root, lo.MaxSteps = r.Root, ropts.MaxLoadSteps
	if !spec.Reload {
		lo.Recorded = frontend.RecordedSources(sources)
	}
	f := frontend.Load(r.File, lo)
	g, ds := f.Graph, f.Diagnostics
	if n := f.Errors(); n > 0 {
		return nil, ds, &InvalidFlowError{Run: r.ID, Errors: n}
	}
	if spec.Reload {
		if err := followable(s.Store, r.ID, g); err != nil {
			return nil, ds, err
		}
	}
	given := &frontend.Inputs{}
	err = given.SetRecorded(r.Inputs)
	var inputs *stdlib.Map
	if err == nil {
		inputs, err = given.Bind(g)
	}
	if err != nil {
		return nil, ds, fmt.Errorf("run %s: %v", r.ID, err)
	}
	// A secret is never stored: read each again, before anything is
	// recorded or runs.
	if inputs, err = withSecrets(g, inputs, spec.Secrets); err != nil {
		return nil, ds, fmt.Errorf("run %s: %v", r.ID, err)
	}
	if _, err := vm.ReadSecrets(g, os.Environ(), new(secrets.Masker)); err != nil {
		return nil, ds, err
	}
	cutAt, from, err := Cuts(g, spec.From, spec.Set, func(step string) bool {
		_, err := s.Store.Replay(r.ID, step)
		return err == nil
	})
	if err != nil {
		return nil, ds, err
	}
	replay, err := s.Store.Replay(r.ID, from)
	if err != nil {
		return nil, ds, err
	}
	if len(spec.Set) > 0 {
		ropts.Set = spec.Set
	}
	set, err := setValues(ropts.Set)
	if err != nil {
		return nil, ds, err
	}
	run := &Run{g: g, inputs: inputs, cutAt: cutAt}
	var rec *store.Recorder
	if r.HasEnded() || len(spec.Set) > 0 {
		started := time.Now()
		run.ResumedFrom = r.ID
		rec, err = s.Store.Begin(&store.NewRun{ID: vm.NewRunID(started), Flow: g.Name, File: confine.Abs(g.File), Root: confine.Abs(g.Root),
			Sources: f.Sources.List(), Inputs: withoutSecrets(g, inputs), Started: started, Options: ropts, ResumedFrom: r.ID})
	} else {
		rec, err = s.Store.Continue(r.ID, ropts)
		var held *store.HeldError
		if errors.As(err, &held) {
			return nil, ds, stillRunning(r.ID, held.PID, held.Host)
		}
		if err == nil && spec.Reload {
			for _, src := range f.Sources.List() {
				if err = rec.AddSource(src); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		return nil, ds, err
	}
	run.opts = vm.Options{Parallel: ropts.Parallel, Timeout: ropts.Timeout, MaxTokens: ropts.MaxTokens, Models: spec.Models, Set: set}
	run.opts.Secrets = maskCassette(spec.Models)
	run.tel = s.tracing().Start(g, telemetry.RunInfo{File: r.File, Predecessor: r.ID})
	inner := spec.Effects
	if inner == nil {
		inner = &approvals{inner: run.tel.Effects(vm.Local{}), ask: spec.Ask, noDecision: spec.NoDecision}
	}
	run.record(rec, inner, replay)
	run.opts.LoadFlow = s.childLoader(rec, lo.Recorded, ropts.MaxLoadSteps)
	return run, ds, nil
}

// Cuts checks the steps a resume of a run of g sets (ResumeSpec.Set) and
// resumes from (ResumeSpec.From), and says where the replay of its record
// stops answering: when one of the steps cutAt starts, and (fromStep, as
// [store.Replay] takes it) at the first recorded completion of from, when
// completed says the record has one. A step without a completion of its
// own (a fn step, a loop, a map, a router) is among cutAt; from, when not
// a step of g, is returned as fromStep for the replay to refuse, naming
// the steps it has.
func Cuts(g *graphir.Graph, from string, set map[string]json.RawMessage, completed func(step string) bool) (cutAt []string, fromStep string, err error) {
	for _, name := range slices.Sorted(maps.Keys(set)) {
		n := g.Node(name)
		switch {
		case n == nil || !n.IsStep():
			return nil, "", fmt.Errorf("--set: flow %s has no step %q%s", g.Name, name, spell.Suggest(name, g.StepNames()))
		case n.Parent != graphir.None:
			return nil, "", fmt.Errorf("--set: step %q is inside the body of %q: set the loop or map instead", name, g.Nodes[n.Parent].Name)
		case n.Kind == graphir.KindRouter:
			return nil, "", fmt.Errorf("--set: step %q is a router, whose route is not an output: set the step it reads instead", name)
		}
		cutAt = append(cutAt, name)
	}
	if from != "" && g.Node(from) != nil && g.Node(from).IsStep() && !completed(from) {
		// No completion of its own in the record: the replay is cut
		// where it starts.
		return append(cutAt, from), "", nil
	}
	return cutAt, from, nil
}

// setValues reads the recorded outputs of a what-if fork.
func setValues(set map[string]json.RawMessage) (map[string]starlark.Value, error) {
	if len(set) == 0 {
		return nil, nil
	}
	out := make(map[string]starlark.Value, len(set))
	for name, b := range set {
		v, err := stdlib.FromStoredJSON(b)
		if err != nil {
			return nil, fmt.Errorf("--set %s: not a JSON value: %v", name, err)
		}
		out[name] = v
	}
	return out, nil
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
			return &divergedError{msg + "; run it afresh instead"}
		}
		if n.Kind.String() != e.Kind {
			return &divergedError{fmt.Sprintf("step %q is a %s step on disk but was a %s step in run %s; run it afresh instead", e.Step, n.Kind, e.Kind, id)}
		}
	}
	return nil
}

// divergedError is an [ErrReloadDiverged] that says how.
type divergedError struct{ msg string }

func (e *divergedError) Error() string        { return e.msg }
func (e *divergedError) Is(target error) bool { return target == ErrReloadDiverged }

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

// withSecrets returns in with the value of each secret input of g taken
// from given (the record keeps [secrets.Mask] in its place): one not given
// is an error naming it.
func withSecrets(g *graphir.Graph, in *stdlib.Map, given map[string]string) (*stdlib.Map, error) {
	names := g.SecretInputs()
	if len(names) == 0 {
		return in, nil
	}
	for _, name := range names {
		if _, ok := given[name]; !ok {
			return nil, fmt.Errorf("secret input %q is not recorded: give it again (--input %s=...)", name, name)
		}
	}
	return in.WithValues(func(k string, v starlark.Value) starlark.Value {
		if s, ok := given[k]; ok && slices.Contains(names, k) {
			return starlark.String(s)
		}
		return v
	}), nil
}
