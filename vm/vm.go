// Package vm runs frozen flow graphs (docs/language.md, docs/runs.md): tokens along edges,
// conditions, joins, dead-path elimination, bounded back-edges, routers
// (by expression or by a model), loops with until functions or judge(),
// maps, child flows, model and agent steps, approvals, waits, retries,
// timeouts and cancellation, producing a stream of events and a [Result].
//
// The graph is never modified: all state of a run lives in a per-run value,
// so any number of runs may share one graph. vm never loads files or checks
// graphs; a caller that runs child flows given by templated paths supplies
// [Options.LoadFlow].
//
// The package is split the way Temporal splits workflows from activities:
// core.go decides what happens next from what has happened so far and never
// touches a clock, a process or a goroutine; exec.go drives it, evaluating
// Starlark (conditions, templates, fn steps, until functions) on the run's
// one thread and handing everything else to the effect seam.
//
// # Effects
//
// An effect is a step whose outcome comes from outside the deterministic
// core: a task or shell process, a child flow, a model call (an llm= step,
// an LLM router, a judge() verdict, an agent's turn or tool call), an
// approval or a wait's timer. For each attempt of one, the core builds an
// [EffectRequest] (where it is: flow chain, scope, step, visit, attempt;
// and what to do, rendered: argv, env, dir and stdin of a process, the
// path and inputs of a child flow, the chat request of a model call, the
// question of an approval, the length of a wait) and hands it to
// [Options.Effects], an [EffectProducer]. Later the producer reports an
// [EffectCompletion] (ok or failed with a code and message, or cancelled;
// a task's exit code and captured output; a child flow's result; a
// model's reply; a decision), and the core acts on it as if it had done
// the work itself: it never knows who produced it. Retries are the core's:
// a failed attempt with retries left is followed, after its backoff, by a
// request for the next attempt.
//
// fn steps, conditions, routers and until functions are not effects: they
// are deterministic and computed again wherever a run is replayed.
//
// [Local], the default, runs processes (package vm/proc), child flows,
// model calls and waits on this machine, and parks approvals, which no one
// here can decide. Other producers wrap it or replace it: a journal that
// commits each completion to the run store before passing it on and a
// replay that answers from that journal and falls through to Local at the
// first effect it has no record of (resume), both in vm/store; a mock that
// answers from a script (flowtest: flow tests and dry runs); the Temporal
// engine, which runs effects as activities, child workflows, durable
// timers and signals (engine/temporal). Completions reach the driver in
// the order the producer reports them.
package vm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/heapwatch"
	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
)

// Defaults for [Options].
const (
	// DefaultParallel is how many task, shell and model-call steps run at
	// once in a run tree unless told otherwise. Such steps mostly wait on processes (a
	// waiting task costs a process and a few file descriptors, not a core),
	// so the default is wide enough that a fan-out of a couple of hundred
	// waiting tasks runs in one wave, as a shell's & and wait would run it:
	// measured, 200 parallel `sleep 0.1` take ~5x a bash script at 16,
	// ~1.8x at 64 and ~1.2x at 256 (docs/performance.md). CPU-bound work
	// wants --parallel near the number of cores.
	DefaultParallel = 256
	// DefaultEvalSteps is the step budget of one runtime evaluation (docs/language.md).
	DefaultEvalSteps = 1_000_000
	// DefaultMaxOutput is how many bytes of each of a task's stdout and
	// stderr are kept (the tail).
	DefaultMaxOutput = 1 << 20
	// DefaultKillGrace is how long a cancelled task's process group has
	// between SIGTERM and SIGKILL.
	DefaultKillGrace = 2 * time.Second
	// DefaultMaxPath is how many path entries a result keeps (the latest).
	DefaultMaxPath = 10_000
	// DefaultExitGrace is how long an exit handler may run after the run
	// was cancelled or timed out.
	DefaultExitGrace = 30 * time.Second
	// MaxDepth is the nesting cap for child flows (docs/language.md).
	MaxDepth = 8
	// maxLog bounds the print() lines kept per step.
	maxLog = 200
)

// Options controls a run. The zero value is ready to use.
type Options struct {
	// Parallel bounds the effects doing work (tasks, shells, model calls)
	// running at once in the whole run tree: child flows share their
	// parent's budget, and a child-flow step holds no slot. With 1, the
	// order of docs/runs.md is exactly reproducible. 0 means DefaultParallel.
	Parallel int
	// Timeout bounds the whole run (flow_timeout); 0 means the flow's own
	// timeout, if any.
	Timeout time.Duration
	// Set gives top-level steps of the run (not of its child flows) an
	// output by name: such a step does not run; each visit of it ends
	// succeeded with the value (a what-if fork, resume --set).
	Set map[string]starlark.Value
	// OnEvent receives the run's events as they happen. Child flows run on
	// their own goroutines, so it must be safe for concurrent use. The
	// event is the run's for the length of the call (it is reused for the
	// next one): read it, do not change it, and to keep it keep a copy
	// (*ev).
	OnEvent func(ev *Event)
	// Stream asks the model calls of llm= steps and agent turns to
	// stream their replies: each piece of text is a model_delta event
	// as it arrives (with OnEvent set). What the steps output, and what
	// the journal keeps, is the same either way.
	Stream bool
	// LoadFlow loads and checks a child flow named by a templated flow=
	// (literal ones were loaded with the parent); root is the parent's flow
	// root, which the child's own loads may not leave either. Nil refuses
	// templated child flows.
	LoadFlow func(ctx context.Context, path, root string) (*graphir.Graph, error)
	// EvalSteps is the step budget of one evaluation; 0 means
	// DefaultEvalSteps.
	EvalSteps uint64
	// MaxMemory bounds how much the heap may grow during one evaluation
	// (a fn step, a condition, a template); 0 means
	// heapwatch.DefaultLimit (512 MiB).
	MaxMemory uint64
	// MaxOutput is the bytes of stdout and stderr kept per task; 0 means
	// DefaultMaxOutput.
	MaxOutput int
	// KillGrace is the time between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration
	// Env is the environment tasks start from; nil means os.Environ().
	Env []string
	// ModelEnv is the environment models are resolved from (the default
	// model's variables, SKEIN_MODEL and the base URL's); nil means Env.
	// An engine that calls models on other machines resolves them where
	// the run started.
	ModelEnv []string
	// MaxPath is how many path entries the result keeps; 0 means
	// DefaultMaxPath.
	MaxPath int
	// ExitGrace is how long the exit handler may still run once the
	// run's context is done (cancelled or timed out); 0 means
	// DefaultExitGrace.
	ExitGrace time.Duration
	// ExitCtx, when done, stops the exit handler at once: the CLI cancels
	// it on a second Ctrl-C. Nil: only ExitGrace bounds it.
	ExitCtx context.Context
	// Effects produces the completions of the run's effects (tasks,
	// shells, child flows); nil means [Local]. Child flows use the
	// parent's.
	Effects EffectProducer
	// Models answers model calls; nil means an OpenAI-compatible client
	// reading keys from Env. A [model.Cassette] records and replays.
	Models model.Provider
	// MaxTokens bounds the tokens the run tree's model calls may spend; 0
	// means the flow's max_tokens, if any.
	MaxTokens int
	// Pacers paces the models declared with rpm= or tpm=; nil means new
	// pacers for this run tree. Child flows and map items use the
	// parent's, so a model's rate holds across the whole tree.
	Pacers *model.Pacers

	// Runtime is the host the driver runs on (clock, timers, waiting); nil
	// means this process. Child flows use the parent's.
	Runtime Runtime

	// Nesting places a run that another engine starts for a child-flow
	// request in its run tree (see [EffectRequest.Nesting]), so the depth
	// cap and the cycle guard hold across runs; nil for a top-level run.
	Nesting *Nesting

	// Suspend, when set, is asked before each round of starting ready
	// steps whether the run should stop so that it can be continued
	// elsewhere (an engine whose executions have a bounded history). Once
	// it says yes the run starts nothing new; when nothing is in flight
	// any more (no effect, retry timer or evaluation) it ends with status
	// [Suspended] and [Result.Snapshot] holding its state. A run in its
	// exit handler, or with approvals parked, does not suspend. Child
	// flows run by [Local] never suspend.
	Suspend func() bool
	// Restore continues the run a snapshot was taken of, from where it
	// was suspended, instead of starting the flow afresh (see
	// [Program.DecodeSnapshot]). The flow's timeout counts from the
	// original start.
	Restore *Snapshot

	// Secrets masks the run's secrets in all it reports and keeps (see
	// [secrets.Masker]); nil means a new one. The caller adds the values
	// of secret inputs; the run adds the values of its models' keys and
	// of secret(). Child flows use the parent's.
	Secrets *secrets.Masker
	// SecretsUnread: the run's effects are mocked (a dry run), so its
	// secret() calls are not read: each renders as [secrets.Mask].
	// Secret inputs are masked all the same.
	SecretsUnread bool
	// SecretRefs: the run's effects run elsewhere (on Temporal's
	// workers), which read its secret() values themselves: each renders
	// as a reference ([SecretRef]) that [ResolveSecretRefs] replaces with
	// the value where the effect runs, so the run never holds one.
	SecretRefs bool

	// RunID is the id of the run; empty means a new one (see [NewRunID]).
	// Child flows get ids of their own.
	RunID string

	// Set for child runs.
	top    string        // the id of the top-level run
	budget *model.Budget // shared by the whole run tree
	slots  *slots        // the --parallel budget, shared by the whole run tree
	onExit bool          // run by an exit handler
	depth  int
	chain  []string // flow files of the parents, outermost first
	prefix []string // step names leading to this child, for events
	// keys are the key variables tasks and tools do not inherit: the
	// models' of this run and of the runs above it.
	keys map[string]bool
	// secretVals are the values of the run tree's secret() calls.
	secretVals *secretVals
}

func (o *Options) defaults() {
	if n := o.Nesting; n != nil {
		o.top, o.depth, o.chain, o.prefix, o.onExit = n.Top, n.Depth, n.Chain, n.Prefix, n.OnExit
		if len(n.Keys) > 0 {
			o.keys = map[string]bool{}
			for _, k := range n.Keys {
				o.keys[k] = true
			}
		}
		if o.budget == nil {
			o.budget = model.NewBudget(n.TokenLimit)
			o.budget.Restore(n.TokensUsed)
			o.budget.CostLimit = n.CostLimit
			o.budget.RestoreCost(n.CostUsed)
		}
		o.Nesting = nil
	}
	if o.Secrets == nil {
		o.Secrets = new(secrets.Masker)
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.slots == nil {
		o.slots = &slots{limit: o.Parallel}
	}
	if o.EvalSteps == 0 {
		o.EvalSteps = DefaultEvalSteps
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = heapwatch.DefaultLimit
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.MaxPath <= 0 {
		o.MaxPath = DefaultMaxPath
	}
	if o.ExitGrace <= 0 {
		o.ExitGrace = DefaultExitGrace
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.Effects == nil {
		o.Effects = Local{}
	}
	if o.secretVals == nil {
		o.secretVals = &secretVals{}
	}
	if o.Models == nil {
		env, sv := o.Env, o.secretVals
		o.Models = &model.Client{Getenv: func(k string) string {
			if v, ok := sv.lookup(k); ok {
				return v // a model(api_key = secret(..., file = ...))
			}
			return lookupEnv(env, k)
		}}
	}
}

// Status is how a run ended.
type Status string

const (
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
	// Waiting: parked on approvals (see [EffectCompletion.Park]); the run
	// has not ended and can be resumed.
	Waiting Status = "waiting"
)

// CancelAsked is who asked to cancel a run, why and when.
type CancelAsked struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// StepStatus is the state of one step in a result.
type StepStatus string

const (
	StepNotRun    StepStatus = "not_run"
	StepSucceeded StepStatus = "succeeded"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped"
	StepCancelled StepStatus = "cancelled"
	StepRunning   StepStatus = "running"
	StepWaiting   StepStatus = "waiting"
)

// Result is the record of one run (docs/cli.md).
type Result struct {
	RunID string
	// ResumedFrom names the run this one resumed, when it resumed an
	// ended one (the caller sets it; the VM only reports it).
	ResumedFrom string
	// CancelAsked is a request to cancel the run that it has not acted
	// on yet (the caller sets it from its record; the VM only reports
	// it): skein show of a run still going.
	CancelAsked *CancelAsked
	Flow        string
	File        string
	Status      Status
	Error       *graphir.Error // nil when the run succeeded
	Output      starlark.Value
	Inputs      *stdlib.Map
	Started     time.Time
	Duration    time.Duration
	// Path lists the steps in the order they started; when a long run
	// started more than Options.MaxPath steps, only the latest are kept
	// and PathTotal counts them all.
	Path      []string
	PathTotal int
	// Pending lists the approvals a waiting run waits for.
	Pending []*Pending
	// Steps holds one record per step, in declaration order, except the
	// exit handler's.
	Steps []*StepRecord
	// OnExit is the record of the exit handler (flow(on_exit=)), nil when
	// the flow has none. Its failure does not change Status.
	OnExit *StepRecord
	// Usage is the tokens the run's model calls spent, child flows
	// included; ModelCalls counts the calls.
	Usage      model.Usage
	ModelCalls int
	// Warnings are what the summary should point out although the run
	// went on (a judged loop whose condition was unrelated).
	Warnings []string
	// Grants are the tools of the flow's pool granted to agent steps;
	// Findings the requests for tools that were refused.
	Grants   []Grant
	Findings []string
	// Snapshot is the state of a Suspended run.
	Snapshot *Snapshot
}

// Step returns the record of the step called name, or nil.
func (r *Result) Step(name string) *StepRecord {
	for _, s := range r.Steps {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// StepRecord is what a result says about one step: its latest outcome.
type StepRecord struct {
	Name      string
	Kind      graphir.Kind
	Status    StepStatus
	Visits    int
	Output    starlark.Value // nil when it never completed
	Error     string
	Code      codes.Code // the failure's code, e.g. codes.Timeout
	Duration  time.Duration
	Truncated bool     // a task's output was cut to its tail
	Log       []string // print() output of fn steps
	// Trace is the Starlark backtrace of a runtime error in the step's own
	// code ("file:line:col: in func", innermost first).
	Trace []string
	// Loops.
	Iterations int
	Exhausted  bool
	// StoppedReason says why a finished loop stopped: "until",
	// "exhausted" or (a judge) "condition_unrelated"; "" while it has not.
	StoppedReason string
	// Maps.
	Items int
	// Child flows: the child's run.
	Child *Result
	// Model calls (llm steps, LLM routers, judged loops): the model id and
	// the tokens spent over all visits; routers keep the raw answer.
	Model  string
	Usage  model.Usage
	Answer string
	// Agent steps: the latest visit's turns, conversation and tool calls.
	Agent *AgentRecord
}

// BindInputs checks the inputs given for a run against the flow's
// declaration and fills in defaults. The values are flow data (JSON, or
// what a parent flow passes) and must already have each input's type
// (text from a command line is converted first, see [graphir.Input.Parse]).
// Unknown names, missing required inputs, values of the wrong type and
// values not among an input's choices are an error naming the input.
func BindInputs(g *graphir.Graph, given map[string]starlark.Value) (*stdlib.Map, error) {
	declared := make([]string, len(g.Inputs))
	for i, in := range g.Inputs {
		declared[i] = in.Name
	}
	var unknown []string
	for name := range given {
		if g.Input(name) == nil {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		e := &graphir.Error{Code: codes.BadInput, Msg: fmt.Sprintf("flow %s has no input %q; it declares %s", g.Name, unknown[0], describeInputs(g))}
		if n := spell.Nearest(unknown[0], declared); n != "" {
			e.Hint = fmt.Sprintf("did you mean %q?", n)
		}
		return nil, e
	}
	b := stdlib.NewMapBuilder(len(g.Inputs))
	var missing []string
	for _, in := range g.Inputs {
		v, ok := given[in.Name]
		switch {
		case ok:
			d, err := stdlib.Data(v)
			if err != nil {
				return nil, &graphir.Error{Code: codes.BadInput, Msg: fmt.Sprintf("input %q: %v", in.Name, err)}
			}
			if d, err = in.Check(d); err != nil {
				return nil, &graphir.Error{Code: codes.BadInput, Msg: err.Error(), Hint: in.Describe()}
			}
			v = d
		case in.Required:
			missing = append(missing, in.Name)
			continue
		default:
			v = in.Default
		}
		b.Add(in.Name, v)
	}
	if len(missing) > 0 {
		return nil, &graphir.Error{Code: codes.BadInput,
			Msg:  fmt.Sprintf("flow %s needs input %s; it declares %s", g.Name, quoteList(missing), describeInputs(g)),
			Hint: fmt.Sprintf("pass it with --input %s=VALUE", missing[0])}
	}
	return b.Map(), nil
}

func describeInputs(g *graphir.Graph) string {
	if len(g.Inputs) == 0 {
		return "no inputs"
	}
	var parts []string
	for _, in := range g.Inputs {
		if in.Required {
			parts = append(parts, fmt.Sprintf("%s (%s, required)", in.Name, in.TypeName()))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%s, default %s)", in.Name, in.TypeName(), graphir.ValueString(in.Default)))
		}
	}
	return strings.Join(parts, ", ")
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// Run runs the flow g with the given inputs (see [BindInputs]) and returns
// its result. An error is returned only when the inputs do not fit the flow;
// every failure of the run itself is in the result.
func Run(ctx context.Context, g *graphir.Graph, inputs map[string]starlark.Value, opts Options) (*Result, error) {
	in, err := BindInputs(g, inputs)
	if err != nil {
		return nil, err
	}
	return Prepare(g).Run(ctx, in, opts), nil
}

// Program is a graph prepared for running: the per-graph tables the VM
// needs, computed once. It is immutable and safe for concurrent runs.
//
// The VM's inner loop reads nodes and edges through the compact tables
// rather than graphir's structs, which carry every parameter of every kind
// of step: a chain of 100,000 steps then stays in cache.
type Program struct {
	g      *graphir.Graph
	dir    string     // directory tasks run in and child paths resolve from
	info   []nodeInfo // by node id
	scopes map[graphir.NodeID][]graphir.NodeID
}

// nodeInfo is what the VM's inner loop needs of a node.
type nodeInfo struct {
	out   []edgeInfo // out-edges in declaration order
	local int32      // index within its scope
	fwdIn int32      // forward in-edges
	bound int32      // visit bound, 0 for none
	decl  int32      // declaration order
	kind  graphir.Kind
	join  graphir.Join
	// A join = "first" step: the steps that lose its race (see
	// [graphir.Graph.Race]). racer: the step loses some step's race.
	losers []graphir.NodeID
	racer  bool
}

// edgeInfo is what the VM's inner loop needs of an edge.
type edgeInfo struct {
	when *graphir.Expr
	fast *fastCond // when's form for the fast path (fastcond.go), or nil
	id   graphir.EdgeID
	to   graphir.NodeID
	on   graphir.On
	back bool
}

// Prepare computes the tables for running g.
func Prepare(g *graphir.Graph) *Program {
	p := &Program{g: g, dir: filepath.Dir(g.File), scopes: map[graphir.NodeID][]graphir.NodeID{}}
	p.info = make([]nodeInfo, len(g.Nodes))
	edges := make([]edgeInfo, 0, len(g.Edges))
	fast := map[starlark.Callable]*fastCond{} // by compiled function: one per source text
	for _, n := range g.Nodes {
		in := &p.info[n.ID]
		in.bound = int32(min(g.VisitBound(n), 1<<31-1))
		in.decl = n.Decl
		in.kind, in.join = n.Kind, n.Join
		if n.Join == graphir.JoinFirst {
			in.losers = g.Race(n).Losers
		}
		start := len(edges)
		for _, eid := range n.Out {
			e := g.Edges[eid]
			ei := edgeInfo{when: e.When, id: e.ID, to: e.To, on: e.On, back: e.Back}
			if w := e.When; w != nil && !w.User && w.Func != nil {
				c, seen := fast[w.Func]
				if !seen {
					c = compileFast(w)
					fast[w.Func] = c
				}
				ei.fast = c
			}
			edges = append(edges, ei)
		}
		in.out = edges[start:len(edges):len(edges)]
	}
	p.scopes[graphir.None] = g.Scope(graphir.None)
	for i, id := range p.scopes[graphir.None] {
		p.info[id].local = int32(i)
	}
	for _, n := range g.Nodes {
		if n.HasBody() {
			s := g.Scope(n.ID)
			p.scopes[n.ID] = s
			for i, id := range s {
				p.info[id].local = int32(i)
			}
		}
	}
	for _, e := range g.Edges {
		if !e.Back {
			p.info[e.To].fwdIn++
		}
	}
	for _, in := range p.info {
		for _, id := range in.losers {
			p.info[id].racer = true
		}
	}
	return p
}

// Graph returns the graph the program runs.
func (p *Program) Graph() *graphir.Graph { return p.g }

// NewRunID returns a new run id for a run starting at t: ids sort by start
// time (to the millisecond) and are unique with overwhelming likelihood.
func NewRunID(t time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// IsRunID reports whether s is a whole run id, as [NewRunID] makes them
// (not a prefix of one, nor "last").
func IsRunID(s string) bool {
	stamp, tail, ok := strings.Cut(s, "-")
	if _, err := time.Parse("20060102T150405.000Z", stamp); !ok || err != nil || len(tail) != 8 {
		return false
	}
	_, err := hex.DecodeString(tail)
	return err == nil
}

// Pending is an effect a waiting run waits for: an approval.
type Pending struct {
	Step    string
	Flow    []string // child-flow chain, as in [EffectRequest]
	Scope   []string
	Visit   int
	Message string
}

// Nesting is where a child flow sits in its run tree: the top-level run's
// id, how deep it nests, the files of the flows above it (outermost first),
// the step names leading to it (for events), and whether an exit handler
// runs it.
type Nesting struct {
	Top    string
	Depth  int
	Chain  []string
	Prefix []string
	OnExit bool
	// TokenLimit and TokensUsed are the run tree's token budget when the
	// child starts: a child spends from its tree's budget, not one of its
	// own.
	TokenLimit int64 `json:",omitempty"`
	TokensUsed int64 `json:",omitempty"`
	// CostLimit and CostUsed are its cost budget, in US dollars.
	CostLimit float64 `json:",omitempty"`
	CostUsed  float64 `json:",omitempty"`
	// Keys are the key variables of the models of the runs above it,
	// which its tasks and tools do not inherit either.
	Keys []string `json:",omitempty"`
}

// Nesting returns the nesting of the child run a child-flow request asks
// for, for an engine that runs it as a run of its own (Options.Nesting).
func (req *EffectRequest) Nesting() Nesting {
	if req.child == nil {
		return Nesting{Top: req.RunID}
	}
	o := req.child.opts
	return Nesting{Top: o.top, Depth: o.depth, Chain: o.chain, Prefix: o.prefix, OnExit: o.onExit,
		TokenLimit: o.budget.Limit, TokensUsed: o.budget.Used(), CostLimit: o.budget.CostLimit, CostUsed: o.budget.Cost(), Keys: slices.Sorted(maps.Keys(o.keys))}
}

// ChargeTokens counts tokens a child flow run elsewhere (as a run of its
// own, see [EffectRequest.Nesting]) spent against the run tree's budget; a
// child run here charges it as it goes.
func (req *EffectRequest) ChargeTokens(u model.Usage) {
	if req.child != nil {
		req.child.opts.budget.Charge(u)
	}
}
