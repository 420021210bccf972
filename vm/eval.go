package vm

// This file runs the run's Starlark evaluations (conditions, templates, fn
// steps, until functions) so that the run never waits for one that does not
// end. The step budget and thread cancellation are only checked between
// Starlark steps, and one builtin call can take minutes (formatting a list
// nested a million deep), so a stuck evaluation is abandoned instead:
//
// The driver runs on a goroutine of its own and holds r.mu except while it
// evaluates. When the run's context is done, or a fn step's timeout
// expires, during an evaluation, the goroutine that noticed takes r.mu,
// marks the evaluation gone, cancels its thread and becomes the driver: it
// carries on from the evaluation's failure (a timed-out fn step fails; an
// interrupted run ends). The abandoned goroutine, if its call ever returns,
// finds its evaluation gone and exits (runtime.Goexit) without touching the
// run; until then the view and print refuse it. Each driver gets a fresh
// thread and view.
//
// Evaluations are made from the driver loop with nothing left to do after
// them but return to the loop (fn steps) or end the run (everything else,
// which has no timeout of its own), which is what lets a new driver carry
// on.

import (
	"context"
	"errors"
	"runtime"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
)

// errAbandoned is the error of an evaluation started while the run is
// being stopped.
var errAbandoned = errors.New("evaluation abandoned: the run is stopping")

// errEvalTimeout is the error of a fn step that ran out of its timeout.
var errEvalTimeout = errors.New("evaluation timed out")

// evalGen is the thread and view of one driver goroutine's evaluations.
type evalGen struct {
	thread *starlark.Thread
	view   *view
	args   starlark.Tuple // the view, as the one argument of a call
	gone   bool           // abandoned: its goroutine must not touch the run
	cur    *StepRecord    // the fn step print() writes to
}

func (r *run) newGen() *evalGen {
	g := &evalGen{}
	g.thread = &starlark.Thread{Name: "skein run", Print: func(_ *starlark.Thread, msg string) { r.print(g, msg) }}
	g.view = &view{r: r, gen: g}
	g.view.visitsFn = starlark.NewBuiltin("visits", g.view.visits)
	g.view.statusFn = starlark.NewBuiltin("status", g.view.status)
	g.args = starlark.Tuple{g.view}
	return g
}

// lock takes the run state for code an evaluation calls (the view,
// print); false means the evaluation was abandoned and must not touch it.
func (r *run) lock(g *evalGen) bool {
	r.mu.Lock()
	if g.gone {
		r.mu.Unlock()
		return false
	}
	return true
}

// print implements print() for fn steps: lines go to the step's record
// and to the event stream.
func (r *run) print(g *evalGen, msg string) {
	if !r.lock(g) {
		return
	}
	defer r.mu.Unlock()
	rec := g.cur
	if rec == nil {
		return
	}
	msg = graphir.ClipMessage(msg)
	if len(rec.Log) < maxLog {
		rec.Log = append(rec.Log, msg)
	}
	if r.events {
		r.emit(&Event{Type: StepLog, Step: rec.Name, Kind: rec.Kind.String(), Message: msg})
	}
}

// evaluate calls fn for step self (nil for none) in frame f. With args
// nil, fn is called with the run view; print() output goes to rec, if not
// nil. With a timeout, onTimeout is how the run carries on when it expires
// first (the evaluation then never returns here).
func (r *run) evaluate(f *frame, self *graphir.Node, fn starlark.Callable, args starlark.Tuple, rec *StepRecord, timeout time.Duration, onTimeout func()) (starlark.Value, error) {
	if r.ctx.Err() != nil {
		return nil, errAbandoned
	}
	r.handoff = time.Time{} // the interpreter takes time of its own
	g := r.gen
	if g == nil {
		g = r.newGen()
		r.gen = g
	}
	g.view.f, g.view.self, g.cur = f, self, rec
	if args == nil {
		args = g.args
	}
	th := g.thread
	th.Steps = 0
	th.SetMaxExecutionSteps(r.opts.EvalSteps)
	r.evalSeq++
	seq := r.evalSeq
	r.inEval = g
	var timer *time.Timer
	if timeout > 0 {
		phase := r.phase
		timer = time.AfterFunc(timeout, func() { r.takeOver(phase, seq, "timeout", onTimeout) })
	}
	r.mem.Begin(seq, th)
	r.mu.Unlock()
	out, err := starlark.Call(th, fn, args, nil)
	r.mem.End()
	r.mu.Lock()
	if g.gone {
		r.mu.Unlock()
		runtime.Goexit() // another goroutine drives the run now
	}
	if timer != nil {
		timer.Stop()
	}
	r.inEval, g.cur = nil, nil
	if r.mem.Cancelled(seq) {
		// The memory watchdog cancelled this thread: the next
		// evaluation gets a fresh one.
		r.gen = nil
		if err != nil {
			err = errors.New(r.mem.Message())
		}
	}
	if r.pacer != nil {
		r.pacer.Pace(th.ExecutionSteps())
	}
	return out, err
}

// takeOver abandons evaluation number seq if it is still under way and
// makes the calling goroutine the driver, carrying on with then (if not
// nil) and the driver loop. seq 0 means whichever evaluation is under way.
func (r *run) takeOver(phase int, seq uint64, reason string, then func()) {
	r.mu.Lock()
	if r.inEval == nil || phase != r.phase || seq != 0 && seq != r.evalSeq {
		r.mu.Unlock()
		return
	}
	g := r.inEval
	g.gone = true
	g.thread.Cancel(reason)
	r.inEval, r.gen = nil, nil
	if then != nil {
		then()
	}
	r.loop()
}

// watchContext takes the current phase of the run over when its context
// is done during an evaluation, so a stuck one cannot hold the run.
func (r *run) watchContext() (stop func() bool) {
	phase := r.phase
	return context.AfterFunc(r.ctx, func() { r.takeOver(phase, 0, "cancelled", nil) })
}
