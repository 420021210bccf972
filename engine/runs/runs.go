// Package runs is the run service: it starts, resumes, cancels, approves,
// lists and shows the runs of a flow on a run store, for every front end
// that runs flows (the skein command, its REPL and watch, a web service).
//
// A run's effects go through one stack of producers, built in one place
// (see [Service.Start] and [Service.Resume]): the local producer (tasks,
// shells, child flows, model calls on this machine), the approvals
// (decided from the store, asked through the front end's [Asker], or held
// open and parked), the store's recorder (the journal, and the live
// output tees that skein logs --follow reads), and for a resumed run the
// replay of its record. [Service.Record] reads a run back from the store.
//
// The package knows no terminal and no flag: a front end says how to ask
// a person ([Asker]), what to call a flow it loads ([Loader]) and what to
// show; the service returns values and errors for it to show as it likes.
// It does not load the flow a run starts with (the front end loads and
// checks it, and binds its inputs, through lang/frontend); it loads the
// child flows that a templated flow= path names at run time, and a
// recorded run's flow when it resumes it, through lang/frontend too.
package runs

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/proc"
	"github.com/skeinlang/skein/vm/store"
)

// Service runs flows and reads their records on one store.
type Service struct {
	// Store records the runs the service starts; nil runs them
	// unrecorded (and nothing can be resumed, approved later or shown).
	Store *store.Store
	// Load is how the service loads the flows it loads itself (through
	// [frontend.Load]): the child flows that templated flow= paths name
	// at run time, and a recorded run's flow on resume. Root, MaxSteps
	// and Recorded are set for each load; a front end sets the rest
	// (BudgetHint, LeanGC, Print).
	Load frontend.Options
	// Telemetry exports the spans of the runs the service starts and
	// resumes (nil: the process's, from the environment; see
	// [telemetry.Default]).
	Telemetry *telemetry.Provider
	// Engine, when set, is where the runs are: [Service.Approve] and
	// [Service.Cancel] go to it, and Store is not used.
	Engine Engine
}

// Spec is what a run starts with, and how its front end follows it.
type Spec struct {
	// Graph is the flow, loaded and checked; Inputs its bound inputs.
	Graph  *graphir.Graph
	Inputs *stdlib.Map
	// File is what the run is recorded as having been loaded from ("":
	// Graph's file), and Sources the texts it was loaded from, which a
	// resume loads it from again.
	File    string
	Sources []store.Source
	// Named are the same texts by the name the loader read each under:
	// an [Engine] loads the flow again from them, under those names, so
	// that its messages name files as this load's do.
	Named map[string]string
	// Options bound the run, and are recorded with it for a resume to
	// reuse. Cassette and ReplayOnly are only recorded: Models answers.
	Options store.RunOptions
	// Models answers the run's model calls (nil: the VM's own client).
	Models model.Provider
	// Effects, when set, produces every effect of the run instead of the
	// local producer and the approvals (a flow test's mocks); the run is
	// recorded only when the service has a store.
	Effects vm.EffectProducer
	// Ask asks a person for the decisions of approval steps (nil:
	// nobody is asked: with a store the approval is held open and
	// parked, without one the step fails, saying NoDecision).
	Ask        Asker
	NoDecision string
	// Parent is the span the run's trace continues (a caller's, from the
	// request that started it); invalid for a new trace.
	Parent trace.SpanContext
	// Heartbeat, for a run on an [Engine] with workers, is how long a
	// task may go without a heartbeat before its worker counts as lost
	// (0: the engine's default).
	Heartbeat time.Duration
	// SecretsUnread: the effects are mocked (a dry run): secret() is not
	// read (see [vm.Options.SecretsUnread]).
	SecretsUnread bool
	// Detach says the front end will not follow a run on an [Engine]
	// ([Remote.Follow]): it only starts it.
	Detach bool
}

// Run is one run the service started or resumed: call [Run.Run] (or
// [Run.Cancel]) once.
type Run struct {
	// ID is the run's id in the store ("" when it is not recorded: the VM
	// gives it one, in its result).
	ID string
	// ResumedFrom names the ended run a resume continues as this new one
	// ("" for a run resumed under its own id, or not resumed).
	ResumedFrom string

	// OnEvent, set before [Run.Run], receives the run's events (with a
	// store, once what they report is recorded).
	OnEvent func(*vm.Event)
	// Stream, set before [Run.Run], has llm= steps and agent turns
	// stream their replies to OnEvent as model_delta events
	// ([vm.Options.Stream]).
	Stream bool
	// ExitCtx, set before [Run.Run], stops the flow's exit handler at
	// once when done (a second interrupt); nil for never.
	ExitCtx context.Context

	g      *graphir.Graph
	inputs *stdlib.Map
	opts   vm.Options
	rec    *store.Recorder // nil: not recorded
	replay *store.Replay   // a resumed run's
	cutAt  []string        // the replay is cut where the first of these steps starts
	gate   *cancelGate     // a resumed run's, behind its replay
	tel    *telemetry.Run  // nil: no traces

	mu     sync.Mutex
	cancel context.CancelCauseFunc
	cause  error // why it was cancelled (nil: not cancelled)
}

// Start prepares a run of spec.Graph: with a store, the run is recorded
// as running (a store that cannot be written fails here, before anything
// runs), and its effects are journaled. Nothing runs until [Run.Run].
func (s *Service) Start(spec *Spec) (*Run, error) {
	g := spec.Graph
	r := &Run{g: g, inputs: spec.Inputs}
	file := spec.File
	if file == "" {
		file = confine.Abs(g.File)
	}
	r.tel = s.tracing().Start(g, telemetry.RunInfo{File: file, Parent: spec.Parent})
	o := spec.Options
	r.opts = vm.Options{Parallel: o.Parallel, Timeout: o.Timeout, MaxTokens: o.MaxTokens, Models: spec.Models,
		LoadFlow: s.childLoader(nil, nil, o.MaxLoadSteps), SecretsUnread: spec.SecretsUnread}
	r.opts.Secrets = maskCassette(spec.Models)
	var inner vm.EffectProducer = spec.Effects
	if inner == nil {
		if mayRunProcesses(g) {
			proc.WarmKeeper() // while the run is recorded
		}
		inner = &approvals{inner: r.tel.Effects(vm.Local{}), ask: spec.Ask, noDecision: spec.NoDecision}
	}
	if s.Store == nil {
		r.opts.Effects = inner
		return r, nil
	}
	started := time.Now()
	rec, err := s.Store.Begin(&store.NewRun{ID: vm.NewRunID(started), Flow: g.Name, File: file, Root: confine.Abs(g.Root),
		Sources: spec.Sources, Inputs: withoutSecrets(g, spec.Inputs), Started: started, Options: o})
	if err != nil {
		return nil, err
	}
	r.record(rec, inner, nil)
	r.opts.LoadFlow = s.childLoader(rec, nil, o.MaxLoadSteps)
	return r, nil
}

// record makes the run recorded by rec: the one stack of producers every
// recorded run's effects go through, outermost first: the replay of the
// record being resumed (if any), the recorder (journal and live tees),
// the approvals, the local producer (or, for inner other than the
// approvals, inner: a flow test's mocks).
func (r *Run) record(rec *store.Recorder, inner vm.EffectProducer, replay *store.Replay) {
	if ap, ok := inner.(*approvals); ok {
		ap.rec, ap.st, ap.runID = rec, rec.Store(), rec.ID()
	}
	rec.Inner = inner
	r.rec, r.ID = rec, rec.ID()
	r.opts.RunID, r.opts.Effects = rec.ID(), rec
	if replay != nil {
		r.replay = replay
		r.gate = &cancelGate{inner: rec, run: r}
		replay.Inner = r.gate
		if r.ResumedFrom != "" {
			replay.CopyTo = rec
		}
		r.opts.Effects = replay
	}
}

// Run runs the run until it ends, or ctx is done (it is then cancelled:
// running tasks are signalled and waited for, the exit handler runs), and
// records how it ended. The result is never nil; the error says that the
// end could not be recorded.
func (r *Run) Run(ctx context.Context) (*vm.Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.mu.Lock()
	if r.cause != nil {
		cancel(r.cause)
	}
	r.cancel = cancel
	r.mu.Unlock()
	opts := r.opts
	opts.OnEvent, opts.ExitCtx, opts.Stream = r.tel.Events(r.OnEvent), r.ExitCtx, r.Stream
	if r.rec != nil {
		opts.OnEvent = r.rec.Events(opts.OnEvent)
		defer r.watchCancel(ctx)()
	}
	if len(r.cutAt) > 0 {
		opts.OnEvent = r.cutWhere(opts.OnEvent)
	}
	res := vm.Prepare(r.g).Run(ctx, r.inputs, opts)
	res.ResumedFrom = r.ResumedFrom
	r.tel.End(res)
	if r.rec != nil {
		if err := r.rec.Finish(res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Cancel cancels the run, as ctx ending does: from another goroutine
// while [Run.Run] runs, or before it (it then ends at once, cancelled).
func (r *Run) Cancel() { r.cancelWith(context.Canceled) }

// Graph is the run's flow, as loaded (a resumed run's, from its record).
func (r *Run) Graph() *graphir.Graph { return r.g }

// cancelWith cancels the run with cause, whose message becomes the run's
// error ([context.Canceled]: "the run was cancelled"); the first cause
// stands.
func (r *Run) cancelWith(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cause != nil {
		return
	}
	r.cause = cause
	if r.cancel != nil {
		r.cancel(cause)
	}
}

// cutWhere returns f, after cutting the replay once the first of the
// steps r.cutAt starts at the top level (resume --from a step without a
// completion of its own, --set).
func (r *Run) cutWhere(f func(*vm.Event)) func(*vm.Event) {
	var cut atomic.Bool // child flows' events come from other goroutines
	return func(ev *vm.Event) {
		if ev.Type == vm.StepStarted && len(ev.Flow) == 0 && slices.Contains(r.cutAt, ev.Step) && cut.CompareAndSwap(false, true) {
			r.replay.Cut()
		}
		if f != nil {
			f(ev)
		}
	}
}

// childLoader loads and checks a child flow that a templated flow= path
// names at run time, inside the parent's flow root, with the load-time
// step budget maxSteps (0: the default). With rec, the files it reads are
// recorded in the run's sources; with recorded, a file among them is read
// from there (a resumed run), and one not among them from the disk.
func (s *Service) childLoader(rec *store.Recorder, recorded frontend.Recorded, maxSteps uint64) func(context.Context, string, string) (*graphir.Graph, error) {
	lo := s.Load
	lo.MaxSteps, lo.Recorded = maxSteps, recorded
	if rec == nil {
		return lo.ChildLoader(nil)
	}
	return lo.ChildLoader(rec.AddSource)
}

// tracing is the provider of the service's runs' traces (nil: none).
// A provider the environment asks for but that cannot be made leaves the
// runs untraced: it said why when the front end asked [telemetry.Default].
func (s *Service) tracing() *telemetry.Provider {
	if s.Telemetry != nil {
		return s.Telemetry
	}
	p, _ := telemetry.Default()
	return p
}

// mayRunProcesses reports whether a run of g may start a process: it has
// a task or shell step, or a child flow or an agent, which may.
func mayRunProcesses(g *graphir.Graph) bool {
	for _, n := range g.Nodes {
		if n.Kind.IsProcess() || n.Kind == graphir.KindSubflow || n.Kind == graphir.KindAgent {
			return true
		}
	}
	return false
}

// withoutSecrets returns in with the value of every secret input of g
// replaced by [secrets.Mask], as the store keeps it: a secret is never
// stored, and a resume asks for it again (see [ResumeSpec.Secrets]).
func withoutSecrets(g *graphir.Graph, in *stdlib.Map) *stdlib.Map {
	names := g.SecretInputs()
	if len(names) == 0 || in == nil {
		return in
	}
	return in.WithValues(func(k string, v starlark.Value) starlark.Value {
		if slices.Contains(names, k) {
			return starlark.String(secrets.Mask)
		}
		return v
	})
}

// maskCassette returns the masker of a run's secrets, which also masks
// the cassette that models answers from, if one does.
func maskCassette(models model.Provider) *secrets.Masker {
	m := new(secrets.Masker)
	if c, ok := models.(*model.Cassette); ok {
		c.Mask = m.MaskBytes
	}
	return m
}
