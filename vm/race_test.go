package vm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/vm"
)

// join = "first": the first branch to arrive wins; the others still under
// way (a task, a loop, a map, a step waiting out a retry's backoff, and
// what only they lead to) are cancelled, their records saying who won,
// and the run does not wait for them.
func TestJoinFirst(t *testing.T) {
	start := time.Now()
	res := run(t, `
flow(output = "pick")
slow = step("slow", shell = "exec sleep 30")
after = step("after", shell = "echo never")
nap = step("nap", shell = "exec sleep 30")
l = loop("l", body = [nap], until = lambda r: False, max_iterations = 3)
naps = step("naps", shell = "exec sleep 30")
m = map("m", over = "[1, 2]", body = [naps])
flaky = step("flaky", shell = "exit 1", retries = 3, backoff = "1h")
quick = step("quick", fn = lambda r: "quick")
pick = step("pick", fn = lambda r: [r.quick, r.status("slow"), r.status("after"), r.status("l"), r.status("m"), r.status("flaky")], join = "first")
edge(START, slow)
edge(slow, after)
edge(after, pick)
edge(START, l)
edge(l, pick)
edge(START, m)
edge(m, pick)
edge(START, flaky)
edge(flaky, pick)
edge(START, quick)
edge(quick, pick)
edge(pick, END)
`, nil, vm.Options{Parallel: 8})
	check(t, res, want{status: vm.Succeeded, output: []any{"quick", "cancelled", "skipped", "cancelled", "cancelled", "cancelled"}})
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the run took %s: it waited for the losers", took)
	}
	for _, name := range []string{"slow", "l", "m", "flaky"} {
		s := res.Step(name)
		if s.Status != vm.StepCancelled || !strings.Contains(s.Error, `"quick" reached "pick" first (join = "first")`) {
			t.Errorf("step %s: %s %q; want cancelled, saying quick won", name, s.Status, s.Error)
		}
	}
	if s := res.Step("after"); s.Status != vm.StepSkipped {
		t.Errorf("after: %s; want skipped", s.Status)
	}
}

// A race inside a loop's body runs again each iteration: what lost in one
// runs in the next.
func TestJoinFirstInBody(t *testing.T) {
	res := run(t, `
flow(output = "l")
fork = step("fork")
slow = step("slow", shell = "exec sleep 30")
quick = step("quick", fn = lambda r: r.loop.iteration)
pick = step("pick", fn = lambda r: [r.quick, r.status("slow")], join = "first")
edge(fork, slow)
edge(fork, quick)
edge(slow, pick)
edge(quick, pick)
l = loop("l", body = [fork, slow, quick, pick], until = lambda r: False, max_iterations = 2)
chain(START, l, END)
`, nil, vm.Options{Parallel: 8})
	check(t, res, want{status: vm.Succeeded, output: []any{2.0, "cancelled"}})
}

// When every branch arrives dead, the join is skipped, as "or".
func TestJoinFirstAllDead(t *testing.T) {
	res := run(t, `
flow(output = "after")
a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: 2)
pick = step("pick", fn = lambda r: "ran", join = "first")
after = step("after", fn = lambda r: r.status("pick"), join = "done")
edge(START, a)
edge(START, b)
edge(a, pick, when = "False")
edge(b, pick, when = "False")
edge(pick, after)
edge(after, END)
`, nil, vm.Options{Parallel: 8})
	check(t, res, want{status: vm.Succeeded, output: "skipped"})
}
