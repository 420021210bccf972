package graphir

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/skeinlang/skein/internal/spell"
)

// Locator maps the positions the Starlark interpreter reports to the ones
// people expect. The loader implements it from the syntax trees it parsed.
type Locator interface {
	// CallStart maps the position of a call's "(" to the start of the call.
	CallStart(lparen Pos) Pos
	// Literal finds the string literal with value s among the arguments of
	// the call whose "(" is at lparen, looking first in the argument for
	// keyword (if not ""), and returns the position of its first character
	// and whether offsets within s map one-to-one onto the file.
	Literal(lparen Pos, keyword, s string) (pos Pos, exact bool, ok bool)
	// Func returns what the function defined at pos (its "def" or
	// "lambda") reads of its parameter (see [ReadsOf]), or nil when its
	// syntax is not known.
	Func(pos Pos) *FuncRefs
}

// FlowDecl is what flow() declares.
type FlowDecl struct {
	Name        string
	Description string
	Inputs      []Input
	Output      *Expr
	MaxVisits   int
	Timeout     time.Duration
	MaxTokens   int
	MaxCost     float64   // flow(max_cost=): US dollars, 0 for no bound
	Tools       []ToolRef // flow(tools=): the pool agents may be granted from
	MaxGrants   int       // flow(max_grants=)
	OnExit      string    // the exit handler's name, "" for none
	OnExitPos   Pos
	// Concurrency bounds the runs of the flow at once under skein serve
	// (0: no bound), per value of ConcurrencyKey when that is set
	// ("inputs.NAME").
	Concurrency       int
	ConcurrencyKey    string
	ConcurrencyKeyPos Pos
	// Emit is the flow its runs' results queue work items for under
	// skein serve (the hopper), as written; MaxDepth bounds how deep
	// those items expand.
	Emit     string
	EmitPos  Pos
	MaxDepth int
	// Keep is how long skein serve keeps the flow's ended runs (0: as
	// long as the server's --keep says).
	Keep time.Duration
	Pos  Pos
}

// Builder collects a graph while a flow loads. The builtins call it; one
// builder belongs to one load (or one REPL session) and is not safe for
// concurrent use.
type Builder struct {
	File     string
	Root     string
	Compiler *Compiler
	Locator  Locator // nil: positions are used as reported

	nodes    []*Node
	edges    []*Edge
	flow     *FlowDecl
	models   []ModelDecl
	tools    []*Tool
	triggers []Trigger
	secrets  []*Secret
	userEdge int          // edges added by edge()/chain(), not counting router routes
	recorded atomic.Int64 // steps and edges recorded; read by the loader's memory watchdog
}

// Recorded returns how many steps and edges have been recorded. Unlike the
// rest of the builder it may be called from any goroutine.
func (b *Builder) Recorded() int64 { return b.recorded.Load() }

// NewBuilder returns a builder for the flow in file, holding only the
// sentinels.
func NewBuilder(file, root string) *Builder {
	b := &Builder{File: file, Root: root, Compiler: NewCompiler()}
	for i, name := range []string{"START", "END", "ABORT"} {
		b.nodes = append(b.nodes, &Node{ID: NodeID(i), Name: name, Kind: Kind(i), Parent: None, Decl: -1})
	}
	return b
}

// Node returns the node with the given id.
func (b *Builder) Node(id NodeID) *Node { return b.nodes[id] }

// Nodes returns all nodes recorded so far, sentinels first. The loader uses
// it to resolve names and load child flows before freezing.
func (b *Builder) Nodes() []*Node { return b.nodes }

// NumEdges returns the number of edges recorded so far.
func (b *Builder) NumEdges() int { return len(b.edges) }

// Flow returns the flow() declaration, or nil.
func (b *Builder) Flow() *FlowDecl { return b.flow }

// SetFlow records the flow() declaration; it fails on a second call.
func (b *Builder) SetFlow(f FlowDecl) error {
	if b.flow != nil {
		return fmt.Errorf("flow() was already called at %s", b.flow.Pos)
	}
	b.flow = &f
	return nil
}

// AddModel records a model() declaration; it fails on a name declared
// before.
func (b *Builder) AddModel(d ModelDecl) error {
	for _, m := range b.models {
		if m.Name == d.Name {
			return fmt.Errorf("model %q was already declared at %s", d.Name, m.Pos)
		}
	}
	b.models = append(b.models, d)
	return nil
}

// AddTrigger records a trigger() declaration; it fails on a webhook name
// or a schedule declared before.
func (b *Builder) AddTrigger(t Trigger) error {
	for _, o := range b.triggers {
		if o.Key() == t.Key() {
			return fmt.Errorf("%s was already declared at %s", t.Key(), o.Pos)
		}
	}
	b.triggers = append(b.triggers, t)
	return nil
}

// AddSecret records a secret() the flow uses; a second use of one source
// ([Secret.Key]) is the same secret, listed once.
func (b *Builder) AddSecret(s *Secret) {
	for _, o := range b.secrets {
		if o.Key() == s.Key() {
			return
		}
	}
	b.secrets = append(b.secrets, s)
}

// AddStep records a step and returns its id. Its ID, Parent and Decl are set
// here.
func (b *Builder) AddStep(n *Node) NodeID {
	n.ID = NodeID(len(b.nodes))
	n.Parent = None
	n.Decl = int32(len(b.nodes) - 3)
	b.nodes = append(b.nodes, n)
	b.recorded.Add(1)
	return n.ID
}

// AddEdge records an edge from edge() or chain().
func (b *Builder) AddEdge(e *Edge) {
	e.ID = EdgeID(len(b.edges))
	e.Case = -1
	b.edges = append(b.edges, e)
	b.userEdge++
	b.recorded.Add(1)
}

// Dropped reports whether [Builder.Drop] removed the node: its ID is then
// None, as no graph holds it.
func (n *Node) Dropped() bool { return n.ID == None }

// Drop removes the step called name (the one declared last, if the name was
// declared twice), and with it its body if it is a loop or map, and every
// edge to or from them, so that the name can be declared again (the REPL's
// :drop). Routes to a dropped step are kept by name: a step declared again
// under that name takes them over. The remaining nodes and edges are
// renumbered in place. It returns the names of the steps removed.
func (b *Builder) Drop(name string) ([]string, error) {
	target := None
	var names []string
	for _, n := range b.nodes[Abort+1:] {
		if n.Name == name {
			target = n.ID
		}
		names = append(names, n.Name)
	}
	if target == None {
		msg := fmt.Sprintf("no step %q", name)
		msg += spell.Suggest(name, names)
		return nil, fmt.Errorf("%s", msg)
	}
	drop := map[NodeID]bool{}
	var mark func(id NodeID)
	mark = func(id NodeID) {
		drop[id] = true
		for _, c := range b.nodes[id].Body {
			mark(c)
		}
	}
	mark(target)
	n := b.nodes[target]
	if n.Parent != None {
		owner := b.nodes[n.Parent]
		if len(owner.Body) == 1 {
			return nil, fmt.Errorf("step %q is the only step of the body of %s %q: drop %q instead", name, owner.Kind, owner.Name, owner.Name)
		}
		var body []NodeID
		for _, id := range owner.Body {
			if id != target {
				body = append(body, id)
			}
		}
		owner.Body = body
	}

	renum := make([]NodeID, len(b.nodes))
	var kept []*Node
	var gone []string
	for _, n := range b.nodes {
		if drop[n.ID] {
			renum[n.ID] = None
			n.ID = None
			gone = append(gone, n.Name)
			continue
		}
		renum[n.ID] = NodeID(len(kept))
		kept = append(kept, n)
	}
	retarget := func(t *Target) {
		if t.Name == "" && t.ID >= 0 && int(t.ID) < len(renum) {
			if renum[t.ID] == None {
				t.Name = b.nodes[t.ID].Name
			}
			t.ID = renum[t.ID]
		}
	}
	for _, n := range kept {
		if n.ID > Abort {
			n.Decl = int32(renum[n.ID]) - 3
		}
		if n.Parent != None {
			n.Parent = renum[n.Parent]
		}
		for i, id := range n.Body {
			n.Body[i] = renum[id]
		}
		if r := n.Router; r != nil {
			for i := range r.Routes {
				retarget(&r.Routes[i].Target)
			}
			for i := range r.Cases {
				retarget(&r.Cases[i].Target)
			}
			if r.Default != nil {
				retarget(r.Default)
			}
		}
	}
	for _, n := range kept {
		n.ID = renum[n.ID]
	}
	var edges []*Edge
	for _, e := range b.edges {
		if drop[e.From] || drop[e.To] {
			continue
		}
		e.From, e.To = renum[e.From], renum[e.To]
		e.ID = EdgeID(len(edges))
		edges = append(edges, e)
	}
	b.userEdge -= len(b.edges) - len(edges)
	b.nodes, b.edges = kept, edges
	return gone, nil
}

// SetBody moves the steps of body into the scope of owner, a loop or map.
func (b *Builder) SetBody(owner NodeID, body []NodeID) error {
	seen := map[NodeID]bool{}
	for _, id := range body {
		n := b.nodes[id]
		switch {
		case id == owner:
			return fmt.Errorf("step %q cannot be in its own body", n.Name)
		case seen[id]:
			return fmt.Errorf("step %q appears twice in body", n.Name)
		case n.Parent != None:
			return fmt.Errorf("step %q is already in the body of %q", n.Name, b.nodes[n.Parent].Name)
		}
		seen[id] = true
	}
	for _, id := range body {
		b.nodes[id].Parent = owner
	}
	b.nodes[owner].Body = body
	return nil
}

// Pos maps a reported call position through the locator.
func (b *Builder) Pos(lparen Pos) Pos {
	if b.Locator == nil {
		return lparen
	}
	return b.Locator.CallStart(lparen)
}

// Freeze returns the graph recorded so far as an immutable [Graph]. The
// builder may go on recording (the REPL does); later freezes see the
// additions. Freeze never fails: problems such as unknown route targets or
// duplicate names stay in the graph for the checker to report.
func (b *Builder) Freeze() *Graph { return b.freeze(true) }

// FreezeFinal is [Builder.Freeze] for a builder that records nothing more:
// the graph takes over the builder's nodes instead of copying them, which
// matters for flows of many thousands of steps.
func (b *Builder) FreezeFinal() *Graph { return b.freeze(false) }

func (b *Builder) freeze(copyNodes bool) *Graph {
	g := &Graph{
		File:   b.File,
		Root:   b.Root,
		byName: make(map[string]NodeID, len(b.nodes)),
		scopes: map[NodeID][]NodeID{},
		OnExit: None,
	}
	if f := b.flow; f != nil {
		g.Name, g.Description, g.Pos = f.Name, f.Description, f.Pos
		g.Inputs, g.Output, g.MaxVisits, g.Timeout = f.Inputs, f.Output, f.MaxVisits, f.Timeout
		g.MaxTokens, g.MaxCost = f.MaxTokens, f.MaxCost
		g.ToolPool, g.MaxGrants = f.Tools, f.MaxGrants
		g.OnExitName, g.OnExitPos = f.OnExit, f.OnExitPos
		g.Concurrency, g.ConcurrencyKey, g.ConcurrencyKeyPos = f.Concurrency, f.ConcurrencyKey, f.ConcurrencyKeyPos
		g.Emit, g.EmitPos, g.MaxDepth = f.Emit, f.EmitPos, f.MaxDepth
		g.Keep = f.Keep
	}
	g.Triggers = append([]Trigger(nil), b.triggers...)
	g.Models = append([]ModelDecl(nil), b.models...)
	g.Tools = append([]*Tool(nil), b.tools...)
	g.Secrets = append([]*Secret(nil), b.secrets...)
	g.Nodes = make([]*Node, len(b.nodes))
	var copies []Node
	if copyNodes {
		copies = make([]Node, len(b.nodes))
	}
	top := make([]NodeID, 0, len(b.nodes))
	for i, n := range b.nodes {
		c := n
		if copyNodes {
			copies[i] = *n
			c = &copies[i]
			c.copyParts()
		}
		c.In, c.Out = nil, nil
		g.Nodes[i] = c
		if i > int(Abort) {
			if _, dup := g.byName[c.Name]; !dup {
				g.byName[c.Name] = c.ID
			}
			if c.Parent == None {
				top = append(top, c.ID)
			} else {
				g.scopes[c.Parent] = append(g.scopes[c.Parent], c.ID)
			}
		}
	}
	if len(top) > 0 {
		g.scopes[None] = top
	}
	if id, ok := g.byName[g.OnExitName]; ok && g.OnExitName != "" {
		g.OnExit = id
	}
	g.Edges = make([]*Edge, len(b.edges), len(b.edges)+len(b.nodes))
	if copyNodes {
		edges := make([]Edge, len(b.edges))
		for i, e := range b.edges {
			edges[i] = *e
			g.Edges[i] = &edges[i]
		}
	} else {
		// A final freeze takes the edges over too: copying them would hold
		// two sets at the peak of a huge load.
		copy(g.Edges, b.edges)
	}

	g.addRouterEdges()
	g.addImplicitEdges(b.userEdge)
	g.linkEdges()
	g.classifyBackEdges()
	if g.Name == "" {
		g.Name = flowNameFromFile(b.File)
	}
	return g
}

// linkEdges fills each node's In and Out, carving them from two shared
// arrays rather than growing a slice per node.
func (g *Graph) linkEdges() {
	nin := make([]int32, len(g.Nodes))
	nout := make([]int32, len(g.Nodes))
	for _, e := range g.Edges {
		nout[e.From]++
		nin[e.To]++
	}
	ins := make([]EdgeID, len(g.Edges))
	outs := make([]EdgeID, len(g.Edges))
	var io, oo int32
	for i, n := range g.Nodes {
		n.In = ins[io : io : io+nin[i]]
		n.Out = outs[oo : oo : oo+nout[i]]
		io += nin[i]
		oo += nout[i]
	}
	for _, e := range g.Edges {
		g.Nodes[e.From].Out = append(g.Nodes[e.From].Out, e.ID)
		g.Nodes[e.To].In = append(g.Nodes[e.To].In, e.ID)
	}
}

func (g *Graph) addEdge(e *Edge) *Edge {
	e.ID = EdgeID(len(g.Edges))
	g.Edges = append(g.Edges, e)
	return e
}

// addRouterEdges resolves each router's targets and gives each an edge.
func (g *Graph) addRouterEdges() {
	for _, n := range g.Nodes {
		r := n.Router
		if n.Kind != KindRouter || r == nil {
			continue
		}
		resolve := func(t *Target) {
			if t.Name != "" {
				if id, ok := g.byName[t.Name]; ok {
					t.ID = id
				} else {
					t.ID = None
				}
			}
		}
		for i := range r.Routes {
			t := &r.Routes[i].Target
			resolve(t)
			if t.ID != None {
				t.Edge = g.addEdge(&Edge{From: n.ID, To: t.ID, Router: true, Label: r.Routes[i].Label, Case: -1, Pos: t.Pos, Stack: n.Stack}).ID
			}
		}
		for i := range r.Cases {
			t := &r.Cases[i].Target
			resolve(t)
			if t.ID != None {
				t.Edge = g.addEdge(&Edge{From: n.ID, To: t.ID, Router: true, Case: i, When: r.Cases[i].When, Pos: t.Pos, Stack: n.Stack}).ID
			}
		}
		if t := r.Default; t != nil {
			resolve(t)
			if t.ID != None {
				t.Edge = g.addEdge(&Edge{From: n.ID, To: t.ID, Router: true, Default: true, Case: -1, Pos: t.Pos, Stack: n.Stack}).ID
			}
		}
	}
}

// addImplicitEdges adds the edges docs/language.md implies: the linear default of a
// flow without edges, the entry from START, and the chain of a body without
// edges among its steps.
func (g *Graph) addImplicitEdges(userEdges int) {
	implicit := func(from, to NodeID) {
		n := g.Nodes[to]
		g.addEdge(&Edge{From: from, To: to, Implicit: true, Case: -1, Pos: n.Pos, Stack: n.Stack})
	}
	top := g.scopes[None]
	if g.OnExit != None {
		// The exit handler runs after the run; no edge leads to it.
		var rest []NodeID
		for _, id := range top {
			if id != g.OnExit {
				rest = append(rest, id)
			}
		}
		top = rest
	}
	if userEdges == 0 && len(g.Edges) == 0 && len(top) > 0 {
		prev := Start
		for _, id := range top {
			implicit(prev, id)
			prev = id
		}
		implicit(prev, End)
	} else if len(top) > 0 {
		fromStart := false
		for _, e := range g.Edges {
			if e.From == Start {
				fromStart = true
				break
			}
		}
		if !fromStart {
			implicit(Start, top[0])
		}
	}

	// Bodies: a chain in list order unless an edge joins two body steps.
	inner := map[NodeID]bool{}
	for _, e := range g.Edges {
		if p := g.Nodes[e.From].Parent; p != None && g.Nodes[e.To].Parent == p && g.Nodes[e.From].IsStep() {
			inner[p] = true
		}
	}
	for _, n := range g.Nodes {
		if !n.HasBody() || inner[n.ID] {
			continue
		}
		for i := 1; i < len(n.Body); i++ {
			implicit(n.Body[i-1], n.Body[i])
		}
	}
}

// classifyBackEdges marks back-edges: those reaching a node on the stack of a
// depth-first walk from each scope's entry, following out-edges in
// declaration order (docs/runs.md). Nodes the walk from the entry misses are
// walked from in declaration order, so every edge is classified.
func (g *Graph) classifyBackEdges() {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.Nodes))
	type item struct {
		node NodeID
		next int // index into Out of the next edge to follow
	}
	var stack []item
	walk := func(root NodeID, scope NodeID) {
		if color[root] != white {
			return
		}
		color[root] = grey
		stack = append(stack[:0], item{node: root})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			out := g.Nodes[top.node].Out
			if top.next == len(out) {
				color[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			e := g.Edges[out[top.next]]
			top.next++
			to := g.Nodes[e.To]
			if to.IsStep() && to.Parent != scope {
				continue // crosses a scope boundary: the checker reports it
			}
			switch color[e.To] {
			case grey:
				e.Back = true
			case white:
				color[e.To] = grey
				stack = append(stack, item{node: e.To})
			}
		}
	}
	walk(Start, None)
	for _, id := range g.scopes[None] {
		walk(id, None)
	}
	for _, n := range g.Nodes {
		if n.HasBody() && len(n.Body) > 0 {
			walk(n.Body[0], n.ID)
			for _, id := range g.scopes[n.ID] {
				walk(id, n.ID)
			}
		}
	}
}

// flowNameFromFile derives a default flow name from a file name.
func flowNameFromFile(file string) string {
	base := file
	for i := len(base) - 1; i >= 0; i-- {
		if base[i] == '/' {
			base = base[i+1:]
			break
		}
	}
	if len(base) > 5 && base[len(base)-5:] == ".star" {
		base = base[:len(base)-5]
	}
	return base
}

// SortedEnv returns env sorted by name, as [Node.Env] keeps it.
func SortedEnv(env []EnvVar) []EnvVar {
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env
}

// copyParts gives n copies of its per-kind parts, so a snapshot frozen by
// [Builder.Freeze] shares none of them with the builder, which may go on
// resolving and retargeting its own.
func (n *Node) copyParts() {
	if n.Subflow != nil {
		p := *n.Subflow
		n.Subflow = &p
	}
	if n.Call != nil {
		p := *n.Call
		n.Call = &p
	}
	if n.Router != nil {
		p := *n.Router
		p.Routes = append([]Route(nil), p.Routes...)
		p.Cases = append([]Case(nil), p.Cases...)
		if p.Default != nil {
			d := *p.Default
			p.Default = &d
		}
		n.Router = &p
	}
	if n.Loop != nil {
		p := *n.Loop
		n.Loop = &p
	}
	if n.Map != nil {
		p := *n.Map
		n.Map = &p
	}
}
