package temporal

// This file is forks on Temporal (skein resume --from STEP, --set
// STEP=VALUE): each run keeps a journal of the effects it completed, as
// the run store keeps a local run's (its child workflows' journals folded
// into it under their paths, carried across continue-as-new), and answers
// it to JournalQuery. A fork is a new workflow whose input carries that
// journal: its VM's effects go through the store's replay of it
// ([store.NewReplay]), which answers each completion before the cut from
// the record, so no task or model call is made again, and hands the rest
// to the workflow's producer. A child flow of the fork takes the part of
// the journal under its step into its own workflow's replay.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// JournalQuery answers a run's [Journal]: what a fork of it starts from.
const JournalQuery = "skein.journal"

// Journal answers [JournalQuery].
type Journal struct {
	// Input is the run's input, without the state of a continued run
	// (Snapshot, Carry) and without the journal of a fork (its Fork's
	// other fields stay: a fork of a fork keeps its values).
	Input RunInput
	// Entries are the run's completed effects, in the order they
	// completed.
	Entries []JournalEntry `json:",omitempty"`
	// Lost, when not "", says why the journal is not whole: such a run
	// cannot be forked.
	Lost string `json:",omitempty"`
}

// JournalEntry is one attempt of an effect that completed: a
// [store.Effect] as the run store journals it.
type JournalEntry struct {
	Path             string `json:",omitempty"` // child-flow chain and scope, "/"-joined
	Step             string
	Kind             string
	Visit            int
	Attempt          int
	Status           string
	Done             int64           // completion order within the run
	Code             string          `json:",omitempty"`
	Error            string          `json:",omitempty"`
	Output           json.RawMessage `json:",omitempty"`
	ExitCode         int             `json:",omitempty"`
	Stdout           string          `json:",omitempty"`
	Stderr           string          `json:",omitempty"`
	Truncated        bool            `json:",omitempty"`
	OnExit           bool            `json:",omitempty"`
	Model            string          `json:",omitempty"`
	Answer           string          `json:",omitempty"`
	PromptTokens     int             `json:",omitempty"`
	CompletionTokens int             `json:",omitempty"`
}

func entryOf(e *store.Effect) JournalEntry {
	return JournalEntry{Path: e.Path, Step: e.Step, Kind: e.Kind, Visit: e.Visit, Attempt: e.Attempt, Status: e.Status, Done: e.Done,
		Code: e.Code, Error: e.Error, Output: e.Output, ExitCode: e.ExitCode, Stdout: e.Stdout, Stderr: e.Stderr, Truncated: e.Truncated,
		OnExit: e.OnExit, Model: e.Model, Answer: e.Answer, PromptTokens: e.PromptTokens, CompletionTokens: e.CompletionTokens}
}

func (j *JournalEntry) effect() *store.Effect {
	return &store.Effect{Path: j.Path, Step: j.Step, Kind: j.Kind, Visit: j.Visit, Attempt: j.Attempt, Status: j.Status, Done: j.Done,
		Code: j.Code, Error: j.Error, Output: j.Output, ExitCode: j.ExitCode, Stdout: j.Stdout, Stderr: j.Stderr, Truncated: j.Truncated,
		OnExit: j.OnExit, Model: j.Model, Answer: j.Answer, PromptTokens: j.PromptTokens, CompletionTokens: j.CompletionTokens}
}

func entriesOf(es []*store.Effect) []JournalEntry {
	out := make([]JournalEntry, len(es))
	for i, e := range es {
		out[i] = entryOf(e)
	}
	return out
}

func effectsOf(js []JournalEntry) []*store.Effect {
	out := make([]*store.Effect, len(js))
	for i := range js {
		out[i] = js[i].effect()
	}
	return out
}

// Fork is what a fork starts from: RunInput.Fork.
type Fork struct {
	// From is the run forked (the top-level one, in a child flow's).
	From string
	// Journal is the record the fork answers from: the forked run's
	// journal (a child flow's: the part under its step).
	Journal []JournalEntry `json:",omitempty"`
	// FromStep cuts the record at the first completion of that step
	// (resume --from a step with a completion of its own); CutAt stops
	// answering from it when one of those top-level steps starts.
	FromStep string   `json:",omitempty"`
	CutAt    []string `json:",omitempty"`
	// Set are the outputs the fork gives top-level steps, as JSON.
	Set map[string]json.RawMessage `json:",omitempty"`
}

// journaled journals each completion the effects of a run get (replayed
// ones too, so a fork's journal is whole), then passes it on.
type journaled struct {
	inner vm.EffectProducer
	st    *state
}

func (j *journaled) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	j.inner.Start(ctx, req, func(c *vm.EffectCompletion) {
		j.st.journalAdd(req, c)
		done(c)
	})
}

// Idle implements [vm.EffectIdler] for a replay inside.
func (j *journaled) Idle(flow []string) {
	if in, ok := j.inner.(vm.EffectIdler); ok {
		in.Idle(flow)
	}
}

// forking is how Run forks: the replay of in.Fork's journal in front of
// p, the values set, and an OnEvent that cuts the replay where CutAt says.
func forking(in *RunInput, p *producer) (*store.Replay, map[string]starlark.Value, error) {
	f := in.Fork
	replay, err := store.NewReplay(f.From, effectsOf(f.Journal), f.FromStep)
	if err != nil {
		return nil, nil, err
	}
	replay.Inner = p
	p.replay = replay
	if in.Nesting != nil || len(f.Set) == 0 {
		return replay, nil, nil
	}
	set := make(map[string]starlark.Value, len(f.Set))
	for name, b := range f.Set {
		v, err := stdlib.FromStoredJSON(b)
		if err != nil {
			return nil, nil, fmt.Errorf("--set %s: not a JSON value: %v", name, err)
		}
		set[name] = v
	}
	return replay, set, nil
}

// cutWhere returns f after cutting replay once the first of the top-level
// steps cutAt starts.
func cutWhere(replay *store.Replay, cutAt []string, f func(*vm.Event)) func(*vm.Event) {
	cut := false
	return func(ev *vm.Event) {
		if !cut && ev.Type == vm.StepStarted && len(ev.Flow) == 0 && slices.Contains(cutAt, ev.Step) {
			cut = true
			replay.Cut()
		}
		f(ev)
	}
}

// childFork is the fork input of the child flow req starts in a fork: the
// part of the record under its step, taken from the parent's replay.
func (p *producer) childFork(req *vm.EffectRequest) *Fork {
	if p.replay == nil {
		return nil
	}
	chain := strings.Join(append(append(append([]string{}, req.Flow...), req.Scope...), req.Step), "/")
	return &Fork{From: p.in.Fork.From, Journal: entriesOf(p.replay.Take(chain))}
}

// carryFork is the fork input of the execution a fork continues as: what
// its replay has not answered yet (the cut made: FromStep is done with).
func carryFork(f *Fork, replay *store.Replay) *Fork {
	next := *f
	next.Journal, next.FromStep = entriesOf(replay.Take("")), ""
	return &next
}

// journalAdd journals the completion c of req.
func (s *state) journalAdd(req *vm.EffectRequest, c *vm.EffectCompletion) {
	if s.lost != "" {
		return
	}
	e, err := store.Completed(req, c)
	if err != nil {
		s.lost = fmt.Sprintf("step %q: its output cannot be journaled: %v", req.Step, err)
		s.journal = nil
		return
	}
	s.done++
	e.Done = s.done
	s.journal = append(s.journal, entryOf(e))
}

// journalChild folds the journal of a child workflow that ended into the
// run's, in the order it has them.
func (s *state) journalChild(id string, out *RunOutput) {
	if s.lost != "" {
		return
	}
	if out.JournalLost != "" {
		s.lost, s.journal = fmt.Sprintf("child flow %s: %s", id, out.JournalLost), nil
		return
	}
	for _, e := range out.Journal {
		s.done++
		e.Done = s.done
		s.journal = append(s.journal, e)
	}
}

// journalFits bounds the journal a workflow passes on (to the execution
// it continues as, or in a child's output to its parent) to a quarter of
// the payload limit: past it the journal is dropped, and says why, rather
// than make the payload too large for the run to go on.
func (s *state) journalFits(limit int, what string) {
	if s.lost != "" {
		return
	}
	if limit <= 0 {
		limit = DefaultMaxPayload
	}
	b, _ := json.Marshal(s.journal)
	if len(b) > limit/4 {
		s.lost = fmt.Sprintf("its journal (%d bytes) outgrew a quarter of the payload limit (%d bytes) %s", len(b), limit, what)
		s.journal = nil
	}
}

// journalOf answers JournalQuery.
func (s *state) journalOf(in *RunInput) *Journal {
	j := &Journal{Input: *in, Entries: s.journal, Lost: s.lost}
	j.Input.Snapshot, j.Input.Carry, j.Input.Executions = nil, nil, 0
	// Who makes the spans, and those an execution left open, are the
	// run's: a fork decides its own (Engine.Fork) and starts its trace.
	j.Input.Spans, j.Input.SpanParent, j.Input.SpanCarry, j.Input.SpanFlow = false, "", nil, ""
	if f := in.Fork; f != nil {
		j.Input.Fork = &Fork{From: f.From, Set: f.Set}
	}
	return j
}

// Journal asks the run id for its journal (a run that ended answers too,
// from a worker that replays its history).
func (c *Client) Journal(ctx context.Context, id string) (*Journal, error) {
	var j Journal
	qctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	if err := c.query(qctx, id, JournalQuery, nil, &j); err != nil {
		if strings.Contains(err.Error(), "unknown queryType") || strings.Contains(err.Error(), "unknown query") {
			return nil, fmt.Errorf("run %s keeps no journal (a skein before forks on Temporal started it): it cannot be forked; run its flow again", id)
		}
		return nil, AskErr(id, err)
	}
	return &j, nil
}

// ForkInput is the input of a fork of run id, whose journal is j, from
// step from and with the outputs set (as [runs.ResumeSpec] has them): the
// run's own input with the journal, checked against its flow (g, loaded
// from the sources of the input) as a local resume checks it.
func ForkInput(ctx context.Context, id string, j *Journal, from string, set map[string]json.RawMessage) (*RunInput, *graphir.Graph, error) {
	if j.Lost != "" {
		return nil, nil, fmt.Errorf("run %s cannot be forked: %s", id, j.Lost)
	}
	in := j.Input
	g, err := in.frontend().ChildLoader(nil)(ctx, in.Flow, in.Root)
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: its flow: %v", id, err)
	}
	effects := effectsOf(j.Entries)
	cutAt, fromStep, err := runs.Cuts(g, from, set, func(step string) bool {
		_, err := store.NewReplay(id, effects, step)
		return err == nil
	})
	if err != nil {
		return nil, nil, &runs.UsageError{Err: err}
	}
	if _, err := store.NewReplay(id, effects, fromStep); err != nil {
		return nil, nil, &runs.UsageError{Err: err}
	}
	if len(set) == 0 && in.Fork != nil {
		set = in.Fork.Set // a fork of a fork keeps its values
	}
	in.Fork = &Fork{From: id, Journal: j.Entries, FromStep: fromStep, CutAt: cutAt, Set: set}
	if b, _ := json.Marshal(in); len(b) > DefaultMaxPayload {
		return nil, nil, fmt.Errorf("run %s cannot be forked: the fork's input (its sources and the journal of %d effects) takes %d bytes, over Temporal's payload limit of %d", id, len(j.Entries), len(b), DefaultMaxPayload)
	}
	return &in, g, nil
}

// Fork forks the run spec.Ref names (see [runs.Engine.Fork]): it asks the
// run for its journal and starts a new workflow with the run's input and
// the journal ([ForkInput]).
func (e *Engine) Fork(ctx context.Context, spec *runs.ForkSpec) (runs.Remote, error) {
	wr, err := e.c.Describe(ctx, spec.Ref)
	if err != nil {
		return nil, err
	}
	id := wr.ID
	j, err := e.c.Journal(ctx, id)
	if err != nil {
		return nil, err
	}
	in, g, err := ForkInput(ctx, id, j, spec.From, spec.Set)
	if err != nil {
		return nil, err
	}
	tel := spanProvider().Start(g, telemetry.RunInfo{File: confine.Abs(g.File), Engine: "temporal", Predecessor: id})
	// A fork is followed, as a run Engine.Start starts without detaching:
	// the client makes its spans, the workflow none.
	in.Traced, in.Spans = tel != nil, false
	run, err := e.c.Start(ctx, e.taskQueue, vm.NewRunID(time.Now()), g, *in)
	if err != nil {
		tel.End(nil)
		return nil, err
	}
	return &remote{c: e.c, run: run, tel: tel, unserved: !e.c.HasWorker(e.taskQueue)}, nil
}
