package vm

// This file is the runtime seam: what the driver loop needs of its host
// besides effects (the clock, timers, and a way to wait for the inbox), so
// the same deciding code runs in a plain process or as the workflow code of
// a durable engine, which must not read the clock, block on channels or
// start goroutines itself.

import (
	"context"
	"time"
)

// Runtime is the host the driver runs on. The VM calls its methods from the
// goroutine driving the run; the functions it passes to AfterFunc and
// AfterDone run wherever the runtime runs them (another goroutine locally,
// a workflow coroutine on Temporal) and only post to the run's inbox or
// cancel contexts.
//
// The zero Options use the local runtime: the machine's monotonic clock,
// time.AfterFunc, context.AfterFunc, context.WithTimeoutCause and a select
// on the inbox and the run's context.
type Runtime interface {
	// Now reads the clock.
	Now() time.Time
	// AfterFunc calls f once d has passed, unless stop is called first;
	// stop reports whether it stopped f from being called.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
	// AfterDone calls f once ctx is done, unless stop is called first (as
	// context.AfterFunc).
	AfterDone(ctx context.Context, f func()) (stop func() bool)
	// WithTimeout returns a copy of ctx that is cancelled with cause once
	// d has passed (as context.WithTimeoutCause).
	WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
	// Wait blocks until wake can be received from (and receives it) or
	// ctx is done; done reports the latter. With a ctx that is never
	// done (context.Background()) only wake ends the wait.
	Wait(ctx context.Context, wake <-chan struct{}) (done bool)
	// Replayed reports whether the run's decisions are replayed from a
	// history, so nothing they depend on may come from the wall clock:
	// fn-step timeouts are then not applied (the step budget bounds fn
	// steps), and evaluations run on the driver itself.
	Replayed() bool
}

// A Pacer is a [Runtime] that hears of every evaluation the driver makes,
// with the Starlark steps it took (a deterministic count), after it ends
// and before the driver goes on. Workflow code uses it to yield during a
// long stretch of fn steps that waits for nothing, which its host would
// otherwise take for a deadlock. Pace may block, as Wait does.
type Pacer interface {
	Pace(steps uint64)
}

// localRuntime is the default [Runtime].
type localRuntime struct{}

func (localRuntime) Now() time.Time { return time.Now() }

func (localRuntime) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

func (localRuntime) AfterDone(ctx context.Context, f func()) func() bool {
	return context.AfterFunc(ctx, f)
}

func (localRuntime) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, cause)
}

func (localRuntime) Wait(ctx context.Context, wake <-chan struct{}) bool {
	if ctx == nil {
		<-wake
		return false
	}
	select {
	case <-wake:
		return false
	case <-ctx.Done():
		return true
	}
}

func (localRuntime) Replayed() bool { return false }
