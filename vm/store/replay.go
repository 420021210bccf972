package store

// This file is resume by replay: a producer that answers each effect whose
// successful completion the journal has from the journal, and hands every
// other to the producer it wraps (the journal of the resumed run, which
// runs it for real).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"go.starlark.net/starlark"
)

type effectKey struct {
	path, step string
	visit      int
}

// Replay is the producer of a resumed run. Build it with [Store.Replay].
type Replay struct {
	// Inner does what the record does not have: usually the resumed run's
	// [Recorder], wrapping [vm.Local].
	Inner vm.EffectProducer

	// CopyTo, when the resumed run is a new one, receives every replayed
	// completion so that the new run's record is whole.
	CopyTo *Recorder

	from string    // the run whose record is replayed
	all  []*Effect // the record, exit handlers' effects left out

	mu      sync.Mutex
	drivers map[string]*driverState
	ok      map[effectKey]*Effect // the successful completion of each effect
	kinds   map[effectKey]string
	prior   map[effectKey]int // attempts recorded, successful or not
	left    int               // successful completions not replayed yet
	live    bool              // an effect has run for real
	replays int
}

// Replay prepares the replay of the record of run id. With fromStep set,
// the completions of that step and of everything completed after its first
// completion are dropped, so they run again. Set Inner (and CopyTo) before
// the run starts.
func (s *Store) Replay(id, fromStep string) (*Replay, error) {
	// What the run's dead process left in its side journal is part of
	// the record to replay (Open folds it too, unless it could not).
	if err := s.foldDead(id); err != nil {
		return nil, s.fail(err)
	}
	effects, err := s.Effects(id, 0)
	if err != nil {
		return nil, err
	}
	return NewReplay(id, effects, fromStep)
}

// NewReplay prepares the replay of effects, the journal of run id in the
// order its attempts started (as [Store.Effects] reads it, or as an engine
// that keeps its journal elsewhere has it), with fromStep as in
// [Store.Replay]. Each effect's Done orders the completions of its run.
func NewReplay(id string, effects []*Effect, fromStep string) (*Replay, error) {
	cut := int64(-1)
	if fromStep != "" {
		var steps []string
		for _, e := range effects {
			if e.Step == fromStep && e.Status == "succeeded" && (cut < 0 || e.Done < cut) {
				cut = e.Done
			}
			if !slices.Contains(steps, e.Step) {
				steps = append(steps, e.Step)
			}
		}
		if cut < 0 {
			msg := fmt.Sprintf("run %s has no completed effect step %q to resume from", id, fromStep)
			if n := spell.Nearest(fromStep, steps); n != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", n)
			} else if len(steps) > 0 {
				msg += fmt.Sprintf("; its effect steps are %s", strings.Join(steps, ", "))
			}
			return nil, fmt.Errorf("%s", msg)
		}
	}
	p := &Replay{from: id, drivers: map[string]*driverState{}, ok: map[effectKey]*Effect{}, kinds: map[effectKey]string{}, prior: map[effectKey]int{}}
	for _, e := range effects {
		if e.OnExit {
			continue // exit handlers run again
		}
		p.all = append(p.all, e)
		k := effectKey{e.Path, e.Step, e.Visit}
		p.prior[k] = max(p.prior[k], e.Attempt)
		p.kinds[k] = e.Kind
		if e.Status != "succeeded" || e.Kind == "subflow" || (cut >= 0 && e.Done >= cut) {
			continue
		}
		if _, dup := p.ok[k]; !dup {
			p.ok[k] = e
			p.left++
			d := p.driver(flowKey(e.Path))
			d.seq = append(d.seq, e.Done)
		}
	}
	for _, d := range p.drivers {
		slices.Sort(d.seq)
	}
	return p, nil
}

// Cut drops every completion not replayed yet: from now on, what the run
// asks for runs for real. Completions already asked for still come back
// in their recorded order. (resume --from a step that has no completion
// of its own in the record, such as a fn step, a loop or a router: the
// run is cut where the step starts.)
func (p *Replay) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ok, p.left = map[effectKey]*Effect{}, 0
	for _, d := range p.drivers {
		keep := d.seq[:0]
		for i, o := range d.seq {
			if _, held := d.held[o]; held || d.delivered[o] || i < d.next {
				keep = append(keep, o)
			}
		}
		d.seq = keep
		d.next = min(d.next, len(keep))
	}
}

// Take removes from the replay the record of the child flows whose effects
// are under path (a child-flow step's chain, [EffectPath] of its effects'
// requests), and returns it: for an engine that runs a child flow as a run
// of its own, with a replay of its own made from it ([NewReplay]). A
// completion this replay would no longer answer (cut, or answered) is
// returned as not succeeded, so the child's replay does not answer it
// either but counts its attempts. Take("") takes the whole rest (an engine
// that carries a run on as a new execution).
func (p *Replay) Take(path string) []*Effect {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out, keep []*Effect
	for _, e := range p.all {
		if path != "" && e.Path != path && !strings.HasPrefix(e.Path, path+"/") {
			keep = append(keep, e)
			continue
		}
		k := effectKey{e.Path, e.Step, e.Visit}
		if p.ok[k] == e {
			delete(p.ok, k)
			p.left--
		} else if e.Status == "succeeded" {
			c := *e
			c.Status = "replayed"
			e = &c
		}
		out = append(out, e)
	}
	p.all = keep
	return out
}

// Replayed is how many completions were answered from the record.
func (p *Replay) Replayed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.replays
}

// Start implements [vm.EffectProducer].
func (p *Replay) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.OnExit {
		p.Inner.Start(ctx, req, done)
		return
	}
	k := effectKey{EffectPath(req), req.Step, req.Visit}
	p.mu.Lock()
	e, recorded := p.ok[k]
	kind, seen := p.kinds[k]
	if recorded {
		delete(p.ok, k)
		p.left--
	}
	diverged := ""
	switch {
	case seen && kind != req.Kind.String():
		diverged = fmt.Sprintf("step %q is a %s step, but the record of run %s has it as a %s step", req.Step, req.Kind, p.from, kind)
	case !recorded && !seen && !p.live && p.left > 0 && req.Kind != graphir.KindSubflow:
		diverged = fmt.Sprintf("step %q (visit %d) is not in the record of run %s, which has %s still to replay",
			where(k), req.Visit, p.from, p.nextLeft())
	}
	if diverged == "" && !recorded && req.Kind != graphir.KindSubflow {
		p.live = true
	}
	if recorded {
		p.replays++
	}
	prior := p.prior[k]
	p.mu.Unlock()

	if diverged != "" {
		done(&vm.EffectCompletion{Stop: &graphir.Error{Code: codes.ResumeDiverged, Step: req.Step,
			Msg: diverged + ": the flow or its inputs changed since (resume --from an earlier step, or run it afresh)"}})
		return
	}
	if recorded {
		// Held until the completions recorded before it in its run have
		// been reported: the run sees them in the recorded order.
		p.mu.Lock()
		d := p.driver(strings.Join(req.Flow, "/"))
		d.held[e.Done] = &held{req: req, e: e, done: done}
		out := d.flush(nil)
		p.mu.Unlock()
		p.deliver(out)
		return
	}
	if prior > 0 && req.Kind != graphir.KindSubflow {
		// Attempts count across the record: the first re-execution of an
		// effect that started before is attempt prior+1.
		q := *req
		q.Attempt += prior
		req = &q
	}
	p.Inner.Start(ctx, req, done)
}

// held is a replayed completion waiting for its turn.
type held struct {
	req  *vm.EffectRequest
	e    *Effect
	done func(*vm.EffectCompletion)
}

// driverState is the replay order of one run of the tree (the top-level
// run, or one child flow's), which reports its completions in the order it
// recorded them.
type driverState struct {
	seq       []int64 // completion orders of its replayable records, ascending
	next      int     // seq[next] is the next to report
	held      map[int64]*held
	delivered map[int64]bool
}

func (p *Replay) driver(key string) *driverState {
	d := p.drivers[key]
	if d == nil {
		d = &driverState{held: map[int64]*held{}, delivered: map[int64]bool{}}
		p.drivers[key] = d
	}
	return d
}

// flush appends to out the held completions whose turn has come.
func (d *driverState) flush(out []*held) []*held {
	for d.next < len(d.seq) {
		o := d.seq[d.next]
		if d.delivered[o] {
			d.next++
			continue
		}
		h, ok := d.held[o]
		if !ok {
			break
		}
		delete(d.held, o)
		d.delivered[o] = true
		d.next++
		out = append(out, h)
	}
	return out
}

// Idle implements [vm.EffectIdler]: the run with the child-flow chain flow
// can do nothing until a completion arrives, so the record's order cannot
// be kept (an effect recorded earlier is not asked for: it now waits on an
// effect running for real). The earliest held completion goes out. With
// none held, Inner is told, if it holds work back too (a [Recorder]
// commits; an approval held open may park): when one went out the run is
// not idle, and Inner hears of it at the run's next Idle.
func (p *Replay) Idle(flow []string) {
	p.mu.Lock()
	d := p.drivers[strings.Join(flow, "/")]
	var out []*held
	if d != nil && len(d.held) > 0 {
		first := int64(-1)
		for o := range d.held {
			if first < 0 || o < first {
				first = o
			}
		}
		out = append(out, d.held[first])
		delete(d.held, first)
		d.delivered[first] = true
		out = d.flush(out)
	}
	p.mu.Unlock()
	if len(out) == 0 {
		if in, ok := p.Inner.(vm.EffectIdler); ok {
			in.Idle(flow)
		}
		return
	}
	p.deliver(out)
}

// deliver reports replayed completions, in order, copying each into the
// new run's record first when there is one.
func (p *Replay) deliver(out []*held) {
	for _, h := range out {
		c, err := completionOf(h.req, h.e)
		if err != nil {
			c = &vm.EffectCompletion{Stop: &graphir.Error{Code: codes.ResumeDiverged, Step: h.req.Step,
				Msg: fmt.Sprintf("step %q: cannot read back its recorded output: %v", h.req.Step, err)}}
		} else if p.CopyTo != nil {
			if err := p.CopyTo.record(h.req, h.req.Attempt, c); err != nil {
				c = p.CopyTo.storeStop(err)
			}
		}
		h.done(c)
	}
}

// flowKey is the child-flow chain of a journal path: the elements up to the
// last one that names a step (the rest are the run's own loop iterations and
// map items).
func flowKey(path string) string {
	if path == "" {
		return ""
	}
	parts := strings.Split(path, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if !strings.ContainsAny(parts[i], "#[") {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return ""
}

// nextLeft names the earliest completion not replayed yet.
func (p *Replay) nextLeft() string {
	var left []*Effect
	for _, e := range p.ok {
		left = append(left, e)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].Done < left[j].Done })
	if len(left) == 0 {
		return "nothing"
	}
	return fmt.Sprintf("%q (visit %d)", where(effectKey{left[0].Path, left[0].Step, left[0].Visit}), left[0].Visit)
}

func where(k effectKey) string {
	if k.path == "" {
		return k.step
	}
	return k.path + "/" + k.step
}

// completionOf rebuilds a completion from its record.
func completionOf(req *vm.EffectRequest, e *Effect) (*vm.EffectCompletion, error) {
	c := &vm.EffectCompletion{OK: true, ExitCode: e.ExitCode, Stdout: e.Stdout, Stderr: e.Stderr, Truncated: e.Truncated,
		Model: e.Model, Answer: e.Answer, Replayed: true}
	c.Usage = e.Usage
	if e.Output != nil {
		v, err := stdlib.FromStoredJSON(e.Output)
		if err != nil {
			return nil, err
		}
		c.Output = v
	}
	return c, nil
}

// Completed is the journal entry of the completion c of the effect req
// asks for, as the store records it (an engine that keeps its own journal
// reads it back through [NewReplay]); Done is left for the caller to
// number.
func Completed(req *vm.EffectRequest, c *vm.EffectCompletion) (*Effect, error) {
	e := &Effect{Path: EffectPath(req), Step: req.Step, Kind: req.Kind.String(), Visit: req.Visit, Attempt: req.Attempt,
		Status: "failed", Code: string(c.Code), Error: c.Error, Truncated: c.Truncated, OnExit: req.OnExit}
	switch {
	case c.OK:
		e.Status = "succeeded"
	case c.Cancelled:
		e.Status = "cancelled"
	case c.Park:
		e.Status = Waiting
	}
	if c.Stop != nil {
		e.Code, e.Error = string(c.Stop.Code), c.Stop.Msg
	}
	if req.Kind == graphir.KindTask || req.Kind == graphir.KindShell {
		e.ExitCode, e.Stdout, e.Stderr = c.ExitCode, tail(c.Stdout), tail(c.Stderr)
	} else if c.Output != nil && c.Output != starlark.None {
		b, err := toJSON(c.Output)
		if err != nil {
			return nil, err
		}
		e.Output = b
	}
	if c.Model != "" || c.Answer != "" || c.Usage.Total() > 0 {
		e.Model, e.Answer, e.PromptTokens, e.CompletionTokens = c.Model, c.Answer, c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	return e, nil
}
