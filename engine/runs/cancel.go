package runs

// This file is cancelling a run from anywhere: a running run is asked to
// stop through its record (the process that runs it polls for the
// request), and one that waits or was interrupted is resumed here only to
// be cancelled, its exit handler run.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// CancelSpec says who cancels a run and why.
type CancelSpec struct {
	// By is who cancels; a front end says who its user is.
	By string
	// Reason is why, recorded with the run's error ("" for none).
	Reason string
	// OnEvent, when set, receives the events of a run cancelled here (a
	// waiting or interrupted one: its replay, and its exit handler).
	OnEvent func(*vm.Event)
}

// Cancelled is what [Service.Cancel] did.
type Cancelled struct {
	// Run is the run as last read.
	Run *store.Run
	// Requested is true for a run that is running: the process that runs
	// it cancels it once it sees the request (within [CancelPoll]), and
	// Result is nil.
	Requested bool
	// Result is the result of a run cancelled here: one that waited or
	// was interrupted. It is cancelled, unless its record let it end
	// otherwise before anything had to run again.
	Result *vm.Result
}

// CancelPoll is how often a recorded run looks for a request to cancel it
// ([Service.Cancel] from another process).
var CancelPoll = 250 * time.Millisecond

// cancelCause is why a run was cancelled through [Service.Cancel]: its
// message is the run's error.
type cancelCause struct{ req store.CancelRequest }

func (c *cancelCause) Error() string {
	msg := "the run was cancelled"
	if c.req.By != "" {
		msg += " by " + c.req.By
	}
	if c.req.Reason != "" {
		msg += ": " + c.req.Reason
	}
	return msg
}

// Cancel cancels the run ref names (an id, a unique prefix of one, or
// "last"), recording who and why. A running run is asked to stop: the
// process that runs it (this one or another, which polls its record)
// cancels it as an interrupt does: running tasks are signalled, the exit
// handler runs, and the run ends cancelled with an error that says who
// cancelled it and why. A run that waits for an approval, or whose process
// died, is cancelled here: it is resumed from its record, cancelled at
// the first thing its record does not answer, and its exit handler runs.
// A run that has ended is refused ([store.ErrEnded]). With an Engine,
// the Engine asks the run to cancel.
func (s *Service) Cancel(ctx context.Context, ref string, spec CancelSpec) (*Cancelled, error) {
	if s.Engine != nil {
		return s.Engine.Cancel(ctx, ref, spec)
	}
	r, err := s.Store.Get(ref)
	if err != nil {
		return nil, err
	}
	req := store.CancelRequest{By: spec.By, Reason: spec.Reason, At: time.Now()}
	if r.HasEnded() {
		return &Cancelled{Run: r}, fmt.Errorf("run %s %w (%s): there is nothing to cancel", r.ID, store.ErrEnded, r.Status)
	}
	// Recorded first, whatever the run's state: a process that takes the
	// run over meanwhile (a resume) sees it too.
	if err := s.Store.RequestCancel(r.ID, req); err != nil {
		return &Cancelled{Run: r}, err
	}
	if r.Status == store.Running {
		return &Cancelled{Run: r, Requested: true}, nil
	}
	run, _, err := s.Resume(&ResumeSpec{Run: r, Options: r.Options})
	if err != nil {
		var invalid *InvalidFlowError
		if !errors.As(err, &invalid) {
			return &Cancelled{Run: r}, err
		}
		// Its flow no longer loads: cancelled without its exit handler.
		msg := (&cancelCause{req}).Error() + " (its flow does not load, so its exit handler did not run)"
		if err := s.Store.EndCancelled(r.ID, msg); err != nil {
			return &Cancelled{Run: r}, err
		}
		r, err = s.Store.Get(r.ID)
		return &Cancelled{Run: r}, err
	}
	run.OnEvent = spec.OnEvent
	run.cancelAsked(&cancelCause{req})
	res, err := run.Run(ctx)
	if r2, gerr := s.Store.Get(r.ID); gerr == nil {
		r = r2
	}
	return &Cancelled{Run: r, Result: res}, err
}

// cancelAsked cancels the run with cause once it has replayed what its
// record answers (a resumed run), or at once.
func (r *Run) cancelAsked(cause error) {
	if r.gate == nil || !r.gate.arm(cause) {
		r.cancelWith(cause)
	}
}

// watchCancel polls the run's record for a request to cancel it, until
// the returned stop is called, and cancels the run when there is one.
func (r *Run) watchCancel(ctx context.Context) (stop func()) {
	st, id := r.rec.Store(), r.rec.ID()
	check := func() bool {
		req, err := st.CancelRequested(id)
		if err != nil || req == nil {
			return false
		}
		r.cancelAsked(&cancelCause{*req})
		return true
	}
	if check() {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(CancelPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if check() {
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// cancelGate sits behind a resumed run's replay: once armed (a request to
// cancel the run came while it replayed its record), the first effect the
// record does not answer cancels the run instead of starting, so that the
// exit handler sees everything the record has. Once an effect went past
// it, the replay is over, and a request cancels the run at once. The exit
// handler's effects, and child flows (whose own effects come back through
// here), always go on to inner.
type cancelGate struct {
	inner vm.EffectProducer
	run   *Run

	mu    sync.Mutex
	cause error // armed: why the run is cancelled
	live  bool  // an effect went past
}

// arm has the next effect that goes past cancel the run with cause; false
// when one already went past (cancel the run now).
func (g *cancelGate) arm(cause error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live {
		return false
	}
	if g.cause == nil {
		g.cause = cause
	}
	return true
}

// Start implements [vm.EffectProducer].
func (g *cancelGate) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.OnExit || req.Kind == graphir.KindSubflow {
		g.inner.Start(ctx, req, done)
		return
	}
	g.mu.Lock()
	cause := g.cause
	if cause == nil {
		g.live = true
	}
	g.mu.Unlock()
	if cause != nil {
		g.run.cancelWith(cause)
		done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		return
	}
	g.inner.Start(ctx, req, done)
}

// Idle implements [vm.EffectIdler].
func (g *cancelGate) Idle(flow []string) {
	if in, ok := g.inner.(vm.EffectIdler); ok {
		in.Idle(flow)
	}
}
