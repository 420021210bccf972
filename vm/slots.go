package vm

// This file defines the --parallel budget of a run tree: one count of the
// effects doing work (tasks, shells, model calls, agent tool calls) across
// a run and all its child flows, so nesting never multiplies it.

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
// effect and an agent's tool calls, which were not gated when they began.
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

// doesWork reports whether an effect of step n takes a slot: child flows,
// waits and approvals do no work of their own.
func doesWork(n *graphir.Node, req *EffectRequest) bool {
	if req != nil && req.Tool != "" {
		return req.Kind != graphir.KindSubflow // a flow= tool's child takes slots for its own work
	}
	switch n.Kind {
	case graphir.KindSubflow, graphir.KindWait, graphir.KindApproval:
		return false
	}
	return true
}
