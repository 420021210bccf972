package vm

// This file defines the --parallel budget of a run tree: one count of the
// effects doing work (tasks, shells, model calls, agent tool calls) across
// a run and all its child flows, so nesting never multiplies it, and the
// queue in which the effects of running agent steps wait for it.

import (
	"sync"

	"github.com/skeinlang/skein/graphir"
)

// slots is one run tree's budget. A run takes a slot when it starts an
// effect that does work and gives it back when the completion arrives.
// Runs that found the budget spent wait on their inbox; a slot given back
// wakes them.
type slots struct {
	mu      sync.Mutex
	limit   int
	used    int
	waiting []chan struct{}
}

// reserve takes a slot if one is free; if none is, wake is signalled when
// one is given back.
func (s *slots) reserve(wake chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used < s.limit {
		s.used++
		return true
	}
	s.waiting = append(s.waiting, wake)
	return false
}

// take takes a slot whether or not one is free: for the retries of an
// effect, which was not gated when it began.
func (s *slots) take() {
	s.mu.Lock()
	s.used++
	s.mu.Unlock()
}

// give returns a slot and wakes the runs waiting for one.
func (s *slots) give() {
	s.mu.Lock()
	s.used--
	waiting := s.waiting
	s.waiting = nil
	s.mu.Unlock()
	for _, w := range waiting {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// effect is what running a step asks of the world outside the core.
type effect int

const (
	// noEffect: the step finishes inside the core (fn, noop, a router
	// without a prompt, loops and maps, whose bodies are steps).
	noEffect effect = iota
	// waiting: the outcome comes from elsewhere or from time (child
	// flows, waits, approvals); the step takes no slot of the budget, and
	// a child flow's own steps take theirs.
	waiting
	// working: the step's effect does work (tasks, shells, model calls,
	// agents, a router with a prompt) and takes a slot while it runs.
	working
)

// effectOf says what effect step n has.
func effectOf(n *graphir.Node) effect {
	switch n.Kind {
	case graphir.KindTask, graphir.KindShell, graphir.KindLLM, graphir.KindAgent:
		return working
	case graphir.KindSubflow, graphir.KindWait, graphir.KindApproval:
		return waiting
	case graphir.KindRouter:
		if n.Call != nil {
			return working
		}
	}
	return noEffect
}

// takesSlot reports whether the effect req of step n, as it starts, takes
// a slot: every effect does but those of a waiting step (a judged loop is
// no effect itself, but its judge is a model call, which works), and an
// agent's tool call takes one as its tool would.
func takesSlot(n *graphir.Node, req *EffectRequest) bool {
	if req.Tool != "" {
		// A flow= tool's child takes slots for its own work; a call's
		// approval waits for a person.
		return req.Kind != graphir.KindSubflow && req.Kind != graphir.KindApproval
	}
	return effectOf(n) != waiting
}

// queued is an effect of a running step waiting for a slot: an agent's
// tool call, or its next model call.
type queued struct {
	f   *frame
	n   *graphir.Node
	req *EffectRequest
}

// startGated starts an effect of an agent step that is already running
// once the run tree's budget has a slot for it: at once when dispatch has
// reserved one for the step it is entering or the effect does no work of
// its own, else after the effects queued before it. The step holds no slot
// while its effects wait, so waiting can never deadlock the budget.
func (r *run) startGated(f *frame, n *graphir.Node, req *EffectRequest) {
	if r.reserved || !takesSlot(n, req) {
		r.startEffect(f, n, req)
		return
	}
	r.slotq = append(r.slotq, queued{f, n, req})
	r.startQueued()
}

// startQueued starts queued effects, oldest first, while slots are free.
// An effect whose frame was abandoned is dropped, its step cancelled.
func (r *run) startQueued() {
	for len(r.slotq) > 0 && !r.over {
		q := r.slotq[0]
		if q.f.abandoned() {
			r.slotq = r.slotq[1:]
			if rec := r.recs[q.n.ID]; rec.Status == StepRunning {
				rec.Status = StepCancelled
			}
			continue
		}
		if !r.opts.slots.reserve(r.inbox.wake) {
			return
		}
		r.slotq = r.slotq[1:]
		if r.ctx.Err() != nil {
			r.opts.slots.give()
			r.interrupted()
			return
		}
		r.reserved = true
		r.startEffect(q.f, q.n, q.req)
		r.reserved = false
	}
}
