package check

// This file checks termination and joins: loop_unbounded, join_in_cycle and
// join_single. Cycles are found per scope as strongly connected components
// (Tarjan's algorithm, iterative so that a flow of any size is fine).

import (
	"fmt"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// components labels the strongly connected components of sg restricted to
// the nodes keep accepts: comp[i] is the component of local node i, -1 for
// nodes left out. cyclic[c] reports whether component c holds a cycle (two
// or more nodes, or one with an edge to itself).
func components(sg *scopeGraph, keep func(i int32) bool) (comp []int32, cyclic []bool) {
	n := int32(len(sg.nodes))
	comp = make([]int32, n)
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range comp {
		comp[i], index[i] = -1, -1
	}
	var stack []int32
	type frame struct{ v, next int32 }
	var calls []frame
	counter := int32(0)
	visit := func(v int32) {
		index[v], low[v] = counter, counter
		counter++
		stack = append(stack, v)
		onStack[v] = true
		calls = append(calls, frame{v: v})
	}
	for root := int32(0); root < n; root++ {
		if index[root] != -1 || !keep(root) {
			continue
		}
		visit(root)
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			succ, _ := sg.out(f.v)
			if int(f.next) < len(succ) {
				w := succ[f.next]
				f.next++
				switch {
				case !keep(w):
				case index[w] == -1:
					visit(w)
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			c := int32(len(cyclic))
			size := 0
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = c
				size++
				if w == v {
					break
				}
			}
			self := false
			if size == 1 {
				succ, _ := sg.out(v)
				for _, w := range succ {
					self = self || w == v
				}
			}
			cyclic = append(cyclic, size > 1 || self)
		}
	}
	return comp, cyclic
}

// cyclePath returns the nodes of a cycle through the edge from -> to inside
// component c: to, ..., from (the edge closes it). parent is scratch space
// of len(sg.nodes), all -1 on entry and on return.
func cyclePath(sg *scopeGraph, comp []int32, c, from, to int32, parent []int32) []int32 {
	var touched []int32
	queue := []int32{to}
	parent[to] = to
	touched = append(touched, to)
	for len(queue) > 0 && parent[from] == -1 {
		v := queue[0]
		queue = queue[1:]
		succ, _ := sg.out(v)
		for _, w := range succ {
			if comp[w] == c && parent[w] == -1 {
				parent[w] = v
				touched = append(touched, w)
				queue = append(queue, w)
			}
		}
	}
	var path []int32
	if parent[from] != -1 {
		for v := from; ; v = parent[v] {
			path = append(path, v)
			if v == to {
				break
			}
		}
	}
	for _, v := range touched {
		parent[v] = -1
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// formatCycle writes a cycle as "a -> b -> a".
func formatCycle(g *graphir.Graph, sg *scopeGraph, path []int32) string {
	var b strings.Builder
	for _, v := range path {
		b.WriteString(g.Nodes[sg.nodes[v]].Name)
		b.WriteString(" -> ")
	}
	b.WriteString(g.Nodes[sg.nodes[path[0]]].Name)
	return b.String()
}

// checkCycles reports every cycle in which no step has a visit bound: the
// strongly connected components of the steps without one.
func checkCycles(p *pass) {
	g := p.g
	if g.MaxVisits > 0 {
		return
	}
	for _, sg := range p.scopes().list {
		unbounded := func(i int32) bool {
			n := g.Nodes[sg.nodes[i]]
			return n.IsStep() && n.MaxVisits == 0
		}
		comp, cyclic := components(sg, unbounded)
		parent := make([]int32, len(sg.nodes))
		for i := range parent {
			parent[i] = -1
		}
		// Visit edges in declaration order so each component is reported
		// at its first back-edge, preferring one the user wrote.
		best := make([]graphir.EdgeID, len(cyclic))
		for i := range best {
			best[i] = -1
		}
		better := func(a, b graphir.EdgeID) bool { // a better than b
			if b == -1 {
				return true
			}
			ea, eb := g.Edges[a], g.Edges[b]
			if ea.Back != eb.Back {
				return ea.Back
			}
			if ea.Implicit != eb.Implicit {
				return !ea.Implicit
			}
			return a < b
		}
		for i := range sg.nodes {
			c := comp[i]
			if c < 0 || !cyclic[c] {
				continue
			}
			succ, edges := sg.out(int32(i))
			for k, w := range succ {
				if comp[w] == c && better(edges[k], best[c]) {
					best[c] = edges[k]
				}
			}
		}
		for c, eid := range best {
			if eid < 0 {
				continue
			}
			e := g.Edges[eid]
			from, to := p.sc.local[e.From], p.sc.local[e.To]
			path := cyclePath(sg, comp, int32(c), from, to, parent)
			head := g.Nodes[e.To]
			p.diags = append(p.diags, Diagnostic{Code: codes.LoopUnbounded, Severity: Error,
				Message: fmt.Sprintf("cycle %s has no visit bound", formatCycle(g, sg, path)),
				Pos:     e.Pos, Step: head.Name, Trace: e.Stack.Trace(e.Stack.UserFrame()),
				Hint: fmt.Sprintf("give one of its steps max_visits=N, e.g. step(%q, ..., max_visits = 5), or set flow(max_visits = N)", head.Name)})
		}
	}
}

// checkRaces reports join = "first" steps raced by a step that also
// leads somewhere else and may still be under way when the join runs.
func checkRaces(p *pass) {
	g := p.g
	for _, n := range g.Steps() {
		if n.Join != graphir.JoinFirst {
			continue
		}
		for _, e := range g.Race(n).Escapes {
			s, to := g.Nodes[e.Step], g.Nodes[e.To]
			p.report(codes.JoinFirstEscape, n, n.Pos,
				fmt.Sprintf("step %q has join=\"first\", but %q, which races into it, also leads to %q: cancelling it when another branch arrives first would cut that path",
					n.Name, s.Name, to.Name),
				fmt.Sprintf("start %q from a step before the race, or use join=\"or\", which lets the other branches finish", to.Name))
		}
	}
}

// checkJoins reports AND-joins that could never fire again inside a cycle
// (join_in_cycle) and join= where there is nothing to join (join_single).
func checkJoins(p *pass) {
	g := p.g
	for _, n := range g.Steps() {
		if !n.JoinSet {
			continue
		}
		// join="done" with one in-edge still means something: run
		// whether that edge arrives live or dead.
		if fwd := forwardIn(g, n); fwd < 2 && !(fwd == 1 && n.Join == graphir.JoinDone) {
			p.report(codes.JoinSingle, n, n.Pos,
				fmt.Sprintf("step %q sets join=%q but has %s", n.Name, n.Join, plural(fwd, "forward in-edge")),
				"join= matters only where two or more forward edges meet (back-edges always trigger); remove it")
		}
	}
	for _, sg := range p.scopes().list {
		comp, cyclic := components(sg, func(int32) bool { return true })
		var parent []int32
		for i, id := range sg.nodes {
			n := g.Nodes[id]
			c := comp[i]
			if !n.IsStep() || n.Join == graphir.JoinOr || n.Join == graphir.JoinFirst || !cyclic[c] || forwardIn(g, n) < 2 {
				continue
			}
			// Arrivals from inside the cycle come again on every pass; one
			// from outside comes once, so the second pass waits forever.
			// (Re-entry by back-edges alone is fine: they always trigger.)
			var outside *graphir.Edge
			inside := false
			for _, eid := range n.In {
				e := g.Edges[eid]
				if e.Back {
					continue
				}
				if l := p.sc.local[e.From]; scopeOf(g, e.From) != sg.owner || e.From == graphir.Start || comp[l] != c {
					if outside == nil {
						outside = e
					}
				} else {
					inside = true
				}
			}
			if outside == nil || !inside {
				continue
			}
			if parent == nil {
				parent = make([]int32, len(sg.nodes))
				for k := range parent {
					parent[k] = -1
				}
			}
			// A cycle through n: from n back to one of its in-cycle
			// predecessors, closed by that predecessor's edge into n.
			cycle := ""
			pred, _ := sg.in(int32(i))
			for _, u := range pred {
				if comp[u] == c {
					if path := cyclePath(sg, comp, c, u, int32(i), parent); path != nil {
						cycle = " " + formatCycle(g, sg, path)
						break
					}
				}
			}
			p.report(codes.JoinInCycle, n, n.Pos,
				fmt.Sprintf("step %q waits for all its forward in-edges (join=%q) but is in the cycle%s and has one from %q outside it, which arrives only once",
					n.Name, n.Join, cycle, g.Nodes[outside.From].Name),
				fmt.Sprintf(`give %q join = "or" so that any arrival runs it`, n.Name))
		}
	}
}

// forwardIn counts the forward (non-back) in-edges of n.
func forwardIn(g *graphir.Graph, n *graphir.Node) int {
	k := 0
	for _, eid := range n.In {
		if !g.Edges[eid].Back {
			k++
		}
	}
	return k
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
