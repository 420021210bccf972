package vm_test

// Scenario tests of the run rules: how a run ends, branches that end,
// trigger rules (join modes, status()), failure codes in expressions, body
// outputs and body failures.

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// runGraph runs an already loaded flow without inputs.
func runGraph(t *testing.T, g *graphir.Graph, opts vm.Options) *vm.Result {
	t.Helper()
	res, err := vm.Run(context.Background(), g, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantStatuses(t *testing.T, res *vm.Result, want map[string]vm.StepStatus) {
	t.Helper()
	got := stepStatus(res)
	for name := range got {
		if _, ok := want[name]; !ok {
			delete(got, name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("step statuses (-want +got):\n%s", diff)
	}
}

// A leaf that reaches END early does not end the run: the other leaf's
// later failure fails it.
func TestEndEarlyThenFailureFailsRun(t *testing.T) {
	res := run(t, `
quick = step("quick", fn = lambda r: "done")
slow = step("slow", run = ["sh", "-c", "sleep 0.2; exit 4"])
edge(START, quick)
edge(START, slow)
edge(quick, END)
edge(slow, END)
`, nil, vm.Options{Parallel: 4})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "slow", msg: "exit status 4"})
	wantStatuses(t, res, map[string]vm.StepStatus{"quick": vm.StepSucceeded, "slow": vm.StepFailed})
}

// A leaf reaching END while another branch still sleeps: the run waits for
// it, then succeeds.
func TestEndWaitsForRunningBranch(t *testing.T) {
	res := run(t, `
quick = step("quick", fn = lambda r: "quick")
sleeper = step("sleeper", run = ["sh", "-c", "sleep 0.2; echo slept"])
note = step("note", fn = lambda r: r.sleeper.stdout.strip())
edge(START, quick)
edge(START, sleeper)
edge(quick, END)
edge(sleeper, note)
`, nil, vm.Options{Parallel: 4})
	// note has nowhere to go: its branch ends there, the run has reached END.
	check(t, res, want{status: vm.Succeeded, output: "quick"})
	wantStatuses(t, res, map[string]vm.StepStatus{"quick": vm.StepSucceeded, "sleeper": vm.StepSucceeded, "note": vm.StepSucceeded})
	if got := res.Step("note").Output; got == nil || goValue(t, got) != "slept" {
		t.Errorf("note output = %v, want slept", got)
	}
}

// The same with --parallel 1: the ready step after END still runs.
func TestEndDoesNotDropReadySteps(t *testing.T) {
	res := run(t, `
a = step("a", fn = lambda r: "a")
b = step("b", fn = lambda r: "b")
edge(START, a)
edge(START, b)
edge(a, END)
edge(b, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"a", "b"}, output: "b"})
}

// A gate with no else-edge beside a live branch simply skips what it
// guards.
func TestGateWithoutElseEdge(t *testing.T) {
	src := `
flow(inputs = {"branch": "feature"})
test = step("test", fn = lambda r: "tested")
deploy = step("deploy", fn = lambda r: "deployed")
docs = step("docs", fn = lambda r: "docs")
edge(START, test)
edge(START, docs)
edge(test, deploy, when = "inputs.branch == 'main'")
edge(deploy, END)
edge(docs, END)
`
	res := run(t, src, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"test", "docs"}, output: "docs"})
	wantStatuses(t, res, map[string]vm.StepStatus{"test": vm.StepSucceeded, "deploy": vm.StepSkipped, "docs": vm.StepSucceeded})
	res = run(t, src, map[string]any{"branch": "main"}, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"test", "docs", "deploy"}})
}

// A run that ends without reaching END fails with no_route naming the steps
// where the live branches stopped.
func TestNoRouteNamesLastBranches(t *testing.T) {
	res := run(t, `
a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: 2)
edge(START, a)
edge(START, b)
edge(a, END, when = "a > 5")
edge(b, END, when = "b > 5")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "no_route", step: "b",
		msg: `the run ended without reaching END: the last live branches stopped at "a", "b"`})
}

// Routers keep their rule: no match and no default is no_route at once.
func TestRouterNoMatchStillNoRoute(t *testing.T) {
	res := run(t, `
side = step("side", fn = lambda r: 1)
pick = router("pick", by = "'nope'", routes = {"yes": END})
edge(START, pick)
edge(START, side)
edge(side, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "no_route", step: "pick", msg: `no route for label "nope"`})
}

func TestJoinAll(t *testing.T) {
	src := `
flow(inputs = {"lint": True})
src = step("src")
build = step("build", fn = lambda r: "built")
lint = step("lint", fn = lambda r: "linted")
ship = step("ship", fn = lambda r: "shipped", join = "all")
other = step("other")
edge(START, src)
edge(src, build)
edge(src, lint, when = "inputs.lint")
edge(src, other)
edge(build, ship)
edge(lint, ship)
edge(ship, END)
edge(other, END)
`
	// One dead input: "all" skips (where "and" would run).
	res := run(t, src, map[string]any{"lint": false}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	wantStatuses(t, res, map[string]vm.StepStatus{"build": vm.StepSucceeded, "lint": vm.StepSkipped, "ship": vm.StepSkipped})
	// Every input live: it runs.
	res = run(t, src, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	wantStatuses(t, res, map[string]vm.StepStatus{"ship": vm.StepSucceeded})
}

// join="done" teardown: runs after a failure routed to it, and after a
// skipped branch, and sees what happened through status().
func TestJoinDoneTeardown(t *testing.T) {
	src := `
flow(inputs = {"fail": False, "extra": True})
setup = step("setup")
work = step("work", run = ["sh", "-c", "exit $1", "work", "{{ 1 if inputs.fail else 0 }}"])
extra = step("extra", fn = lambda r: "extra")
teardown = step("teardown", fn = lambda r: [r.status("work"), r.status("extra")], join = "done")
edge(START, setup)
edge(setup, work)
edge(setup, extra, when = "inputs.extra")
edge(work, teardown)
edge(work, teardown, on = "failure")
edge(extra, teardown)
edge(teardown, END)
`
	res := run(t, src, map[string]any{"fail": true}, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{"failed", "succeeded"}})
	res = run(t, src, map[string]any{"extra": false}, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{"succeeded", "skipped"}})
	// Every in-edge dead: "done" still runs.
	res = run(t, `
src = step("src", fn = lambda r: 0)
a = step("a")
b = step("b")
report = step("report", fn = lambda r: [r.status("a"), r.status("b")], join = "done")
edge(START, src)
edge(src, a, when = "src > 0")
edge(src, b, when = "src > 0")
edge(a, report)
edge(b, report)
edge(report, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"src", "report"}, output: []any{"skipped", "skipped"}})
}

// join="done" with one in-edge runs whether it arrives live or dead.
func TestJoinDoneSingleEdge(t *testing.T) {
	res := run(t, `
a = step("a", fn = lambda r: 0)
b = step("b", join = "done")
chain(START, a)
edge(a, b, when = "a > 0")
edge(b, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"a", "b"}})
}

// status() of every state a step can be in while the run goes: succeeded,
// failed, skipped, not_run; and in a string expression. ("cancelled" is
// seen by exit handlers: TestExitHandlerAfterCancel.)
func TestStatusOfEachState(t *testing.T) {
	res := run(t, `
ok = step("ok")
bad = step("bad", fn = lambda r: fail("no"))
pruned = step("pruned")
later = step("later")
look = step("look", fn = lambda r: {s: r.status(s) for s in ["ok", "bad", "pruned", "later"]})
edge(START, ok)
edge(ok, bad)
edge(bad, look, on = "failure")
edge(bad, pruned)
edge(look, later, when = "status('pruned') == 'skipped' and status('bad') == 'failed'")
edge(later, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"ok", "bad", "look", "later"}})
	if diff := cmp.Diff(map[string]any{"ok": "succeeded", "bad": "failed", "pruned": "skipped", "later": "not_run"},
		goValue(t, res.Step("look").Output)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

// status() and visits() of a step that does not exist say so, with the
// nearest step's name.
func TestStatusUnknownStep(t *testing.T) {
	res := run(t, `
a = step("a", fn = lambda r: r.status("bulid"))
b = step("build")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "a", msg: `status: no step named "bulid" (did you mean "build"?)`})
	res = run(t, `
a = step("a", fn = lambda r: r.visits("bulid"))
b = step("build")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "a", msg: `visits: no step named "bulid" (did you mean "build"?)`})
}

// Failed records carry code, readable in expressions.
func TestFailureCodeInExpressions(t *testing.T) {
	res := run(t, `
slow = step("slow", run = ["sleep", "5"], timeout = "100ms")
broken = step("broken", fn = lambda r: fail("x"))
seen = step("seen", fn = lambda r: [r.slow.code, r.slow.exit_code != 0, r.broken.code, r.broken.error])
edge(START, slow)
edge(slow, broken, on = "failure", when = "slow.code == 'timeout'")
edge(broken, seen, on = "failure")
edge(seen, END)
`, nil, vm.Options{KillGrace: 100 * time.Millisecond})
	check(t, res, want{status: vm.Succeeded, output: []any{"timeout", true, "step_failed", "fail: x"}})
}

// The output of an iteration or item is the last step in the body's list
// order that completed, whichever finished last.
func TestBodyOutputInListOrder(t *testing.T) {
	src := `
flow(output = "m")
fast = step("fast", fn = lambda r: "fast")
slow = step("slow", run = ["sh", "-c", "sleep 0.0$1; echo slow", "slow", "{{ index }}"])
first = step("first", fn = lambda r: "first")
m = map("m", over = "[1, 2, 3]", body = [first, slow, fast], concurrency = 3)
edge(first, slow)
edge(first, fast)
chain(START, m, END)
`
	g := load(t, map[string]string{"flow.star": src})
	for i := 0; i < 30; i++ {
		res := runGraph(t, g, vm.Options{Parallel: 4})
		check(t, res, want{status: vm.Succeeded, output: []any{"fast", "fast", "fast"}})
	}
	res := run(t, `
slow = step("slow", run = ["sh", "-c", "sleep 0.05; echo slow"])
fast = step("fast", fn = lambda r: "fast")
head = step("head")
l = loop("l", body = [head, fast, slow], until = lambda it: it.output != None, max_iterations = 2)
edge(head, slow)
edge(head, fast)
chain(START, l, END)
`, nil, vm.Options{Parallel: 4})
	check(t, res, want{status: vm.Succeeded, output: map[string]any{"stdout": "slow\n", "stderr": "", "exit_code": 0.0, "error": nil, "code": nil, "text": "slow"}})
}

// A body step's failure edge that never fires does not change how the map
// fails: the item fails, and so the map, naming the index; a failure edge
// of the map routes it.
func TestMapFailureWithUnfiredFailureEdge(t *testing.T) {
	src := `
t = step("t", fn = lambda r: fail("item 7 is bad") if r.item == 7 else r.item)
tol = step("tol", fn = lambda r: "tolerated")
m = map("m", over = "list(range(10))", body = [t, tol], concurrency = 2)
report = step("report", fn = lambda r: r.m.error)
edge(t, tol, on = "failure", when = "item == 9")
edge(START, m)
edge(m, END)
edge(m, report, on = "failure")
edge(report, END)
`
	res := run(t, src, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	out, _ := goValue(t, res.Step("report").Output).(string)
	if want := `item 7 (7): step "t" failed: fail: item 7 is bad`; out != want {
		t.Errorf("report = %q, want %q", out, want)
	}
	wantStatuses(t, res, map[string]vm.StepStatus{"m": vm.StepFailed})
	if c := res.Step("m").Code; c != "step_failed" {
		t.Errorf("map code %q", c)
	}
	// Without the map's failure edge the run fails at the map.
	res = run(t, `
t = step("t", fn = lambda r: fail("bad") if r.item == 7 else r.item)
tol = step("tol")
m = map("m", over = "list(range(10))", body = [t, tol])
edge(t, tol, on = "failure", when = "item == 9")
chain(START, m, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "m", msg: `item 7 (7): step "t" failed`})
}

// A body step read from outside its body fails with dependency_unmet.
func TestBodyStepReadFromOutside(t *testing.T) {
	res := run(t, `
c = step("c", fn = lambda r: r.item)
m = map("m", over = "['a', 'e']", body = [c])
after = step("after", fn = lambda r: r.c)
chain(START, m, after, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "dependency_unmet", step: "after", msg: `reads "c"`})
}

// The no_route error names the latest five steps where branches ended and
// counts the others.
func TestNoRouteNamesAtMostFive(t *testing.T) {
	res := run(t, `
src = step("src")
edge(START, src)
for i in range(8):
    s = step("s%d" % i)
    edge(src, s)
    edge(s, END, when = "False")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "no_route", step: "s7",
		msg: `stopped at "s3", "s4", "s5", "s6", "s7" (and 3 more)`})
}

func TestReadUnknownStep(t *testing.T) {
	res := run(t, `
a = step("a", fn = lambda r: r.bulid)
b = step("build")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "a", msg: `no step named "bulid" (did you mean "build"?)`})
}
