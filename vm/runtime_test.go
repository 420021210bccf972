package vm_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/skeinlang/skein/vm"
)

// virtualRuntime is a single-goroutine runtime on a virtual clock: when the
// driver would wait with nothing posted, the clock jumps to the earliest
// timer and fires it. It is what a durable engine's runtime looks like to
// the driver.
type virtualRuntime struct {
	now    time.Time
	timers []*vtimer
}

type vtimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (v *virtualRuntime) Now() time.Time { return v.now }

func (v *virtualRuntime) AfterFunc(d time.Duration, f func()) func() bool {
	t := &vtimer{at: v.now.Add(d), f: f}
	v.timers = append(v.timers, t)
	return func() bool {
		was := !t.stopped
		t.stopped = true
		return was
	}
}

func (v *virtualRuntime) AfterDone(ctx context.Context, f func()) func() bool {
	return context.AfterFunc(ctx, f) // only cancels threads and contexts
}

func (v *virtualRuntime) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := v.AfterFunc(d, func() { cancel(cause) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

func (v *virtualRuntime) Wait(ctx context.Context, wake <-chan struct{}) bool {
	for {
		select {
		case <-wake:
			return false
		default:
		}
		if ctx != nil && ctx.Err() != nil {
			return true
		}
		sort.SliceStable(v.timers, func(i, j int) bool { return v.timers[i].at.Before(v.timers[j].at) })
		var next *vtimer
		for len(v.timers) > 0 && next == nil {
			if t := v.timers[0]; !t.stopped {
				next = t
			}
			v.timers = v.timers[1:]
		}
		if next == nil {
			panic("virtual runtime: the driver waits with no timer set")
		}
		v.now, next.stopped = next.at, true
		next.f()
	}
}

func (v *virtualRuntime) Replayed() bool { return true }

func TestRuntimeRetryTimersAndClock(t *testing.T) {
	// Two retries 10 and 20 minutes later, all on the virtual clock: the
	// run takes half a virtual hour and no real time.
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rt := &virtualRuntime{now: start}
	res := run(t, `
def boom(r):
    fail("no")
s = step("s", fn = boom, retries = 2, backoff = "10m")
`, nil, vm.Options{Runtime: rt})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "s", msg: "no"})
	if !res.Started.Equal(start) || res.Duration != 30*time.Minute {
		t.Errorf("started %v, duration %v; want %v and 30m", res.Started, res.Duration, start)
	}
}

func TestRuntimeFlowTimeout(t *testing.T) {
	// The flow's timeout is a timer of the runtime too: it fires before
	// the retry an hour later.
	rt := &virtualRuntime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	res := run(t, `
flow(timeout = "30m")
def boom(r):
    fail("no")
s = step("s", fn = boom, retries = 2, backoff = "1h")
`, nil, vm.Options{Runtime: rt})
	check(t, res, want{status: vm.Failed, code: "flow_timeout", msg: "30m"})
	if res.Duration != 30*time.Minute {
		t.Errorf("duration %v, want 30m", res.Duration)
	}
}

func TestRuntimeReplayedIgnoresFnTimeout(t *testing.T) {
	// A replayed runtime applies no wall-clock timeout to fn steps: a fn
	// step that takes longer than its timeout still succeeds (the step
	// budget bounds it instead).
	rt := &virtualRuntime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	res := run(t, `
def spin(r):
    n = 0
    for i in range(50000):
        n += 1
    return n
s = step("s", fn = spin, timeout = "1ns")
`, nil, vm.Options{Runtime: rt})
	check(t, res, want{status: vm.Succeeded, output: 50000.0})
}
