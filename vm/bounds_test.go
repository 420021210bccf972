package vm_test

// Scenario tests of the bounds a step keyword promises on every kind it is
// given to: retries and retry_when on child-flow steps, and timeout on
// child flows, loops, maps, waits and model calls.

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// countingChild is a child flow whose one task counts its runs in
// inputs.dir and fails until it has run inputs.ok times (never, for 0).
const countingChild = `flow(inputs = {"dir": None, "ok": 0})
count = step("count", run = ["sh", "-c", 'n=$(cat "$1/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1/n"; test "$2" -gt 0 && test $n -ge "$2"', "count", "{{ inputs.dir }}", "{{ inputs.ok }}"])
`

func TestSubflowRetries(t *testing.T) {
	// A child that always fails runs once and twice more.
	dir := t.TempDir()
	res := runFiles(t, map[string]string{
		"flow.star": `flow(inputs = {"dir": None})
c = step("c", flow = "child.star", inputs = {"dir": "{{ inputs.dir }}"}, retries = 2, backoff = "10ms")
`, "child.star": countingChild}, map[string]any{"dir": dir}, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "c"})
	if n := attempts(t, dir); n != "3" {
		t.Errorf("child runs = %s, want 3", n)
	}
	if v := res.Step("c").Visits; v != 1 {
		t.Errorf("visits = %d, want 1 (retries are not visits)", v)
	}

	// One that succeeds on its second run: the step succeeds.
	dir = t.TempDir()
	res = runFiles(t, map[string]string{
		"flow.star": `flow(inputs = {"dir": None})
c = step("c", flow = "child.star", inputs = {"dir": "{{ inputs.dir }}", "ok": 2}, retries = 2, backoff = "10ms")
`, "child.star": countingChild}, map[string]any{"dir": dir}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if n := attempts(t, dir); n != "2" {
		t.Errorf("child runs = %s, want 2", n)
	}
}

func TestSubflowRetryWhen(t *testing.T) {
	// retry_when reads the failed attempt's record: a child's failure is
	// step_failed, never timeout, so nothing is retried.
	dir := t.TempDir()
	res := runFiles(t, map[string]string{
		"flow.star": `flow(inputs = {"dir": None})
c = step("c", flow = "child.star", inputs = {"dir": "{{ inputs.dir }}"}, retries = 2, backoff = "10ms",
    retry_when = "c.code == 'timeout'")
`, "child.star": countingChild}, map[string]any{"dir": dir}, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "c"})
	if n := attempts(t, dir); n != "1" {
		t.Errorf("child runs = %s, want 1", n)
	}
}

// quickKill kills a cancelled task soon after SIGTERM, which a test's
// process may have made its children ignore.
var quickKill = vm.Options{KillGrace: 100 * time.Millisecond}

// fast checks that a run that should stop at a timeout well under slow
// took less than it.
func fast(t *testing.T, res *vm.Result, slow time.Duration) {
	t.Helper()
	if res.Duration >= slow {
		t.Errorf("the run took %s, want less than %s: the timeout did not stop it", res.Duration, slow)
	}
}

func TestSubflowTimeout(t *testing.T) {
	res := runFiles(t, map[string]string{
		"flow.star": `c = step("c", flow = "child.star", timeout = "300ms")
`, "child.star": `step("slow", run = ["sleep", "2"])
`}, nil, quickKill)
	check(t, res, want{status: vm.Failed, code: "timeout", step: "c", msg: "timed out after 300ms"})
	fast(t, res, 1500*time.Millisecond)
	rec := res.Step("c")
	if rec.Code != "timeout" || rec.Child == nil || rec.Child.Status != vm.Cancelled {
		t.Errorf("record: code %q, child %+v; want code timeout and the cancelled child's run", rec.Code, rec.Child)
	}
}

func TestSubflowTimeoutRetried(t *testing.T) {
	// Each attempt has the whole timeout; a timed-out attempt is retried
	// when retry_when says so.
	dir := t.TempDir()
	res := runFiles(t, map[string]string{
		"flow.star": `flow(inputs = {"dir": None})
c = step("c", flow = "child.star", inputs = {"dir": "{{ inputs.dir }}"}, timeout = "500ms", retries = 2, backoff = "10ms",
    retry_when = "c.code == 'timeout'")
`, "child.star": `flow(inputs = {"dir": None})
step("s", run = ["sh", "-c", 'n=$(cat "$1/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1/n"; if [ $n = 1 ]; then sleep 5; fi', "s", "{{ inputs.dir }}"])
`}, map[string]any{"dir": dir}, quickKill)
	check(t, res, want{status: vm.Succeeded})
	if n := attempts(t, dir); n != "2" {
		t.Errorf("child runs = %s, want 2", n)
	}
}

func TestLoopTimeout(t *testing.T) {
	res := run(t, `
s = step("s", run = ["sleep", "2"])
l = loop("l", body = [s], until = lambda it: False, max_iterations = 3, timeout = "300ms")
after = step("after", fn = lambda r: r.l.code)
edge(START, l)
edge(l, after, on = "failure")
edge(after, END)
`, nil, vm.Options{KillGrace: quickKill.KillGrace, OnEvent: func(*vm.Event) {}})
	check(t, res, want{status: vm.Succeeded, output: "timeout"})
	fast(t, res, 1500*time.Millisecond)
	if st := stepStatus(res); st["l"] != vm.StepFailed || st["s"] != vm.StepCancelled {
		t.Errorf("statuses = %v, want l failed, s cancelled", st)
	}
	if e := res.Step("l").Error; e != `loop "l": timed out after 300ms` {
		t.Errorf("loop error = %q", e)
	}
}

func TestMapTimeout(t *testing.T) {
	res := run(t, `
s = step("s", run = ["sleep", "2"])
m = map("m", over = "[1, 2, 3]", body = [s], concurrency = 1, timeout = "300ms")
`, nil, quickKill)
	check(t, res, want{status: vm.Failed, code: "timeout", step: "m", msg: `map "m": timed out after 300ms`})
	fast(t, res, 1500*time.Millisecond)
	if st := stepStatus(res); st["s"] != vm.StepCancelled {
		t.Errorf("statuses = %v, want s cancelled", st)
	}
}

func TestLoopTimeoutNotReached(t *testing.T) {
	// A loop that finishes in time is not touched by its timer, and a
	// second visit has the whole timeout again.
	res := run(t, `
s = step("s", run = ["true"])
l = loop("l", body = [s], until = lambda it: it.iteration == 2, max_iterations = 3, timeout = "5s", max_visits = 2)
again = step("again", fn = lambda r: r.visits("l") < 2)
chain(START, l, again)
edge(again, l, when = "again")
edge(again, END, when = "not again")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if v := res.Step("l").Visits; v != 2 {
		t.Errorf("loop visits = %d, want 2", v)
	}
}

func TestWaitTimeout(t *testing.T) {
	res := run(t, `
w = step("w", wait = "2s", timeout = "300ms")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "timeout", step: "w", msg: "timed out after 300ms"})
	fast(t, res, 1500*time.Millisecond)
}

func TestLLMTimeoutCode(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "late", Delay: 3 * time.Second}}})
	defer s.Close()
	res := run(t, `
a = step("a", llm = "say something", timeout = "300ms", retries = 0)
`, nil, modelOpts(s, nil))
	check(t, res, want{status: vm.Failed, code: "timeout", step: "a", msg: "no reply within the step's timeout of 300ms"})
	fast(t, res, 2*time.Second)
}

func TestRetryShapes(t *testing.T) {
	// A constant interval with jitter: every delay in [5ms, 10ms], the
	// same again for a run with the same id.
	src := `
a = step("a", run = ["false"], retries = 3, backoff = "10ms", backoff_factor = 1.0, max_backoff = "10ms", jitter = True)
b = step("b", fn = lambda r: fail("no"), retries = 3, backoff = "1ms", backoff_factor = 3, max_backoff = "5ms")
edge(START, a)
edge(a, b, on = "failure")
`
	delays := func() map[string][]time.Duration {
		got := map[string][]time.Duration{}
		var mu sync.Mutex
		res := run(t, src, nil, vm.Options{RunID: "r-jitter", OnEvent: func(ev *vm.Event) {
			if ev.Type == vm.StepRetrying {
				mu.Lock()
				got[ev.Step] = append(got[ev.Step], ev.Duration)
				mu.Unlock()
			}
		}})
		check(t, res, want{status: vm.Failed, step: "b", code: "step_failed"})
		return got
	}
	first := delays()
	if len(first["a"]) != 3 {
		t.Fatalf("a retried %d times, want 3", len(first["a"]))
	}
	for _, d := range first["a"] {
		if d < 5*time.Millisecond || d > 10*time.Millisecond {
			t.Errorf("a jittered delay of %s, want one in [5ms, 10ms]", d)
		}
	}
	if diff := cmp.Diff([]time.Duration{time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond}, first["b"]); diff != "" {
		t.Errorf("b's delays (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(first, delays()); diff != "" {
		t.Errorf("the same run id waited differently (-first +second):\n%s", diff)
	}
}

func TestLoopTimeoutAcrossRestore(t *testing.T) {
	// A run that continues from a snapshot (Temporal's continue-as-new)
	// arms its loop's timeout again, for what is left of it.
	mark := filepath.Join(t.TempDir(), "ran")
	g := load(t, map[string]string{"flow.star": `
s = step("s", run = ["sh", "-c", "sleep 0.2; touch ` + mark + `"])
l = loop("l", body = [s], until = lambda it: False, max_iterations = 20, timeout = "1s")
`})
	in, _ := vm.BindInputs(g, nil)
	p := vm.Prepare(g)
	snap := suspendAtMark(t, p, in, vm.Options{Parallel: 1, KillGrace: quickKill.KillGrace}, mark)
	start := time.Now()
	res := p.Run(context.Background(), in, vm.Options{Parallel: 1, KillGrace: quickKill.KillGrace, Restore: snap})
	check(t, res, want{status: vm.Failed, code: "timeout", step: "l"})
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("the restored run took %s: its loop's timeout was not armed again", took)
	}
}
