package check

// This file checks how results flow between steps: maybe_unmet (an
// expression reads a step that may not have run yet) and unused_result (a
// fn step whose result nothing can read).
//
// maybe_unmet asks, for each step S an expression reads, whether S has
// surely finished when the expression is evaluated. Within a scope, S has
// surely finished before P starts when S dominates P (every path from the
// scope's entry to P passes through S, counting success, failure and back
// edges alike, so a step read on its own failure path has run), or when P,
// or a step dominating P, is an AND-join one of whose forward predecessors
// is S or has S surely finished before it, and that predecessor can never
// be skipped by dead-path elimination: an AND-join starts only after every
// forward predecessor has finished or been skipped (docs/runs.md). A reader in a
// body is judged at the loop or map that holds it, in the scope of S.

import (
	"fmt"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

func checkDataflow(p *pass) {
	p.checkUnmet()
	p.checkUnused()
}

// domInfo is the dominator tree of one scope, with what the AND-join rule
// needs.
type domInfo struct {
	sg      *scopeGraph
	rpo     []int32 // local -> reverse postorder number, -1 if unreachable
	idom    []int32 // local -> immediate dominator (the entry's is itself), -1 if unreachable
	pre     []int32 // numbering of the dominator tree, for O(1) dominance
	post    []int32
	andUp   []int32   // local -> nearest dominator-or-self that is an extensible AND-join, or -1
	ext     [][]int32 // local -> the forward predecessors an AND-join surely waits for
	stamp   []uint32  // per-query visited marks
	walked  []uint32
	gen     uint32
	notRead map[int32]map[int32]bool // step S -> nodes known not to have S surely finished
}

// dominators computes the dominator tree of sg with the iterative
// algorithm of Cooper, Harvey and Kennedy, over a reverse postorder from
// the scope's entry.
func (p *pass) dominators(sg *scopeGraph) *domInfo {
	g := p.g
	n := int32(len(sg.nodes))
	d := &domInfo{sg: sg, rpo: make([]int32, n), idom: make([]int32, n)}
	for i := range d.rpo {
		d.rpo[i], d.idom[i] = -1, -1
	}
	// Reverse postorder by an iterative depth-first walk.
	order := make([]int32, 0, n)
	seen := make([]bool, n)
	type frame struct{ v, next int32 }
	calls := []frame{{v: 0}}
	seen[0] = true
	for len(calls) > 0 {
		f := &calls[len(calls)-1]
		succ, _ := sg.out(f.v)
		if int(f.next) < len(succ) {
			w := succ[f.next]
			f.next++
			if !seen[w] {
				seen[w] = true
				calls = append(calls, frame{v: w})
			}
			continue
		}
		order = append(order, f.v)
		calls = calls[:len(calls)-1]
	}
	for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
		order[i], order[j] = order[j], order[i]
	}
	for i, v := range order {
		d.rpo[v] = int32(i)
	}

	d.idom[0] = 0
	intersect := func(a, b int32) int32 {
		for a != b {
			for d.rpo[a] > d.rpo[b] {
				a = d.idom[a]
			}
			for d.rpo[b] > d.rpo[a] {
				b = d.idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for _, v := range order[1:] {
			nd := int32(-1)
			pred, _ := sg.in(v)
			for _, u := range pred {
				if d.idom[u] == -1 {
					continue
				}
				if nd == -1 {
					nd = u
				} else {
					nd = intersect(u, nd)
				}
			}
			if nd != d.idom[v] {
				d.idom[v] = nd
				changed = true
			}
		}
	}

	// Number the dominator tree: children in compressed lists, then an
	// iterative walk.
	childOff := make([]int32, n+1)
	for _, v := range order[1:] {
		childOff[d.idom[v]+1]++
	}
	for i := int32(0); i < n; i++ {
		childOff[i+1] += childOff[i]
	}
	children := make([]int32, len(order))
	fill := append([]int32(nil), childOff[:n]...)
	for _, v := range order[1:] {
		children[fill[d.idom[v]]] = v
		fill[d.idom[v]]++
	}
	d.pre, d.post = make([]int32, n), make([]int32, n)
	clock := int32(0)
	calls = append(calls[:0], frame{v: 0, next: childOff[0]})
	d.pre[0] = clock
	clock++
	for len(calls) > 0 {
		f := &calls[len(calls)-1]
		if f.next < childOff[f.v+1] {
			c := children[f.next]
			f.next++
			d.pre[c] = clock
			clock++
			calls = append(calls, frame{v: c, next: childOff[c]})
			continue
		}
		d.post[f.v] = clock
		clock++
		calls = calls[:len(calls)-1]
	}

	// The AND-join rule: which forward predecessors each AND-join surely
	// waits for, and the nearest such join up the dominator tree.
	skip := p.canSkip(sg, d)
	d.ext = make([][]int32, n)
	d.andUp = make([]int32, n)
	for _, v := range order {
		node := g.Nodes[sg.nodes[v]]
		if node.IsStep() && node.Join == graphir.JoinAnd {
			pred, edges := sg.in(v)
			back := false
			for _, eid := range edges {
				back = back || g.Edges[eid].Back
			}
			if !back {
				for k, u := range pred {
					if !skip[u] && d.rpo[u] >= 0 && d.rpo[u] < d.rpo[v] && !g.Edges[edges[k]].Back {
						d.ext[v] = append(d.ext[v], u)
					}
				}
			}
		}
		switch {
		case len(d.ext[v]) > 0:
			d.andUp[v] = v
		case v == 0:
			d.andUp[v] = -1
		default:
			d.andUp[v] = d.andUp[d.idom[v]]
		}
	}
	d.stamp = make([]uint32, n)
	d.walked = make([]uint32, n)
	d.notRead = map[int32]map[int32]bool{}
	return d
}

// canSkip reports, per local node, whether dead-path elimination could skip
// it: every forward in-edge could carry a dead token. It over-approximates,
// which only makes the AND-join rule claim less.
func (p *pass) canSkip(sg *scopeGraph, d *domInfo) []bool {
	g := p.g
	n := len(sg.nodes)
	skip := make([]bool, n)
	// Forward edges form a DAG; visit in topological order (Kahn).
	indeg := make([]int32, n)
	for v := 0; v < n; v++ {
		_, edges := sg.in(int32(v))
		for _, eid := range edges {
			if !g.Edges[eid].Back {
				indeg[v]++
			}
		}
	}
	done := make([]bool, n)
	var queue []int32
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			queue = append(queue, int32(v))
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		done[v] = true
		if v != 0 {
			pred, edges := sg.in(v)
			live := false
			for k, u := range pred {
				if e := g.Edges[edges[k]]; !e.Back && !p.canDead(e, skip[u]) {
					live = true
					break
				}
			}
			skip[v] = !live
		}
		succ, edges := sg.out(v)
		for k, w := range succ {
			if !g.Edges[edges[k]].Back {
				if indeg[w]--; indeg[w] == 0 {
					queue = append(queue, w)
				}
			}
		}
	}
	for v := range skip {
		if !done[v] && v != 0 {
			skip[v] = true
		}
	}
	return skip
}

// canDead reports whether edge e could carry a dead token, given whether
// its source could be skipped.
func (p *pass) canDead(e *graphir.Edge, fromSkips bool) bool {
	if fromSkips || e.When != nil {
		return true
	}
	g := p.g
	from := g.Nodes[e.From]
	if e.Router {
		targets := 0
		for _, eid := range from.Out {
			if g.Edges[eid].Router {
				targets++
			}
		}
		return targets > 1
	}
	other := func(on graphir.On) bool { // an out-edge following the other outcome
		for _, eid := range from.Out {
			if o := g.Edges[eid].On; o == on || o == graphir.OnAlways {
				return true
			}
		}
		return false
	}
	switch e.On {
	case graphir.OnSuccess:
		return canFail(from) && other(graphir.OnFailure)
	case graphir.OnFailure:
		return !canFail(from) || other(graphir.OnSuccess)
	}
	return false
}

// canFail reports whether a step can finish with a routable failure.
func canFail(n *graphir.Node) bool {
	switch n.Kind {
	case graphir.KindStart, graphir.KindEnd, graphir.KindAbort, graphir.KindNoop, graphir.KindRouter:
		return false
	}
	return true
}

func (d *domInfo) dominates(a, b int32) bool {
	return d.pre[a] <= d.pre[b] && d.post[b] <= d.post[a]
}

// ranBefore reports whether local step s has surely finished when local
// node x starts. Both must be reachable.
func (d *domInfo) ranBefore(s, x int32) bool {
	if s == x {
		return false
	}
	known := d.notRead[s]
	if known[x] {
		return false
	}
	d.gen++
	gen := d.gen
	var visited []int32
	stack := []int32{x}
	d.stamp[x] = gen
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visited = append(visited, v)
		if d.dominates(s, v) {
			return true
		}
		// Each AND-join dominating v (v included) has surely finished
		// the predecessors it waits for; the derivation only ever moves to
		// earlier nodes, so stop at s.
		for a := d.andUp[v]; a >= 0 && d.rpo[a] > d.rpo[s] && d.walked[a] != gen; {
			d.walked[a] = gen
			for _, c := range d.ext[a] {
				if c == s {
					return true
				}
				if d.stamp[c] != gen && d.rpo[c] > d.rpo[s] && !known[c] {
					d.stamp[c] = gen
					stack = append(stack, c)
				}
			}
			if a == 0 {
				break
			}
			a = d.andUp[d.idom[a]]
		}
	}
	if known == nil {
		known = map[int32]bool{}
		d.notRead[s] = known
	}
	for _, v := range visited {
		known[v] = true
	}
	return false
}

// checkUnmet reports reads of steps that may not have run yet.
func (p *pass) checkUnmet() {
	g := p.g
	ix := p.exprs()
	si := p.scopes()
	doms := map[graphir.NodeID]*domInfo{}
	dom := func(s graphir.NodeID) *domInfo {
		if d, ok := doms[s]; ok {
			return d
		}
		var d *domInfo
		if sg := si.byOwner[s]; sg != nil {
			d = p.dominators(sg)
		}
		doms[s] = d
		return d
	}
	type key struct {
		site int32
		step graphir.NodeID
	}
	warned := map[key]bool{}
	for _, r := range ix.reads {
		s := &ix.sites[r.site]
		step := g.Nodes[r.step]
		scope := step.Parent
		at := liftTo(g, s.at, scope)
		if at == graphir.None || warned[key{r.site, r.step}] || guarded(s.x, step.Name) {
			continue
		}
		var msg string
		switch {
		case at == r.step && at == s.at && s.after():
			continue // an edge's condition reading its own source
		case at == r.step && at == s.at:
			msg = fmt.Sprintf("%s reads the output of step %q itself, which does not exist before it has run once", p.describe(s), step.Name)
		case at == r.step:
			msg = fmt.Sprintf("%s reads %s %q from inside its own body, before it has an output", p.describe(s), step.Kind, step.Name)
		default:
			d := dom(scope)
			if d == nil {
				continue
			}
			ls, lat := si.local[r.step], si.local[at]
			if d.rpo[ls] < 0 || d.rpo[lat] < 0 || d.ranBefore(ls, lat) {
				continue
			}
			switch at {
			case graphir.Start:
				msg = fmt.Sprintf("%s reads step %q, which has not run when the flow starts", p.describe(s), step.Name)
			case graphir.End:
				msg = fmt.Sprintf("%s reads step %q, which may not have run yet: it is not on every path to END", p.describe(s), step.Name)
			default:
				msg = fmt.Sprintf("%s reads step %q, which may not have run yet: it is not on every path to %q", p.describe(s), step.Name, g.Nodes[at].Name)
			}
		}
		warned[key{r.site, r.step}] = true
		p.diags = append(p.diags, p.siteDiag(s, codes.MaybeUnmet, r.pos, msg,
			fmt.Sprintf("a read of a step that has not run fails with dependency_unmet; read it only where it surely ran, or guard it: visits(%q) > 0 and ...", step.Name)))
	}
}

// guarded reports whether an expression tests visits(name) (or
// status(name)) itself, the way to read a step that may not have run (it
// short-circuits the read); a function, whether it asks r.visits(name) or
// r.status(name).
func guarded(x *graphir.Expr, name string) bool {
	if x.User {
		return contains(x.Reads.Guards, name)
	}
	for _, fn := range []string{"visits", "status"} {
		if strings.Contains(x.Src, fn+`("`+name+`")`) || strings.Contains(x.Src, fn+`('`+name+`')`) {
			return true
		}
	}
	return false
}

// checkUnused reports fn steps whose result nothing can read. A fn step is
// pure, so its result is its only effect. The result counts as read when an
// expression names the step, when it feeds END or ABORT (the run's result or
// the record of why it stopped) or ends a body, directly or through noop
// steps, when the step is in a loop body (until sees every
// body result), or when a function that could read it runs after it in its
// scope (or in a body nested there): a later fn step, or a function given
// for a condition, by, a case or over. Functions are opaque to the checker,
// so any of them may read it; an output function may read every step.
func (p *pass) checkUnused() {
	g := p.g
	if g.Output.Opaque() {
		return
	}
	ix := p.exprs()

	// Readers: nodes that run a function able to read earlier results, and
	// loops and maps with one in their body.
	reader := make([]bool, len(g.Nodes))
	whenFn := make([]bool, len(g.Nodes)) // a function condition on its own out-edges
	mark := func(id graphir.NodeID) {
		for ; id != graphir.None && !reader[id]; id = g.Nodes[id].Parent {
			reader[id] = true
			if !g.Nodes[id].IsStep() {
				break
			}
		}
	}
	for _, e := range g.Edges {
		if e.When.Opaque() {
			whenFn[e.From] = true
			mark(e.From)
		}
	}
	for _, n := range g.Steps() {
		switch {
		case n.Kind == graphir.KindFn && (n.FnReads == nil || n.FnReads.Opaque),
			n.Kind == graphir.KindRouter && n.Router.By.Opaque(),
			n.Kind == graphir.KindMap && n.Map.Over.Opaque():
			mark(n.ID)
		}
		if n.Router != nil {
			for _, c := range n.Router.Cases {
				if c.When.Opaque() {
					mark(n.ID)
				}
			}
		}
	}

	// feeds[v]: v's result ends the run or a body, directly or through
	// noops.
	feeds := make([]bool, len(g.Nodes))
	var stack []graphir.NodeID
	feed := func(id graphir.NodeID) {
		if !feeds[id] {
			feeds[id] = true
			if g.Nodes[id].Kind == graphir.KindNoop {
				stack = append(stack, id)
			}
		}
	}
	for _, sentinel := range []graphir.NodeID{graphir.End, graphir.Abort} {
		for _, eid := range g.Nodes[sentinel].In {
			if e := g.Edges[eid]; e.On != graphir.OnFailure && g.Nodes[e.From].IsStep() {
				feed(e.From)
			}
		}
	}
	for _, n := range g.Steps() {
		if n.Parent != graphir.None && !p.continuesOnSuccess(n, n.Parent) {
			feed(n.ID)
		}
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, eid := range g.Nodes[id].In {
			e := g.Edges[eid]
			if e.On != graphir.OnFailure && g.Nodes[e.From].IsStep() && scopeOf(g, e.From) == scopeOf(g, id) {
				feed(e.From)
			}
		}
	}

	// Per scope, which nodes lead to a reader (a reverse walk).
	si := p.scopes()
	var queue []int32
	for _, sg := range si.list {
		if sg.owner != graphir.None && g.Nodes[sg.owner].Kind == graphir.KindLoop {
			continue // until(it) sees it.result: every body result is read
		}
		reaches := make([]bool, len(sg.nodes))
		for i, id := range sg.nodes {
			if reader[id] {
				reaches[i] = true
				queue = append(queue, int32(i))
			}
		}
		for len(queue) > 0 {
			v := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			pred, _ := sg.in(v)
			for _, u := range pred {
				if !reaches[u] {
					reaches[u] = true
					queue = append(queue, u)
				}
			}
		}
		for i, id := range sg.nodes {
			n := g.Nodes[id]
			if n.Kind != graphir.KindFn || ix.readStep[id] || feeds[id] || whenFn[id] || id == g.OnExit {
				continue
			}
			read := false
			succ, _ := sg.out(int32(i))
			for _, w := range succ {
				if reaches[w] {
					read = true
					break
				}
			}
			if !read {
				p.report(codes.UnusedResult, n, n.Pos,
					fmt.Sprintf("the result of fn step %q is never read", n.Name),
					"a fn step has no effect but its result: read it in an expression or a later fn step, connect it to END, or remove it")
			}
		}
	}
}
