package graphir

// This file defines what a join = "first" step races: the branches that
// can only reach it, which lose when another arrives first.

// Race is what a join = "first" step races, within its scope, over the
// forward edges.
type Race struct {
	// Losers are the steps that can reach the step and nothing else
	// (ABORT aside): once another branch arrives first, those still under
	// way, or yet to start, are cancelled.
	Losers []NodeID
	// Escapes are the steps that reach the step and somewhere else too,
	// and may still be under way when it runs (not every way to it passes
	// through them): cancelling them would cut that other path, so the
	// checker refuses them.
	Escapes []Escape
}

// Escape is a step racing into a join = "first" step that reaches To as
// well (a step, END, or the first step outside the race on its way).
type Escape struct {
	Step, To NodeID
}

// Race returns what step n, a join = "first" step, races.
func (g *Graph) Race(n *Node) Race {
	inScope := func(id NodeID) bool { return g.Nodes[id].IsStep() && g.Nodes[id].Parent == n.Parent }
	// The steps that can reach n, going back from it.
	reach := map[NodeID]bool{}
	stack := []NodeID{n.ID}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, eid := range g.Nodes[id].In {
			e := g.Edges[eid]
			if e.Back || !inScope(e.From) || e.From == n.ID || reach[e.From] {
				continue
			}
			reach[e.From] = true
			stack = append(stack, e.From)
		}
	}
	// The losers: the greatest set of them whose every forward edge goes
	// to n, to ABORT or to another of them.
	only := map[NodeID]bool{}
	for id := range reach {
		only[id] = true
	}
	for changed := true; changed; {
		changed = false
		for id := range only {
			for _, eid := range g.Nodes[id].Out {
				e := g.Edges[eid]
				if !e.Back && e.To != n.ID && e.To != Abort && !only[e.To] {
					delete(only, id)
					changed = true
					break
				}
			}
		}
	}
	var r Race
	for _, s := range g.Nodes {
		switch {
		case only[s.ID]:
			r.Losers = append(r.Losers, s.ID)
		case reach[s.ID] && !g.dominates(s.ID, n):
			r.Escapes = append(r.Escapes, Escape{Step: s.ID, To: g.escape(s.ID, n, reach)})
		}
	}
	return r
}

// dominates reports whether every forward way into n, from its scope's
// entries (START, or the steps of its body without forward in-edges),
// passes through s: s has then ended before n can run.
func (g *Graph) dominates(s NodeID, n *Node) bool {
	seen := map[NodeID]bool{s: true}
	var stack []NodeID
	for _, m := range g.Nodes {
		if m.ID == s || (m.ID != Start && (!m.IsStep() || m.Parent != n.Parent)) {
			continue
		}
		if m.ID == Start && n.Parent != None {
			continue
		}
		entry := true
		for _, eid := range m.In {
			if e := g.Edges[eid]; !e.Back && g.Nodes[e.From].Parent == n.Parent && e.From != Start {
				entry = false
				break
			}
		}
		if entry {
			seen[m.ID] = true
			stack = append(stack, m.ID)
		}
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == n.ID {
			return false
		}
		for _, eid := range g.Nodes[id].Out {
			if e := g.Edges[eid]; !e.Back && !seen[e.To] {
				seen[e.To] = true
				stack = append(stack, e.To)
			}
		}
	}
	return true
}

// escape is where step s, which reaches n, also goes: the first node off
// the way to n that its forward edges reach.
func (g *Graph) escape(s NodeID, n *Node, reach map[NodeID]bool) NodeID {
	seen := map[NodeID]bool{s: true}
	queue := []NodeID{s}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, eid := range g.Nodes[id].Out {
			e := g.Edges[eid]
			if e.Back || e.To == n.ID || e.To == Abort || seen[e.To] {
				continue
			}
			if !reach[e.To] {
				return e.To
			}
			seen[e.To] = true
			queue = append(queue, e.To)
		}
	}
	return n.ID
}
