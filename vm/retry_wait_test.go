package vm_test

// Scenario tests of retry_when, loops that give up (exhausted=) and wait=
// timer steps.

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm"
)

// attempts reads how many times a counting task ran.
func attempts(t *testing.T, dir string) string {
	t.Helper()
	n, _ := os.ReadFile(filepath.Join(dir, "n"))
	return strings.TrimSpace(string(n))
}

// The counting task exits with the codes given, one per attempt, then 0.
const countingTask = `flow(inputs = {"dir": None, "codes": None})
fetch = step("fetch", run = ["sh", "-c", 'n=$(cat "$1/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1/n"; code=$(echo $2 | cut -d, -f$n); exit ${code:-0}', "fetch", "{{ inputs.dir }}", "{{ inputs.codes }}"],
    retries = 3, backoff = "10ms", retry_when = "fetch.exit_code == 75")
`

func TestRetryWhenExitCode(t *testing.T) {
	// 75, 75, then 0: both failures are retried.
	dir := t.TempDir()
	res := run(t, countingTask, map[string]any{"dir": dir, "codes": "75,75"}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if n := attempts(t, dir); n != "3" {
		t.Errorf("attempts = %s, want 3", n)
	}
	// 75 then 2: the second failure is not retried; it is the step's.
	dir = t.TempDir()
	res = run(t, countingTask, map[string]any{"dir": dir, "codes": "75,2"}, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "fetch", msg: "exit status 2"})
	if n := attempts(t, dir); n != "2" {
		t.Errorf("attempts = %s, want 2", n)
	}
	if v := res.Step("fetch").Visits; v != 1 {
		t.Errorf("visits = %d, want 1", v)
	}
}

func TestRetryWhenTimeout(t *testing.T) {
	dir := t.TempDir()
	// The first attempt hangs and times out (retried); the second exits 3
	// (not retried).
	res := run(t, `
flow(inputs = {"dir": None})
slow = step("slow", run = ["sh", "-c", 'n=$(cat "$1/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1/n"; if [ $n = 1 ]; then sleep 30; fi; exit 3', "slow", "{{ inputs.dir }}"],
    timeout = "2s", retries = 2, backoff = "10ms", retry_when = "slow.code == 'timeout'")
`, map[string]any{"dir": dir}, vm.Options{KillGrace: 100 * time.Millisecond})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "slow", msg: "exit status 3"})
	if n := attempts(t, dir); n != "2" {
		t.Errorf("attempts = %s, want 2", n)
	}
}

func TestRetryWhenFnStep(t *testing.T) {
	// A fn step's timeout is retried while retry_when holds; a plain
	// failure is not.
	var retries []int
	var mu sync.Mutex
	res := run(t, spin+`
s = step("s", fn = spin, timeout = "50ms", retries = 2, backoff = "1ms", retry_when = lambda r: r.s.code == "timeout")
b = step("b", fn = lambda r: fail("plain"), retries = 2, backoff = "1ms", retry_when = "b.code == 'timeout'")
edge(START, s)
edge(s, b, on = "failure")
edge(b, END, on = "failure")
`, nil, vm.Options{EvalSteps: 1 << 62, OnEvent: func(ev *vm.Event) {
		if ev.Type == vm.StepRetrying {
			mu.Lock()
			retries = append(retries, ev.Attempt)
			mu.Unlock()
		}
	}})
	check(t, res, want{status: vm.Succeeded})
	if s := res.Step("s"); s.Code != "timeout" {
		t.Errorf("s code %q", s.Code)
	}
	if s := res.Step("b"); s.Code != "step_failed" || s.Error != "fail: plain" {
		t.Errorf("b = %s %q", s.Code, s.Error)
	}
	// s: two retries (attempts 2 and 3); b: none.
	if diff := cmp.Diff([]int{2, 3}, retries); diff != "" {
		t.Errorf("retry attempts (-want +got):\n%s", diff)
	}
}

func TestRetryWhenError(t *testing.T) {
	res := run(t, `step("a", fn = lambda r: fail("x"), retries = 1, retry_when = "a.code")`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "expr_error", step: "a", msg: `a condition must be True or False, got string "step_failed"`})
}

// exhausted="fail" makes running out of iterations a failure with code
// exhausted that on="failure" edges route; the record says why it stopped.
func TestLoopExhaustedFailRouted(t *testing.T) {
	var evs []vm.Event
	var mu sync.Mutex
	res := run(t, `
probe = step("probe", fn = lambda r: {"healthy": False})
wait_healthy = loop("wait_healthy", body = [probe], until = lambda it: it.output["healthy"], max_iterations = 3, exhausted = "fail")
page = step("page", fn = lambda r: [r.wait_healthy.code, r.wait_healthy.error])
edge(START, wait_healthy)
edge(wait_healthy, END)
edge(wait_healthy, page, on = "failure")
edge(page, END)
`, nil, vm.Options{OnEvent: func(ev *vm.Event) {
		if ev.Type == vm.LoopIteration {
			mu.Lock()
			evs = append(evs, *ev)
			mu.Unlock()
		}
	}})
	check(t, res, want{status: vm.Succeeded, path: []string{"wait_healthy", "wait_healthy#1.probe", "wait_healthy#2.probe", "wait_healthy#3.probe", "page"},
		output: []any{"exhausted", `loop "wait_healthy": exhausted after 3 iterations without until holding`}})
	l := res.Step("wait_healthy")
	if l.Status != vm.StepFailed || l.Code != "exhausted" || !l.Exhausted || l.Iterations != 3 || l.StoppedReason != "exhausted" {
		t.Errorf("loop record %+v", l)
	}
	if len(evs) != 3 || !evs[2].Exhausted || evs[1].Exhausted {
		t.Errorf("loop_iteration events %+v", evs)
	}
	// Unrouted, it fails the run with code exhausted.
	res = run(t, `
b = step("b")
l = loop("l", body = [b], until = lambda it: False, max_iterations = 2, exhausted = "fail")
chain(START, l, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "exhausted", step: "l", msg: "exhausted after 2 iterations"})
}

func TestLoopStoppedReason(t *testing.T) {
	res := run(t, `
b = step("b", fn = lambda r: r.loop.iteration)
l = loop("l", body = [b], until = lambda it: it.output == 2, max_iterations = 5)
m = step("m")
n = loop("n", body = [m], until = lambda it: False, max_iterations = 2)
chain(START, l, n, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if l := res.Step("l"); l.StoppedReason != "until" || l.Exhausted || l.Status != vm.StepSucceeded {
		t.Errorf("l %+v", l)
	}
	if n := res.Step("n"); n.StoppedReason != "exhausted" || !n.Exhausted || n.Status != vm.StepSucceeded {
		t.Errorf("n %+v", n)
	}
}

func TestWaitStep(t *testing.T) {
	var kinds []string
	var mu sync.Mutex
	res := run(t, `
a = step("a", fn = lambda r: 5)
pause = step("pause", wait = "{{ a * 10 }}ms")
after = step("after", fn = lambda r: r.pause)
chain(START, a, pause, after, END)
`, nil, vm.Options{OnEvent: func(ev *vm.Event) {
		if ev.Type == vm.StepStarted && ev.Step == "pause" {
			mu.Lock()
			kinds = append(kinds, ev.Kind)
			mu.Unlock()
		}
	}})
	check(t, res, want{status: vm.Succeeded, path: []string{"a", "pause", "after"}})
	if p := res.Step("pause"); p.Status != vm.StepSucceeded || goValue(t, p.Output) != nil || p.Kind.String() != "wait" {
		t.Errorf("pause %+v", p)
	}
	if diff := cmp.Diff([]string{"wait"}, kinds); diff != "" {
		t.Errorf("started events (-want +got):\n%s", diff)
	}
}

func TestWaitBadComputedDuration(t *testing.T) {
	res := run(t, `
pause = step("pause", wait = "{{ 'soon' }}")
told = step("told", fn = lambda r: r.pause.error)
edge(START, pause)
edge(pause, END)
edge(pause, told, on = "failure")
edge(told, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: `wait: want a duration such as "30s" or "10m", got "soon"`})
}

// A wait is cancelled mid-wait like a task: with the run, and with its
// map item when another item fails.
func TestWaitCancelled(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `step("pause", wait = "1h")`})
	res := runCancelled(t, g, "", 50*time.Millisecond, vm.Options{})
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	if st := res.Step("pause").Status; st != vm.StepCancelled {
		t.Errorf("pause is %s, want cancelled", st)
	}
	res = run(t, `
pause = step("pause", wait = "{{ '1h' if item == 0 else '0s' }}")
check = step("check", fn = lambda r: fail("bad") if r.item == 1 else 1)
m = map("m", over = "[0, 1]", body = [pause, check], concurrency = 2)
chain(START, m, END)
`, nil, vm.Options{Parallel: 4})
	// Item 0's hour-long wait was cancelled when item 1 failed (else
	// this run would not have returned).
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "m", msg: "item 1"})
	if v := res.Step("pause").Visits; v != 2 {
		t.Errorf("pause visits = %d, want 2", v)
	}
}
