package vm

// This file defines the timeouts the core keeps itself: timeout= of a
// child-flow or wait step (one attempt), and of a loop or map (one visit,
// body and all). A task's timeout is its process's and a model call's its
// request's, kept by the producer; these have no producer that could keep
// them (a child flow is a whole run, a loop no effect at all), so the core
// arms a timer on the run's runtime (a durable timer on Temporal) and acts
// when it fires, on the driver like any completion.

import (
	"context"
	"fmt"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// bound is one armed timeout.
type bound struct {
	f    *frame        // the frame holding the step's state
	n    *graphir.Node // the step
	stop func() bool
	// An effect's attempt: its completion, which the timer cancels.
	eff *completion
	// A loop's body frame, or a map's run.
	body *frame
	m    *mapRun
}

// boundKey names the one attempt or visit of a step that can be under way
// in a frame at a time.
type boundKey struct {
	f  *frame
	id graphir.NodeID
}

// boundedEffect reports whether the core keeps the timeout of step n's
// effect.
func boundedEffect(n *graphir.Node) bool {
	return n.Timeout > 0 && (n.Kind == graphir.KindSubflow || n.Kind == graphir.KindWait)
}

// arm starts b's timer for d. The timer's completion is not counted in
// r.running: a timeout never keeps a run going (a run whose loop waits for
// a parked approval parks), and it is stopped when its step ends.
func (r *run) arm(b *bound, d time.Duration) {
	if r.bounds == nil {
		r.bounds = map[boundKey]*bound{}
	}
	r.bounds[boundKey{b.f, b.n.ID}] = b
	c := &completion{f: b.f, n: b.n, bound: b}
	b.stop = r.rt.AfterFunc(max(d, time.Nanosecond), func() { r.post(c) })
}

// boundEffect arms the timeout of the attempt of effect step n in frame f
// whose completion is c, giving the attempt a context of its own that the
// timeout cancels. It returns the context to start the effect with.
func (r *run) boundEffect(f *frame, n *graphir.Node, c *completion, ctx context.Context) context.Context {
	ctx, c.cancel = context.WithCancel(ctx)
	r.arm(&bound{f: f, n: n, eff: c}, n.Timeout)
	return ctx
}

// unbound disarms the timeout of step n in frame f, if one is armed.
func (r *run) unbound(f *frame, n *graphir.Node) {
	k := boundKey{f, n.ID}
	if b, ok := r.bounds[k]; ok {
		b.stop()
		delete(r.bounds, k)
	}
}

// stopBounds disarms every timeout, when the run ends.
func (r *run) stopBounds() {
	for k, b := range r.bounds {
		b.stop()
		delete(r.bounds, k)
	}
}

// boundFired acts on a timeout whose timer fired: an effect's attempt is
// cancelled (its completion, when it comes, is the timeout failure), a
// loop or map stops its body and fails with code timeout.
func (r *run) boundFired(b *bound) {
	k := boundKey{b.f, b.n.ID}
	if r.bounds[k] != b {
		return // disarmed after it fired: the step ended first
	}
	delete(r.bounds, k)
	if r.over || b.f.abandoned() {
		return
	}
	if b.eff != nil {
		b.eff.expired = true
		b.eff.cancel()
		return
	}
	n := b.n
	var bodies []*frame
	if b.body != nil {
		bodies = append(bodies, b.body)
		r.recs[n.ID].Iterations = b.body.iteration
	} else if b.m != nil {
		bodies = b.m.frames
		b.m.frames = nil
	}
	for _, bf := range bodies {
		if !bf.dead {
			bf.dead = true
			bf.cancelExec()
		}
	}
	r.finish(b.f, n, &outcome{ok: false, value: starlark.None, code: codes.Timeout,
		err: fmt.Sprintf("%s %q: timed out after %s", n.Kind, n.Name, n.Timeout)})
}

// expiredOutcome is the failure of an effect attempt that its timeout
// cancelled, keeping what it produced (a child flow's run).
func expiredOutcome(n *graphir.Node, o *outcome) *outcome {
	return &outcome{ok: false, value: starlark.None, code: codes.Timeout, child: o.child,
		err: fmt.Sprintf("timed out after %s", n.Timeout)}
}

// rearmBodies arms again, after a restore, the timeouts of the loops and
// maps under way, for what is left of them.
func (r *run) rearmBodies(frames []*frame) {
	for _, f := range frames {
		if f.scope == graphir.None || f.dead || f.node.Timeout <= 0 || f.parent.abandoned() {
			continue
		}
		if _, ok := r.bounds[boundKey{f.parent, f.node.ID}]; ok {
			continue
		}
		st := f.parent.state(r, f.node.ID)
		if st.started == 0 {
			continue
		}
		b := &bound{f: f.parent, n: f.node}
		if f.kind == graphir.KindLoop {
			b.body = f
		} else {
			b.m = f.m
		}
		left := f.node.Timeout - r.now().Sub(time.Unix(0, st.started))
		r.arm(b, left)
	}
}
