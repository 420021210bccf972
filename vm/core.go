package vm

// This file is the deciding half of the VM: given the frozen graph and what
// has happened (a step finished with this outcome, an iteration ended, the
// run was interrupted), it decides what happens next: which steps become
// ready, which are skipped, and when the run ends. It evaluates conditions
// (pure Starlark on the run's one evaluation thread) but never waits:
// processes, timers and child flows are exec.go's.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
)

// frame is one activation of a scope: the top level of the run, one
// iteration of a loop body, or one item of a map body. It holds the token
// and record state of the steps of that scope.
type frame struct {
	scope  graphir.NodeID // graphir.None for the top level
	kind   graphir.Kind   // KindLoop or KindMap for bodies
	node   *graphir.Node  // the loop or map owning the body
	parent *frame
	states []nodeState // by Program.local index
	ord    uint64      // creation order, the last tie-breaker of the ready queue
	live   int         // tasks of this frame queued or running
	dead   bool        // finished or cancelled: its tasks are dropped
	exec   *execScope  // cancellation of its async work, made on first use

	// Loop bodies.
	iteration int
	feedback  starlark.Value
	history   []starlark.Value
	loopVal   starlark.Value
	// Map bodies.
	itemVar string
	item    starlark.Value
	index   int
	m       *mapRun

	pathPre string         // the prefix of its path entries, made on first use (see pathName)
	judging starlark.Value // the output a judge is deciding on
}

// nodeState is the state of one step in one frame.
type nodeState struct {
	visits  int32
	arrived int32 // forward in-edge tokens of the current generation
	liveIn  int32 // of which live
	fired   bool  // an OR-join already fired this generation
	lost    bool  // lost a join = "first" race this generation: cancelled
	done    bool  // has completed in this frame
	last    uint8 // how its latest visit ended in this frame: lastNone, lastOK, ...
	iter    int32 // the loop iteration of the completion
	started int64 // when the current visit started, in Unix nanoseconds
	value   starlark.Value
}

// How a step's latest visit in a frame ended (nodeState.last).
const (
	lastNone uint8 = iota
	lastOK
	lastFailed
	lastSkipped
	lastCancelled // lost a join = "first" race
)

func (f *frame) state(r *run, id graphir.NodeID) *nodeState {
	return &f.states[r.p.info[id].local]
}

// abandoned reports whether f or a frame around it has ended (a loop that
// stopped, a map item that finished or was cancelled when another failed):
// nothing in f may start or carry on then, not even in a body nested in
// the one that ended.
func (f *frame) abandoned() bool {
	for ; f != nil; f = f.parent {
		if f.dead {
			return true
		}
	}
	return false
}

// frameFor returns the frame, among f and its parents, holding the state of
// step n, or nil when n's scope is not on the way up (a body step read from
// outside its body).
func (f *frame) frameFor(n *graphir.Node) *frame {
	for ; f != nil; f = f.parent {
		if f.scope == n.Parent {
			return f
		}
	}
	return nil
}

// loopValue is what body steps see as `loop`.
func (f *frame) loopValue() starlark.Value {
	if f.loopVal == nil {
		fb := f.feedback
		if fb == nil {
			fb = starlark.None
		}
		f.loopVal = stdlib.NewMap([]string{"iteration", "index", "feedback", "max_iterations"},
			[]starlark.Value{starlark.MakeInt(f.iteration), starlark.MakeInt(f.iteration - 1), fb, starlark.MakeInt(f.node.Loop.MaxIterations)})
	}
	return f.loopVal
}

// pathName is how step n of frame f appears in the run's path: its name,
// after the scope inside loops and maps ("per_file[2].count",
// "polish#3.draft").
func (f *frame) pathName(n *graphir.Node) string {
	if f.scope == graphir.None {
		return n.Name
	}
	return f.pathPrefix() + n.Name
}

func (f *frame) pathPrefix() string {
	if f.pathPre == "" {
		var buf [64]byte
		b := buf[:0]
		if f.parent != nil && f.parent.scope != graphir.None {
			b = append(b, f.parent.pathPrefix()...)
		}
		b = append(b, f.node.Name...)
		if f.kind == graphir.KindLoop {
			b = strconv.AppendInt(append(b, '#'), int64(f.iteration), 10)
		} else {
			b = append(strconv.AppendInt(append(b, '['), int64(f.index), 10), ']')
		}
		f.pathPre = string(append(b, '.'))
	}
	return f.pathPre
}

// scopePath locates the frame for events: ["polish#2", "per_file[3]"].
func (f *frame) scopePath() []string {
	var parts []string
	for ; f != nil && f.scope != graphir.None; f = f.parent {
		if f.kind == graphir.KindLoop {
			parts = append(parts, fmt.Sprintf("%s#%d", f.node.Name, f.iteration))
		} else {
			parts = append(parts, fmt.Sprintf("%s[%d]", f.node.Name, f.index))
		}
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return parts
}

// itemLabels are [Event.Items] for a step of frame f: nil unless f is
// inside a map body.
func (f *frame) itemLabels() []string {
	var labels []string
	inMap := false
	for g := f; g != nil && g.scope != graphir.None; g = g.parent {
		label := ""
		if g.kind == graphir.KindMap {
			label, inMap = itemLabel(g.item), true
		}
		labels = append(labels, label)
	}
	if !inMap {
		return nil
	}
	slices.Reverse(labels)
	return labels
}

// itemLabel is a short form of a map's item, for people: a string as it
// is, anything else as compact JSON, cut to 32 characters.
func itemLabel(v starlark.Value) string {
	s, isStr := v.(starlark.String)
	text := string(s)
	if !isStr {
		b, err := stdlib.AppendJSON(nil, v, "", 0)
		if err != nil {
			text = v.String()
		} else {
			text = string(b)
		}
	}
	if len(text) > 256 {
		text = text[:256] // (a cut rune is cut below)
	}
	if r := []rune(text); len(r) > 32 {
		text = string(r[:31]) + "…"
	}
	return text
}

// mapRun is the progress of one map step.
type mapRun struct {
	f       *frame // where the map step runs
	n       *graphir.Node
	items   []starlark.Value
	outputs []starlark.Value
	frames  []*frame // item frames still running
	next    int
	done    int
}

// outcome is how a step ended.
type outcome struct {
	ok        bool
	value     starlark.Value // the output; for tasks also when they fail
	err       string         // the failure's message
	code      codes.Code     // the failure's code: codes.StepFailed unless e.g. codes.Timeout
	task      bool           // value holds task fields
	trunc     bool           // task output was cut to its tail
	via       graphir.EdgeID // routers: the edge taken
	child     *Result        // subflows: the child's run
	stop      *graphir.Error // a hard stop of the whole run (subflow guards)
	cancelled bool
	replayed  bool     // read back from a record (resume)
	trace     []string // a runtime error in Starlark: its backtrace, innermost first
	pos       string   // and where it happened, file:line:col
}

// failure is a step that failed with code and message, and no output.
func failure(code codes.Code, msg string) *outcome {
	return &outcome{ok: false, value: starlark.None, code: code, err: msg}
}

// errAt is the failure's message, after where it happened when known.
func (o *outcome) errAt() string {
	if o.pos != "" {
		return o.pos + ": " + o.err
	}
	return o.err
}

// failCode is the code a failure carries: its own (e.g. codes.Timeout), else
// "step_failed".
func (o *outcome) failCode() codes.Code {
	if o.code == "" {
		return codes.StepFailed
	}
	return o.code
}

// task is a step made ready in a frame, waiting in the ready queue.
type task struct {
	f    *frame
	n    *graphir.Node
	seq  uint64
	decl int32
}

// readyQueue orders ready steps by readiness, then declaration order, then
// frame creation (docs/runs.md): a binary heap on a slice.
type readyQueue []task

func (q readyQueue) less(i, j int) bool {
	a, b := &q[i], &q[j]
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	if a.decl != b.decl {
		return a.decl < b.decl
	}
	return a.f.ord < b.f.ord
}

func (q *readyQueue) push(t task) {
	*q = append(*q, t)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *readyQueue) pop() task {
	h := *q
	t := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = task{}
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return t
}

// newFrame makes the frame of a body of n (a loop or map) below f.
func (r *run) newFrame(f *frame, n *graphir.Node) *frame {
	r.frameOrd++
	nf := &frame{scope: n.ID, kind: n.Kind, node: n, parent: f, ord: r.frameOrd,
		states: make([]nodeState, len(r.p.scopes[n.ID]))}
	if n.Kind == graphir.KindMap {
		nf.itemVar = n.Map.ItemVar
	}
	return nf
}

// ready queues step n in frame f.
func (r *run) ready(f *frame, n *graphir.Node) {
	f.live++
	r.queue.push(task{f: f, n: n, seq: r.seq, decl: r.p.info[n.ID].decl})
}

// enter starts a step taken from the ready queue.
func (r *run) enter(t task) {
	f, n := t.f, t.n
	st := f.state(r, n.ID)
	if st.lost {
		// Readied after its race was lost: cancelled before it starts.
		r.lostStep(f, n, true)
		return
	}
	if bound := r.p.info[n.ID].bound; bound > 0 && st.visits >= bound {
		r.stop(&graphir.Error{Code: codes.MaxVisitsExceeded, Step: n.Name,
			Msg: fmt.Sprintf("step %q: max_visits %d exceeded", n.Name, bound)})
		return
	}
	st.visits++
	rec := r.recs[n.ID]
	rec.Visits++
	rec.Status = StepRunning
	if !r.exiting {
		r.pathAdd(f.pathName(n))
	}
	var now time.Time // one clock read per transition, for the record and the event
	if r.timed(n) {
		if now = r.handoff; now.IsZero() {
			now = r.now()
		}
		r.handoff = time.Time{}
		st.started = now.UnixNano()
	}
	if r.events {
		ev := r.stepEvent(StepStarted, now, f, n, st.visits)
		ev.Items = f.itemLabels()
		r.emit(ev)
	}
	if len(r.opts.Set) > 0 && len(r.opts.prefix) == 0 && !r.exiting {
		if v, ok := r.opts.Set[n.Name]; ok {
			r.finish(f, n, &outcome{ok: true, value: v})
			return
		}
	}
	switch n.Kind {
	case graphir.KindNoop:
		r.finish(f, n, &outcome{ok: true, value: starlark.None})
	case graphir.KindFn:
		r.callFn(f, n, 1)
	case graphir.KindRouter:
		if n.Call != nil {
			r.startLLMRoute(f, n)
			return
		}
		r.route(f, n)
	case graphir.KindLLM:
		r.startLLM(f, n)
	case graphir.KindAgent:
		r.startAgent(f, n)
	case graphir.KindLoop:
		lf := r.newFrame(f, n)
		lf.iteration = 1
		if r.p.info[n.ID].racer {
			r.racerOf(f, n).body = lf
		}
		if n.Timeout > 0 {
			r.arm(&bound{f: f, n: n, body: lf}, n.Timeout)
		}
		r.startIteration(lf)
	case graphir.KindMap:
		r.startMap(f, n)
	case graphir.KindTask, graphir.KindShell:
		req, err := r.taskRequest(f, n)
		if err != nil {
			r.evalFailed(f, n, "", err)
			return
		}
		r.startEffect(f, n, req)
	case graphir.KindSubflow:
		r.startSubflow(f, n)
	case graphir.KindWait:
		r.startWait(f, n)
	case graphir.KindApproval:
		msg, err := r.render(f, n, n.Approve)
		if err != nil {
			r.evalFailed(f, n, "approve", err)
			return
		}
		req := r.request(f, n)
		req.Message, req.Timeout = msg, n.Timeout
		r.startEffect(f, n, req)
	}
}

// startWait starts the timer of wait step n: an effect like a task, so
// that it is cancelled with its frame and can be made durable.
func (r *run) startWait(f *frame, n *graphir.Node) {
	s, err := r.render(f, n, n.Wait)
	if err != nil {
		what := "wait"
		if n.WaitUntil {
			what = "wait_until"
		}
		r.evalFailed(f, n, what, err)
		return
	}
	var d time.Duration
	if n.WaitUntil {
		// What is left until then, by the run's clock (workflow time on
		// Temporal, so the same on replay); a time past is no wait.
		var at time.Time
		if at, err = graphir.ParseWaitUntil(s); err == nil {
			d = max(at.Sub(r.now()), 0)
		}
	} else {
		d, err = graphir.ParseWait(s)
	}
	if err != nil {
		// A computed duration or time that is not one: a failure of the
		// step, which can be routed.
		what := "wait: "
		if n.WaitUntil {
			what = "wait_until: "
		}
		r.finish(f, n, failure(codes.StepFailed, what+err.Error()))
		return
	}
	req := r.request(f, n)
	req.Wait = d
	r.startEffect(f, n, req)
}

// timed reports whether the duration of step n is measured. Reading the
// clock costs more than a noop step, so steps that finish without waiting
// are timed only when someone watches the events.
func (r *run) timed(n *graphir.Node) bool {
	return r.events || effectOf(n) != noEffect || n.HasBody()
}

// finish records how step n ended in frame f and follows its edges.
func (r *run) finish(f *frame, n *graphir.Node, o *outcome) {
	if n.Timeout > 0 && n.HasBody() {
		r.unbound(f, n)
	}
	if n.HasBody() && r.p.info[n.ID].racer {
		delete(r.racing, boundKey{f, n.ID})
	}
	r.seq++
	st := f.state(r, n.ID)
	st.done, st.iter = true, int32(f.iteration)
	st.value = outcomeValue(o)
	st.last = lastOK
	if !o.ok {
		st.last = lastFailed
	}
	o.err = graphir.ClipMessage(o.err) // a fail() can say megabytes
	rec := r.recs[n.ID]
	out := o.value
	if o.task && !o.ok {
		out = st.value // with its error and code, as expressions see it
	}
	rec.Output, rec.Error, rec.Code, rec.Truncated, rec.Trace = out, o.err, "", o.trunc, o.trace
	// One clock read per transition, for the record and the event.
	now, took := r.endVisit(st, rec)
	if !now.IsZero() {
		r.handoff = now
	}
	if o.child != nil {
		rec.Child = o.child
		r.res.Usage = r.res.Usage.Add(o.child.Usage)
		r.res.ModelCalls += o.child.ModelCalls
		for _, w := range o.child.Warnings {
			r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("child flow %q: %s", n.Name, w))
		}
	}
	if o.ok {
		rec.Status = StepSucceeded
	} else {
		rec.Status = StepFailed
		rec.Code = o.code
	}
	if r.events {
		ev := r.stepEvent(StepFinished, now, f, n, st.visits)
		ev.Status, ev.Duration, ev.Output, ev.Replayed = string(rec.Status), took, out, o.replayed
		if !o.ok {
			ev.Code, ev.Error, ev.Trace = o.code, o.err, o.trace
		}
		r.emit(ev)
	}
	r.follow(f, n, o)
	f.live--
	r.settle(f)
}

// follow sends tokens along the out-edges of n after it ended with o.
func (r *run) follow(f *frame, n *graphir.Node, o *outcome) {
	if r.over {
		return
	}
	fired := 0
	router := r.p.info[n.ID].kind == graphir.KindRouter
	out := r.p.info[n.ID].out
	for i := range out {
		e := &out[i]
		var live bool
		switch {
		case router:
			live = e.id == o.via
		case !e.on.Matches(o.ok):
		case e.when == nil:
			live = true
		default:
			if e.fast != nil && fastConds {
				var ok bool
				if live, ok = r.fastEval(f, n, e.fast); ok {
					break
				}
			}
			v, err := r.evalCond(f, n, e.when)
			if err != nil {
				r.work = r.work[:0]
				r.evalFailed(f, n, "when condition "+quoteExpr(e.when), err)
				return
			}
			live = v
		}
		if live {
			fired++
		}
		r.work = append(r.work, arrival{e: e, from: n, live: live})
	}
	switch {
	case !o.ok && fired > 0:
		// A failure routed on: if the path it takes ends at ABORT, the
		// run's error names it as the cause.
		r.cause = &graphir.Error{Code: o.failCode(), Step: n.Name, Msg: o.errAt(), Trace: o.trace}
	case o.ok && r.cause != nil && r.cause.Step == n.Name:
		r.cause = nil // it ran again and succeeded: that failure is handled
	}
	r.flush(f)
	if r.over || fired > 0 {
		return
	}
	switch {
	case !o.ok && f.scope != graphir.None:
		// A failure no edge of the body catches fails the iteration or
		// item, and so the loop or map, whatever edges did not fire.
		r.bodyFailed(f, n, o)
	case !o.ok:
		r.stop(&graphir.Error{Code: o.failCode(), Step: n.Name, Msg: fmt.Sprintf("step %q failed: %s", n.Name, o.errAt()), Trace: o.trace})
	case f.scope == graphir.None:
		// A success with nowhere to go ends this branch; the dead tokens
		// are on their way and the run goes on with its other branches.
		r.branchEnded(n)
	}
}

// branchEnded notes a top-level step where a live branch stopped without
// reaching END, for the no_route error of a run that never does: the
// latest maxStopped distinct steps, and how many distinct ones in all.
func (r *run) branchEnded(n *graphir.Node) {
	if r.reached {
		return // the run has succeeded already; nothing to explain
	}
	if r.stoppedSeen == nil {
		r.stoppedSeen = make([]bool, len(r.g.Nodes))
	}
	if !r.stoppedSeen[n.ID] {
		r.stoppedSeen[n.ID] = true
		r.stoppedDistinct++
	}
	for i, name := range r.stopped {
		if name == n.Name {
			r.stopped = append(r.stopped[:i], r.stopped[i+1:]...)
			break
		}
	}
	if len(r.stopped) == maxStopped {
		r.stopped = append(r.stopped[:0], r.stopped[1:]...)
	}
	r.stopped = append(r.stopped, n.Name)
}

// maxStopped is how many of the steps where branches ended a no_route
// error names.
const maxStopped = 5

// arrival is a token on its way along an edge.
type arrival struct {
	e    *edgeInfo
	from *graphir.Node
	live bool
}

// flush delivers pending tokens in frame f, and those the skips they cause
// send on. It works from a list rather than recursing, so a long chain of
// skipped steps cannot overflow the stack.
func (r *run) flush(f *frame) {
	for i := 0; i < len(r.work) && !r.over; i++ {
		a := r.work[i]
		r.arrive(f, a.from, a.e, a.live)
	}
	r.work = r.work[:0]
}

// arrive delivers one token along e, from step from, into frame f.
func (r *run) arrive(f *frame, from *graphir.Node, e *edgeInfo, live bool) {
	switch e.to {
	case graphir.End:
		if live {
			r.reachEnd(f, from)
		}
		return
	case graphir.Abort:
		if live {
			err := &graphir.Error{Code: codes.Aborted, Step: from.Name, Msg: fmt.Sprintf("step %q routed the run to ABORT", from.Name)}
			if c := r.cause; c != nil {
				err.Cause = c
				if c.Step == from.Name {
					err.Msg = fmt.Sprintf("step %q failed and routed the run to ABORT: %s", from.Name, c.Msg)
				}
			}
			r.stop(err)
		}
		return
	}
	to := r.g.Nodes[e.to]
	if e.back {
		if live {
			r.ready(f, to)
		}
		return
	}
	info := &r.p.info[e.to]
	st := &f.states[info.local]
	st.arrived++
	if live {
		st.liveIn++
		if (info.join == graphir.JoinOr || info.join == graphir.JoinFirst) && !st.fired {
			st.fired = true
			r.ready(f, to)
			if info.join == graphir.JoinFirst {
				r.race(f, to, from)
			}
		}
	}
	if st.arrived < info.fwdIn {
		return
	}
	// Every forward in-edge has delivered its token for this generation.
	var fire bool
	switch info.join {
	case graphir.JoinAnd:
		fire = st.liveIn > 0
	case graphir.JoinOr, graphir.JoinFirst:
		fire = st.fired // it ran already; skipped if nothing arrived live
	case graphir.JoinAll:
		fire = st.liveIn == st.arrived
	case graphir.JoinDone:
		fire = true
	}
	st.arrived, st.liveIn, st.fired = 0, 0, false
	if info.join == graphir.JoinFirst {
		r.raceOver(f, info)
	}
	switch {
	case fire && (info.join == graphir.JoinOr || info.join == graphir.JoinFirst):
	case fire:
		r.ready(f, to)
	default:
		r.skip(f, to)
	}
}

// skip prunes step n: it will not run on this path, and neither will what
// only it leads to (dead-path elimination).
func (r *run) skip(f *frame, n *graphir.Node) {
	f.state(r, n.ID).last = lastSkipped
	rec := r.recs[n.ID]
	if rec.Status == StepNotRun {
		rec.Status = StepSkipped
	}
	if r.events {
		r.emit(r.stepEvent(StepPruned, time.Time{}, f, n, 0))
	}
	out := r.p.info[n.ID].out
	for i := range out {
		if !out[i].back {
			r.work = append(r.work, arrival{e: &out[i], from: n, live: false})
		}
	}
}

// skipEntered ends step n, entered in frame f, as skipped: a map over an
// empty list with empty = "skip". Its out-edges carry dead tokens, as
// those of a step its join skipped, so what only it leads to is skipped.
func (r *run) skipEntered(f *frame, n *graphir.Node) {
	r.seq++
	st := f.state(r, n.ID)
	st.last = lastSkipped
	rec := r.recs[n.ID]
	now, took := r.endVisit(st, rec)
	rec.Status = StepSkipped
	if r.events {
		ev := r.stepEvent(StepFinished, now, f, n, st.visits)
		ev.Status, ev.Duration = string(StepSkipped), took
		r.emit(ev)
	}
	out := r.p.info[n.ID].out
	for i := range out {
		if !out[i].back {
			r.work = append(r.work, arrival{e: &out[i], from: n, live: false})
		}
	}
	r.flush(f)
	f.live--
	r.settle(f)
}

// settle ends the frames that have nothing left to do: an iteration of a
// loop body, or an item of a map.
func (r *run) settle(f *frame) {
	if r.over || f.live > 0 || f.scope == graphir.None || f.abandoned() {
		return
	}
	switch f.kind {
	case graphir.KindLoop:
		r.iterationDone(f)
	case graphir.KindMap:
		r.itemDone(f)
	}
}

// bodyFailed ends the body frame f because step n failed with no failure
// edge: the loop or map owning it fails.
func (r *run) bodyFailed(f *frame, n *graphir.Node, o *outcome) {
	owner := f.node
	f.dead = true
	f.cancelExec()
	var msg string
	if f.kind == graphir.KindLoop {
		msg = fmt.Sprintf("iteration %d: step %q failed: %s", f.iteration, n.Name, o.err)
		r.recs[owner.ID].Iterations = f.iteration
	} else {
		m := f.m
		for _, other := range m.frames {
			if other != f && !other.dead {
				other.dead = true
				other.cancelExec()
			}
		}
		m.frames = nil
		msg = fmt.Sprintf("item %d (%s): step %q failed: %s", f.index, shortValue(f.item), n.Name, o.err)
	}
	r.finish(f.parent, owner, &outcome{ok: false, value: starlark.None, err: msg, code: o.failCode(), trace: o.trace})
}

func shortValue(v starlark.Value) string {
	if stdlib.CheckDepth(v, 100) != nil {
		return v.Type() + " nested more than 100 deep"
	}
	s := v.String()
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// reachEnd notes a live token from step from at END. It does not end the
// run: work still running on other branches goes on (and may still fail
// it). Without output=, the result is the output of the last step to reach
// END.
func (r *run) reachEnd(f *frame, from *graphir.Node) {
	r.reached = true
	if r.g.Output != nil {
		return
	}
	var out starlark.Value = starlark.None
	if from.IsStep() {
		if st := f.state(r, from.ID); st.done {
			out = r.recs[from.ID].Output
		}
	}
	r.res.Output = out
}

// complete ends a run that has nothing left ready or running: it succeeded
// if END received a live token, else no branch got there (no_route).
func (r *run) complete() {
	if len(r.parked) > 0 && !r.exiting {
		// Nothing else can progress: the run waits for its approvals.
		r.end(Waiting, nil)
		return
	}
	if r.exiting {
		r.end(Succeeded, nil)
		return
	}
	if !r.reached {
		msg := "the run ended without reaching END: every remaining path was pruned"
		var step string
		if k := len(r.stopped); k > 0 {
			step = r.stopped[k-1]
			more := ""
			if extra := r.stoppedDistinct - k; extra > 0 {
				more = fmt.Sprintf(" (and %d more)", extra)
			}
			msg = fmt.Sprintf("the run ended without reaching END: the last live branches stopped at %s%s, where no out-edge fired",
				quoteList(r.stopped), more)
		}
		r.stop(&graphir.Error{Code: codes.NoRoute, Step: step, Msg: msg})
		return
	}
	if r.g.Output != nil {
		v, err := r.eval(r.root, nil, r.g.Output)
		if err != nil {
			r.evalFailed(nil, nil, "flow output "+quoteExpr(r.g.Output), err)
			return
		}
		d, err := stdlib.Data(v)
		if err != nil {
			r.stop(&graphir.Error{Code: codes.ExprError, Msg: fmt.Sprintf("flow output %s: %v", quoteExpr(r.g.Output), err)})
			return
		}
		r.res.Output = d
	}
	r.end(Succeeded, nil)
}

// stop ends the run with an error.
func (r *run) stop(err *graphir.Error) {
	r.end(Failed, err)
}

// end marks the run over; the driver then stops what is still running.
func (r *run) end(s Status, err *graphir.Error) {
	if r.over {
		return
	}
	r.over = true
	if r.exiting {
		// The exit handler's outcome never changes the run's.
		r.exitErr = err
	} else {
		r.res.Status = s
		r.res.Error = err
	}
	r.stopExec()
}

// evalFailed stops the run because evaluating something for step n (or the
// flow, when n is nil) failed: dependency_unmet if it read a step that has
// not completed, else expr_error. A cancelled evaluation is left to the
// driver, which is already stopping the run.
func (r *run) evalFailed(f *frame, n *graphir.Node, what string, err error) {
	if r.ctx.Err() != nil {
		return
	}
	name := ""
	subject := "flow " + r.g.Name
	if n != nil {
		name = n.Name
		subject = fmt.Sprintf("step %q", n.Name)
	}
	if what != "" {
		subject += ": " + what
	}
	var unmet *unmetError
	if errors.As(err, &unmet) {
		r.failedAt(f, n, &graphir.Error{Code: codes.DependencyUnmet, Step: name,
			Msg: fmt.Sprintf("%s reads %q, which has not completed on the path taken", subject, unmet.step), Trace: errTrace(err)})
		return
	}
	var ge *graphir.Error
	if errors.As(err, &ge) && ge.Code != "" {
		r.failedAt(f, n, ge)
		return
	}
	// The step's record says it without the position, which its trace
	// has, as a failing fn step's does.
	r.failedAtMsg(f, n, &graphir.Error{Code: codes.ExprError, Step: name, Msg: fmt.Sprintf("%s: %s", subject, located(err)), Trace: errTrace(err)},
		strings.TrimPrefix(what+": "+evalMessage(err), ": "))
}

// failedAt stops the run with err, a runtime error raised while step n
// was under way in frame f (rendering its templates, calling its until,
// evaluating its list, ...): n's visit ends failed with err's code, as if
// the step had failed itself, instead of being left for the driver to
// record as cancelled. The loops and maps around it are then cancelled
// with the rest of the run. With n nil, or n not under way (the error is
// in a condition of one of its out-edges), it only stops the run.
func (r *run) failedAt(f *frame, n *graphir.Node, err *graphir.Error) {
	r.failedAtMsg(f, n, err, stepMessage(n, err.Msg))
}

// failedAtMsg is failedAt with the message of n's record.
func (r *run) failedAtMsg(f *frame, n *graphir.Node, err *graphir.Error, msg string) {
	if r.over || f == nil || n == nil || !n.IsStep() || !r.inFlight(f, n) {
		r.stop(err)
		return
	}
	hf := f.frameFor(n)
	st := hf.state(r, n.ID)
	rec := r.recs[n.ID]
	rec.Status, rec.Code, rec.Error, rec.Trace = StepFailed, err.Code, msg, err.Trace
	now, took := r.endVisit(st, rec)
	if r.events {
		ev := r.stepEvent(StepFinished, now, hf, n, st.visits)
		ev.Status, ev.Code, ev.Error, ev.Trace, ev.Duration = string(StepFailed), err.Code, rec.Error, err.Trace, took
		r.emit(ev)
	}
	r.stoppedIn = append(r.stoppedIn, hf)
	r.stop(err)
}

// endVisit ends the timing of a visit that was timed (st.started set):
// the time it ran counts in rec's duration. It returns the clock's reading
// and that time, zero for a visit that was not timed.
func (r *run) endVisit(st *nodeState, rec *StepRecord) (now time.Time, took time.Duration) {
	if st.started == 0 {
		return time.Time{}, 0
	}
	now = r.now()
	took = time.Duration(now.UnixNano() - st.started)
	rec.Duration += took
	st.started = 0
	return now, took
}

// stepMessage is a run error's message as the record of step n says it:
// without the "step "n": " the run's message starts with, since the
// record is the step's.
func stepMessage(n *graphir.Node, msg string) string {
	if n == nil {
		return msg // an error of the run's (its output expression), no step's
	}
	if kind, rest, ok := strings.Cut(msg, " "+strconv.Quote(n.Name)+": "); ok && !strings.Contains(kind, " ") {
		return rest
	}
	return msg
}

// exprAt is "FILE:LINE:COL: " for a string expression whose position is
// known, for a message about its value to say where it is written; "" for
// a function, whose value has no one place.
func exprAt(x *graphir.Expr) string {
	if x.User || !x.Pos.IsValid() {
		return ""
	}
	return x.Pos.String() + ": "
}

func quoteExpr(x *graphir.Expr) string {
	if x.User {
		return x.String()
	}
	return fmt.Sprintf("%q", x.Src)
}

// evalCond evaluates a condition strictly: it must give a bool.
func (r *run) evalCond(f *frame, self *graphir.Node, x *graphir.Expr) (bool, error) {
	v, err := r.eval(f, self, x)
	if err != nil {
		return false, err
	}
	b, ok := v.(starlark.Bool)
	if !ok {
		err := fmt.Errorf("a condition must be True or False, got %s %s", v.Type(), shortValue(v))
		if fn, ok := x.Func.(*starlark.Function); ok && x.User {
			err = fmt.Errorf("%s: %v", fn.Position(), err) // the function that returned it
		} else if !x.User && x.Pos.IsValid() {
			err = fmt.Errorf("%s: %v", x.Pos, err)
		}
		return false, err
	}
	return bool(b), nil
}

// route picks the one branch a router takes.
func (r *run) route(f *frame, n *graphir.Node) {
	var label string
	via := graphir.EdgeID(-1)
	if n.Router.By != nil {
		v, err := r.eval(f, n, n.Router.By)
		if err != nil {
			r.evalFailed(f, n, "by "+quoteExpr(n.Router.By), err)
			return
		}
		s, ok := v.(starlark.String)
		if !ok {
			// The run's error says where by= is written; the step's
			// record says it without the position, as for other errors.
			msg := fmt.Sprintf("by %s must give a string label, got %s %s", quoteExpr(n.Router.By), v.Type(), shortValue(v))
			r.failedAtMsg(f, n, &graphir.Error{Code: codes.ExprError, Step: n.Name,
				Msg: fmt.Sprintf("router %q: %s%s", n.Name, exprAt(n.Router.By), msg)}, msg)
			return
		}
		label = string(s)
		for _, rt := range n.Router.Routes {
			if rt.Label == label {
				via = rt.Target.Edge
				break
			}
		}
	} else {
		for i, c := range n.Router.Cases {
			ok, err := r.evalCond(f, n, c.When)
			if err != nil {
				r.evalFailed(f, n, fmt.Sprintf("case %d %s", i, quoteExpr(c.When)), err)
				return
			}
			if ok {
				via = c.Target.Edge
				label = r.g.Nodes[c.Target.ID].Name
				break
			}
		}
	}
	if via < 0 && n.Router.Default != nil {
		via = n.Router.Default.Edge
		if label == "" {
			label = r.g.Nodes[n.Router.Default.ID].Name
		}
	}
	if via < 0 {
		msg := fmt.Sprintf("router %q: no case held and there is no default", n.Name)
		if n.Router.By != nil {
			msg = fmt.Sprintf("router %q: no route for label %q and there is no default", n.Name, label)
		}
		r.failedAt(f, n, &graphir.Error{Code: codes.NoRoute, Step: n.Name, Msg: msg})
		return
	}
	r.finish(f, n, &outcome{ok: true, value: starlark.String(label), via: via})
}

// startIteration runs the body of a loop once more in frame lf.
func (r *run) startIteration(lf *frame) {
	for i := range lf.states {
		lf.states[i].visits, lf.states[i].arrived, lf.states[i].liveIn, lf.states[i].fired = 0, 0, 0, false
	}
	lf.loopVal = nil
	lf.pathPre = ""
	r.ready(lf, r.g.Nodes[lf.node.Body[0]])
}

// iterationDone asks until whether the loop of frame lf is done, and
// either starts the next iteration or finishes the loop.
func (r *run) iterationDone(lf *frame) {
	n := lf.node
	out := r.bodyOutput(lf)
	if n.Loop.Judge != nil {
		r.startJudge(lf, out)
		return
	}
	stop, reason, err := r.callUntil(lf, out)
	if err != nil {
		if r.ctx.Err() == nil {
			r.failedAtMsg(lf.parent, n, &graphir.Error{Code: codes.UntilError, Step: n.Name, Msg: fmt.Sprintf("loop %q: until: %s", n.Name, located(err)), Trace: errTrace(err)},
				"until: "+evalMessage(err))
		}
		return
	}
	r.untilDecided(lf, out, stop, reason, "until")
}

// untilDecided goes on after until (or a judge) decided about the
// iteration of lf that produced out: stop with why ("until",
// "condition_unrelated"), or run another iteration within the bound.
func (r *run) untilDecided(lf *frame, out starlark.Value, stop bool, reason starlark.Value, why string) {
	n := lf.node
	lf.history = append(lf.history, out)
	exhausted := !stop && lf.iteration >= n.Loop.MaxIterations
	if r.events {
		ev := Event{Type: LoopIteration, Scope: lf.parent.scopePath(), Step: n.Name, Kind: "loop", Index: lf.iteration,
			Stop: stop, Exhausted: exhausted}
		if s, ok := reason.(starlark.String); ok {
			ev.Message = string(s)
		}
		r.emit(&ev)
	}
	rec := r.recs[n.ID]
	if stop || exhausted {
		rec.Iterations, rec.Exhausted = lf.iteration, exhausted
		rec.StoppedReason = why
		lf.dead = true
		lf.cancelExec()
		o := &outcome{ok: true, value: out}
		if exhausted {
			rec.StoppedReason = "exhausted"
			if n.Loop.ExhaustFail {
				// exhausted="fail": a failure like any other, which
				// on="failure" edges can route.
				o = &outcome{ok: false, value: out, code: codes.Exhausted,
					err: fmt.Sprintf("loop %q: exhausted after %d iterations without until holding", n.Name, lf.iteration)}
			}
		}
		r.finish(lf.parent, n, o)
		return
	}
	lf.feedback = reason
	lf.iteration++
	rec.Iterations = lf.iteration
	r.startIteration(lf)
}

// startMap evaluates a map's list and starts its first items.
func (r *run) startMap(f *frame, n *graphir.Node) {
	v, err := r.eval(f, n, n.Map.Over)
	if err != nil {
		r.evalFailed(f, n, "over "+quoteExpr(n.Map.Over), err)
		return
	}
	// A list, a tuple or a range: not a dict or a set, which a map
	// would iterate in an order the user did not write (docs say list).
	seq, ok := v.(starlark.Iterable)
	if _, indexable := v.(starlark.Indexable); !indexable {
		ok = false
	}
	switch v.(type) {
	case starlark.String, starlark.Bytes:
		ok = false
	}
	if !ok {
		msg := fmt.Sprintf("over %s must give a list, got %s %s", quoteExpr(n.Map.Over), v.Type(), shortValue(v))
		r.failedAtMsg(f, n, &graphir.Error{Code: codes.ExprError, Step: n.Name,
			Msg: fmt.Sprintf("map %q: %s%s", n.Name, exprAt(n.Map.Over), msg)}, msg)
		return
	}
	var items []starlark.Value
	it := seq.Iterate()
	var x starlark.Value
	for it.Next(&x) {
		if limit := n.Map.MaxItems; limit > 0 && len(items) == limit {
			// Counted before the rest is read: a long range stops here.
			it.Done()
			msg := fmt.Sprintf("over %s gave more than max_items %d items", quoteExpr(n.Map.Over), limit)
			r.failedAtMsg(f, n, &graphir.Error{Code: codes.MapTooManyItems, Step: n.Name,
				Msg: fmt.Sprintf("map %q: %s%s", n.Name, exprAt(n.Map.Over), msg)}, msg)
			return
		}
		d, err := stdlib.Data(x)
		if err != nil {
			it.Done()
			r.failedAt(f, n, &graphir.Error{Code: codes.ExprError, Step: n.Name, Msg: fmt.Sprintf("map %q: item %d: %v", n.Name, len(items), err)})
			return
		}
		items = append(items, d)
	}
	it.Done()
	m := &mapRun{f: f, n: n, items: items, outputs: make([]starlark.Value, len(items))}
	if r.p.info[n.ID].racer {
		r.racerOf(f, n).m = m
	}
	r.recs[n.ID].Items = len(items)
	if len(items) == 0 {
		if n.Map.EmptySkip {
			r.skipEntered(f, n)
			return
		}
		r.finish(f, n, &outcome{ok: true, value: frozenList(nil)})
		return
	}
	if n.Timeout > 0 {
		r.arm(&bound{f: f, n: n, m: m}, n.Timeout)
	}
	for len(m.frames) < n.Map.Concurrency && m.next < len(items) {
		r.startItem(m)
	}
}

// startItem starts the next item of map m in a frame of its own.
func (r *run) startItem(m *mapRun) {
	itf := r.newFrame(m.f, m.n)
	itf.m, itf.index, itf.item = m, m.next, m.items[m.next]
	m.next++
	m.frames = append(m.frames, itf)
	r.ready(itf, r.g.Nodes[m.n.Body[0]])
}

// itemDone records the output of a finished map item and starts the next,
// or finishes the map.
func (r *run) itemDone(itf *frame) {
	m := itf.m
	itf.dead = true
	itf.cancelExec()
	out := r.bodyOutput(itf)
	m.outputs[itf.index] = out
	m.done++
	for i, x := range m.frames {
		if x == itf {
			m.frames = append(m.frames[:i], m.frames[i+1:]...)
			break
		}
	}
	if r.events {
		r.emit(&Event{Type: MapItem, Scope: itf.parent.scopePath(), Step: m.n.Name, Kind: "map", Index: itf.index, Output: out})
	}
	if m.done == len(m.items) {
		r.finish(m.f, m.n, &outcome{ok: true, value: frozenList(m.outputs)})
		return
	}
	if m.next < len(m.items) {
		r.seq++
		r.startItem(m)
	}
}

// bodyOutput is the output of the iteration or item of body frame f: that
// of the last step in the body's list order that completed in it, so it
// does not depend on which parallel step finished last.
func (r *run) bodyOutput(f *frame) starlark.Value {
	body := f.node.Body
	for i := len(body) - 1; i >= 0; i-- {
		st := f.state(r, body[i])
		if st.done && (f.kind != graphir.KindLoop || int(st.iter) == f.iteration) && st.value != nil {
			return st.value
		}
	}
	return starlark.None
}

func frozenList(elems []starlark.Value) *starlark.List {
	l := starlark.NewList(elems)
	l.Freeze()
	return l
}

// pathAdd appends a started step to the run's path, keeping the latest
// MaxPath entries.
func (r *run) pathAdd(name string) {
	r.res.PathTotal++
	if len(r.path) < r.opts.MaxPath {
		r.path = append(r.path, name)
		return
	}
	r.path[r.pathNext] = name
	r.pathNext = (r.pathNext + 1) % len(r.path)
}
