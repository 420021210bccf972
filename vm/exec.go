package vm

// This file is the doing half of the VM: the driver loop that hands ready
// steps to executors and feeds their completions back to core.go, the
// evaluation of Starlark (conditions, templates, fn steps, until functions)
// on the run's thread, and child flows.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/heapwatch"
	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
)

// run is the state of one run of a Program.
type run struct {
	p    *Program
	g    *graphir.Graph
	opts Options
	// taskEnv is opts.Env without the key variables of the flow's models:
	// what tasks and tools start from (a step's env= may pass one back).
	taskEnv []string
	// secrets masks the run tree's secrets (opts.Secrets): the values of
	// those key variables, of secret() and of secret inputs.
	secrets *secrets.Masker
	ctx     context.Context // the caller's, with the flow timeout
	events  bool

	// execCtx is the parent of every piece of async work; stopExec
	// cancels it when the run ends.
	execCtx  context.Context
	stopExec context.CancelFunc

	inputs *stdlib.Map
	res    *Result
	recs   []*StepRecord // by node id; nil for sentinels

	root     *frame
	queue    readyQueue
	seq      uint64
	frameOrd uint64
	work     []arrival
	over     bool
	exiting  bool           // the exit handler is running: the run itself has ended
	parked   []*Pending     // effects waiting for a decision from outside the run
	idler    EffectIdler    // the producer, if it holds completions back
	exitErr  *graphir.Error // what stopped the exit handler
	reached  bool           // END has received a live token
	stopped  []string       // top-level steps where live branches ended, latest last
	// stoppedSeen marks, by node id, the steps in stopped now or before.
	stoppedSeen     []bool
	stoppedDistinct int

	running  int                         // async work in flight, retry timers included
	reserved bool                        // dispatch took a --parallel slot for the step it is entering
	slotq    []queued                    // effects of running agent steps waiting for a --parallel slot
	inbox    inbox                       // async work reports here
	timers   map[*completion]func() bool // retry timers by their completion: stop
	bounds   map[boundKey]*bound         // timeouts the core keeps (bound.go)
	racing   map[boundKey]*racer         // steps under way that may lose a race (race.go)
	lostWhy  map[boundKey]string         // why a step that lost a race was cancelled
	rt       Runtime
	pacer    Pacer // rt, when it wants to hear of evaluations

	// Evaluations (eval.go). mu is held by the driver except while it
	// evaluates; finished is closed when the last driver of a phase (the
	// run, then its exit handler) is done.
	mu       sync.Mutex
	gen      *evalGen // thread and view of the current driver; nil until needed
	inEval   *evalGen // set while an evaluation is under way
	evalSeq  uint64
	phase    int
	finished chan struct{}
	mem      *heapwatch.Watch // bounds the heap's growth in each evaluation

	cause *graphir.Error // the latest step failure routed on (see follow)
	// stoppedIn holds the frames where a step ended before drain with
	// the run stopping: a runtime error's (see failedAt), a cancellation's
	// that arrived before the driver saw the run's context done (see
	// completed), so that drain cancels the loops and maps around them.
	stoppedIn []*frame

	// In retry_when, the failed attempt's record, bound to the name of the
	// step attemptOf.
	attempt   starlark.Value
	attemptOf *graphir.Node

	path     []string
	pathNext int
	now      func() time.Time
	// handoff is the time of the latest step finish the driver read from
	// the clock, while nothing has run since (no interpreter call, no
	// wait): the next step the driver enters starts at that same instant,
	// without another clock read. Zero when there is none.
	handoff time.Time
	// ev is the event the driver fills and emits, reused (OnEvent keeps
	// no event past its call): no copy and no allocation per event.
	ev Event

	// Agent steps: the arguments of the tool call whose templates are
	// being rendered (args), and the tools granted in this run.
	toolArgs starlark.Value
	grants   []Grant
}

// completion is what async work reports to the driver: an effect's
// completion, or a retry timer firing.
type completion struct {
	f     *frame
	n     *graphir.Node
	c     *EffectCompletion
	req   *EffectRequest // the effect's request, for its retries
	retry int            // >0: a retry timer fired; start this attempt
	timer bool           // a retry timer's
	slot  bool           // the effect holds a slot of the --parallel budget
	// A timeout's timer, which fired (not counted in r.running).
	bound *bound
	// An effect attempt with a timeout the core keeps: cancel ends its
	// context, expired says the timeout did.
	cancel  context.CancelFunc
	expired bool
	// An effect of a step that may lose a join = "first" race.
	racer *racer
}

// execScope is the cancellation of a frame's async work.
type execScope struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// execScope returns the frame's scope for async work, making it (and its
// parents') on first use.
func (f *frame) execScope(r *run) *execScope {
	if f.exec == nil {
		parent := r.execCtx
		if f.parent != nil {
			parent = f.parent.execScope(r).ctx
		}
		ctx, cancel := context.WithCancel(parent)
		f.exec = &execScope{ctx: ctx, cancel: cancel}
	}
	return f.exec
}

func (f *frame) cancelExec() {
	if f.exec != nil {
		f.exec.cancel()
	}
}

var errFlowTimeout = errors.New("flow timeout")

// monotonicClock returns a clock that reads the wall time once and then
// only the monotonic clock: the wall time of a reading is the start's plus
// the monotonic time since, which costs one clock read instead of two
// (time.Now reads both) and never jumps when the wall clock is set.
func monotonicClock() func() time.Time {
	start := time.Now()
	return func() time.Time { return start.Add(time.Since(start)) }
}

// Run runs the program with bound inputs (see [BindInputs]).
func (p *Program) Run(ctx context.Context, inputs *stdlib.Map, opts Options) *Result {
	opts.defaults()
	g := p.g
	if opts.budget == nil {
		limit := opts.MaxTokens
		if limit <= 0 {
			limit = g.MaxTokens
		}
		opts.budget = model.NewBudget(int64(limit))
		opts.budget.CostLimit = g.MaxCost
	}
	if opts.Pacers == nil {
		opts.Pacers = model.NewPacers()
	}
	r := &run{p: p, g: g, opts: opts, inputs: inputs, events: opts.OnEvent != nil,
		timers: map[*completion]func() bool{}, rt: opts.Runtime}
	// A child flow withholds its parents' keys as well as its own.
	keys := modelKeys(g, opts.Env)
	for k := range opts.keys {
		keys[k] = true
	}
	r.opts.keys = keys
	r.taskEnv = withoutKeys(opts.Env, keys)
	r.secrets = opts.Secrets
	for k := range keys {
		r.secrets.Add(r.getenv(k))
	}
	r.idler, _ = opts.Effects.(EffectIdler)
	r.pacer, _ = opts.Runtime.(Pacer)
	if r.rt == nil {
		r.rt, r.now = localRuntime{}, monotonicClock()
	} else {
		r.now = r.rt.Now
	}
	r.inbox.wake = make(chan struct{}, 1)
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = g.Timeout
	}
	if timeout > 0 && opts.Restore != nil {
		// A continued run's timeout counts from its original start.
		timeout = max(timeout-r.now().Sub(opts.Restore.Result.Started), time.Nanosecond)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = r.rt.WithTimeout(ctx, timeout, errFlowTimeout)
		defer cancel()
	}
	r.ctx = ctx
	r.execCtx, r.stopExec = context.WithCancel(ctx)
	defer r.stopExec()
	var stopMem func()
	r.mem, stopMem = heapwatch.Start(opts.MaxMemory, "runtime")
	defer stopMem()

	r.res = &Result{RunID: opts.RunID, Flow: g.Name, File: g.File, Inputs: inputs, Started: r.now()}
	if r.res.RunID == "" {
		r.res.RunID = NewRunID(r.res.Started)
	}
	if r.opts.top == "" {
		r.opts.top = r.res.RunID
	}
	r.recs = make([]*StepRecord, len(g.Nodes))
	r.res.Steps = make([]*StepRecord, 0, len(g.Nodes)-3)
	recs := make([]StepRecord, len(g.Nodes)-3)
	for i, n := range g.Steps() {
		rec := &recs[i]
		rec.Name, rec.Kind, rec.Status = n.Name, n.Kind, StepNotRun
		r.recs[n.ID] = rec
		if n.ID == g.OnExit {
			r.res.OnExit = rec
			continue
		}
		r.res.Steps = append(r.res.Steps, rec)
	}
	r.root = &frame{scope: graphir.None, states: make([]nodeState, len(p.scopes[graphir.None]))}
	if opts.Restore != nil {
		r.restore(opts.Restore)
	} else if r.events {
		r.emit(&Event{Type: RunStarted, RunID: r.res.RunID, FlowName: g.Name})
	}

	serr := r.readSecrets()
	r.runDriver(func() {
		switch {
		case serr != nil:
			// Before anything runs, a restored run's included.
			r.end(Failed, serr)
		case opts.Restore != nil:
			// The driver loop dispatches the restored queue.
		case len(g.Steps()) == 0:
			r.res.Output = starlark.None
			r.end(Succeeded, nil)
		default:
			r.seq++
			r.follow(r.root, g.Nodes[graphir.Start], &outcome{ok: true, value: starlark.None})
		}
	})

	res := r.res
	res.Duration = r.now().Sub(res.Started)
	res.Pending = r.parked
	if res.Status == Suspended {
		return res
	}
	if g.OnExit != graphir.None && res.Status != Waiting {
		r.exitHandler(g.Nodes[g.OnExit])
	}
	if len(r.path) == r.opts.MaxPath && r.pathNext > 0 {
		res.Path = append(append([]string(nil), r.path[r.pathNext:]...), r.path[:r.pathNext]...)
	} else {
		res.Path = r.path
	}
	if res.Path == nil {
		res.Path = []string{}
	}
	if res.Output == nil {
		res.Output = starlark.None
	}
	r.maskResult(res)
	if r.events {
		ev := Event{Type: RunFinished, RunID: res.RunID, FlowName: g.Name, Status: string(res.Status), Duration: res.Duration, Output: res.Output}
		if res.Error != nil {
			ev.Code, ev.Error, ev.Step, ev.Trace = res.Error.Code, res.Error.Msg, res.Error.Step, res.Error.Trace
		}
		r.emit(&ev)
	}
	return res
}

// exitHandler runs the flow's exit handler n once the run has ended,
// whatever its status, with `run` bound to its outcome. It runs under a
// context of its own: once the run's context is done (cancelled, timed
// out), before or while the handler runs, the handler has Options.ExitGrace
// left; Options.ExitCtx ending stops it at once (a second Ctrl-C). Its
// failure is recorded in its record, never in the run's status. It returns
// nothing.
func (r *run) exitHandler(n *graphir.Node) {
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(r.ctx))
	defer cancel(nil)
	stopGrace := r.rt.AfterDone(r.ctx, func() {
		stop := r.rt.AfterFunc(r.opts.ExitGrace, func() { cancel(errGraceOver) })
		r.rt.AfterDone(hctx, func() { stop() })
	})
	defer stopGrace()
	if r.opts.ExitCtx != nil {
		defer r.rt.AfterDone(r.opts.ExitCtx, func() { cancel(errExitStopped) })()
	}
	r.exiting = true
	r.ctx = hctx
	r.execCtx, r.stopExec = context.WithCancel(hctx)
	r.over = false
	r.queue = r.queue[:0]
	r.root.exec = nil // the run's was cancelled when it ended
	r.runDriver(func() {
		r.seq++
		r.ready(r.root, n)
	})
	r.stopExec()

	rec := r.recs[n.ID]
	if e := r.exitErr; e != nil && (rec.Error == "" || rec.Status != StepFailed) {
		// Stopped by something other than its own failure: a runtime
		// error, or cancellation.
		rec.Error, rec.Code, rec.Trace = e.Msg, e.Code, e.Trace
		rec.Status = StepFailed
		if e.Code == codes.Cancelled {
			rec.Status = StepCancelled
		}
	}
	if r.events {
		ev := Event{Type: ExitHandled, Step: n.Name, Kind: n.Kind.String(), Status: string(rec.Status)}
		if rec.Status != StepSucceeded {
			ev.Code, ev.Error = rec.Code, rec.Error
		}
		r.emit(&ev)
	}
}

var (
	errGraceOver   = errors.New("exit handler grace period over")
	errExitStopped = errors.New("exit handler stopped")
)

// runValue is what the exit handler sees as `run`: the run's status and
// error.
func (r *run) runValue() starlark.Value {
	var e starlark.Value = starlark.None
	if err := r.res.Error; err != nil {
		e = stdlib.NewMap([]string{"code", "step", "message"},
			[]starlark.Value{starlark.String(err.Code), starlark.String(err.Step), starlark.String(err.Msg)})
	}
	return stdlib.NewMap([]string{"status", "error"}, []starlark.Value{starlark.String(string(r.res.Status)), e})
}

// runDriver runs one phase of the run (the run, or its exit handler) on a
// driver goroutine, starting with start, and waits for the phase to end.
// The driver holds r.mu except while it evaluates; a goroutine that takes
// the run over from a stuck evaluation becomes the phase's driver
// (eval.go).
func (r *run) runDriver(start func()) {
	r.mu.Lock() // against timers of the phase before
	r.phase++
	r.gen = nil
	r.finished = make(chan struct{})
	if r.rt.Replayed() {
		// Replayed runs (workflow code) evaluate on the driver itself: no
		// goroutine may take over, and nothing can interrupt an
		// evaluation but its step budget.
		start()
		r.loop()
		return
	}
	r.mu.Unlock()
	stopWatch := r.watchContext()
	go func() {
		r.mu.Lock()
		start()
		r.loop()
	}()
	<-r.finished
	stopWatch()
}

// loop runs the driver loop to the end of the phase, then lets runDriver
// return. It is called holding r.mu.
func (r *run) loop() {
	r.drive()
	r.drain()
	r.mu.Unlock()
	close(r.finished)
}

// drive is the driver loop: start what is ready, wait for async work or
// an interruption, feed outcomes back to the core.
func (r *run) drive() {
	for !r.over {
		hold := r.opts.Suspend != nil && !r.exiting && len(r.parked) == 0 && r.opts.Suspend()
		if hold && r.quiescent() {
			r.suspend()
			break
		}
		// The effects of steps already running wait for a slot even
		// while the run holds its ready steps back.
		if r.startQueued(); !hold && len(r.slotq) == 0 {
			r.dispatch()
		}
		if r.over {
			break
		}
		if r.running == 0 && len(r.queue) == 0 && len(r.slotq) == 0 {
			if r.ctx.Err() != nil {
				// An evaluation saw the run being stopped and left its
				// step unfinished: that is the interruption, not a
				// pruned path.
				r.interrupted()
				break
			}
			r.complete()
			break
		}
		if c := r.take(); c != nil {
			if c.bound == nil {
				r.running--
			}
			r.completed(c)
			continue
		}
		if r.idler != nil {
			r.idler.Idle(r.opts.prefix)
		}
		r.handoff = time.Time{}
		if r.rt.Wait(r.ctx, r.inbox.wake) {
			r.interrupted()
		}
	}
}

// dispatch starts ready steps in queue order while there is room. With
// Parallel == 1 nothing starts while anything runs, so the order of docs/runs.md
// is exact.
func (r *run) dispatch() {
	for len(r.queue) > 0 && !r.over {
		if r.opts.Parallel == 1 && r.running > 0 {
			return
		}
		t := r.queue[0]
		if t.f.abandoned() {
			r.queue.pop()
			continue
		}
		// The budget is the run tree's; only an effect that works takes
		// a slot.
		reserved := effectOf(t.n) == working
		if reserved && !r.opts.slots.reserve(r.inbox.wake) {
			return
		}
		r.queue.pop()
		if r.ctx.Err() != nil {
			if reserved {
				r.opts.slots.give()
			}
			r.interrupted()
			return
		}
		r.reserved = reserved
		r.enter(t)
		if r.reserved { // the step started no effect
			r.reserved = false
			r.opts.slots.give()
		}
	}
}

// completed feeds finished async work back to the core.
func (r *run) completed(c *completion) {
	if c.bound != nil {
		r.boundFired(c.bound)
		return
	}
	if c.cancel != nil {
		if b := r.bounds[boundKey{c.f, c.n.ID}]; b != nil && b.eff == c {
			r.unbound(c.f, c.n)
		}
		c.cancel()
	}
	if c.timer {
		delete(r.timers, c)
	}
	if c.slot {
		c.slot = false
		r.opts.slots.give()
	}
	var o *outcome
	if c.c != nil {
		o = effectOutcome(c.n, c.c)
	}
	if c.racer != nil && r.raceDone(c) {
		return
	}
	if r.over || c.f.abandoned() {
		if r.inFlight(c.f, c.n) {
			r.cancelledStep(c, o)
		}
		return
	}
	if c.expired && o.cancelled {
		o = expiredOutcome(c.n, o)
	}
	if c.req != nil && c.req.agent != nil {
		r.agentDone(c)
		return
	}
	if c.retry > 0 {
		if c.req != nil {
			req := *c.req
			req.Attempt = c.retry
			if req.child != nil {
				// Each attempt's child reports and is journaled apart.
				req.child = r.childRun(append(c.f.scopePath(), childAt(c.n, req.Visit, req.Attempt)))
			}
			r.startEffect(c.f, c.n, &req)
			return
		}
		r.callFn(c.f, c.n, c.retry)
		return
	}
	if c.req != nil && c.req.Chat != nil && !o.cancelled {
		r.modelDone(c.f, c.n, c.req, c.c, 0)
		switch c.n.Kind {
		case graphir.KindRouter:
			r.routed(c.f, c.n, c.c)
			return
		case graphir.KindLoop:
			r.judged(c.f, c.c)
			return
		}
	}
	if o.stop != nil {
		r.failedAt(c.f, c.n, o.stop)
		return
	}
	if c.c.Park {
		rec := r.recs[c.n.ID]
		rec.Status = StepWaiting
		if ch := c.c.Child; ch != nil {
			rec.Child = ch
			r.parked = append(r.parked, ch.Pending...)
		} else {
			r.parked = append(r.parked, &Pending{Step: c.n.Name, Flow: c.req.Flow, Scope: c.req.Scope, Visit: c.req.Visit, Message: c.req.Message})
		}
		return
	}
	if o.cancelled {
		// Cancelled without the run or frame ending: only the caller's
		// context does that, and the driver sees it next.
		r.cancelledStep(c, o)
		r.stoppedIn = append(r.stoppedIn, c.f)
		r.interrupted()
		return
	}
	if !o.ok && coreRetried(c.n) && c.req.Attempt <= c.n.Retries {
		retry, ok := r.retryWanted(c.f, c.n, o)
		if !ok {
			return
		}
		if retry {
			r.retryLater(c.f, c.n, c.req, c.req.Attempt, o.err)
			return
		}
	}
	r.finish(c.f, c.n, o)
}

// cancelledStep records step c.n as cancelled, keeping what it produced
// so far: a task's output up to the signal, a child flow's run. Its visit
// ends here, so the time it ran counts in its duration and step_finished
// reports it, whatever its kind (a wait, a child flow, a model call...).
func (r *run) cancelledStep(c *completion, o *outcome) {
	rec := r.recs[c.n.ID]
	rec.Status, rec.Error, rec.Code = StepCancelled, "cancelled", "cancelled"
	// The frame holding c.n's state: c.f itself, or for a judge's call
	// the parent of the loop body frame it was made in.
	f := c.f.frameFor(c.n)
	st := f.state(r, c.n.ID)
	now, took := r.endVisit(st, rec)
	var output starlark.Value
	if o != nil {
		if o.child != nil {
			rec.Child = o.child
		}
		if o.task {
			if output = failedTask(o.value, "cancelled", codes.Cancelled); output == nil {
				output = o.value
			}
			rec.Output, rec.Truncated = output, o.trunc
		}
	}
	if r.events {
		ev := r.stepEvent(StepFinished, now, f, c.n, st.visits)
		ev.Status, ev.Code, ev.Error, ev.Duration, ev.Output = string(StepCancelled), "cancelled", "cancelled", took, output
		r.emit(ev)
	}
}

// retryWanted decides whether a failed attempt of step n is retried: always,
// unless retry_when says otherwise. In retry_when the step's own name is
// bound to the failed attempt's record. ok is false when evaluating it
// stopped the run.
func (r *run) retryWanted(f *frame, n *graphir.Node, o *outcome) (retry, ok bool) {
	if n.RetryWhen == nil {
		return true, true
	}
	r.attempt, r.attemptOf = outcomeValue(o), n
	retry, err := r.evalCond(f, n, n.RetryWhen)
	r.attempt, r.attemptOf = nil, nil
	if err != nil {
		r.evalFailed(f, n, "retry_when "+quoteExpr(n.RetryWhen), err)
		return false, false
	}
	return retry, true
}

// retryLater schedules attempt+1 of step n after its backoff; req is the
// effect's request (nil for fn steps).
func (r *run) retryLater(f *frame, n *graphir.Node, req *EffectRequest, attempt int, msg string) {
	msg = graphir.ClipMessage(msg)
	visit := int(f.state(r, n.ID).visits)
	if req != nil {
		visit = req.Visit
	}
	wait := backoff(n, attempt, r.jitterSeed(f, n, visit, attempt))
	if r.events {
		r.emit(&Event{Type: StepRetrying, Scope: f.scopePath(), Step: n.Name, Kind: n.Kind.String(), Visit: visit, Attempt: attempt + 1, Error: msg, Duration: wait})
	}
	c := &completion{f: f, n: n, req: req, retry: attempt + 1, timer: true}
	r.running++
	r.timers[c] = r.rt.AfterFunc(wait, func() { r.post(c) })
}

// interrupted ends the run because its context is done: the flow timeout,
// or the caller cancelling.
func (r *run) interrupted() {
	if r.over || r.ctx.Err() == nil {
		return
	}
	if r.exiting {
		msg := "the exit handler was stopped"
		if context.Cause(r.ctx) == errGraceOver {
			msg = fmt.Sprintf("the exit handler did not finish within its grace period of %s after the run was stopped", r.opts.ExitGrace)
		}
		r.end(Cancelled, &graphir.Error{Code: codes.Cancelled, Step: r.g.Nodes[r.g.OnExit].Name, Msg: msg})
		return
	}
	if context.Cause(r.ctx) == errFlowTimeout {
		timeout := r.opts.Timeout
		if timeout == 0 {
			timeout = r.g.Timeout
		}
		r.stop(&graphir.Error{Code: codes.FlowTimeout, Msg: fmt.Sprintf("flow %s did not finish within its timeout of %s", r.g.Name, timeout)})
		return
	}
	msg := "the run was cancelled"
	if c := context.Cause(r.ctx); c != nil && c != context.Canceled && c != context.DeadlineExceeded {
		msg = c.Error() // who cancelled it and why (engine/runs)
	}
	r.end(Cancelled, &graphir.Error{Code: codes.Cancelled, Msg: msg})
}

// drain stops whatever still runs after the run ended and waits for it, so
// no process or goroutine outlives the run. Every visit still under way
// ends cancelled, with its duration and a step_finished event: the
// effects as they report back, the steps waiting out a retry's backoff,
// and then the loops and maps whose bodies they ran in, innermost first.
func (r *run) drain() {
	r.stopExec()
	// Where work was under way: their owners may be too.
	frames := r.stoppedIn
	r.stoppedIn = nil
	var stopped []*completion
	for c, stop := range r.timers {
		if stop() {
			r.running--
			delete(r.timers, c)
			stopped = append(stopped, c)
		}
	}
	slices.SortFunc(stopped, func(a, b *completion) int {
		return cmp.Or(cmp.Compare(a.f.ord, b.f.ord), cmp.Compare(r.p.info[a.n.ID].decl, r.p.info[b.n.ID].decl))
	})
	for _, c := range stopped {
		frames = append(frames, c.f)
		if r.inFlight(c.f, c.n) {
			r.cancelledStep(c, nil)
		}
	}
	r.stopBounds()
	for r.running > 0 {
		c := r.take()
		if c == nil {
			if r.idler != nil {
				r.idler.Idle(r.opts.prefix)
			}
			r.handoff = time.Time{}
			r.rt.Wait(context.Background(), r.inbox.wake) // never done: only a completion ends the wait
			continue
		}
		if c.bound != nil {
			continue // disarmed: the run is over
		}
		r.running--
		frames = append(frames, c.f)
		r.completed(c)
	}
	for _, q := range r.slotq {
		frames = append(frames, q.f)
	}
	r.cancelOwners(frames)
	for _, rec := range r.recs {
		if rec != nil && rec.Status == StepRunning {
			rec.Status, rec.Error, rec.Code = StepCancelled, "cancelled", "cancelled"
		}
	}
}

// cancelOwners ends, as cancelled, the loops and maps still under way
// that own the body frames in frames or their parents, innermost first.
func (r *run) cancelOwners(frames []*frame) {
	seen := map[*frame]bool{}
	var bodies []*frame
	for _, f := range frames {
		for ; f != nil && f.scope != graphir.None && !seen[f]; f = f.parent {
			seen[f] = true
			bodies = append(bodies, f)
		}
	}
	// A body made later is inside, or beside, those made before it.
	slices.SortFunc(bodies, func(a, b *frame) int { return cmp.Compare(b.ord, a.ord) })
	for _, f := range bodies {
		if r.inFlight(f.parent, f.node) {
			r.cancelledStep(&completion{f: f.parent, n: f.node}, nil)
		}
	}
}

// inFlight reports whether the latest visit of step n in frame f (or the
// parent holding n's state) is under way: started and not yet ended.
func (r *run) inFlight(f *frame, n *graphir.Node) bool {
	if !r.timed(n) {
		// Its start was not timed (a fn step waiting out a retry).
		return r.recs[n.ID].Status == StepRunning
	}
	return f.frameFor(n).state(r, n.ID).started != 0
}

// emit reports ev, stamped with the time now unless it has one already.
// The driver's events are r.ev (see stepEvent); others, from other
// goroutines or rare, are their own.
func (r *run) emit(ev *Event) {
	if ev.Time.IsZero() {
		ev.Time = r.now()
	}
	ev.Flow = r.opts.prefix
	if !r.secrets.Empty() {
		r.maskEvent(ev)
	}
	r.opts.OnEvent(ev)
}

// stepEvent returns r.ev, the event the driver goroutine fills for emit,
// set for step n of frame f at visit: of type t at now, the rest of what
// a step's event says (status, duration, output, error) cleared. It sets
// the fields one by one: the driver's events set only these (and emit
// the flow), and a consumer only reads the event, so the others stay
// zero; a whole Event assigned costs a copy of some 400 bytes.
func (r *run) stepEvent(t EventType, now time.Time, f *frame, n *graphir.Node, visit int32) *Event {
	ev := &r.ev
	ev.Type, ev.Time, ev.Scope, ev.Step, ev.Kind, ev.Visit = t, now, f.scopePath(), n.Name, n.Kind.String(), int(visit)
	ev.Status, ev.Code, ev.Error, ev.Trace, ev.Duration, ev.Output, ev.Replayed = "", "", "", nil, 0, nil, false
	ev.Items = nil
	return ev
}

// eval evaluates an expression or function of r for step self in frame f.
func (r *run) eval(f *frame, self *graphir.Node, x *graphir.Expr) (starlark.Value, error) {
	v, err := r.evaluate(f, self, x.Func, nil, nil, 0, nil)
	if err != nil && !x.User {
		err = &exprError{x: x, err: err}
	}
	return v, err
}

// callFn runs attempt number attempt of fn step n.
func (r *run) callFn(f *frame, n *graphir.Node, attempt int) {
	var onTimeout func()
	timeout := n.Timeout
	if r.rt.Replayed() {
		timeout = 0 // no wall clock in a replayed run: the step budget bounds it
	}
	if timeout > 0 {
		onTimeout = func() { r.fnDone(f, n, attempt, nil, errEvalTimeout) }
	}
	out, err := r.evaluate(f, n, n.Fn, nil, r.recs[n.ID], timeout, onTimeout)
	r.fnDone(f, n, attempt, out, err)
}

// fnDone carries on after attempt number attempt of fn step n gave out or
// err: the step finishes, fails, or is retried.
func (r *run) fnDone(f *frame, n *graphir.Node, attempt int, out starlark.Value, err error) {
	tooLarge := false
	if err == nil {
		if out, err = stdlib.Data(out); errors.Is(err, stdlib.ErrTooLarge) {
			// Refused before anything writes it out: its JSON (what
			// the store, the events and show write) would be too big.
			err, tooLarge = fmt.Errorf("its result is too large: %v", err), true
		} else if err != nil {
			err = fmt.Errorf("returned a value that is not flow data: %v", err)
		}
	}
	if err == nil {
		r.finish(f, n, &outcome{ok: true, value: out})
		return
	}
	if r.ctx.Err() != nil {
		return // the driver is stopping the run
	}
	var unmet *unmetError
	if errors.As(err, &unmet) {
		r.evalFailed(f, n, "", err)
		return
	}
	msg, code := evalMessage(err), codes.StepFailed
	if tooLarge {
		code = codes.OutputTooLarge
	} else if errors.Is(err, errEvalTimeout) {
		msg, code = fmt.Sprintf("timed out after %s", n.Timeout), codes.Timeout
	} else if strings.Contains(msg, "step budget") {
		msg = fmt.Sprintf("exceeded its step budget of %d steps", r.opts.EvalSteps)
	}
	o := &outcome{ok: false, value: starlark.None, err: msg, code: code, trace: errTrace(err), pos: errPos(err)}
	if attempt <= n.Retries {
		retry, ok := r.retryWanted(f, n, o)
		if !ok {
			return
		}
		if retry {
			r.retryLater(f, n, nil, attempt, msg)
			return
		}
	}
	r.finish(f, n, o)
}

// backoff is the delay before retry number attempt of step n: backoff=
// grown by the shape's factor after each failure, at most its max; with
// jitter, a point of [d/2, d] that seed picks.
func backoff(n *graphir.Node, attempt int, seed uint64) time.Duration {
	shape := graphir.DefaultRetryShape
	if n.RetryShape != nil {
		shape = *n.RetryShape
	}
	d := float64(n.Backoff)
	for i := 1; i < attempt && d < float64(shape.Max); i++ {
		d *= shape.Factor
	}
	d = min(d, float64(shape.Max))
	if shape.Jitter {
		// The top 53 bits of the seed as a fraction in [0, 1).
		d = d/2 + d/2*float64(seed>>11)/(1<<53)
	}
	return time.Duration(d)
}

// jitterSeed picks where in its range a jittered delay falls: a hash of
// where the retry is (run, child-flow chain, scope, step, visit, attempt),
// so a replayed run (on Temporal, or a test) waits the same, and two
// steps failing together do not retry together.
func (r *run) jitterSeed(f *frame, n *graphir.Node, visit, attempt int) uint64 {
	if n.RetryShape == nil || !n.RetryShape.Jitter {
		return 0
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00%d", r.opts.top, strings.Join(r.opts.prefix, "/"), strings.Join(f.scopePath(), "/"), n.Name, visit, attempt)
	return h.Sum64()
}

// callUntil asks a loop's until function whether to stop after the
// iteration of frame lf that produced out.
func (r *run) callUntil(lf *frame, out starlark.Value) (stop bool, reason starlark.Value, err error) {
	n := lf.node
	b := stdlib.NewMapBuilder(len(r.p.scopes[n.ID]))
	for _, id := range r.p.scopes[n.ID] {
		if st := lf.state(r, id); st.done && int(st.iter) == lf.iteration {
			b.Add(r.g.Nodes[id].Name, st.value)
		}
	}
	feedback := lf.feedback
	if feedback == nil {
		feedback = starlark.None
	}
	it := stdlib.NewMap(
		[]string{"index", "iteration", "output", "result", "history", "feedback", "max_iterations", "is_last", "inputs"},
		[]starlark.Value{starlark.MakeInt(lf.iteration - 1), starlark.MakeInt(lf.iteration), out,
			b.Map(), history{elems: lf.history[:len(lf.history):len(lf.history)]}, feedback,
			starlark.MakeInt(n.Loop.MaxIterations), starlark.Bool(lf.iteration >= n.Loop.MaxIterations), r.inputs})
	v, err := r.evaluate(lf, nil, n.Loop.Until, starlark.Tuple{it}, nil, 0, nil)
	if err != nil {
		return false, nil, err
	}
	switch v := v.(type) {
	case starlark.Bool:
		return bool(v), starlark.None, nil
	case starlark.Tuple:
		if b, ok := v[0].(starlark.Bool); ok && len(v) == 2 {
			reason, err := stdlib.Data(v[1])
			if err != nil {
				return false, nil, fmt.Errorf("reason: %v", err)
			}
			return bool(b), reason, nil
		}
	}
	err = fmt.Errorf("must return True, False or (stop, reason), got %s %s", v.Type(), shortValue(v))
	if fn, ok := n.Loop.Until.(*starlark.Function); ok {
		err = fmt.Errorf("%s: %v", fn.Position(), err) // the function that returned it
	}
	return false, nil, err
}

// render evaluates a template for step n in frame f. Strings are inserted
// as they are, other values as JSON.
func (r *run) render(f *frame, n *graphir.Node, t *graphir.Template) (string, error) {
	if t.IsLiteral() {
		return t.Src, nil
	}
	var b strings.Builder
	for _, part := range t.Parts {
		if part.Secret != nil {
			b.WriteString(r.secret(part.Secret))
			continue
		}
		if part.X == nil {
			b.WriteString(part.Lit)
			continue
		}
		v, err := r.eval(f, n, part.X)
		if err != nil {
			return "", &templateError{x: part.X, err: err}
		}
		s, err := text(v)
		if err != nil {
			return "", &templateError{x: part.X, err: err}
		}
		b.WriteString(s)
		if b.Len() > stdlib.MaxValueBytes {
			return "", &templateError{x: part.X, err: fmt.Errorf("the text would be over the %d MiB one value may take", stdlib.MaxValueBytes>>20)}
		}
	}
	return b.String(), nil
}

type templateError struct {
	x   *graphir.Expr
	err error
}

func (e *templateError) Error() string {
	return fmt.Sprintf("template {{ %s }}: %s", e.x.Src, evalMessage(e.err))
}
func (e *templateError) Unwrap() error { return e.err }

// text converts a template value to the text inserted.
func text(v starlark.Value) (string, error) {
	if s, ok := v.(starlark.String); ok {
		return string(s), nil
	}
	g, err := stdlib.ToGo(v)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(g)
	return string(b), err
}

// taskRequest renders everything a task or shell step needs to start.
func (r *run) taskRequest(f *frame, n *graphir.Node) (*EffectRequest, error) {
	s := r.request(f, n)
	s.Dir, s.Env, s.Timeout, s.KillGrace, s.MaxOutput = r.p.dir, r.taskEnv, n.Timeout, r.opts.KillGrace, r.opts.MaxOutput
	if n.Kind == graphir.KindShell {
		s.Argv = []string{"/bin/sh", "-c", n.Shell.Src}
	} else {
		s.Argv = make([]string, len(n.Argv))
		for i, t := range n.Argv {
			a, err := r.render(f, n, t)
			if err != nil {
				return nil, err
			}
			s.Argv[i] = a
		}
		if s.Argv[0] == "" {
			return nil, fmt.Errorf("the command (run[0]) is empty")
		}
	}
	if len(n.Env) > 0 {
		s.Env = append([]string(nil), r.taskEnv...)
		for _, e := range n.Env {
			v, err := r.render(f, n, e.Value)
			if err != nil {
				return nil, err
			}
			s.Env = append(s.Env, e.Name+"="+v)
		}
	}
	if n.Stdin != nil {
		in, err := r.render(f, n, n.Stdin)
		if err != nil {
			return nil, err
		}
		s.Stdin = &in
	}
	if n.Dir != nil {
		d, err := r.render(f, n, n.Dir)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.p.dir, d)
		}
		s.Dir = d
	}
	return s, nil
}

// startSubflow runs the child flow of step n as a nested run.
func (r *run) startSubflow(f *frame, n *graphir.Node) {
	child, path := n.Subflow.Child, n.Subflow.ChildPath
	if !n.Subflow.Flow.IsLiteral() {
		rel, err := r.render(f, n, n.Subflow.Flow)
		if err != nil {
			r.evalFailed(f, n, "flow", err)
			return
		}
		path, child = filepath.Join(r.p.dir, rel), nil
		if filepath.IsAbs(rel) {
			err = fmt.Errorf("child flow %q: absolute paths are not allowed", rel)
		} else if err = confine.Check(r.g.Root, path); err != nil {
			err = fmt.Errorf("child flow %q: %v", rel, err)
		}
		if err != nil {
			// Like any failure of the step, this can be routed.
			r.finish(f, n, failure(codes.StepFailed, err.Error()))
			return
		}
	}
	if !r.nestable(f, n, fmt.Sprintf("step %q", n.Name), path) {
		return
	}
	inputs := map[string]starlark.Value{}
	for _, in := range n.Subflow.Inputs {
		var v starlark.Value
		if x := in.Value.Whole(); x != nil {
			val, err := r.eval(f, n, x)
			if err == nil {
				val, err = stdlib.Data(val)
			}
			if err != nil {
				r.evalFailed(f, n, fmt.Sprintf("inputs[%q]", in.Name), err)
				return
			}
			v = val
		} else {
			s, err := r.render(f, n, in.Value)
			if err != nil {
				r.evalFailed(f, n, fmt.Sprintf("inputs[%q]", in.Name), err)
				return
			}
			v = starlark.String(s)
		}
		inputs[in.Name] = v
	}
	req := r.request(f, n)
	req.ChildPath, req.ChildGraph, req.ChildInputs = path, child, inputs
	req.child = r.childRun(append(f.scopePath(), childAt(n, req.Visit, 1)))
	r.startEffect(f, n, req)
}

// childAt is where the child flow of an attempt of step n reports and is
// journaled: under the step, and its visit when it is not the first and
// its attempt when it is a retry, so a resumed run replays each one's
// child apart ("c", "c:2", "c:2.3").
func childAt(n *graphir.Node, visit, attempt int) string {
	switch {
	case attempt > 1:
		return fmt.Sprintf("%s:%d.%d", n.Name, visit, attempt)
	case visit > 1:
		return fmt.Sprintf("%s:%d", n.Name, visit)
	}
	return n.Name
}

// coreRetried reports whether the core retries a failed attempt of step n
// (retries=, retry_when=): tasks, shells and child flows. A model call
// retries its transient failures itself ([model.Policy]), and fn steps
// retry in fnDone.
func coreRetried(n *graphir.Node) bool {
	return n.Kind.IsProcess() || n.Kind == graphir.KindSubflow
}

// nestable reports whether a child flow at path may start under this run
// (for what: a step, a tool); if not, it has stopped the run with
// subflow_depth or subflow_cycle.
func (r *run) nestable(f *frame, n *graphir.Node, what, path string) bool {
	if r.opts.depth+1 > MaxDepth {
		r.failedAt(f, n, &graphir.Error{Code: codes.SubflowDepth, Step: n.Name,
			Msg: fmt.Sprintf("%s: child flows nest deeper than %d: %s", what, MaxDepth, strings.Join(append(r.flowChain(), path), " -> "))})
		return false
	}
	chain := r.flowChain()
	abs, _ := filepath.Abs(path)
	for _, p := range chain {
		if pa, _ := filepath.Abs(p); pa == abs {
			r.failedAt(f, n, &graphir.Error{Code: codes.SubflowCycle, Step: n.Name,
				Msg: fmt.Sprintf("%s: flow %s is already running in this chain: %s", what, path, strings.Join(append(chain, path), " -> "))})
			return false
		}
	}
	return true
}

// childRun is how a child flow of this run runs: one level deeper, its
// events and journal entries under the scope elements where (the step's
// scope and name, or the tool call's), with its own timeout and id.
func (r *run) childRun(where []string) *childRun {
	opts := r.opts
	opts.depth++
	opts.chain = r.flowChain()
	opts.prefix = append(append([]string(nil), r.opts.prefix...), where...)
	opts.Timeout, opts.RunID = 0, ""
	opts.Suspend, opts.Restore = nil, nil
	opts.onExit = opts.onExit || r.exiting
	return &childRun{r: r, opts: opts}
}

// flowChain is the files of the runs from the top-level one to this one.
func (r *run) flowChain() []string {
	return append(append([]string(nil), r.opts.chain...), r.g.File)
}
