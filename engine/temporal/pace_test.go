package temporal

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/worker"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// A long stretch of fn steps that waits for nothing must not look like a
// deadlock to the SDK: the driver yields as it goes (Pace), every
// paceEvery units of work, every 16th yield a 1 ms timer. The test counts
// the timers, which proves the yields and their rate without a clock; the
// result is the local engine's. The SDK's deadlock detector is a wall
// clock: set below what the loop takes (400ms, once), it failed the run
// whenever a busy machine stalled the workflow goroutine that long between
// two yields, so it is set out of the way here.
func TestLongFnStretchYields(t *testing.T) {
	g, sources, given := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
flow(output = "l")
def count(r):
    return r.loop.iteration
c = step("c", fn = count)
l = loop("l", body = [c], until = "done", max_iterations = 20000)
chain(START, l, END)
def done(it):
    return it.iteration == 20000
`}})
	defer func(every uint64) { paceEvery = every }(paceEvery)
	paceEvery = 10
	local := decode(t, runLocal(t, g, given, 1))

	env := newEnv(t)
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Hour})
	timers := 0
	env.SetOnTimerScheduledListener(func(string, time.Duration) { timers++ })
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var out RunOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(local, decode(t, out.Result)); diff != "" {
		t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
	}
	// 20000 iterations are 40000 evaluations (step and condition): 4000
	// yields, every 16th a timer.
	if want := 40000 / int(paceEvery) / int(paceTimerEvery); timers < want {
		t.Errorf("%d timers, want at least %d", timers, want)
	}
}
