package temporal

import (
	"context"
	"time"

	"go.temporal.io/sdk/workflow"
)

// wfRuntime is the VM's runtime as Temporal workflow code: the workflow's
// clock, durable timers, and waiting by workflow.Await, so the driver never
// blocks on a channel, reads the machine's clock or starts a goroutine.
// Everything runs on a context disconnected from the workflow's
// cancellation: the workflow's cancellation reaches the VM as the
// cancellation of the run's context (see Run), so the VM decides what a
// cancellation stops, as it does locally.
type wfRuntime struct {
	ctx workflow.Context
	// work and yields count for Pace.
	work, yields uint64
}

func (rt *wfRuntime) Now() time.Time { return workflow.Now(rt.ctx) }

func (rt *wfRuntime) AfterFunc(d time.Duration, f func()) func() bool {
	tctx, cancel := workflow.WithCancel(rt.ctx)
	fired, stopped := false, false
	// The VM's timers: a step's or the flow's timeout, a retry's backoff.
	t := workflow.NewTimerWithOptions(tctx, max(d, 0), workflow.TimerOptions{Summary: "skein: a timeout or a retry's backoff"})
	workflow.Go(rt.ctx, func(c workflow.Context) {
		if err := t.Get(c, nil); err == nil && !stopped {
			fired = true
			f()
		}
	})
	return func() bool {
		if fired || stopped {
			return false
		}
		stopped = true
		cancel()
		return true
	}
}

func (rt *wfRuntime) AfterDone(ctx context.Context, f func()) func() bool {
	stopped := false
	workflow.Go(rt.ctx, func(c workflow.Context) {
		_ = workflow.Await(c, func() bool { return stopped || ctx.Err() != nil })
		if !stopped {
			stopped = true
			f()
		}
	})
	return func() bool {
		if stopped {
			return false
		}
		stopped = true
		return true
	}
}

func (rt *wfRuntime) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(ctx)
	stop := rt.AfterFunc(d, func() { cancel(cause) })
	return c, func() { stop(); cancel(context.Canceled) }
}

func (rt *wfRuntime) Wait(ctx context.Context, wake <-chan struct{}) bool {
	_ = workflow.Await(rt.ctx, func() bool { return len(wake) > 0 || ctx != nil && ctx.Err() != nil })
	if len(wake) > 0 {
		<-wake
		return false
	}
	return true
}

func (rt *wfRuntime) Replayed() bool { return true }

// Pacing: workflow code that runs for long without blocking is taken for
// a deadlock by the SDK (1 s by default) and, past the workflow task
// timeout (10 s), by the server. A stretch of fn steps that waits for
// nothing (a tight loop, a map of fn bodies) would trip either, and the
// retried workflow task would trip it again, forever. So the driver
// yields, at points fixed by what it has evaluated (deterministic, so a
// replay yields at the same points): after paceEvery units of work, where
// an evaluation is one unit plus one per paceStepsPerUnit Starlark steps,
// it lets the workflow's other coroutines run (no history event), and at
// every paceTimerEvery-th such yield it sleeps on a 1 ms timer, which ends
// the workflow task and starts a new one.
var (
	paceEvery        uint64 = 100
	paceStepsPerUnit uint64 = 10_000
	paceTimerEvery   uint64 = 16
)

// Pace implements vm.Pacer.
func (rt *wfRuntime) Pace(steps uint64) {
	rt.work += 1 + steps/paceStepsPerUnit
	if rt.work < paceEvery {
		return
	}
	rt.work = 0
	rt.yields++
	if rt.yields%paceTimerEvery == 0 {
		_ = workflow.NewTimerWithOptions(rt.ctx, time.Millisecond, workflow.TimerOptions{Summary: "skein: a pause in a long stretch of fn steps"}).Get(rt.ctx, nil)
		return
	}
	resumed := false
	workflow.Go(rt.ctx, func(workflow.Context) { resumed = true })
	_ = workflow.Await(rt.ctx, func() bool { return resumed })
}
