// Package graphir defines Skein's frozen flow graph: the nodes and edges that
// a flow file's builtins record while it loads, with their parameters,
// scopes, positions and compiled expressions.
//
// A [Builder] collects the graph during loading; [Builder.Freeze] resolves
// names, adds the implicit edges, classifies back-edges, compiles every
// expression and returns a [Graph] that never changes again, so any number of
// checks and runs may share it. The package has no Starlark threads and
// knows nothing of loading files, checking or running.
package graphir

import (
	"fmt"
	"strings"
	"time"

	"go.starlark.net/starlark"
)

// NodeID indexes [Graph.Nodes]. The sentinels come first.
type NodeID int32

// The sentinel nodes, present in every graph, and the absent node.
const (
	Start NodeID = 0
	End   NodeID = 1
	Abort NodeID = 2
	None  NodeID = -1
)

// Kind is what a node does.
type Kind uint8

const (
	KindStart Kind = iota
	KindEnd
	KindAbort
	KindTask
	KindShell
	KindFn
	KindSubflow
	KindNoop
	KindRouter
	KindLoop
	KindMap
	KindLLM
	KindWait
	KindApproval
	KindAgent
)

var kindNames = [...]string{"start", "end", "abort", "task", "shell", "fn", "subflow", "noop", "router", "loop", "map", "llm", "wait", "approval", "agent"}

func (k Kind) String() string { return kindNames[k] }

// IsSentinel reports whether k is START, END or ABORT.
func (k Kind) IsSentinel() bool { return k <= KindAbort }

// IsProcess reports whether a step of this kind runs a process.
func (k Kind) IsProcess() bool { return k == KindTask || k == KindShell }

// On is the outcome an edge follows.
type On uint8

const (
	OnSuccess On = iota
	OnFailure
	OnAlways
)

var onNames = [...]string{"success", "failure", "always"}

func (o On) String() string { return onNames[o] }

// Matches reports whether an edge with this On fires for a step that
// succeeded (ok) or failed.
func (o On) Matches(ok bool) bool {
	return o == OnAlways || (o == OnSuccess) == ok
}

// Join is how a step with several forward in-edges waits (docs/runs.md).
type Join uint8

const (
	JoinAnd  Join = iota // every forward in-edge arrived, at least one live
	JoinOr               // the first live arrival
	JoinAll              // every forward in-edge arrived live
	JoinDone             // every forward in-edge arrived, live or dead
	// JoinFirst is JoinOr that cancels the losers: on the first live
	// arrival, every other branch still under way that can only reach
	// the step is cancelled (the checker proves they can reach nothing
	// else).
	JoinFirst
)

var joinNames = [...]string{"and", "or", "all", "done", "first"}

func (j Join) String() string { return joinNames[j] }

// ParseJoin returns the join mode called s.
func ParseJoin(s string) (Join, bool) {
	for i, name := range joinNames {
		if name == s {
			return Join(i), true
		}
	}
	return 0, false
}

// Node is one step, or a sentinel. The fields every step may use sit in
// Node itself; what only one kind of step uses sits in a part held by
// pointer (Subflow, Call, Router, Loop, Map), nil for the other kinds, so a
// plain step carries only what it uses (a million-step flow loads in a
// fraction of the memory).
type Node struct {
	ID     NodeID
	Parent NodeID // the loop or map whose body holds it, or None at top level
	Decl   int32  // declaration order among steps (sentinels -1), computed at freeze
	Kind   Kind
	Join   Join
	// JoinSet: join= was given explicitly.
	JoinSet bool
	// WaitUntil: a wait step's Wait is a time (wait_until=), not a
	// duration. (It sits with the other small fields: a node is 384
	// bytes, one of Go's size classes, and a million-step flow holds a
	// million of them.)
	WaitUntil bool

	Name  string // "START", "END", "ABORT" for sentinels
	Pos   Pos    // the user's line (see [Stack.UserFrame])
	Stack Stack  // the call stack of the step() call

	MaxVisits int           // own bound, 0 if unset
	Retries   int           // extra attempts after a failure
	Backoff   time.Duration // delay before the first retry, doubled after each
	Timeout   time.Duration // per attempt, 0 for none
	RetryWhen *Expr         // retry_when: whether a failed attempt is retried; nil: always
	// RetryShape: backoff_factor=, max_backoff=, jitter=; nil for the
	// default (doubling, at most an hour, no jitter).
	RetryShape *RetryShape

	// Task and shell steps.
	Argv  []*Template // run= followed by args=
	Shell *Template   // shell=: run verbatim; parsed only so the checker can refuse holes
	Env   []EnvVar    // env=, sorted by name
	Stdin *Template
	Dir   *Template

	// Fn steps.
	Fn      starlark.Callable
	FnReads *FuncRefs // what Fn reads of r, when its syntax is known

	// Wait steps: the duration, e.g. "30s" or "{{ 2 ** self.visits }}s",
	// or with WaitUntil (wait_until=) the time, in RFC 3339.
	Wait *Template
	// Approval steps: the question a person answers, and the fields
	// (fields=) whose values the person gives with the decision, in
	// declaration order (each with Field set).
	Approve *Template
	Fields  []Input

	// Loops and maps: the body, in list order; Body[0] is the entry.
	Body []NodeID

	In, Out []EdgeID // all edges in and out, in declaration order, computed at freeze

	// The parts of one kind each: non-nil exactly for subflow steps
	// (Subflow), model calls (Call: llm= and agent= steps, routers given
	// llm=), routers, loops and maps.
	Subflow *Subflow
	Call    *ModelCall
	Router  *Router
	Loop    *Loop
	Map     *Map
}

// RetryShape is how a step's retry delays grow beyond backoff=
// (docs/runs.md#retry-shapes).
type RetryShape struct {
	Factor float64       // each delay is the one before times Factor (>= 1)
	Max    time.Duration // no delay is longer
	Jitter bool          // each delay is drawn from [d/2, d]
}

// DefaultRetryShape is the shape of a step that gives none.
var DefaultRetryShape = RetryShape{Factor: 2, Max: time.Hour}

// Subflow is what a child-flow step (flow=) runs.
type Subflow struct {
	Flow      *Template
	Inputs    []NamedTemplate
	Child     *Graph // the literal child flow, loaded by the loader; nil if templated or missing
	ChildPath string // the resolved literal path
	ChildErr  *Error // why the literal child could not be loaded
}

// ModelCall is the model call of an llm= or agent= step (agent= is Prompt),
// or of a router given llm= (docs/models.md).
type ModelCall struct {
	Prompt    *Template // llm= or agent=
	System    *Template // system=
	Model     string    // model=: a model() name; "" for the default model
	ModelPos  Pos
	Schema    any // schema= as decoded JSON (map[string]any, ...); nil for text
	HasSchema bool
	SchemaPos Pos
	MaxTokens int // max_tokens= of the call; 0 for the model's
	// Partial is partial=True: a reply cut at the token limit is the
	// step's output rather than a model_truncated failure.
	Partial bool

	// Agent steps: the tools offered, and the bound on model calls.
	Tools    []ToolRef
	MaxTurns int
}

// Router is how a router step chooses. Routes and Cases are in declaration
// order; every one of them and the default also appear as an out-edge of
// the router.
type Router struct {
	By      *Expr
	Routes  []Route
	Cases   []Case
	Default *Target
}

// Loop is how a loop step repeats its body.
type Loop struct {
	Until         starlark.Callable
	UntilReads    *FuncRefs // what Until reads of its argument, when its syntax is known
	UntilName     string    // until= given as a name (Until set once resolved)
	UntilBad      string    // until= was neither a function nor a name: the type given
	UntilPos      Pos
	Judge         *Judge // until=judge(...)
	MaxIterations int
	ExhaustFail   bool // exhausted="fail": running out of iterations fails the loop
}

// Map is what a map step runs its body over.
type Map struct {
	Over        *Expr
	Concurrency int
	ItemVar     string
	// EmptySkip: empty="skip", a map over an empty list is skipped
	// (dead tokens on) rather than succeeding with [].
	EmptySkip bool
	// MaxItems is max_items=: a map over more items fails with
	// map_too_many_items (0: no bound).
	MaxItems int
}

// Judge is a loop's until=judge(condition, model=...): a model decides
// after each iteration.
type Judge struct {
	Condition string
	Model     string // "" for the default model
	Pos       Pos
}

// ModelDecl is one model() declaration.
type ModelDecl struct {
	Name  string
	Model string
	// Provider is the API the model speaks: "anthropic" (Anthropic's
	// Messages API), "openai" (OpenAI-compatible chat completions), "stub"
	// (Skein's built-in offline model), or "" to infer it from BaseURL.
	Provider string
	BaseURL  string // "" for the default chain
	KeyEnv   string // "" sends no key
	// KeyFile is model(api_key = secret(NAME, file = PATH)): the key is
	// read from this file (a [Secret.File]) rather than $KeyEnv.
	KeyFile string
	// Temperature, MaxTokens and ReasoningEffort are sent with every
	// call where the model takes them (docs/models.md).
	Temperature     *float64
	MaxTokens       int
	ReasoningEffort string
	// Reasoning overrides the table of reasoning models; nil uses it.
	Reasoning *bool
	// Answers are the rules of the built-in offline model (provider
	// "stub"), inline (decoded JSON: a list) or in AnswersFile, a path
	// relative to the flow's folder.
	Answers     any
	AnswersFile string
	// Fallbacks name the model() declarations asked, in order, when this
	// model fails with a provider error.
	Fallbacks []string
	// Price is model(price=): US dollars per million tokens, by
	// "input", "output" and "cached_input" (the checker refuses other
	// keys and numbers that are negative or not finite); PricePos is
	// where it is given.
	Price    map[string]float64
	PricePos Pos
	// RPM and TPM are model(rpm=, tpm=): the requests and tokens a
	// minute the run tree keeps to (0: no bound).
	RPM, TPM int
	Pos      Pos
}

// IsModelCall reports whether n calls a model: an llm= step, an LLM router
// or a judged loop.
func (n *Node) IsModelCall() bool {
	return n.Kind == KindLLM || n.Kind == KindAgent || n.Call != nil || (n.Loop != nil && n.Loop.Judge != nil)
}

// EnvVar is one entry of env=.
type EnvVar struct {
	Name  string
	Value *Template
}

// NamedTemplate is one entry of a subflow's inputs=.
type NamedTemplate struct {
	Name  string
	Value *Template
	// Literal is the value when it is known at load time: a string without
	// holes, or a non-string value (passed with its type); nil when the
	// value is computed by a template. The checker compares it with the
	// child's declared input type (input_type).
	Literal starlark.Value
}

// Target is where a route, case or default goes: a step given directly, or
// named by a string and resolved at freeze (ID is None if nothing matched).
type Target struct {
	ID   NodeID
	Name string // as written when given by name
	Pos  Pos
	Edge EdgeID // the router's out-edge for it
}

// Route is one label of a router's routes=.
type Route struct {
	Label  string
	Target Target
}

// Case is one (condition, target) pair of a router's cases=.
type Case struct {
	When   *Expr
	Target Target
}

// IsStep reports whether n is a step rather than a sentinel.
func (n *Node) IsStep() bool { return !n.Kind.IsSentinel() }

// HasBody reports whether n is a loop or map.
func (n *Node) HasBody() bool { return n.Kind == KindLoop || n.Kind == KindMap }

// EdgeID indexes [Graph.Edges].
type EdgeID int32

// Edge connects the end of one node to the start of another.
type Edge struct {
	ID       EdgeID
	From, To NodeID
	On       On
	Back     bool // a back-edge (docs/runs.md): its arrival always triggers
	Implicit bool // added by freeze (linear default, body chain, entry)
	// Router edges: which route, case (index) or default it stands for.
	// (The flags sit together so an edge packs into 112 bytes.)
	Router  bool
	Default bool
	When    *Expr // nil: always
	Pos     Pos
	Stack   Stack
	Label   string
	Case    int // -1 unless a case
}

// Graph is a frozen flow. Nothing in it changes after [Builder.Freeze].
type Graph struct {
	Name        string
	Description string
	File        string // the flow file as named to the loader
	Root        string // the flow root directory
	Pos         Pos    // the flow() call, if any
	Inputs      []Input
	Output      *Expr
	MaxVisits   int
	Timeout     time.Duration
	MaxTokens   int         // flow(max_tokens=): the run's token budget, 0 for none
	MaxCost     float64     // flow(max_cost=): the run's budget in US dollars, 0 for none
	Models      []ModelDecl // model() declarations, in order
	Tools       []*Tool     // tool() declarations, in order
	ToolPool    []ToolRef   // flow(tools=): what agents may be granted during a run
	MaxGrants   int         // flow(max_grants=): grants per run
	// OnExit is the exit handler named by flow(on_exit=), or None.
	// OnExitName is the name as given; OnExitPos where.
	OnExit     NodeID
	OnExitName string
	OnExitPos  Pos
	// Triggers are the flow's trigger() declarations, in order; the
	// concurrency bound is flow(concurrency=, concurrency_key=).
	Triggers          []Trigger
	Concurrency       int
	ConcurrencyKey    string
	ConcurrencyKeyPos Pos
	// Emit, when set, is the flow (a path relative to this one's file)
	// that the work items a run's result lists under "emit" are queued
	// for; MaxDepth is how deep they may expand (flow(emit=, max_depth=)).
	Emit     string
	EmitPos  Pos
	MaxDepth int
	// Keep is how long skein serve keeps the flow's ended runs
	// (flow(keep=); 0: as the server's --keep says).
	Keep time.Duration
	// Secrets are the secret() values the flow uses (in templates and as
	// model keys), one per source ([Secret.Key]) at its first use: what a
	// run reads when it starts. Secret inputs are among Inputs.
	Secrets []*Secret

	Nodes []*Node
	Edges []*Edge

	// Funcs lists the function names defined by the flow's modules, for
	// until= hints.
	Funcs []string
	// Files lists every file the load read: the flow first, then its
	// modules and literal child flows.
	Files []string

	byName map[string]NodeID
	scopes map[NodeID][]NodeID
}

// Node returns the step called name, or nil. With duplicate names it returns
// the first.
func (g *Graph) Node(name string) *Node {
	if id, ok := g.byName[name]; ok {
		return g.Nodes[id]
	}
	return nil
}

// ModelDecl returns the model() declaration called name, or nil.
func (g *Graph) ModelDecl(name string) *ModelDecl {
	for i := range g.Models {
		if g.Models[i].Name == name {
			return &g.Models[i]
		}
	}
	return nil
}

// Steps returns the nodes that are steps, in declaration order.
func (g *Graph) Steps() []*Node { return g.Nodes[Abort+1:] }

// EachStep calls fn for every step of g and of the literal child flows it
// reaches (through child-flow steps and flow= tools), each flow once,
// parents before their children.
func (g *Graph) EachStep(fn func(n *Node)) {
	g.EachGraph(func(c *Graph) {
		for _, n := range c.Steps() {
			fn(n)
		}
	})
}

// EachGraph calls fn for g and every literal child flow it reaches
// (through child-flow steps and flow= tools), each once, parents before
// their children.
func (g *Graph) EachGraph(fn func(g *Graph)) {
	seen := map[*Graph]bool{}
	var walk func(g *Graph)
	walk = func(g *Graph) {
		if g == nil || seen[g] {
			return
		}
		seen[g] = true
		fn(g)
		for _, n := range g.Steps() {
			if n.Subflow != nil {
				walk(n.Subflow.Child)
			}
		}
		for _, t := range g.Tools {
			walk(t.Child)
		}
	}
	walk(g)
}

// Scope returns the steps directly in the scope owned by id: the top level
// for None, else the body of a loop or map, in declaration order.
func (g *Graph) Scope(id NodeID) []NodeID { return g.scopes[id] }

// StepNames lists all step names in declaration order.
func (g *Graph) StepNames() []string {
	names := make([]string, 0, len(g.Nodes)-3)
	for _, n := range g.Steps() {
		names = append(names, n.Name)
	}
	return names
}

// Input returns the declared input called name, or nil.
func (g *Graph) Input(name string) *Input {
	for i := range g.Inputs {
		if g.Inputs[i].Name == name {
			return &g.Inputs[i]
		}
	}
	return nil
}

// VisitBound returns the visit bound of n: its own, else the flow's default,
// else 0 (unbounded).
func (g *Graph) VisitBound(n *Node) int {
	if n.MaxVisits > 0 {
		return n.MaxVisits
	}
	return g.MaxVisits
}

// Within reports whether node a is inside the body of node owner, at any
// depth.
func (g *Graph) Within(a, owner NodeID) bool {
	for p := g.Nodes[a].Parent; p != None; p = g.Nodes[p].Parent {
		if p == owner {
			return true
		}
	}
	return false
}

// ForwardIn returns the forward (non-back) in-edges of n.
func (g *Graph) ForwardIn(n *Node) []*Edge {
	var out []*Edge
	for _, id := range n.In {
		if e := g.Edges[id]; !e.Back {
			out = append(out, e)
		}
	}
	return out
}

// ParseWait reads the duration of a wait= step: a duration such as
// "30s", "1m30s", "250ms" or "2d" ([ParseDuration]), at least zero.
func ParseWait(s string) (time.Duration, error) {
	d, err := ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as \"30s\" or \"10m\", got %q", s)
	}
	return d, nil
}

// ParseWaitUntil reads the time of a wait_until= step: RFC 3339, e.g.
// "2026-12-24T09:00:00Z" or with an offset, "2026-12-24T10:00:00+01:00".
func ParseWaitUntil(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("want a time in RFC 3339 such as \"2026-12-24T09:00:00Z\", got %q", s)
	}
	return t, nil
}

// Source is one file a flow was loaded from, as a run records it so that
// it can be loaded again exactly (resume): the file's absolute path and
// the text the load read.
type Source struct {
	Path string
	Text []byte
}
