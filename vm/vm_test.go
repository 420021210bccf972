package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// load writes the files of a flow tree into a temporary directory and loads
// "flow.star" from it.
func load(t testing.TB, files map[string]string) *graphir.Graph {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := lang.Load(filepath.Join(dir, "flow.star"), lang.Options{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return g
}

// run loads src as flow.star and runs it with --parallel 1 unless opts say
// otherwise.
func run(t testing.TB, src string, inputs map[string]any, opts vm.Options) *vm.Result {
	t.Helper()
	return runFiles(t, map[string]string{"flow.star": src}, inputs, opts)
}

func runFiles(t testing.TB, files map[string]string, inputs map[string]any, opts vm.Options) *vm.Result {
	t.Helper()
	g := load(t, files)
	if opts.Parallel == 0 {
		opts.Parallel = 1
	}
	if opts.LoadFlow == nil {
		opts.LoadFlow = func(_ context.Context, path, root string) (*graphir.Graph, error) {
			return lang.Load(path, lang.Options{Root: root})
		}
	}
	given := map[string]starlark.Value{}
	for k, v := range inputs {
		sv, err := stdlib.FromGo(v)
		if err != nil {
			t.Fatal(err)
		}
		given[k] = sv
	}
	res, err := vm.Run(context.Background(), g, given, opts)
	if err != nil {
		t.Fatalf("inputs: %v", err)
	}
	return res
}

// goValue converts a flow value for comparison.
func goValue(t testing.TB, v starlark.Value) any {
	t.Helper()
	x, err := stdlib.ToGo(v)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(x)
	var out any
	json.Unmarshal(b, &out)
	return out
}

type want struct {
	status vm.Status
	code   string // error code, "" when succeeded
	step   string // error step, if checked
	msg    string // fragment of the error message
	path   []string
	output any // compared as JSON when set
}

func check(t *testing.T, res *vm.Result, w want) {
	t.Helper()
	if res.Status != w.status {
		t.Errorf("status = %s, want %s (error %+v)", res.Status, w.status, res.Error)
	}
	code, step, msg := "", "", ""
	if res.Error != nil {
		code, step, msg = string(res.Error.Code), res.Error.Step, res.Error.Msg
	}
	if code != w.code {
		t.Errorf("error code = %q, want %q (message %q)", code, w.code, msg)
	}
	if w.step != "" && step != w.step {
		t.Errorf("error step = %q, want %q", step, w.step)
	}
	if !strings.Contains(msg, w.msg) {
		t.Errorf("error message %q does not contain %q", msg, w.msg)
	}
	if w.path != nil {
		if diff := cmp.Diff(w.path, res.Path); diff != "" {
			t.Errorf("path (-want +got):\n%s", diff)
		}
	}
	if w.output != nil {
		if diff := cmp.Diff(w.output, goValue(t, res.Output)); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
	}
}

func stepStatus(res *vm.Result) map[string]vm.StepStatus {
	m := map[string]vm.StepStatus{}
	for _, s := range res.Steps {
		m[s.Name] = s.Status
	}
	return m
}

func TestLinear(t *testing.T) {
	res := run(t, `
a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: r.a + 1)
c = step("c", fn = lambda r: r.b * 10)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"a", "b", "c"}, output: 20.0})
	if v := res.Step("b").Visits; v != 1 {
		t.Errorf("b visits = %d", v)
	}
}

func TestBranch(t *testing.T) {
	src := `
flow(inputs = {"label": "spam"})
classify = step("classify", fn = lambda r: {"label": r.inputs.label})
discard = step("discard", fn = lambda r: "discarded")
respond = step("respond", fn = lambda r: "responded")
act = step("act", fn = lambda r: "acted", join = "or")
edge(START, classify)
edge(classify, discard, when = "classify.label == 'spam'")
edge(classify, respond, when = "classify.label != 'spam'")
edge(respond, act)
edge(discard, END)
edge(act, END)
`
	res := run(t, src, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"classify", "discard"}, output: "discarded"})
	st := stepStatus(res)
	if st["respond"] != vm.StepSkipped || st["act"] != vm.StepSkipped {
		t.Errorf("untaken branch: respond %s, act %s; want skipped", st["respond"], st["act"])
	}
	res = run(t, src, map[string]any{"label": "ham"}, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"classify", "respond", "act"}, output: "acted"})
}

func TestDraftCritiqueRevise(t *testing.T) {
	res := run(t, `
flow(output = "draft")
draft = step("draft", fn = lambda r: "v%d" % r.visits("draft"), max_visits = 5)
critique = step("critique", fn = lambda r: {"ok": r.draft == "v3"})
chain(START, draft, critique)
edge(critique, draft, when = "not critique.ok")
edge(critique, END, when = "critique.ok")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: "v3",
		path: []string{"draft", "critique", "draft", "critique", "draft", "critique"}})
	if v := res.Step("draft").Visits; v != 3 {
		t.Errorf("draft visits = %d, want 3", v)
	}
}

func TestLoopUntilFeedbackHistory(t *testing.T) {
	res := run(t, `
flow(output = "l")
def body_fn(r):
    return {"n": r.loop.iteration, "fb": r.loop.feedback}
b = step("b", fn = body_fn)
l = loop("l", body = [b], until = "enough", max_iterations = 10)
chain(START, l, END)
def enough(it):
    if it.iteration == 3:
        if len(it.history) != 2 or it.history[0]["n"] != 1:
            fail("bad history %s" % it.history)
        if it.result["b"]["n"] != 3 or it.output["n"] != 3 or it.index != 2:
            fail("bad iteration value")
        return True
    return (False, "more than %d" % it.iteration)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: map[string]any{"n": 3.0, "fb": "more than 2"}})
	l := res.Step("l")
	if l.Iterations != 3 || l.Exhausted {
		t.Errorf("iterations %d exhausted %v, want 3 false", l.Iterations, l.Exhausted)
	}
	if b := res.Step("b"); b.Visits != 3 {
		t.Errorf("b visits %d, want 3", b.Visits)
	}
}

func TestLoopExhausted(t *testing.T) {
	res := run(t, `
b = step("b", fn = lambda r: r.loop.index)
l = loop("l", body = [b], until = lambda it: it.is_last and False, max_iterations = 4)
after = step("after", fn = lambda r: r.l)
chain(START, l, after, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: 3.0})
	if l := res.Step("l"); l.Iterations != 4 || !l.Exhausted {
		t.Errorf("iterations %d exhausted %v, want 4 true", l.Iterations, l.Exhausted)
	}
}

func TestRouterByLabel(t *testing.T) {
	src := `
flow(inputs = {"label": "urgent"})
triage = router("triage", by = "inputs.label", routes = {"urgent": "escalate", "billing": "bill"}, default = "reply")
escalate = step("escalate", fn = lambda r: "escalated")
bill = step("bill", fn = lambda r: "billed")
reply = step("reply", fn = lambda r: "replied")
done = step("done", fn = lambda r: r.triage, join = "or")
edge(START, triage)
edge(escalate, done)
edge(bill, done)
edge(reply, done)
edge(done, END)
`
	for _, c := range []struct {
		label, taken string
	}{{"urgent", "escalate"}, {"billing", "bill"}, {"other", "reply"}} {
		res := run(t, src, map[string]any{"label": c.label}, vm.Options{})
		check(t, res, want{status: vm.Succeeded, path: []string{"triage", c.taken, "done"}, output: c.label})
		for _, s := range []string{"escalate", "bill", "reply"} {
			if st := stepStatus(res)[s]; s != c.taken && st != vm.StepSkipped {
				t.Errorf("label %s: %s is %s, want skipped", c.label, s, st)
			}
		}
	}
}

func TestRouterCases(t *testing.T) {
	src := `
flow(inputs = {"n": 5})
gate = router("gate", cases = [("inputs.n > 10", "big"), (lambda r: r.inputs.n > 3, "medium")], default = "small")
big = step("big", fn = lambda r: "big")
medium = step("medium", fn = lambda r: "medium")
small = step("small", fn = lambda r: "small")
edge(START, gate)
edge(big, END)
edge(medium, END)
edge(small, END)
`
	for n, taken := range map[int]string{20: "big", 5: "medium", 1: "small"} {
		res := run(t, src, map[string]any{"n": n}, vm.Options{})
		check(t, res, want{status: vm.Succeeded, path: []string{"gate", taken}, output: taken})
	}
}

func TestRouterNoRoute(t *testing.T) {
	res := run(t, `
r1 = router("r1", by = "'nope'", routes = {"a": "a"})
a = step("a")
edge(START, r1)
edge(a, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "no_route", step: "r1", msg: `no route for label "nope"`})
}

func TestFanOutAndJoin(t *testing.T) {
	res := run(t, `
src = step("src", fn = lambda r: 1)
a = step("a", run = ["sh", "-c", "sleep 0.05; echo a"])
b = step("b", fn = lambda r: "b")
c = step("c", run = ["echo", "c"])
join = step("join", fn = lambda r: [r.a.stdout.strip(), r.b, r.c.stdout.strip()])
edge(START, src)
for x in [a, b, c]:
    edge(src, x)
    edge(x, join)
edge(join, END)
`, nil, vm.Options{Parallel: 4})
	check(t, res, want{status: vm.Succeeded, output: []any{"a", "b", "c"}})
	if v := res.Step("join").Visits; v != 1 {
		t.Errorf("join ran %d times, want 1", v)
	}
}

func TestAndJoinDeadBranch(t *testing.T) {
	res := run(t, `
src = step("src", fn = lambda r: {"go": False})
live = step("live", fn = lambda r: "live")
pruned = step("pruned", fn = lambda r: "pruned")
after_pruned = step("after_pruned", fn = lambda r: "x")
join = step("join", fn = lambda r: r.live)
edge(START, src)
edge(src, live)
edge(src, pruned, when = "src.go")
edge(pruned, after_pruned)
edge(live, join)
edge(after_pruned, join)
edge(join, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"src", "live", "join"}, output: "live"})
	st := stepStatus(res)
	if st["pruned"] != vm.StepSkipped || st["after_pruned"] != vm.StepSkipped {
		t.Errorf("pruned %s, after_pruned %s; want skipped", st["pruned"], st["after_pruned"])
	}
}

func TestAndJoinAllDead(t *testing.T) {
	res := run(t, `
src = step("src", fn = lambda r: 0)
a = step("a")
b = step("b")
join = step("join")
other = step("other", fn = lambda r: "other")
edge(START, src)
edge(src, a, when = "src > 0")
edge(src, b, when = "src > 0")
edge(src, other, when = "src == 0")
edge(a, join)
edge(b, join)
edge(join, END)
edge(other, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"src", "other"}, output: "other"})
	if st := stepStatus(res)["join"]; st != vm.StepSkipped {
		t.Errorf("join %s, want skipped", st)
	}
}

func TestOrJoinFiresOnce(t *testing.T) {
	res := run(t, `
src = step("src")
fast = step("fast", fn = lambda r: "fast")
slow = step("slow", run = ["sh", "-c", "sleep 0.1"])
first = step("first", fn = lambda r: "first", join = "or")
edge(START, src)
edge(src, fast)
edge(src, slow)
edge(fast, first)
edge(slow, first)
edge(first, END)
`, nil, vm.Options{Parallel: 4})
	check(t, res, want{status: vm.Succeeded, output: "first"})
	if v := res.Step("first").Visits; v != 1 {
		t.Errorf("OR-join ran %d times, want once", v)
	}
}

func TestMapOrderAndConcurrency(t *testing.T) {
	res := run(t, `
flow(inputs = {"xs": [3, 1, 2, 0]}, output = "m")
work = step("work", run = ["sh", "-c", "sleep 0.0$1; echo $1", "work", "{{ item }}"])
shape = step("shape", fn = lambda r: {"i": r.index, "x": r.item, "out": r.work.stdout.strip()})
m = map("m", over = "inputs.xs", body = [work, shape], concurrency = 3)
chain(START, m, END)
`, nil, vm.Options{Parallel: 8})
	check(t, res, want{status: vm.Succeeded, output: []any{
		map[string]any{"i": 0.0, "x": 3.0, "out": "3"},
		map[string]any{"i": 1.0, "x": 1.0, "out": "1"},
		map[string]any{"i": 2.0, "x": 2.0, "out": "2"},
		map[string]any{"i": 3.0, "x": 0.0, "out": "0"},
	}})
	if m := res.Step("m"); m.Items != 4 {
		t.Errorf("items = %d, want 4", m.Items)
	}
	if w := res.Step("work"); w.Visits != 4 {
		t.Errorf("work visits = %d, want 4", w.Visits)
	}
}

func TestMapFailureNamesIndex(t *testing.T) {
	res := run(t, `
flow(inputs = {"xs": ["ok", "bad", "slow", "ok"]})
work = step("work", run = ["sh", "-c", 'if [ "$1" = bad ]; then exit 3; fi; if [ "$1" = slow ]; then sleep 30; fi', "work", "{{ item }}"])
m = map("m", over = "inputs.xs", body = [work], concurrency = 4)
chain(START, m, END)
`, nil, vm.Options{Parallel: 8})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "m", msg: `item 1 ("bad"): step "work" failed: exit status 3`})
	if res.Duration > 20*time.Second {
		t.Errorf("the slow item was not cancelled: the run took %s", res.Duration)
	}
}

func TestMapEmpty(t *testing.T) {
	res := run(t, `
flow(output = "m")
w = step("w", fn = lambda r: r.item)
m = map("m", over = "[]", body = [w])
chain(START, m, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{}})
}

func TestSubflow(t *testing.T) {
	res := runFiles(t, map[string]string{
		"flow.star": `
flow(output = "use")
prep = step("prep", fn = lambda r: {"words": ["a", "bb", "ccc"]})
child = step("child", flow = "sub/child.star", inputs = {"words": "{{ prep.words }}", "title": "n={{ len(prep.words) }}"})
use = step("use", fn = lambda r: r.child)
chain(START, prep, child, use, END)
`,
		"sub/child.star": `
flow(inputs = {"words": None, "title": None}, output = "out")
out = step("out", fn = lambda r: "%s: %s" % (r.inputs.title, "/".join(r.inputs.words)))
`}, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: "n=3: a/bb/ccc"})
	c := res.Step("child").Child
	if c == nil || c.Status != vm.Succeeded || c.Step("out") == nil {
		t.Fatalf("child record missing or wrong: %+v", c)
	}
}

func TestSubflowTemplated(t *testing.T) {
	res := runFiles(t, map[string]string{
		"flow.star": `
flow(inputs = {"which": "b"}, output = "child")
child = step("child", flow = "sub/{{ inputs.which }}.star")
`,
		"sub/a.star": `step("x", fn = lambda r: "from a")`,
		"sub/b.star": `step("x", fn = lambda r: "from b")`,
	}, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: "from b"})
}

// templatedChild is a flow whose child flow is the input which; a child
// refused (a failure) routes to step refused, whose output is its error.
const templatedChild = `
flow(inputs = {"which": None})
child = step("child", flow = "{{ inputs.which }}")
refused = step("refused", fn = lambda r: r.child.error)
edge(START, child)
edge(child, END)
edge(child, refused, on = "failure")
edge(refused, END)
`

func TestSubflowTemplatedStaysInRoot(t *testing.T) {
	files := map[string]string{
		"flow.star": templatedChild,
		"ok.star":   `step("x")`,
	}
	for which, msg := range map[string]string{
		"../outside.star": "is outside the flow root",
		"/etc/flow.star":  "absolute paths are not allowed",
		// Refused at once: the root check resolved a path once per
		// missing part, each time the whole path (minutes for 200 KB).
		strings.Repeat("a/", 100_000) + "x.star": "bytes is longer than the 4096 a path may have",
	} {
		res := runFiles(t, files, map[string]any{"which": which}, vm.Options{})
		check(t, res, want{status: vm.Succeeded, path: []string{"child", "refused"}})
		if got := goValue(t, res.Output).(string); !strings.Contains(got, msg) {
			t.Errorf("flow=%.40q: error %.200q does not say %q", which, got, msg)
		}
	}
	res := runFiles(t, files, map[string]any{"which": "ok.star"}, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"child"}})
}

// A templated child flow whose inputs do not bind fails its step with the
// binding's message alone, without its code.
func TestSubflowTemplatedBadInputs(t *testing.T) {
	res := runFiles(t, map[string]string{
		"flow.star":  templatedChild,
		"needs.star": "flow(name = \"needs\", inputs = {\"n\": None})\nstep(\"x\")",
	}, map[string]any{"which": "needs.star"}, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"child", "refused"}})
	want := `/needs.star: flow needs needs input "n"; it declares n (any, required)`
	if got := goValue(t, res.Output).(string); !strings.HasPrefix(got, "child flow ") || !strings.HasSuffix(got, want) {
		t.Errorf("error %q, want \"child flow .../needs.star: ...\" ending %q", got, want)
	}
}

func TestSubflowFailureRoutes(t *testing.T) {
	res := runFiles(t, map[string]string{
		"flow.star": `
child = step("child", flow = "child.star")
recover = step("recover", fn = lambda r: "recovered from: " + r.child.error)
edge(START, child)
edge(child, END)
edge(child, recover, on = "failure")
edge(recover, END)
`,
		"child.star": `step("boom", run = ["false"])`,
	}, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if !strings.Contains(goValue(t, res.Output).(string), `step "boom" failed`) {
		t.Errorf("output %v does not carry the child's error", res.Output)
	}
}

func TestBuildFixRetryBound(t *testing.T) {
	src := `
build = step("build", run = ["sh", "-c", 'test "$1" -ge {{ inputs.passes_on }}', "build", "{{ self.visits }}"], max_visits = 3)
fix = step("fix", fn = lambda r: "fixed " + str(r.build.exit_code))
edge(START, build)
edge(build, END)
edge(build, fix, on = "failure")
edge(fix, build)
flow(inputs = {"passes_on": 2})
`
	res := run(t, src, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"build", "fix", "build"}})
	res = run(t, src, map[string]any{"passes_on": 99}, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "max_visits_exceeded", step: "build", msg: "max_visits 3 exceeded",
		path: []string{"build", "fix", "build", "fix", "build", "fix"}})
}

func TestErrorCodes(t *testing.T) {
	cases := []struct {
		name string
		src  string
		w    want
	}{
		{"step_failed", `step("a", run = ["false"])`,
			want{status: vm.Failed, code: "step_failed", step: "a", msg: "exit status 1"}},
		{"step_failed_fn", `step("a", fn = lambda r: fail("broken"))`,
			want{status: vm.Failed, code: "step_failed", step: "a", msg: "broken"}},
		{"aborted", `a = step("a")
edge(START, a)
edge(a, ABORT)`, want{status: vm.Failed, code: "aborted", step: "a"}},
		{"no_route", `a = step("a", fn = lambda r: 1)
edge(START, a)
edge(a, END, when = "a > 5")`, want{status: vm.Failed, code: "no_route", step: "a", msg: `the last live branches stopped at "a"`}},
		{"expr_error_not_bool", `a = step("a", fn = lambda r: 1)
edge(START, a)
edge(a, END, when = "a")`, want{status: vm.Failed, code: "expr_error", step: "a", msg: "must be True or False, got int"}},
		{"expr_error_raises", `a = step("a", fn = lambda r: {})
edge(START, a)
edge(a, END, when = "a.missing > 1")`, want{status: vm.Failed, code: "expr_error", step: "a", msg: "missing"}},
		{"dependency_unmet", `a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: 2)
c = step("c", run = ["echo", "{{ b }}"])
edge(START, a)
edge(a, b, when = "a > 1")
edge(a, c, when = "a == 1")
edge(c, END)
edge(b, END)`, want{status: vm.Failed, code: "dependency_unmet", step: "c", msg: `reads "b", which has not completed`}},
		{"dependency_unmet_fn", `a = step("a", fn = lambda r: r.b)
b = step("b")`, want{status: vm.Failed, code: "dependency_unmet", step: "a", msg: `reads "b"`}},
		{"until_error", `b = step("b")
l = loop("l", body = [b], until = lambda it: "yes", max_iterations = 3)`,
			// The position is the function's, which returned it.
			want{status: vm.Failed, code: "until_error", step: "l", msg: `/flow.star:2:35: must return True, False or (stop, reason), got string "yes"`}},
		{"condition_function_not_bool", `a = step("a", fn = lambda r: 1)
edge(START, a)
edge(a, END, when = lambda r: r.a)`, want{status: vm.Failed, code: "expr_error", step: "a", msg: "/flow.star:3:21: a condition must be True or False, got int 1"}},
		{"until_raises", `b = step("b")
l = loop("l", body = [b], until = lambda it: it.nope, max_iterations = 3)`,
			want{status: vm.Failed, code: "until_error", step: "l", msg: "nope"}},
		{"max_visits_exceeded", `a = step("a", max_visits = 2)
edge(START, a)
edge(a, a)`, want{status: vm.Failed, code: "max_visits_exceeded", step: "a", path: []string{"a", "a"}}},
		// The timed-out tasks would run for an hour: the run returns
		// (runStuck's hang guard) only because they were killed.
		{"timeout", `step("slow", run = ["sleep", "3600"], timeout = "200ms")`,
			want{status: vm.Failed, code: "timeout", step: "slow", msg: "timed out after 200ms"}},
		{"flow_timeout", `flow(timeout = "300ms")
a = step("a", run = ["sleep", "3600"])
b = step("b", run = ["sleep", "3600"])
edge(START, a)
edge(START, b)
edge(a, END)
edge(b, END)`, want{status: vm.Failed, code: "flow_timeout", msg: "timeout of 300ms"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := load(t, map[string]string{"flow.star": c.src})
			res := runStuck(t, context.Background(), g, vm.Options{Parallel: 4, KillGrace: 500 * time.Millisecond})
			check(t, res, c.w)
		})
	}
}

// runCancelled runs g, cancelling its context after the first start of
// step (of any step if step is ""). opts.OnEvent must be nil.
func runCancelled(t *testing.T, g *graphir.Graph, step string, after time.Duration, opts vm.Options) *vm.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	opts.OnEvent = func(ev *vm.Event) {
		if ev.Type == vm.StepStarted && (step == "" || ev.Step == step) {
			once.Do(func() { time.AfterFunc(after, cancel) })
		}
	}
	res, err := vm.Run(ctx, g, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCancelled(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `step("a", run = ["sleep", "30"])`})
	res := runCancelled(t, g, "", 100*time.Millisecond, vm.Options{})
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	if st := res.Step("a").Status; st != vm.StepCancelled {
		t.Errorf("a is %s, want cancelled", st)
	}
}

// A step cancelled while it runs ends its visit: whatever its kind, it
// gets a step_finished event with its visit and the time it ran, and its
// record says cancelled (it used to get no event unless it was a task, and
// a duration of 0).
func TestCancelledStepEvents(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `
t = step("t", run = ["sleep", "30"])
w = step("w", wait = "1h")
edge(START, t)
edge(START, w)
edge(t, END)
edge(w, END)
`})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	started, finished := map[string]bool{}, map[string]vm.Event{}
	res, err := vm.Run(ctx, g, nil, vm.Options{OnEvent: func(ev *vm.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case vm.StepStarted:
			started[ev.Step] = true
			if started["t"] && started["w"] {
				cancel()
			}
		case vm.StepFinished:
			finished[ev.Step] = *ev
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	for _, name := range []string{"t", "w"} {
		ev, ok := finished[name]
		if !ok {
			t.Errorf("no step_finished event for cancelled step %q", name)
			continue
		}
		if ev.Status != "cancelled" || ev.Code != "cancelled" || ev.Visit != 1 || ev.Duration <= 0 || ev.Time.IsZero() {
			t.Errorf("step_finished of %q: status %q code %q visit %d duration %s time %s; want cancelled, cancelled, 1, more than 0, set",
				name, ev.Status, ev.Code, ev.Visit, ev.Duration, ev.Time)
		}
		rec := res.Step(name)
		if rec.Status != vm.StepCancelled || rec.Code != "cancelled" || rec.Error != "cancelled" || rec.Duration <= 0 {
			t.Errorf("record of %q: status %s code %q error %q duration %s; want cancelled, cancelled, cancelled, more than 0",
				name, rec.Status, rec.Code, rec.Error, rec.Duration)
		}
	}
}

func TestSubflowGuards(t *testing.T) {
	t.Run("cycle", func(t *testing.T) {
		res := runFiles(t, map[string]string{
			"flow.star": `step("again", flow = "{{ 'flow' }}.star")`,
		}, nil, vm.Options{})
		check(t, res, want{status: vm.Failed, code: "subflow_cycle", step: "again", msg: "already running"})
	})
	t.Run("depth", func(t *testing.T) {
		files := map[string]string{"flow.star": `step("next", flow = "{{ 'f1' }}.star")`}
		for i := 1; i <= 10; i++ {
			files["f"+itoa(i)+".star"] = `step("next", flow = "{{ 'f` + itoa(i+1) + `' }}.star")`
		}
		files["f11.star"] = `step("leaf")`
		res := runFiles(t, files, nil, vm.Options{})
		check(t, res, want{status: vm.Failed, code: "subflow_depth", msg: "deeper than 8"})
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestInjectionSafety(t *testing.T) {
	evil := "; rm -rf / $(id) `x` \"q\" 'q' \n&& echo pwned"
	res := run(t, `
flow(inputs = {"evil": None})
a = step("a", run = ["printf", "%s|", "{{ inputs.evil }}", "pre-{{ inputs.evil }}-post"], env = {"EVIL": "{{ inputs.evil }}"})
b = step("b", shell = 'printf "%s" "$EVIL"', env = {"EVIL": "{{ inputs.evil }}"})
chain(START, a, b, END)
`, map[string]any{"evil": evil}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	out := goValue(t, res.Step("a").Output).(map[string]any)["stdout"]
	if wantOut := evil + "|pre-" + evil + "-post|"; out != wantOut {
		t.Errorf("argv was split or expanded:\n got %q\nwant %q", out, wantOut)
	}
	if got := goValue(t, res.Step("b").Output).(map[string]any)["stdout"]; got != evil {
		t.Errorf("env value changed: %q", got)
	}
}

func TestTaskDetails(t *testing.T) {
	res := runFiles(t, map[string]string{"flow.star": `
a = step("a", run = ["sh", "-c", "pwd; cat; echo err >&2; echo $GREETING; exit 0"], stdin = "fed in\n", dir = "sub", env = {"GREETING": "hi {{ 1 + 1 }}"})
`, "sub/.keep": ""}, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	out := goValue(t, res.Step("a").Output).(map[string]any)
	lines := strings.Split(strings.TrimSpace(out["stdout"].(string)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "/sub") || lines[1] != "fed in" || lines[2] != "hi 2" {
		t.Errorf("stdout = %q", out["stdout"])
	}
	if out["stderr"] != "err\n" || out["exit_code"] != 0.0 {
		t.Errorf("stderr %q exit %v", out["stderr"], out["exit_code"])
	}
}

func TestMissingDir(t *testing.T) {
	res := run(t, `step("a", run = ["true"], dir = "nowhere")`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", msg: "nowhere"})
}

func TestOutputTruncated(t *testing.T) {
	res := run(t, `step("a", run = ["sh", "-c", "seq 1 20000"])`, nil, vm.Options{MaxOutput: 100})
	check(t, res, want{status: vm.Succeeded})
	rec := res.Step("a")
	out := goValue(t, rec.Output).(map[string]any)["stdout"].(string)
	if !rec.Truncated || len(out) != 100 || !strings.HasSuffix(out, "19999\n20000\n") {
		t.Errorf("truncated=%v len=%d tail=%q", rec.Truncated, len(out), out[max(0, len(out)-20):])
	}
}

func TestRetries(t *testing.T) {
	dir := t.TempDir()
	res := run(t, `
flow(inputs = {"dir": None})
a = step("a", run = ["sh", "-c", 'n=$(cat "$1/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1/n"; test $n -ge 3', "a", "{{ inputs.dir }}"], retries = 3, backoff = "10ms")
`, map[string]any{"dir": dir}, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"a"}})
	if v := res.Step("a").Visits; v != 1 {
		t.Errorf("visits = %d, want 1 (retries are not visits)", v)
	}
	n, _ := os.ReadFile(filepath.Join(dir, "n"))
	if strings.TrimSpace(string(n)) != "3" {
		t.Errorf("attempts = %s, want 3", n)
	}
}

func TestFnPrintGoesToLog(t *testing.T) {
	res := run(t, `
def f(r):
    print("hello from f")
    return 1
step("a", fn = f)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if diff := cmp.Diff([]string{"hello from f"}, res.Step("a").Log); diff != "" {
		t.Error(diff)
	}
}

func TestInputsBinding(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `flow(inputs = {"topic": None, "count": 3})
step("a")`})
	_, err := vm.BindInputs(g, nil)
	if err == nil || !strings.Contains(err.Error(), `needs input "topic"`) {
		t.Errorf("missing input: %v", err)
	}
	_, err = vm.BindInputs(g, map[string]starlark.Value{"topic": starlark.String("x"), "cuont": starlark.MakeInt(1)})
	var ge *graphir.Error
	if err == nil || !errorAs(err, &ge) || ge.Hint != `did you mean "count"?` {
		t.Errorf("unknown input: %v", err)
	}
	m, err := vm.BindInputs(g, map[string]starlark.Value{"topic": starlark.String("x")})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Lookup("count"); c != starlark.MakeInt(3) {
		t.Errorf("default not applied: %v", c)
	}
}

// TestTypedInputs: values given as JSON (a file, a parent flow) must
// already have each input's type and be among its choices; an int is a
// float too.
func TestTypedInputs(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `flow(inputs = {
    "version": input("latest", help = "release tag"),
    "n": input(type = "int"),
    "ratio": input(0.5),
    "env": input("dev", choices = ["dev", "prod"]),
    "xs": [],
    "blob": input(None, type = "any"),
})
step("a")`})
	list := func(vs ...starlark.Value) starlark.Value { return starlark.NewList(vs) }
	cases := []struct {
		name  string
		given map[string]starlark.Value
		err   string // "" for success
		hint  string
	}{
		{"all typed", map[string]starlark.Value{"n": starlark.MakeInt(2), "version": starlark.String("1.10"), "xs": list(starlark.MakeInt(1)), "blob": list()}, "", ""},
		{"missing", map[string]starlark.Value{"n": starlark.MakeInt(2)}, `flow flow needs input "blob"; it declares version (string, default "latest"), n (int, required), ratio (float, default 0.5), env (string, default "dev"), xs (list, default []), blob (any, required)`, "pass it with --input blob=VALUE"},
		{"int for float", map[string]starlark.Value{"n": starlark.MakeInt(2), "blob": starlark.None, "ratio": starlark.MakeInt(1)}, "", ""},
		{"any takes anything", map[string]starlark.Value{"n": starlark.MakeInt(2), "blob": starlark.String("x")}, "", ""},
		{"string for int", map[string]starlark.Value{"blob": starlark.None, "n": starlark.String("2")}, `input "n" must be an int, got a string "2"`, "n (int, required)"},
		{"float for int", map[string]starlark.Value{"blob": starlark.None, "n": starlark.Float(2.5)}, `input "n" must be an int, got a float 2.5`, "n (int, required)"},
		{"int for string", map[string]starlark.Value{"n": starlark.MakeInt(1), "version": starlark.MakeInt(3)}, `input "version" must be a string, got an int 3`, `version (string, default "latest"): release tag`},
		{"bool for int", map[string]starlark.Value{"blob": starlark.None, "n": starlark.True}, `input "n" must be an int, got a bool true`, "n (int, required)"},
		{"not a choice", map[string]starlark.Value{"n": starlark.MakeInt(1), "env": starlark.String("stage")}, `input "env" must be one of "dev", "prod", got "stage"`, `env (string, default "dev", one of "dev", "prod")`},
		{"string for list", map[string]starlark.Value{"n": starlark.MakeInt(1), "xs": starlark.String("[]")}, `input "xs" must be a list, got a string "[]"`, "xs (list, default [])"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := vm.BindInputs(g, tc.given)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if r, _ := m.Lookup("ratio"); r.Type() != "float" {
					t.Errorf("ratio is a %s", r.Type())
				}
				return
			}
			var ge *graphir.Error
			if err == nil || !errorAs(err, &ge) {
				t.Fatalf("got %v, want %s", err, tc.err)
			}
			if ge.Msg != tc.err || ge.Hint != tc.hint || ge.Code != "bad_input" {
				t.Errorf("got %s %q (hint %q), want %q (hint %q)", ge.Code, ge.Msg, ge.Hint, tc.err, tc.hint)
			}
		})
	}
}

// TestChildInputTypes: a parent passes a value of the wrong type to a
// child flow whose path is templated (so the checker cannot see it): the
// step fails naming the input.
func TestChildInputTypes(t *testing.T) {
	g := load(t, map[string]string{
		"flow.star": `flow(inputs = {"which": "child"})
step("c", flow = "{{ inputs.which }}.star", inputs = {"n": "{{ 'x' + 'y' }}"})`,
		"child.star": `flow(inputs = {"n": input(type = "int")})
step("a")`,
	})
	res, err := vm.Run(context.Background(), g, nil, vm.Options{LoadFlow: func(_ context.Context, path, root string) (*graphir.Graph, error) {
		return lang.Load(path, lang.Options{Root: root})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != vm.Failed || !strings.Contains(res.Step("c").Error, `input "n" must be an int, got a string "xy"`) {
		t.Errorf("status %s, error %q", res.Status, res.Step("c").Error)
	}
}

func TestDeterministicPaths(t *testing.T) {
	for _, name := range []string{"fanout_review", "map_items", "triage_router"} {
		g, err := lang.Load("../examples/"+name+".star", lang.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var first []string
		for i := 0; i < 20; i++ {
			res, err := vm.Run(context.Background(), g, nil, vm.Options{Parallel: 1})
			if err != nil || res.Status != vm.Succeeded {
				t.Fatalf("%s: %v %+v", name, err, res.Error)
			}
			if i == 0 {
				first = res.Path
			} else if diff := cmp.Diff(first, res.Path); diff != "" {
				t.Fatalf("%s run %d path differs:\n%s", name, i, diff)
			}
		}
	}
}

func TestExamplesRun(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.star")
	if len(files) < 7 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.star") {
			continue // flow tests: flowtest runs them
		}
		g, err := lang.Load(f, lang.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Examples with model steps replay their cassettes; the others are
		// answered by the offline stub: no key, no server, no network.
		opts := vm.Options{Models: model.Stub{}}
		cassette := filepath.Join("../examples/cassettes", strings.TrimSuffix(filepath.Base(f), ".star")+".json")
		if _, err := os.Stat(cassette); err == nil {
			if opts.Models, err = model.OpenCassette(cassette, true, nil); err != nil {
				t.Fatal(err)
			}
		}
		res, err := vm.Run(context.Background(), g, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		// With nobody to decide, an approval without a timeout parks the
		// run: that is the example working as written.
		if res.Status == vm.Waiting && len(res.Pending) > 0 {
			continue
		}
		if res.Status != vm.Succeeded {
			t.Errorf("%s: %s: %+v", f, res.Status, res.Error)
		}
	}
}

func TestConcurrentRunsShareGraph(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `
flow(inputs = {"n": 0}, output = "m")
w = step("w", fn = lambda r: r.item * 2 + r.inputs.n)
m = map("m", over = "range(50)", body = [w])
`})
	p := vm.Prepare(g)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in, _ := vm.BindInputs(g, map[string]starlark.Value{"n": starlark.MakeInt(i)})
			res := p.Run(context.Background(), in, vm.Options{})
			if res.Status != vm.Succeeded {
				t.Errorf("run %d: %+v", i, res.Error)
				return
			}
			if got := goValue(t, res.Output).([]any)[49]; got != float64(98+i) {
				t.Errorf("run %d: item 49 = %v", i, got)
			}
		}(i)
	}
	wg.Wait()
}

func TestMapStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	res := run(t, `
flow(output = "total")
w = step("w", fn = lambda r: r.item % 7)
m = map("m", over = "range(10000)", body = [w], concurrency = 64)
total = step("total", fn = lambda r: sum_of(r.m))
def sum_of(xs):
    s = 0
    for x in xs:
        s += x
    return s
chain(START, m, total, END)
`, nil, vm.Options{Parallel: 64, EvalSteps: 10_000_000})
	total := 0
	for i := 0; i < 10000; i++ {
		total += i % 7
	}
	check(t, res, want{status: vm.Succeeded, output: float64(total)})
}

func TestLongLoopBoundedRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	res := run(t, `
b = step("b", fn = lambda r: r.loop.index)
l = loop("l", body = [b], until = lambda it: False, max_iterations = 100000)
`, nil, vm.Options{MaxPath: 100})
	check(t, res, want{status: vm.Succeeded})
	if len(res.Path) != 100 || res.PathTotal != 100001 {
		t.Errorf("path kept %d of %d entries, want 100 of 100001", len(res.Path), res.PathTotal)
	}
	if res.Path[99] != "l#100000.b" { // body steps are named after their scope
		t.Errorf("path tail = %v", res.Path[95:])
	}
}

// TestLongBackEdgeLoopMemory runs 100,000 iterations of a back-edge loop and
// checks that what the run keeps does not grow with the iterations.
func TestLongBackEdgeLoopMemory(t *testing.T) {
	skipBigUnderRace(t)
	if testing.Short() {
		t.Skip("stress")
	}
	g := load(t, map[string]string{"flow.star": `
flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: {"text": "x" * 100, "n": r.visits("draft")}, max_visits = 1000000)
critique = step("critique", fn = lambda r: r.draft.n)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var results []*vm.Result
	before := heap()
	for _, n := range []int{1_000, 100_000} {
		in := map[string]starlark.Value{"n": starlark.MakeInt(n)}
		res, err := vm.Run(context.Background(), g, in, vm.Options{Parallel: 1, MaxPath: 1000})
		if err != nil || res.Status != vm.Succeeded {
			t.Fatalf("n=%d: %v %+v", n, err, res.Error)
		}
		results = append(results, res)
	}
	grown := int64(heap()) - int64(before)
	// Two results, each keeping 1,000 path entries and two step records:
	// far below a megabyte. 100,000 iterations of 100-byte outputs would be
	// over 10 MB if anything per iteration were kept.
	if grown > 4<<20 {
		t.Errorf("heap grew by %d bytes over two runs; per-iteration state is being kept", grown)
	}
	if got := goValue(t, results[1].Output); got != 100000.0 {
		t.Errorf("output = %v", got)
	}
	runtime.KeepAlive(results)
}

func errorAs(err error, target **graphir.Error) bool {
	e, ok := err.(*graphir.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestOnAlways(t *testing.T) {
	src := `
flow(inputs = {"code": 0})
work = step("work", run = ["sh", "-c", "exit $1", "work", "{{ inputs.code }}"])
cleanup = step("cleanup", fn = lambda r: "cleaned after exit %d" % r.work.exit_code)
edge(START, work)
edge(work, cleanup, on = "always")
edge(cleanup, END)
`
	for _, code := range []int{0, 3} {
		res := run(t, src, map[string]any{"code": code}, vm.Options{})
		check(t, res, want{status: vm.Succeeded, path: []string{"work", "cleanup"}, output: "cleaned after exit " + strconv.Itoa(code)})
	}
}

// spin defines spin(r), a fn that runs for as long as it is let, to time
// out or to spend a step budget.
const spin = `
def spin(r):
    n = 0
    for i in range(10000000):
        for j in range(10000000):
            n += 1
    return n
`

func TestFnRetriesTimeoutAndBudget(t *testing.T) {
	var retries int
	res := run(t, `step("a", fn = lambda r: fail("always"), retries = 2, backoff = "1ms")`, nil, vm.Options{OnEvent: func(ev *vm.Event) {
		if ev.Type == vm.StepRetrying {
			retries++
		}
	}})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "a", msg: "always"})
	if retries != 2 || res.Step("a").Visits != 1 {
		t.Errorf("retries = %d, visits = %d; want 2 retries in one visit", retries, res.Step("a").Visits)
	}

	res = run(t, spin+`step("a", fn = spin, timeout = "100ms")`, nil, vm.Options{EvalSteps: 1 << 62})
	check(t, res, want{status: vm.Failed, code: "timeout", step: "a", msg: "timed out after 100ms"})

	res = run(t, spin+`step("a", fn = spin)`, nil, vm.Options{EvalSteps: 10_000})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "a", msg: "exceeded its step budget of 10000 steps"})
}

func TestRunTimeoutOption(t *testing.T) {
	res := run(t, `step("a", run = ["sleep", "30"])`, nil, vm.Options{Timeout: 200 * time.Millisecond, KillGrace: 100 * time.Millisecond})
	check(t, res, want{status: vm.Failed, code: "flow_timeout", msg: "timeout of 200ms"})
}

func TestTemplateValuesAsJSON(t *testing.T) {
	res := run(t, `
flow(output = "b")
a = step("a", fn = lambda r: {"xs": [1, "two", None], "ok": True})
b = step("b", run = ["printf", "%s|%s|%s", "{{ a.xs }}", "{{ a.ok }}", "{{ a }}"])
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	out := goValue(t, res.Output).(map[string]any)["stdout"]
	if want := `[1,"two",null]|true|{"xs":[1,"two",null],"ok":true}`; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
}

func TestMapItemVar(t *testing.T) {
	res := run(t, `
flow(output = "m")
w = step("w", fn = lambda r: "%d:%s" % (r.index, r.file))
m = map("m", over = "['a.go', 'b.go']", body = [w], item_var = "file")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{"0:a.go", "1:b.go"}})
}

// TestPredeclaredModules: json, math and re are available to expressions,
// conditions and templates at run time (docs/language.md).
func TestPredeclaredModules(t *testing.T) {
	res := run(t, `
flow(output = "b")
a = step("a", run = ["echo", "version 1.12.3, build 77"])
b = step("b", run = ["printf", "%s|%s|%s", "{{ re.findall('[0-9]+', a.stdout)[1] }}", "{{ json.encode({'n': math.floor(2.7)}) }}", "{{ json.decode('[1, 2]')[1] }}"])
edge(START, a)
edge(a, b, when = "re.search('build [0-9]+', a.stdout) != None and math.sqrt(16) == 4.0")
edge(b, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"a", "b"}})
	if got := goValue(t, res.Output).(map[string]any)["stdout"]; got != `12|{"n":2}|2` {
		t.Errorf("stdout = %q", got)
	}
}

// Steps cancelled inside loop and map bodies end their visits like
// top-level ones: each item's task gets its own step_finished (only the
// first item's did, the record being shared by the items), the loops and
// maps still under way are cancelled with their durations and events
// (they had neither), a step waiting out a retry's backoff is cancelled
// too, and cancelling a judged loop during its judge's call does not
// panic (the call's frame is the body's, not the loop's).
func TestCancelledInsideBodies(t *testing.T) {
	hold := producerFunc(func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		if q.Step == "flaky" {
			done(&vm.EffectCompletion{Code: "step_failed", Error: "exit status 1", ExitCode: 1})
			return
		}
		go func() {
			<-ctx.Done()
			done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		}()
	})
	g := load(t, map[string]string{"flow.star": `
a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: r.a + 1)
draft = step("draft", fn = lambda r: "draft")
polish = loop("polish", body = [draft], until = judge("the draft is perfect"), max_iterations = 3)
t = step("t", run = ["/nonexistent/t", "{{ item }}"])
inner = loop("inner", body = [t], until = lambda it: True, max_iterations = 2)
m = map("m", over = "[0, 1, 2]", body = [inner], concurrency = 3)
flaky = step("flaky", run = ["/nonexistent/flaky"], retries = 3, backoff = "1h")
edge(START, a)
edge(a, b)
edge(b, polish)
edge(polish, END)
edge(START, m)
edge(m, END)
edge(START, flaky)
edge(flaky, END)
`})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var finished []string
	durations := map[string]time.Duration{}
	waiting := map[string]bool{}
	res, err := vm.Run(ctx, g, nil, vm.Options{Parallel: 8, Effects: hold, Env: []string{"SKEIN_MODEL=m9"}, OnEvent: func(ev *vm.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case vm.StepStarted:
			if ev.Step == "t" {
				waiting[strings.Join(ev.Scope, ">")] = true
			}
		case vm.StepRetrying:
			waiting["flaky"] = true
		case vm.LoopIteration:
			t.Errorf("loop %q decided an iteration", ev.Step)
		case vm.StepFinished:
			if ev.Status == "cancelled" {
				finished = append(finished, strings.Join(append(ev.Scope, ev.Step), ">"))
				durations[ev.Step] = ev.Duration
			}
			if ev.Step == "draft" {
				waiting["judge"] = true
			}
		}
		if len(waiting) == 5 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	sort.Strings(finished)
	wantFinished := []string{"flaky", "m", "m[0]>inner", "m[0]>inner#1>t", "m[1]>inner", "m[1]>inner#1>t", "m[2]>inner", "m[2]>inner#1>t", "polish"}
	if diff := cmp.Diff(wantFinished, finished); diff != "" {
		t.Errorf("cancelled steps with a step_finished event (-want +got):\n%s", diff)
	}
	for _, name := range []string{"polish", "m", "inner", "t", "flaky"} {
		rec := res.Step(name)
		if rec.Status != vm.StepCancelled || rec.Code != "cancelled" || rec.Error != "cancelled" || rec.Duration <= 0 || durations[name] <= 0 {
			t.Errorf("record of %q: status %s code %q error %q duration %s (event %s); want cancelled, cancelled, cancelled, more than 0",
				name, rec.Status, rec.Code, rec.Error, rec.Duration, durations[name])
		}
	}
}

// A runtime error raised while a step is under way (its template, its
// until, its list, its retry_when) fails that step: its record and its
// step_finished event say failed with the error's code, and the loops and
// maps around it end cancelled. The step used to be left "cancelled" with
// no error, and to get no step_finished event.
func TestRuntimeErrorFailsItsStep(t *testing.T) {
	for _, tc := range []struct {
		name, src  string
		step, code string
		error      string // the step record's error
		cancelled  []string
	}{
		{"template", `
a = step("a", fn = lambda r: {"x": 1})
b = step("b", run = ["/nonexistent/echo", "{{ a.y }}"])
chain(START, a, b, END)
`, "b", "expr_error", "template {{ a.y }}: dict has no .y field or method", nil},
		{"until", `
t = step("t", fn = lambda r: {"a": 1})
l = loop("l", body = [t], until = lambda it: it.output["missing"], max_iterations = 3)
chain(START, l, END)
`, "l", "until_error", `until: key "missing" not in dict`, nil},
		{"over", `
m = map("m", over = "'abc'", body = [step("t")])
chain(START, m, END)
`, "m", "expr_error", `over "'abc'" must give a list, got string "abc"`, nil},
		{"over dict", `
f = step("f", fn = lambda r: {"k": 2})
m = map("m", over = "f", body = [step("t")])
chain(START, f, m, END)
`, "m", "expr_error", `over "f" must give a list, got dict {"k": 2}`, nil},
		{"body", `
t = step("t", fn = lambda r: r.item + 1)
u = step("u", fn = lambda r: fail("no") if r.t else 0, retries = 1, backoff = "1h", retry_when = "u.nope")
l = loop("l", body = [u], until = lambda it: True, max_iterations = 2)
m = map("m", over = "[1]", body = [t, l])
chain(START, m, END)
`, "u", "expr_error", `retry_when "u.nope": dict has no .nope field or method`, []string{"l", "m"}},
		{"unmet", `
a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: r.a)
c = step("c", fn = lambda r: r.b)
edge(START, a)
edge(a, b, when = "False")
edge(a, c)
edge(b, END)
edge(c, END)
`, "c", "dependency_unmet", `step "c" reads "b", which has not completed on the path taken`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			finished := map[string]vm.Event{}
			res := run(t, tc.src, nil, vm.Options{OnEvent: func(ev *vm.Event) {
				mu.Lock()
				defer mu.Unlock()
				if ev.Type == vm.StepFinished {
					finished[ev.Step] = *ev
				}
			}})
			check(t, res, want{status: vm.Failed, code: tc.code, step: tc.step})
			rec := res.Step(tc.step)
			if rec.Status != vm.StepFailed || string(rec.Code) != tc.code || rec.Error != tc.error {
				t.Errorf("record of %q: status %s code %q error %q; want failed, %q, %q", tc.step, rec.Status, rec.Code, rec.Error, tc.code, tc.error)
			}
			if ev := finished[tc.step]; ev.Status != "failed" || string(ev.Code) != tc.code || ev.Error != tc.error {
				t.Errorf("step_finished of %q: status %q code %q error %q", tc.step, ev.Status, ev.Code, ev.Error)
			}
			for _, name := range tc.cancelled {
				rec := res.Step(name)
				if ev := finished[name]; rec.Status != vm.StepCancelled || rec.Code != "cancelled" || ev.Status != "cancelled" || rec.Duration <= 0 {
					t.Errorf("%q: record %s %q duration %s, event %q; want cancelled", name, rec.Status, rec.Code, rec.Duration, ev.Status)
				}
			}
		})
	}
}

// A task that cannot start says why in the user's terms: which directory
// or file is missing (relative to the task's directory, where the kernel
// looks), or what is wrong with the file, never Go's "fork/exec PATH:" or
// "stat DIR:" (a missing dir= said "directory d: stat d: no such file or
// directory", a dir= naming a file "fork/exec /usr/bin/pwd: not a
// directory").
func TestTaskStartFailures(t *testing.T) {
	for _, tc := range []struct{ name, step, want string }{
		{"missing dir", `step("a", run = ["pwd"], dir = "nope")`, `cannot start "pwd": directory DIR/nope does not exist`},
		{"dir is a file", `step("a", run = ["pwd"], dir = "flow.star")`, `cannot start "pwd": dir DIR/flow.star is a file, not a directory`},
		{"missing file", `step("a", run = ["./nope.sh"])`, `cannot start "./nope.sh": DIR/nope.sh does not exist`},
		{"not found", `step("a", run = ["skein-no-such-command"])`, `cannot start "skein-no-such-command": executable file not found in $PATH`},
		{"not executable", `step("a", run = ["./script.sh"])`, `cannot start "./script.sh": permission denied (it must be an executable file: chmod +x it, or run it with its interpreter)`},
		{"no #! line", `
setup = step("setup", shell = "cp script.sh bare.sh; chmod +x bare.sh")
a = step("a", run = ["./bare.sh"])
chain(START, setup, a, END)`, `cannot start "./bare.sh": exec format error (not a program this machine runs: a script run directly needs a #! line)`},
		{"NUL in argv", `step("a", run = ["printf", "%s", "{{ 'a' + json.decode('\"\\u0000\"') }}"])`,
			`cannot start "printf": argument 2 contains a NUL byte, which no process argument, environment variable or path can hold`},
		{"NUL in env", `step("a", run = ["true"], env = {"V": "{{ json.decode('\"\\u0000\"') }}"})`,
			`cannot start "true": environment variable V contains a NUL byte, which no process argument, environment variable or path can hold`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := load(t, map[string]string{"flow.star": tc.step, "script.sh": "echo hi\n"})
			res, err := vm.Run(context.Background(), g, nil, vm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "DIR", filepath.Dir(g.File))
			if rec := res.Step("a"); rec.Status != vm.StepFailed || rec.Error != want {
				t.Errorf("a: %s %q\nwant failed %q", rec.Status, rec.Error, want)
			}
		})
	}
}

// When a map item ends (another item failed), nothing inside it starts
// again, not even in a loop nested in it: an attempt that failed just as
// its item was cancelled is not retried. (Only the item's own frame was
// marked ended, so the loop body inside it went on retrying.)
func TestNothingStartsInAnEndedItem(t *testing.T) {
	var mu sync.Mutex
	var starts []string
	p := producerFunc(func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		mu.Lock()
		starts = append(starts, effectKey(q))
		mu.Unlock()
		switch {
		case q.Step == "after":
			// Keep the run going long enough for a retry to start.
			go func() {
				select {
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
				}
				done(&vm.EffectCompletion{OK: true})
			}()
		case q.Scope[0] == "m[0]":
			done(&vm.EffectCompletion{Code: "step_failed", Error: "exit status 1", ExitCode: 1})
		default:
			// Item 1's task exits 1 at the moment its item is cancelled.
			go func() {
				<-ctx.Done()
				done(&vm.EffectCompletion{Code: "step_failed", Error: "exit status 1", ExitCode: 1})
			}()
		}
	})
	res := run(t, `
t = step("t", run = ["/nonexistent/t", "{{ item }}"], retries = 1, backoff = "1ms")
inner = loop("inner", body = [t], until = lambda it: True, max_iterations = 2)
m = map("m", over = "[0, 1]", body = [inner], concurrency = 2)
after = step("after", run = ["/nonexistent/after"])
edge(START, m)
edge(m, END)
edge(m, after, on = "failure")
edge(after, END)
`, nil, vm.Options{Effects: p, Parallel: 4})
	check(t, res, want{status: vm.Succeeded})
	want := []string{"/m[0]>inner#1/t#1.1", "/m[0]>inner#1/t#1.2", "/m[1]>inner#1/t#1.1", "//after#1.1"}
	sort.Strings(starts)
	sort.Strings(want)
	if diff := cmp.Diff(want, starts); diff != "" {
		t.Errorf("effects started (-want +got):\n%s", diff)
	}
}

// step_retrying says how long the run waits before the attempt: the
// backoff, doubled after each failure.
func TestRetryEventBackoff(t *testing.T) {
	var waits []time.Duration
	run(t, `step("a", run = ["false"], retries = 2, backoff = "1ms")`, nil, vm.Options{OnEvent: func(ev *vm.Event) {
		if ev.Type == vm.StepRetrying {
			waits = append(waits, ev.Duration)
		}
	}})
	if diff := cmp.Diff([]time.Duration{time.Millisecond, 2 * time.Millisecond}, waits); diff != "" {
		t.Errorf("step_retrying backoffs (-want +got):\n%s", diff)
	}
}

// step_retrying names the visit of the step it retries, as the step's
// step_started does: a task's, a fn step's, on a visit after the first.
func TestRetryEventVisit(t *testing.T) {
	var got []string
	run(t, `
a = step("a", run = ["false"], retries = 1, backoff = "1ms", max_visits = 2)
f = step("f", fn = lambda r: 1 // 0, retries = 1, backoff = "1ms", max_visits = 2)
edge(START, a)
edge(a, f, on = "failure")
edge(f, a, on = "failure", when = "visits('a') < 2")
edge(f, END, on = "failure", when = "visits('a') == 2")
`, nil, vm.Options{OnEvent: func(ev *vm.Event) {
		if ev.Type == vm.StepRetrying {
			got = append(got, fmt.Sprintf("%s visit %d attempt %d", ev.Step, ev.Visit, ev.Attempt))
		}
	}})
	want := []string{"a visit 1 attempt 2", "f visit 1 attempt 2", "a visit 2 attempt 2", "f visit 2 attempt 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("step_retrying events (-want +got):\n%s", diff)
	}
}

// TestOutputReadsSkippedStep: a flow output that reads a step the path
// never reached fails the run with dependency_unmet (it panicked: the
// error had no step to put in its record).
func TestOutputReadsSkippedStep(t *testing.T) {
	res := run(t, `
flow(output = "b")
a = step("a", run = ["false"])
b = step("b", fn = lambda r: 1)
c = step("c", fn = lambda r: 2)
chain(START, a, b, END)
edge(a, c, on = "failure")
edge(c, END)
`, nil, vm.Options{})
	if res.Status != vm.Failed || res.Error == nil || res.Error.Code != "dependency_unmet" {
		t.Fatalf("status %s, error %v; want failed with dependency_unmet", res.Status, res.Error)
	}
}
