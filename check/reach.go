package check

// This file checks that control can flow: unreachable_step,
// exit_unreachable, dead_end. Each scope (the top level, and the body of
// each loop and map) is checked on its own: a body starts at its first step
// and ends an iteration at any step with nowhere further to go in the body.

import (
	"fmt"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

func checkReachability(p *pass) {
	g := p.g
	scopes := []graphir.NodeID{graphir.None}
	for _, n := range g.Steps() {
		if n.HasBody() && len(n.Body) > 0 {
			scopes = append(scopes, n.ID)
		}
	}
	for _, s := range scopes {
		p.reachScope(s)
	}
}

// inScope reports whether edge e stays inside scope s, counting END and
// ABORT as part of every scope they may be reached from (END only from the
// top level).
func inScope(g *graphir.Graph, e *graphir.Edge, s graphir.NodeID) bool {
	to := g.Nodes[e.To]
	switch e.To {
	case graphir.End:
		return s == graphir.None
	case graphir.Abort:
		return true
	case graphir.Start:
		return false
	}
	return to.Parent == s
}

func (p *pass) reachScope(s graphir.NodeID) {
	g := p.g
	steps := g.Scope(s)
	var root graphir.NodeID
	if s == graphir.None {
		root = graphir.Start
	} else {
		root = g.Nodes[s].Body[0]
	}

	// Forward: what the scope's entry reaches.
	reached, exits := &p.sets[0], &p.sets[1]
	reached.clear(len(g.Nodes))
	exits.clear(len(g.Nodes))
	reached.add(root)
	queue := []graphir.NodeID{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, eid := range g.Nodes[id].Out {
			e := g.Edges[eid]
			if inScope(g, e, s) && !reached.has(e.To) {
				reached.add(e.To)
				queue = append(queue, e.To)
			}
		}
	}

	// Backward: what reaches an exit. At the top level the exits are END
	// and ABORT; in a body, ABORT and any step that can finish the
	// iteration by succeeding with no edge left to follow.
	queue = queue[:0]
	mark := func(id graphir.NodeID) {
		if !exits.has(id) {
			exits.add(id)
			queue = append(queue, id)
		}
	}
	mark(graphir.Abort)
	if s == graphir.None {
		mark(graphir.End)
	} else {
		for _, id := range steps {
			if !p.continuesOnSuccess(g.Nodes[id], s) {
				mark(id)
			}
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, eid := range g.Nodes[id].In {
			e := g.Edges[eid]
			if from := g.Nodes[e.From]; inScope(g, e, s) && (from.IsStep() || e.From == graphir.Start) {
				mark(e.From)
			}
		}
	}

	if s == graphir.None && !reached.has(graphir.End) && len(steps) > 0 {
		hint := "add an edge to END, e.g. chain(..., END)"
		for _, id := range steps {
			if n := g.Nodes[id]; reached.has(id) && len(n.Out) == 0 {
				hint = fmt.Sprintf("add edge(%s, END)", n.Name)
				break
			}
		}
		p.report(codes.ExitUnreachable, nil, p.flowPos(), "END cannot be reached from START", hint)
	}
	for _, id := range steps {
		n := g.Nodes[id]
		if id == g.OnExit {
			continue // runs after the run, reached by no edge (exit.go)
		}
		if !reached.has(id) {
			where := "START"
			if s != graphir.None {
				where = fmt.Sprintf("the start of the body of %s %q (its first step, %q)", g.Nodes[s].Kind, g.Nodes[s].Name, g.Nodes[root].Name)
			}
			hint := "no edge leads to it"
			if len(n.In) > 0 {
				hint = "it is only reached from steps that are themselves unreachable"
			} else if s == graphir.None {
				hint = fmt.Sprintf("no edge leads to it: add one, e.g. edge(START, %s) or from the step before it", n.Name)
			}
			p.report(codes.UnreachableStep, n, n.Pos, fmt.Sprintf("step %q is not reachable from %s", n.Name, where), hint)
			continue
		}
		if !exits.has(id) && (s != graphir.None || reached.has(graphir.End)) {
			target := "END nor ABORT"
			hint := fmt.Sprintf("add an edge out of it, e.g. edge(%s, END)", n.Name)
			if s != graphir.None {
				target = "the end of the body nor ABORT"
				hint = "give the cycle it is in a way out"
			}
			p.report(codes.DeadEnd, n, n.Pos, fmt.Sprintf("step %q leads nowhere: neither %s can be reached from it", n.Name, target), hint)
		}
	}
}

// continuesOnSuccess reports whether a body step has an edge to follow
// within its scope when it succeeds; one that has none ends the iteration.
func (p *pass) continuesOnSuccess(n *graphir.Node, s graphir.NodeID) bool {
	for _, eid := range n.Out {
		e := p.g.Edges[eid]
		if e.On != graphir.OnFailure && inScope(p.g, e, s) {
			return true
		}
	}
	return false
}

// nodeSet is a set of nodes that empties in constant time, so that one
// allocation serves every scope of a graph.
type nodeSet struct {
	stamp []uint32
	gen   uint32
}

// clear empties the set, sized for n nodes.
func (s *nodeSet) clear(n int) {
	if len(s.stamp) < n {
		s.stamp, s.gen = make([]uint32, n), 0
	}
	s.gen++
}

func (s *nodeSet) has(id graphir.NodeID) bool { return s.stamp[id] == s.gen }
func (s *nodeSet) add(id graphir.NodeID)      { s.stamp[id] = s.gen }
