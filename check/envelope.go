package check

// This file computes a flow's envelope (docs/envelope.md): from the bounds
// the checker has proved (max_visits, max_iterations, retries, map sizes,
// child flows, max_turns, max_grants), the most a run may spend, per step
// and for the whole run, before anything runs. Every figure is an upper
// bound, never an estimate: where the graph does not bound a quantity the
// figure says so (unbounded, with why), and where it depends on a map's
// item count it is given per item.

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// DefaultMaxTokens is the completion tokens assumed of a model call that
// gives no max_tokens (neither the step nor its model): what Skein sends
// Anthropic's Messages API then. An OpenAI-compatible server gets no
// limit and may reply longer; the envelope says when it assumed this.
const DefaultMaxTokens = 4096

// modelAttemptTimeout bounds one attempt of a model call whose step gives
// no timeout (vm/model.DefaultTimeout), and maxRetryAfter the wait a
// server may ask for between attempts (docs/models.md).
const (
	modelAttemptTimeout = 10 * time.Minute
	maxRetryAfter       = 5 * time.Minute
)

// judgeRetries and routerRetries are the retries of a judge's and an LLM
// router's model call (they take none of their own).
const (
	judgeRetries  = 2
	routerRetries = 2
)

// Amount is an upper bound: at most Max, times the item count of each map
// named in PerItem (at least 1 each), or no bound at all (Unbounded says
// why; Max is then +Inf).
type Amount struct {
	Max       float64
	PerItem   []string
	Unbounded string
}

// IsZero reports whether a is a bound of nothing.
func (a Amount) IsZero() bool { return a.Max == 0 && a.Unbounded == "" }

// Bounded reports whether a is a bound.
func (a Amount) Bounded() bool { return a.Unbounded == "" }

// Exceeds reports whether a may be more than limit: it is unbounded, per
// item, or more.
func (a Amount) Exceeds(limit float64) bool {
	return !a.Bounded() || a.Max > limit || (len(a.PerItem) > 0 && a.Max > 0)
}

func count(n float64) Amount { return Amount{Max: n} }

func unbounded(why string) Amount { return Amount{Max: math.Inf(1), Unbounded: why} }

func unionNames(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// plus is a + b. Per-item factors join: N×L(A) + M×L(B) <= (N+M)×L(A∪B)
// since every factor is at least 1.
func (a Amount) plus(b Amount) Amount {
	switch {
	case !a.Bounded():
		return a
	case !b.Bounded():
		return b
	}
	return Amount{Max: a.Max + b.Max, PerItem: unionNames(a.PerItem, b.PerItem)}
}

// most is the larger of a and b, bounded the same way.
func (a Amount) most(b Amount) Amount {
	switch {
	case !a.Bounded():
		return a
	case !b.Bounded():
		return b
	}
	return Amount{Max: max(a.Max, b.Max), PerItem: unionNames(a.PerItem, b.PerItem)}
}

// times is a × b; nothing times anything is nothing (a step never
// entered spends nothing, however unbounded one visit of it would be).
func (a Amount) times(b Amount) Amount {
	switch {
	case a.IsZero() || b.IsZero():
		return Amount{}
	case !a.Bounded():
		return a
	case !b.Bounded():
		return b
	}
	return Amount{Max: a.Max * b.Max, PerItem: unionNames(a.PerItem, b.PerItem)}
}

func (a Amount) scale(k float64) Amount { return a.times(count(k)) }

// capAt bounds a duration amount by a timeout (0: none).
func (a Amount) capAt(d time.Duration) Amount {
	if d <= 0 {
		return a
	}
	if s := d.Seconds(); !a.Bounded() || len(a.PerItem) > 0 || a.Max > s {
		return count(s)
	}
	return a
}

// MarshalJSON writes {"max": N, "per_item": [...], "unbounded": "why"};
// max is null when unbounded.
func (a Amount) MarshalJSON() ([]byte, error) {
	type out struct {
		Max       *float64 `json:"max"`
		PerItem   []string `json:"per_item,omitempty"`
		Unbounded string   `json:"unbounded,omitempty"`
	}
	o := out{PerItem: a.PerItem, Unbounded: a.Unbounded}
	if a.Bounded() {
		m := a.Max
		o.Max = &m
	}
	return json.Marshal(o)
}

// String writes a for people: "12", "12 × items of each", "unbounded
// (why)".
func (a Amount) String() string { return a.format(FormatCount) }

// Format names how an amount's number is written.
type Format int

// The formats of [Amount.Format].
const (
	FormatCount Format = iota
	FormatDollars
	FormatSeconds
)

func (a Amount) format(f Format) string {
	if !a.Bounded() {
		return "unbounded (" + a.Unbounded + ")"
	}
	var s string
	switch f {
	case FormatDollars:
		s = "$" + strconv.FormatFloat(a.Max, 'f', 4, 64)
	case FormatSeconds:
		s = FormatDuration(a.Max)
	default:
		s = Thousands(a.Max)
	}
	for _, m := range a.PerItem {
		s += fmt.Sprintf(" × len(%s)", m)
	}
	return s
}

// Format writes a in format f.
func (a Amount) Format(f Format) string { return a.format(f) }

// Thousands writes a count with thousands separators: 40,000.
func Thousands(n float64) string {
	if n >= 1e18 {
		return strconv.FormatFloat(n, 'g', 3, 64)
	}
	s := strconv.FormatInt(int64(math.Ceil(n)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// FormatDuration writes seconds as a duration: 1h30m0s.
func FormatDuration(secs float64) string {
	if secs >= 1e9 {
		return strconv.FormatFloat(secs, 'g', 3, 64) + "s"
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Millisecond).String()
}

// Envelope is the most a part of a run may spend.
type Envelope struct {
	// ModelCalls counts the requests sent to models: each try, retry,
	// fallback and schema repair.
	ModelCalls Amount `json:"model_calls"`
	// Tokens are completion (output) tokens: each reply's max_tokens, or
	// DefaultMaxTokens. Prompt tokens are not bounded here.
	Tokens Amount `json:"completion_tokens"`
	// Cost is the US dollars of those tokens at each model's output price.
	Cost      Amount `json:"output_cost_usd"`
	Processes Amount `json:"processes"`
	ToolCalls Amount `json:"tool_calls"`
	Approvals Amount `json:"approvals"`
	// Seconds is wall-clock time: of one visit for a step, of the longest
	// path for a run.
	Seconds Amount `json:"seconds"`
}

func (e Envelope) plus(o Envelope) Envelope {
	return Envelope{ModelCalls: e.ModelCalls.plus(o.ModelCalls), Tokens: e.Tokens.plus(o.Tokens),
		Cost: e.Cost.plus(o.Cost), Processes: e.Processes.plus(o.Processes),
		ToolCalls: e.ToolCalls.plus(o.ToolCalls), Approvals: e.Approvals.plus(o.Approvals),
		Seconds: e.Seconds.plus(o.Seconds)}
}

// times scales the counts of e (not its time) by k.
func (e Envelope) times(k Amount) Envelope {
	return Envelope{ModelCalls: e.ModelCalls.times(k), Tokens: e.Tokens.times(k),
		Cost: e.Cost.times(k), Processes: e.Processes.times(k),
		ToolCalls: e.ToolCalls.times(k), Approvals: e.Approvals.times(k), Seconds: e.Seconds}
}

// StepEnvelope is what one step may spend over a whole run: every visit,
// in every loop iteration and map item around it. Its Seconds are one
// visit's, attempts and body included.
type StepEnvelope struct {
	Step   string      `json:"step"`
	Kind   string      `json:"kind"`
	Pos    graphir.Pos `json:"-"`
	Visits Amount      `json:"visits"`
	Envelope
}

// FlowEnvelope is the envelope of a flow: per step, in declaration order,
// and for the whole run (child flows included).
type FlowEnvelope struct {
	File  string         `json:"file"` // as the caller names it
	Flow  string         `json:"flow"`
	Steps []StepEnvelope `json:"steps"`
	Total Envelope       `json:"total"`
	// AssumedTokens: some model call gives no max_tokens, so
	// DefaultMaxTokens was assumed of it.
	AssumedTokens bool `json:"assumed_max_tokens,omitempty"`
}

// Step returns the envelope of the step called name, or nil.
func (fe *FlowEnvelope) Step(name string) *StepEnvelope {
	for i := range fe.Steps {
		if fe.Steps[i].Step == name {
			return &fe.Steps[i]
		}
	}
	return nil
}

// ComputeEnvelope returns the envelope of g. It never fails: what the graph
// does not bound (a cycle without a visit bound, an unknown child flow) is
// unbounded, with why.
func ComputeEnvelope(g *graphir.Graph) *FlowEnvelope {
	ec := &envCalc{memo: map[*graphir.Graph]*FlowEnvelope{}, active: map[*graphir.Graph]bool{}}
	return ec.flow(g, "")
}

type envCalc struct {
	memo   map[*graphir.Graph]*FlowEnvelope
	active map[*graphir.Graph]bool
}

// flowCalc is the envelope of one graph being computed.
type flowCalc struct {
	ec       *envCalc
	g        *graphir.Graph
	si       *scopeIndex
	prefix   string     // before map names: "child.star:" in a child flow
	perFrame []Amount   // by node: visits in one frame of its scope
	own      []Envelope // by node: one visit, its body excluded (Seconds: the visit's, body included)
	assumed  bool
}

func (ec *envCalc) flow(g *graphir.Graph, prefix string) *FlowEnvelope {
	if fe := ec.memo[g]; fe != nil {
		return fe
	}
	ec.active[g] = true
	defer delete(ec.active, g)
	p := newPass(g, nil)
	fc := &flowCalc{ec: ec, g: g, si: p.scopes(), prefix: prefix,
		perFrame: make([]Amount, len(g.Nodes)), own: make([]Envelope, len(g.Nodes))}
	for _, sg := range fc.si.list {
		fc.frameVisits(sg)
	}
	for _, n := range g.Steps() {
		fc.own[n.ID] = fc.visit(n)
	}
	top := fc.si.byOwner[graphir.None]
	// One entry a step: sized once, as a million-step flow's would
	// otherwise double its way up, each copy a few hundred MB.
	fe := &FlowEnvelope{Flow: g.Name, Steps: make([]StepEnvelope, 0, len(g.Nodes))}
	fc.spread(top, count(1), fe)
	slices.SortFunc(fe.Steps, func(a, b StepEnvelope) int {
		return int(g.Node(a.Step).Decl - g.Node(b.Step).Decl)
	})
	secs := fc.frameTime(top, graphir.None)
	if g.Timeout > 0 {
		secs = secs.capAt(g.Timeout)
	}
	if g.OnExit != graphir.None {
		secs = secs.plus(fc.frameTime(top, g.OnExit))
	}
	fe.Total.Seconds = secs
	fe.AssumedTokens = fe.AssumedTokens || fc.assumed
	ec.memo[g] = fe
	return fe
}

// spread adds the steps of scope sg, whose frames number frames, to fe,
// and the steps of the bodies inside it.
func (fc *flowCalc) spread(sg *scopeGraph, frames Amount, fe *FlowEnvelope) {
	for _, id := range sg.nodes {
		n := fc.g.Nodes[id]
		if !n.IsStep() {
			continue
		}
		visits := frames.times(fc.perFrame[id])
		se := StepEnvelope{Step: n.Name, Kind: n.Kind.String(), Pos: n.Pos, Visits: visits,
			Envelope: fc.own[id].times(visits)}
		if visits.IsZero() {
			se.Seconds = Amount{}
		}
		fe.Steps = append(fe.Steps, se)
		secs := fe.Total.Seconds
		fe.Total = fe.Total.plus(se.Envelope.naming(n.Name))
		fe.Total.Seconds = secs
		if body := fc.si.byOwner[id]; body != nil {
			fc.spread(body, visits.times(fc.iterations(n)), fe)
		}
	}
}

// iterations is how many frames one visit of loop or map n runs its body
// in.
func (fc *flowCalc) iterations(n *graphir.Node) Amount {
	if n.Loop != nil {
		return count(float64(n.Loop.MaxIterations))
	}
	if n.Map == nil {
		return Amount{}
	}
	if k, ok := literalLen(n.Map.Over); ok {
		if n.Map.MaxItems > 0 {
			k = min(k, n.Map.MaxItems)
		}
		return count(float64(k))
	}
	if n.Map.MaxItems > 0 {
		return count(float64(n.Map.MaxItems))
	}
	return Amount{Max: 1, PerItem: []string{fc.prefix + n.Name}}
}

// literalLen returns the length of a map's over= when it is written as a
// list or tuple literal or range(N) of int literals.
func literalLen(e *graphir.Expr) (int, bool) {
	if e == nil || e.Src == "" {
		return 0, false
	}
	x, err := graphir.ParseExpr("", e.Src, 0)
	if err != nil {
		return 0, false
	}
	for {
		p, ok := x.(*syntax.ParenExpr)
		if !ok {
			break
		}
		x = p.X
	}
	switch x := x.(type) {
	case *syntax.ListExpr:
		return len(x.List), true
	case *syntax.TupleExpr:
		return len(x.List), true
	case *syntax.CallExpr:
		fn, ok := x.Fn.(*syntax.Ident)
		if !ok || fn.Name != "range" || len(x.Args) == 0 || len(x.Args) > 3 {
			return 0, false
		}
		var args []int64
		for _, a := range x.Args {
			lit, ok := a.(*syntax.Literal)
			if !ok {
				return 0, false
			}
			v, ok := lit.Value.(int64)
			if !ok {
				return 0, false
			}
			args = append(args, v)
		}
		start, stop, step := int64(0), args[0], int64(1)
		if len(args) > 1 {
			start, stop = args[0], args[1]
		}
		if len(args) == 3 {
			step = args[2]
		}
		if step == 0 {
			return 0, false
		}
		k := (stop - start + step - sign(step)) / step
		return int(max(k, 0)), true
	}
	return 0, false
}

func sign(n int64) int64 {
	if n < 0 {
		return -1
	}
	return 1
}

// frameVisits computes how often each node of scope sg may be entered in
// one frame of the scope (one run, iteration or item). Every entry needs
// an arrival on an in-edge, and each arrival follows an entry of (or a
// token through) the edge's source, so a node's visits are at most the
// sum of its predecessors'; a node that waits for all its forward
// in-edges (join and, all, done) at most the fewest of theirs; a node
// with a visit bound at most that. Nodes of a cycle are taken in the
// order of the cycle's unbounded part, which the checker proved acyclic
// (loop_unbounded otherwise: those nodes are unbounded here).
func (fc *flowCalc) frameVisits(sg *scopeGraph) {
	g := fc.g
	comp, cyclic := components(sg, func(int32) bool { return true })
	members := make([][]int32, len(cyclic))
	for i, c := range comp {
		members[c] = append(members[c], int32(i))
	}
	get := func(i int32) Amount { return fc.perFrame[sg.nodes[i]] }
	entry := func(i int32) Amount {
		if i == 0 || sg.nodes[i] == g.OnExit {
			return count(1)
		}
		return Amount{}
	}
	bound := func(i int32) int {
		if n := g.Nodes[sg.nodes[i]]; n.IsStep() {
			return g.VisitBound(n)
		}
		return 0
	}
	capped := func(i int32, a Amount) Amount {
		if b := bound(i); b > 0 && (!a.Bounded() || a.Max > float64(b)) {
			return count(float64(b))
		}
		return a
	}
	// Tarjan numbers components sinks first.
	for c := len(cyclic) - 1; c >= 0; c-- {
		ms := members[c]
		if !cyclic[c] {
			i := ms[0]
			n := g.Nodes[sg.nodes[i]]
			preds, edges := sg.in(i)
			var sum, back Amount
			fewest, anyFwd := Amount{}, false
			for k, w := range preds {
				v := get(w)
				sum = sum.plus(v)
				if g.Edges[edges[k]].Back {
					back = back.plus(v)
					continue
				}
				if !anyFwd {
					fewest, anyFwd = v, true
				} else if v.Bounded() && (!fewest.Bounded() || v.Max < fewest.Max) {
					fewest = v
				}
			}
			v := sum
			switch n.Join {
			case graphir.JoinAnd, graphir.JoinAll, graphir.JoinDone:
				v = fewest.plus(back)
			}
			fc.perFrame[sg.nodes[i]] = capped(i, entry(i).plus(v))
			continue
		}
		// A cycle: bounded members first, then the others in
		// topological order of the edges among them.
		var free []int32
		for _, i := range ms {
			if bound(i) > 0 {
				fc.perFrame[sg.nodes[i]] = count(float64(bound(i)))
			} else {
				free = append(free, i)
			}
		}
		done := map[int32]bool{}
		for progress := true; progress && len(done) < len(free); {
			progress = false
			for _, i := range free {
				if done[i] {
					continue
				}
				ready := true
				preds, _ := sg.in(i)
				for _, w := range preds {
					if comp[w] == int32(c) && bound(w) == 0 && !done[w] {
						ready = false
						break
					}
				}
				if !ready {
					continue
				}
				v := entry(i)
				for _, w := range preds {
					v = v.plus(get(w))
				}
				fc.perFrame[sg.nodes[i]] = v
				done[i], progress = true, true
			}
		}
		for _, i := range free {
			if !done[i] {
				fc.perFrame[sg.nodes[i]] = unbounded("in a cycle with no visit bound")
			}
		}
	}
}

// frameTime is the longest one frame of scope sg may take: the longest
// path through it, a cycle's steps counted as often as they may be
// visited. With from set, only the paths from that node (an exit
// handler's).
func (fc *flowCalc) frameTime(sg *scopeGraph, from graphir.NodeID) Amount {
	g := fc.g
	comp, cyclic := components(sg, func(int32) bool { return true })
	weight := make([]Amount, len(cyclic))
	reach := make([]bool, len(cyclic))
	for i, c := range comp {
		id := sg.nodes[i]
		if id == g.OnExit && from == graphir.None {
			continue // added after the rest
		}
		secs := fc.own[id].Seconds
		if !secs.Bounded() && !strings.HasPrefix(secs.Unbounded, "step ") {
			secs.Unbounded = fmt.Sprintf("step %q: %s", g.Nodes[id].Name, secs.Unbounded)
		}
		weight[c] = weight[c].plus(fc.perFrame[id].times(secs))
		if from == graphir.None || id == from {
			reach[c] = true
		}
	}
	members := make([][]int32, len(cyclic))
	for i, c := range comp {
		members[c] = append(members[c], int32(i))
	}
	dist := make([]Amount, len(cyclic)) // the longest path into each component
	var longest Amount
	for c := len(cyclic) - 1; c >= 0; c-- { // Tarjan numbers components sinks first
		if !reach[c] {
			continue
		}
		dist[c] = dist[c].plus(weight[c])
		longest = longest.most(dist[c])
		for _, i := range members[c] {
			succ, _ := sg.out(i)
			for _, w := range succ {
				if d := comp[w]; d != int32(c) {
					dist[d] = dist[d].most(dist[c])
					reach[d] = true
				}
			}
		}
	}
	return longest
}

// visit is what one visit of step n spends of its own (a loop's and map's
// body is spread over its steps), and how long it may take, body
// included.
func (fc *flowCalc) visit(n *graphir.Node) Envelope {
	var e Envelope
	attempts := float64(n.Retries + 1)
	switch n.Kind {
	case graphir.KindTask, graphir.KindShell:
		e.Processes = count(attempts)
		e.Seconds = fc.attemptsTime(n, "has no timeout")
	case graphir.KindFn:
		e.Seconds = fc.attemptsTime(n, "fn step has no timeout")
	case graphir.KindSubflow:
		child := fc.child(n.Subflow.Child, n.Subflow.ChildPath, n.Subflow.ChildErr)
		e = child.times(count(attempts))
		if n.Timeout > 0 {
			e.Seconds = fc.attemptsTime(n, "")
		} else {
			e.Seconds = child.Seconds.scale(attempts).plus(count(fc.backoffs(n)))
		}
	case graphir.KindLLM:
		e = fc.modelCall(n.Call.Model, n.Call.MaxTokens, n.Retries, n.Call.HasSchema, n.Timeout)
	case graphir.KindAgent:
		e = fc.agent(n)
	case graphir.KindRouter:
		if n.Call != nil {
			e = fc.modelCall(n.Call.Model, n.Call.MaxTokens, routerRetries, false, n.Timeout)
		}
	case graphir.KindWait:
		e.Seconds = unbounded("computed wait with no timeout")
		if n.WaitUntil {
			e.Seconds = unbounded("wait_until with no timeout")
		} else if n.Wait != nil && n.Wait.IsLiteral() {
			if d, err := graphir.ParseWait(n.Wait.Src); err == nil {
				e.Seconds = count(d.Seconds())
			}
		}
		e.Seconds = e.Seconds.capAt(n.Timeout)
	case graphir.KindApproval:
		e.Approvals = count(1)
		e.Seconds = unbounded("waits for a person, no timeout").capAt(n.Timeout)
	case graphir.KindLoop, graphir.KindMap:
		iters := fc.iterations(n)
		var per Amount
		if body := fc.si.byOwner[n.ID]; body != nil {
			per = fc.frameTime(body, graphir.None)
		}
		if n.Loop != nil && n.Loop.Judge != nil {
			j := fc.modelCall(n.Loop.Judge.Model, 0, judgeRetries, false, 0)
			e = j.times(iters)
			per = per.plus(j.Seconds)
		}
		if n.Map != nil && n.Map.Concurrency > 0 && len(iters.PerItem) == 0 {
			iters = count(math.Ceil(iters.Max / float64(n.Map.Concurrency)))
		}
		e.Seconds = per.times(iters).capAt(n.Timeout)
	}
	return e
}

// attemptsTime is how long the attempts of a task, shell, fn or child-flow
// step may take: each its timeout, with the backoffs between them.
func (fc *flowCalc) attemptsTime(n *graphir.Node, why string) Amount {
	if n.Timeout <= 0 {
		return unbounded(why)
	}
	return count(float64(n.Retries+1)*n.Timeout.Seconds() + fc.backoffs(n))
}

// backoffs is the seconds of the waits before n's retries.
func (fc *flowCalc) backoffs(n *graphir.Node) float64 {
	shape := graphir.DefaultRetryShape
	if n.RetryShape != nil {
		shape = *n.RetryShape
	}
	total, d := 0.0, n.Backoff.Seconds()
	for range n.Retries {
		total += min(d, shape.Max.Seconds())
		d *= shape.Factor
	}
	return total
}

// child is the envelope of one run of a child flow.
func (fc *flowCalc) child(c *graphir.Graph, path string, err *graphir.Error) Envelope {
	switch {
	case c == nil && err == nil:
		return allUnbounded("templated child flow: not known until it runs")
	case c == nil:
		return allUnbounded("child flow could not be loaded")
	case fc.ec.active[c]:
		return allUnbounded("child flow calls itself")
	}
	fe := fc.ec.flow(c, filepath.Base(path)+":")
	fc.assumed = fc.assumed || fe.AssumedTokens
	return fe.Total
}

// naming prefixes the reasons of e's unbounded amounts with the step
// they come from, for a total.
func (e Envelope) naming(step string) Envelope {
	for _, a := range []*Amount{&e.ModelCalls, &e.Tokens, &e.Cost, &e.Processes, &e.ToolCalls, &e.Approvals, &e.Seconds} {
		if !a.Bounded() && !strings.HasPrefix(a.Unbounded, "step ") {
			a.Unbounded = fmt.Sprintf("step %q: %s", step, a.Unbounded)
		}
	}
	return e
}

func allUnbounded(why string) Envelope {
	u := unbounded(why)
	return Envelope{ModelCalls: u, Tokens: u, Cost: u, Processes: u, ToolCalls: u, Approvals: u, Seconds: u}
}

// modelCall is one call of the model called name (a model() name; "" for
// the default model) with its retries: its requests (each try, each
// fallback's, a schema repair's), the completion tokens of the replies
// that report usage (the answer and its repair), their cost and time.
func (fc *flowCalc) modelCall(name string, maxTokens, retries int, schema bool, timeout time.Duration) Envelope {
	models := []*graphir.ModelDecl{fc.g.ModelDecl(name)}
	if d := models[0]; d != nil {
		for _, fb := range d.Fallbacks {
			models = append(models, fc.g.ModelDecl(fb))
		}
	}
	replies := 1.0
	if schema {
		replies = 2
	}
	requests := float64(retries+1) * float64(len(models)) * replies
	var tokens float64
	cost := Amount{}
	for _, d := range models {
		t := maxTokens
		if t == 0 && d != nil {
			t = d.MaxTokens
		}
		if t == 0 {
			t = DefaultMaxTokens
			fc.assumed = true
		}
		tokens = max(tokens, float64(t))
		switch {
		case d != nil && d.Provider == "stub":
		case d != nil && d.Price != nil:
			cost = cost.most(count(float64(t) * replies * d.Price["output"] / 1e6))
		case d == nil && name == "":
			cost = unbounded("the default model has no price")
		default:
			cost = unbounded(fmt.Sprintf("model %q has no price", name))
		}
	}
	if timeout <= 0 {
		timeout = modelAttemptTimeout
	}
	wait := max(timeout, maxRetryAfter)
	return Envelope{ModelCalls: count(requests), Tokens: count(tokens * replies), Cost: cost,
		Seconds: count(requests * (timeout + wait).Seconds())}
}

// agent is one visit of an agent step: max_turns model calls, and the
// tools the model may call in between. A reply may ask for any number of
// tool calls, so with any tool offered those are unbounded.
func (fc *flowCalc) agent(n *graphir.Node) Envelope {
	g := fc.g
	turns := float64(max(n.Call.MaxTurns, 1))
	// A final answer that does not match schema= takes another turn, not
	// a repair: max_turns bounds it.
	e := fc.modelCall(n.Call.Model, n.Call.MaxTokens, n.Retries, false, n.Timeout).times(count(turns))
	e.Seconds = e.Seconds.scale(turns)
	var offered []*graphir.Tool
	for _, r := range n.Call.Tools {
		if t := g.Tool(r.Name); t != nil {
			offered = append(offered, t)
		}
	}
	if g.MaxGrants > 0 {
		for _, r := range g.ToolPool {
			if t := g.Tool(r.Name); t != nil {
				offered = append(offered, t)
			}
		}
	}
	if len(offered) == 0 {
		return e
	}
	const why = "a model's reply may ask for any number of tool calls"
	u := unbounded(why)
	e.ToolCalls, e.Seconds = u, u
	for _, t := range offered {
		switch t.Kind {
		case graphir.KindTask, graphir.KindShell:
			e.Processes = u
		case graphir.KindSubflow:
			c := fc.child(t.Child, t.ChildPath, t.ChildErr)
			if !c.ModelCalls.IsZero() {
				e.ModelCalls, e.Tokens, e.Cost = u, u, u
			}
			if !c.Processes.IsZero() {
				e.Processes = u
			}
			if !c.Approvals.IsZero() {
				e.Approvals = u
			}
		}
		if t.Approve != nil {
			e.Approvals = u
		}
	}
	return e
}

// checkEnvelope reports a flow whose envelope may exceed its own
// max_tokens or max_cost: envelope_exceeds_budget, at the flow() call,
// naming the step that may spend most.
func checkEnvelope(p *pass) {
	g := p.g
	if g.MaxTokens <= 0 && g.MaxCost <= 0 {
		return
	}
	fe := ComputeEnvelope(g)
	check := func(limit float64, get func(e *Envelope) Amount, what, bound string, f Format) {
		total := get(&fe.Total)
		if limit <= 0 || !total.Exceeds(limit) {
			return
		}
		var most *StepEnvelope
		for i := range fe.Steps {
			s := &fe.Steps[i]
			if a := get(&s.Envelope); !a.IsZero() && (most == nil || !a.Bounded() || get(&most.Envelope).Bounded() && a.Max > get(&most.Envelope).Max) {
				most = s
			}
		}
		msg := fmt.Sprintf("a run may spend %s %s, more than its %s", total.Format(f), what, bound)
		switch {
		case !total.Bounded():
			msg = fmt.Sprintf("a run's %s are %s, so may exceed its %s", what, total.Format(f), bound)
		case len(total.PerItem) > 0:
			msg = fmt.Sprintf("a run may spend %s %s, which may exceed its %s", total.Format(f), what, bound)
		}
		hint := "see skein check --envelope; bound the steps that spend most (max_tokens=, max_iterations, max_visits, max_items)"
		if most != nil {
			hint = fmt.Sprintf("step %q may spend most: %s; %s", most.Step, get(&most.Envelope).Format(f), hint)
		}
		p.report(codes.EnvelopeExceedsBudget, nil, p.flowPos(), msg, hint)
	}
	check(float64(g.MaxTokens), func(e *Envelope) Amount { return e.Tokens }, "completion tokens",
		fmt.Sprintf("max_tokens %s", Thousands(float64(g.MaxTokens))), FormatCount)
	check(g.MaxCost, func(e *Envelope) Amount { return e.Cost }, "output cost",
		fmt.Sprintf("max_cost $%g", g.MaxCost), FormatDollars)
}
