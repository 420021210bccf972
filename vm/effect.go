package vm

// This file is the effect seam: the one interface through which the
// deterministic core asks for the outcome of anything that comes from
// outside it (a process, a child flow, a model call, an approval, a
// timer), and the local producer that does the work on this machine.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/proc"
)

// EffectProducer produces the completions of effects. The VM calls Start on
// the goroutine driving the run, once per attempt of an effect; the
// producer calls done exactly once with the completion, from any goroutine,
// possibly before Start returns. done never blocks. Start itself must not
// block for long: it hands work to a goroutine (or a journal, or a
// workflow engine) and returns.
//
// ctx is cancelled when the effect is no longer wanted (the run ended, the
// loop iteration or map item it belongs to was abandoned, the caller
// cancelled); the producer then stops the work and completes with
// Cancelled set.
//
// A producer may wrap another and fall through to it: a replay producer
// answers from a journal and hands the first effect it has no record of to
// [Local]; a journaling producer records each completion before passing it
// on.
type EffectProducer interface {
	Start(ctx context.Context, req *EffectRequest, done func(*EffectCompletion))
}

// EffectIdler is implemented by a producer that holds completions back to
// report them in an order of its own (a replay reports them in the order
// they were recorded). The VM calls Idle with the child-flow chain of a run
// (as in [EffectRequest.Flow]) whenever that run can do nothing more until
// a completion arrives: the producer must then report at least one of that
// run's held completions, if it holds any.
type EffectIdler interface {
	Idle(flow []string)
}

// EffectRequest asks for one attempt of an effect. Producers must not
// modify it; they may keep it after done is called.
type EffectRequest struct {
	// RunID is the id of the top-level run; child flows share it.
	RunID string
	// Flow is the chain of child-flow steps leading to the run that asks,
	// each with its scope, e.g. ["per_file[2]", "lint"]; empty for the
	// top-level run.
	Flow []string
	// Scope locates the step inside loop iterations and map items, e.g.
	// ["polish#2", "per_file[3]"], outermost first.
	Scope []string
	Step  string
	Node  *graphir.Node
	Kind  graphir.Kind
	// Visit counts the step's visits in its frame (1 for the first);
	// Attempt counts the attempts of this visit (1 for the first, 2 for
	// the first retry).
	Visit   int
	Attempt int
	// OnExit: the effect belongs to the flow's exit handler (or a child
	// flow it runs), which runs once per run attempt: a resumed run runs
	// it again rather than replaying it.
	OnExit bool

	// Tasks and shells: the rendered process. Shells are ["/bin/sh", "-c",
	// script].
	Argv      []string
	Env       []string
	Dir       string
	Stdin     *string
	Timeout   time.Duration // per attempt; 0 for none
	KillGrace time.Duration // between SIGTERM and SIGKILL
	MaxOutput int           // bytes of the tail of stdout and of stderr kept
	// Tee, when set, is also given what the attempt writes to its stdout
	// and stderr, as it writes it (a producer that lets a run's tasks be
	// followed live sets it). Each stream is written from one goroutine
	// of its own, so Stdout and Stderr must not share state unguarded;
	// their errors are ignored. Nil costs nothing.
	Tee *Tee

	// Waits: how long, from when the step started.
	Wait time.Duration

	// Approvals: the rendered question. Timeout bounds the wait for the
	// decision from when it was first asked, across parks.
	Message string

	// Child flows: the file and the bound-by-name inputs (the child binds
	// them against its own declaration). ChildGraph is nil for a templated
	// flow= path, which RunChild loads.
	ChildPath   string
	ChildGraph  *graphir.Graph
	ChildInputs map[string]starlark.Value

	// Model calls (llm steps, LLM routers, judge calls): the request with
	// its model resolved (the key's variable name, never the key), and the
	// rendered prompt (for dry runs and mocks).
	Chat   *model.Request
	Prompt string

	// Agent steps: Turn counts the step's model calls in this visit (1
	// for the first). A tool call's request has Tool (the tool's name),
	// ToolCallID (the model's id of the call) and ToolArgs (the
	// validated arguments as JSON), and Kind is the tool's: task or
	// shell, or subflow for a flow= tool (with ChildPath, ChildGraph and
	// ChildInputs, the arguments, as for a child-flow step).
	Turn       int
	Tool       string
	ToolCallID string
	ToolArgs   string

	child *childRun
	agent *agentRun
	model *modelRun
	from  *run // the run that asks
}

// Outstanding is how much of the run that asked for req is still to come:
// its effects in flight (req included, and any its producer holds back),
// its retries waiting out their backoff and its effects waiting for a
// parallel slot. It may be called only from the producer's Idle for that
// run (on the run's driver). A producer that holds effects back until
// nothing else of their run can progress (approvals held open) lets them
// go once Outstanding is the number it holds. -1 for a request no run
// made.
func (req *EffectRequest) Outstanding() int {
	if req.from == nil {
		return -1
	}
	return req.from.running + len(req.from.slotq)
}

// Rendered is what an attempt actually ran, after its templates, as a
// run's record keeps it: a task's or shell's argv (a tool call's too),
// the messages of a model call (an agent's first turn: its later turns
// add the tool calls' results, which are recorded as those calls), or a
// child flow's inputs. The value of every model key of the run is masked
// in it.
type Rendered struct {
	Argv     []string          `json:"argv,omitempty"`
	Messages []RenderedMessage `json:"messages,omitempty"`
	// Inputs are the inputs a child flow (or a flow= tool) was given,
	// as a JSON object.
	Inputs json.RawMessage `json:"inputs,omitempty"`
}

// RenderedMessage is one message of a model call as [Rendered] keeps it.
type RenderedMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// MaxRendered bounds what a record keeps of each argument and message of
// [Rendered] (its first 48 KiB and last 16 KiB), and of a child flow's
// inputs (kept whole up to it, else left out): a loop sending a large
// prompt would otherwise store it again at every visit.
const MaxRendered = 64 << 10

// Rendered returns what req runs, masked and bounded ([MaxRendered]), for
// its record (see [Rendered]); nil for an effect with nothing rendered to
// show (a wait, an approval, whose question is recorded with it, an
// agent's later turns).
func (req *EffectRequest) Rendered() *Rendered {
	mask := func(s string) string { return graphir.Clip(s, MaxRendered) }
	if req.from != nil {
		mask = func(s string) string { return graphir.Clip(req.from.mask(s), MaxRendered) }
	}
	switch {
	case len(req.Argv) > 0:
		out := &Rendered{Argv: make([]string, len(req.Argv))}
		for i, a := range req.Argv {
			out.Argv[i] = mask(a)
		}
		return out
	case req.Chat != nil && req.Turn <= 1:
		out := &Rendered{Messages: make([]RenderedMessage, 0, len(req.Chat.Messages))}
		for _, m := range req.Chat.Messages {
			out.Messages = append(out.Messages, RenderedMessage{Role: m.Role, Content: mask(m.Content)})
		}
		return out
	case len(req.ChildInputs) > 0:
		in := make(map[string]any, len(req.ChildInputs))
		for k, v := range req.ChildInputs {
			g, err := stdlib.ToGo(v)
			if err != nil {
				g = v.String()
			}
			in[k] = g
		}
		b, err := json.Marshal(in)
		if m := mask(string(b)); err == nil && len(m) < MaxRendered && json.Valid([]byte(m)) {
			return &Rendered{Inputs: json.RawMessage(m)}
		}
	}
	return nil
}

// Nudge makes the run that asked for req go round its driver loop again,
// so that, if it waits, it calls its producer's Idle once more: a producer
// that starts holding req back after the run went idle calls it, so that
// the run's next Idle sees it held. It never blocks.
func (req *EffectRequest) Nudge() {
	if req.from == nil {
		return
	}
	select {
	case req.from.inbox.wake <- struct{}{}:
	default:
	}
}

// Tee receives a task attempt's output as it is produced: see
// [EffectRequest.Tee]. Every byte a writer is given was written by the
// attempt before [proc.Run] returns, so before its completion is passed
// on.
type Tee struct {
	Stdout, Stderr io.Writer
}

// EffectCompletion is how one attempt of an effect ended.
type EffectCompletion struct {
	OK bool
	// Cancelled: ctx ended before the effect did.
	Cancelled bool
	// Output is the output of effects other than tasks and shells, whose
	// output the VM builds from Stdout, Stderr and ExitCode.
	Output starlark.Value
	// Error and Code describe a failure; Code is "step_failed" unless e.g.
	// "timeout".
	Error string
	Code  codes.Code
	// Tasks and shells.
	ExitCode  int
	Stdout    string
	Stderr    string
	Truncated bool // stdout or stderr was cut to its tail
	// Child flows: the child's run, when it ran.
	Child *Result
	// Stop ends the whole run with this error (a child flow nesting too
	// deep or in a cycle, a model call past the token budget or missing
	// from a replay-only cassette).
	Stop *graphir.Error
	// Model calls: the model id, the reply's text (a router's raw answer,
	// a judge's verdict), the tokens spent and how long the call took.
	Model    string
	Answer   string
	Usage    model.Usage
	Duration time.Duration
	// Replayed: the completion was read back from a record rather than
	// produced (resume); events say so.
	Replayed bool
	// Park: the effect waits for something from outside the run (a
	// person's decision) that this process will not see. The step is left
	// waiting; once nothing else in the run can progress, the run ends with
	// status Waiting, to be resumed when the decision is in.
	Park bool
}

// Local is the producer that does the work on this machine: tasks and
// shells run as processes ([proc.Run]), child flows as nested runs, model
// calls over HTTP ([EffectRequest.CallModel]) and waits as timers. An
// approval parks (completes with Park set): nobody here can decide it, so
// the run ends Waiting once nothing else can progress, to be resumed when
// the decision is in.
type Local struct{}

// Start implements [EffectProducer].
func (Local) Start(ctx context.Context, req *EffectRequest, done func(*EffectCompletion)) {
	if req.Chat != nil {
		go func() { done(req.CallModel(ctx)) }()
		return
	}
	switch req.Kind {
	case graphir.KindTask, graphir.KindShell:
		go func() {
			job, _ := req.TaskJob()
			// The live output is masked as the record is.
			stdout, stderr, flush := req.maskTee(req.Tee)
			o := proc.Run(ctx, &job, stdout, stderr)
			flush()
			done(req.TaskCompletion(o))
		}()
	case graphir.KindSubflow:
		go func() { done(req.RunChild(ctx)) }()
	case graphir.KindWait:
		go func() { done(Sleep(ctx, req.Wait)) }()
	case graphir.KindApproval:
		// Nobody here can decide: park.
		done(&EffectCompletion{Park: true})
	default:
		done(&EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("step %q: %s steps cannot run here", req.Step, req.Kind)})
	}
}

// TaskJob returns the process of a task or shell request as plain data,
// for [proc.Run] on this machine or on an engine's worker; false for a
// request of another kind. It is the one place a request becomes a job.
func (req *EffectRequest) TaskJob() (proc.Job, bool) {
	if !req.Kind.IsProcess() {
		return proc.Job{}, false
	}
	return proc.Job{RunID: req.RunID, Step: req.Step, Visit: req.Visit, Attempt: req.Attempt,
		Argv: req.Argv, Env: req.Env, Dir: req.Dir, Stdin: req.Stdin,
		Timeout: req.Timeout, KillGrace: req.KillGrace, MaxOutput: req.MaxOutput}, true
}

// TaskCompletion is the completion of a task or shell request from the
// outcome of its job (see [EffectRequest.TaskJob]), wherever it ran.
//
// Output holding the value of a model's key (a tool that prints a file
// with it) is masked here, before the completion reaches the journal, the
// record, the events or the model's next request.
func (req *EffectRequest) TaskCompletion(o *proc.Outcome) *EffectCompletion {
	c := &EffectCompletion{OK: o.OK, Cancelled: o.Cancelled, Error: o.Error, Code: o.Code,
		ExitCode: o.ExitCode, Stdout: o.Stdout, Stderr: o.Stderr, Truncated: o.Truncated}
	if req.from != nil {
		c.Stdout, c.Stderr, c.Error = req.from.mask(c.Stdout), req.from.mask(c.Stderr), req.from.mask(c.Error)
	}
	return c
}

// Sleep waits for d, or until ctx ends: the completion of a wait step on
// this machine.
func Sleep(ctx context.Context, d time.Duration) *EffectCompletion {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return &EffectCompletion{OK: true, Output: starlark.None}
	case <-ctx.Done():
		return &EffectCompletion{Cancelled: true}
	}
}

// childRun is what RunChild needs: the parent's run and the child's
// options.
type childRun struct {
	r    *run
	opts Options
}

// RunChild runs the child flow of a child-flow request as a nested run on
// this machine, loading it first when its path was templated, and reports
// how it ended. The child's own effects go through the same producer as
// the parent's.
func (req *EffectRequest) RunChild(ctx context.Context) *EffectCompletion {
	if req.child == nil {
		return &EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("step %q is not a child flow", req.Step)}
	}
	r, path := req.child.r, req.ChildPath
	g := req.ChildGraph
	if g == nil {
		if r.opts.LoadFlow == nil {
			return &EffectCompletion{Code: codes.StepFailed,
				Error: fmt.Sprintf("cannot load child flow %s: templated child flows need a loader", path)}
		}
		var err error
		if g, err = r.opts.LoadFlow(ctx, path, r.g.Root); err != nil {
			return &EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("child flow %s: %v", path, err)}
		}
	}
	in, err := BindInputs(g, req.ChildInputs)
	if err != nil {
		return &EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("child flow %s: %v", path, graphir.AsError(err).Msg)}
	}
	res := Prepare(g).Run(ctx, in, req.child.opts)
	switch res.Status {
	case Succeeded:
		return &EffectCompletion{OK: true, Output: res.Output, Child: res}
	case Cancelled:
		return &EffectCompletion{Cancelled: true, Child: res}
	case Waiting:
		return &EffectCompletion{Park: true, Child: res}
	}
	if res.Error != nil && stopsParent(res.Error.Code) {
		return &EffectCompletion{Stop: res.Error, Child: res}
	}
	msg := "failed"
	if res.Error != nil {
		msg = res.Error.Msg
	}
	return &EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("child flow %s failed: %s", g.Name, msg), Child: res}
}

// stopsParent reports whether a child run failing with code ends its
// parent too: the nesting guards, and the run tree's token budget and
// replay-only cassette, which bind the whole tree.
func stopsParent(code codes.Code) bool {
	switch code {
	case codes.SubflowDepth, codes.SubflowCycle, codes.BudgetExceeded, codes.ReplayMiss:
		return true
	}
	return false
}

// request makes the request for the first attempt of effect step n in
// frame f.
func (r *run) request(f *frame, n *graphir.Node) *EffectRequest {
	return &EffectRequest{RunID: r.opts.top, Flow: r.opts.prefix, Scope: f.scopePath(), Step: n.Name, Node: n, Kind: n.Kind,
		Visit: int(f.state(r, n.ID).visits), Attempt: 1, OnExit: r.exiting || r.opts.onExit, from: r}
}

// startEffect asks the producer for an attempt of effect step n in frame
// f; its completion reaches the driver through the inbox.
func (r *run) startEffect(f *frame, n *graphir.Node, req *EffectRequest) {
	s := f.execScope(r)
	r.running++
	c := &completion{f: f, n: n, req: req, slot: takesSlot(n, req)}
	if c.slot {
		if r.reserved {
			r.reserved = false // dispatch took it
		} else {
			r.opts.slots.take()
		}
	}
	ctx := s.ctx
	if r.p.info[n.ID].racer {
		ctx = r.raceCtx(f, n, c, ctx)
	}
	if req.Tool == "" && boundedEffect(n) {
		ctx = r.boundEffect(f, n, c, ctx)
	}
	r.opts.Effects.Start(ctx, req, func(ec *EffectCompletion) {
		c.c = ec
		r.post(c)
	})
}

// effectOutcome turns an effect's completion into the outcome the core
// acts on.
func effectOutcome(n *graphir.Node, c *EffectCompletion) *outcome {
	o := &outcome{ok: c.OK, err: c.Error, code: c.Code, trunc: c.Truncated, child: c.Child, stop: c.Stop, cancelled: c.Cancelled, replayed: c.Replayed}
	switch n.Kind {
	case graphir.KindTask, graphir.KindShell:
		o.task = true
		o.value = taskOutput(c.Stdout, c.Stderr, c.ExitCode)
	default:
		o.value = c.Output
		if o.value == nil {
			o.value = starlark.None
		}
	}
	if !o.ok && o.code == "" && !o.cancelled {
		o.code = codes.StepFailed
	}
	return o
}

// inbox is where completions and timers report to the driver, in the
// order they arrive. Posting never blocks.
type inbox struct {
	mu    sync.Mutex
	queue []*completion
	head  int
	wake  chan struct{}
}

func (r *run) post(c *completion) {
	b := &r.inbox
	b.mu.Lock()
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// take returns the oldest posted completion, or nil.
func (r *run) take() *completion {
	b := &r.inbox
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.head == len(b.queue) {
		return nil
	}
	c := b.queue[b.head]
	b.queue[b.head] = nil
	b.head++
	if b.head == len(b.queue) {
		b.queue, b.head = b.queue[:0], 0
	}
	return c
}
