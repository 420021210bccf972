package check

// This file indexes the graph by scope (the top level, and the body of each
// loop and map) for the rules that analyse one scope at a time, and checks
// that no edge crosses a scope boundary: edge_crosses_scope.

import (
	"fmt"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// scopeOf returns the scope holding node id: the loop or map whose body
// holds a step, or None for a top-level step and for the sentinels.
func scopeOf(g *graphir.Graph, id graphir.NodeID) graphir.NodeID {
	if n := g.Nodes[id]; n.IsStep() {
		return n.Parent
	}
	return graphir.None
}

// encloses reports whether scope outer is scope inner or one of the scopes
// around it.
func encloses(g *graphir.Graph, outer, inner graphir.NodeID) bool {
	for s := inner; ; s = g.Nodes[s].Parent {
		if s == outer {
			return true
		}
		if s == graphir.None {
			return false
		}
	}
}

// liftTo returns the node of scope s that holds node id: id itself when it
// is in s, else the loop or map in s whose body holds it (at any depth), or
// None when s does not enclose id.
func liftTo(g *graphir.Graph, id, s graphir.NodeID) graphir.NodeID {
	for {
		sc := scopeOf(g, id)
		if sc == s {
			return id
		}
		if sc == graphir.None {
			return graphir.None
		}
		id = sc
	}
}

// describeScope names a scope for messages: `the body of loop "polish"`.
func describeScope(g *graphir.Graph, s graphir.NodeID) string {
	if s == graphir.None {
		return "the top level"
	}
	n := g.Nodes[s]
	return fmt.Sprintf("the body of %s %q", n.Kind, n.Name)
}

// scopeGraph is one scope as a graph of its own: its nodes, with local
// indexes, and the edges that stay inside it, as compressed adjacency lists.
// END belongs to the top level only; ABORT is left out (nothing follows it).
type scopeGraph struct {
	owner graphir.NodeID   // None for the top level, else the loop or map
	nodes []graphir.NodeID // by local index; nodes[0] is the entry
	// Out-edges of local node i are succ[succOff[i]:succOff[i+1]] (local
	// targets) and succEdge[...] (the edges); likewise for in-edges.
	succOff, predOff   []int32
	succ, pred         []int32
	succEdge, predEdge []graphir.EdgeID
}

func (sg *scopeGraph) out(i int32) ([]int32, []graphir.EdgeID) {
	a, b := sg.succOff[i], sg.succOff[i+1]
	return sg.succ[a:b], sg.succEdge[a:b]
}

func (sg *scopeGraph) in(i int32) ([]int32, []graphir.EdgeID) {
	a, b := sg.predOff[i], sg.predOff[i+1]
	return sg.pred[a:b], sg.predEdge[a:b]
}

// scopeIndex is every scope of the graph, built once per pass.
type scopeIndex struct {
	list    []*scopeGraph // the top level first, then bodies in declaration order
	byOwner map[graphir.NodeID]*scopeGraph
	local   []int32 // node -> its index in its scope's graph; -1 for ABORT
}

// scopes returns the scope index of the pass's graph, building it on first
// use.
func (p *pass) scopes() *scopeIndex {
	if p.sc != nil {
		return p.sc
	}
	g := p.g
	si := &scopeIndex{local: make([]int32, len(g.Nodes)), byOwner: map[graphir.NodeID]*scopeGraph{}}
	for i := range si.local {
		si.local[i] = -1
	}
	top := &scopeGraph{owner: graphir.None}
	top.nodes = append(make([]graphir.NodeID, 0, len(g.Scope(graphir.None))+2), graphir.Start)
	top.nodes = append(top.nodes, g.Scope(graphir.None)...)
	top.nodes = append(top.nodes, graphir.End)
	si.list = append(si.list, top)
	for _, n := range g.Steps() {
		if !n.HasBody() || len(n.Body) == 0 {
			continue
		}
		sg := &scopeGraph{owner: n.ID}
		entry := n.Body[0]
		sg.nodes = append(make([]graphir.NodeID, 0, len(g.Scope(n.ID))), entry)
		for _, id := range g.Scope(n.ID) {
			if id != entry {
				sg.nodes = append(sg.nodes, id)
			}
		}
		si.list = append(si.list, sg)
	}
	for _, sg := range si.list {
		si.byOwner[sg.owner] = sg
		for i, id := range sg.nodes {
			si.local[id] = int32(i)
		}
	}
	for _, sg := range si.list {
		si.link(g, sg)
	}
	p.sc = si
	return si
}

// link fills the adjacency of sg from the edges that stay inside it.
func (si *scopeIndex) link(g *graphir.Graph, sg *scopeGraph) {
	n := len(sg.nodes)
	sg.succOff = make([]int32, n+1)
	sg.predOff = make([]int32, n+1)
	inside := func(e *graphir.Edge) bool {
		if e.To == graphir.Abort || e.To == graphir.Start || e.From == graphir.End || e.From == graphir.Abort {
			return false
		}
		return scopeOf(g, e.From) == sg.owner && scopeOf(g, e.To) == sg.owner
	}
	count := 0
	for i, id := range sg.nodes {
		for _, eid := range g.Nodes[id].Out {
			if e := g.Edges[eid]; inside(e) {
				sg.succOff[i+1]++
				sg.predOff[si.local[e.To]+1]++
				count++
			}
		}
	}
	for i := 0; i < n; i++ {
		sg.succOff[i+1] += sg.succOff[i]
		sg.predOff[i+1] += sg.predOff[i]
	}
	sg.succ, sg.succEdge = make([]int32, count), make([]graphir.EdgeID, count)
	sg.pred, sg.predEdge = make([]int32, count), make([]graphir.EdgeID, count)
	sfill := append([]int32(nil), sg.succOff[:n]...)
	pfill := append([]int32(nil), sg.predOff[:n]...)
	for i, id := range sg.nodes {
		for _, eid := range g.Nodes[id].Out {
			e := g.Edges[eid]
			if !inside(e) {
				continue
			}
			to := si.local[e.To]
			sg.succ[sfill[i]], sg.succEdge[sfill[i]] = to, eid
			sfill[i]++
			sg.pred[pfill[to]], sg.predEdge[pfill[to]] = int32(i), eid
			pfill[to]++
		}
	}
}

// checkScopes reports edges into or out of a loop or map body. Router
// targets are left to route_unknown (control.go).
func checkScopes(p *pass) {
	g := p.g
	for _, e := range g.Edges {
		if e.Router || e.To == graphir.Abort {
			continue
		}
		from, to := scopeOf(g, e.From), scopeOf(g, e.To)
		if from == to {
			continue
		}
		src, dst := g.Nodes[e.From], g.Nodes[e.To]
		var msg, hint string
		var step *graphir.Node
		switch {
		case e.To == graphir.End:
			step = src
			msg = fmt.Sprintf("edge from %q to END leaves %s", src.Name, describeScope(g, from))
			hint = fmt.Sprintf("a body ends when its last step finishes; connect %s %q to END instead",
				g.Nodes[from].Kind, g.Nodes[from].Name)
		case encloses(g, from, to):
			step = dst
			msg = fmt.Sprintf("edge from %q to %q enters %s", src.Name, dst.Name, describeScope(g, to))
			owner := g.Nodes[liftTo(g, e.To, from)]
			switch {
			case owner.ID == e.From && len(owner.Body) > 0:
				first := g.Nodes[owner.Body[0]].Name
				hint = fmt.Sprintf("%s %q runs its body itself, starting at its first step %q: remove this edge (list %q first in body= to start there), and connect body steps to each other inside the body", owner.Kind, owner.Name, first, dst.Name)
			default:
				hint = fmt.Sprintf("a body is entered only through its %s: connect %q to %s %q instead, or move this edge inside the body (between steps of body=)",
					owner.Kind, src.Name, owner.Kind, owner.Name)
			}
		case encloses(g, to, from):
			step = src
			msg = fmt.Sprintf("edge from %q to %q leaves %s", src.Name, dst.Name, describeScope(g, from))
			owner := g.Nodes[liftTo(g, e.From, to)]
			hint = fmt.Sprintf("a body is left only when its %s ends: connect %s %q to %q instead",
				owner.Kind, owner.Kind, owner.Name, dst.Name)
		default:
			step = src
			msg = fmt.Sprintf("edge from %q in %s to %q in %s crosses between bodies",
				src.Name, describeScope(g, from), dst.Name, describeScope(g, to))
			hint = "connect the loops or maps themselves; each body is a unit of its own"
		}
		d := Diagnostic{Code: codes.EdgeCrossesScope, Severity: Error, Message: msg, Pos: e.Pos, Hint: hint,
			Step: step.Name, Trace: e.Stack.Trace(e.Stack.UserFrame())}
		p.diags = append(p.diags, d)
	}
}
