package vm_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm"
)

// baseNames replaces the temporary directory in positions with nothing, so
// "/tmp/x/flow.star:3:5" reads "flow.star:3:5".
var tmpDir = regexp.MustCompile(`/[^ :"]*/`)

func baseNames(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = tmpDir.ReplaceAllString(s, "")
	}
	return out
}

// A runtime error inside Starlark says where it happened and how it got
// there, in the step's record and in the run's error (docs/language.md).
func TestRuntimePositions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		code  string
		msg   string   // the run error's message, directory removed
		trace []string // the run error's trace
		step  string   // a step whose record carries the trace too
	}{{
		name: "fn step calling a helper",
		src: `def lookup(d):
    return d["missing_key"]

def compute(r):
    return lookup({"a": 1})

step("a", fn = compute)
`,
		code:  "step_failed",
		msg:   `step "a" failed: flow.star:2:13: key "missing_key" not in dict`,
		trace: []string{"flow.star:2:13: in lookup", "flow.star:5:18: in compute"},
		step:  "a",
	}, {
		name: "condition written as a string",
		src: `a = step("a", fn = lambda r: {"x": 1})
edge(START, a)
edge(a, END, when = "a.x == 1 and a['nope'] == 2")
`,
		code:  "expr_error",
		msg:   `flow.star:3:36: key "nope" not in dict`,
		trace: []string{`flow.star:3:36: in expression "a.x == 1 and a['nope'] == 2"`},
	}, {
		name: "template hole",
		src: `a = step("a", fn = lambda r: 1)
b = step("b", run = ["echo", "{{ a + 'x' }}"])
chain(START, a, b, END)
`,
		code:  "expr_error",
		msg:   `template {{ a + 'x' }}: flow.star:2:36: unknown binary op: int + string`,
		trace: []string{`flow.star:2:36: in expression "a + 'x'"`},
	}, {
		name: "until function",
		src: `def done(it):
    return it.output["missing"]

b = step("b", fn = lambda r: {})
loop("l", body = [b], until = done, max_iterations = 3)
`,
		code:  "until_error",
		msg:   `loop "l": until: flow.star:2:21: key "missing" not in dict`,
		trace: []string{"flow.star:2:21: in done"},
	}, {
		name: "condition as a function",
		src: `def ok(r):
    return r.a.nope

a = step("a", fn = lambda r: {"x": 1})
edge(START, a)
edge(a, END, when = ok)
`,
		code:  "expr_error",
		msg:   `flow.star:2:15: `,
		trace: []string{"flow.star:2:15: in ok"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.src, nil, vm.Options{})
			if res.Status != vm.Failed || res.Error == nil || string(res.Error.Code) != tc.code {
				t.Fatalf("status %s, error %+v; want failed with %s", res.Status, res.Error, tc.code)
			}
			if got := baseNames([]string{res.Error.Msg})[0]; !strings.Contains(got, tc.msg) {
				t.Errorf("message %q does not contain %q", got, tc.msg)
			}
			if diff := cmp.Diff(tc.trace, baseNames(res.Error.Trace)); diff != "" {
				t.Errorf("run error trace (-want +got):\n%s", diff)
			}
			if tc.step != "" {
				if diff := cmp.Diff(tc.trace, baseNames(res.Step(tc.step).Trace)); diff != "" {
					t.Errorf("step trace (-want +got):\n%s", diff)
				}
			}
			b, err := res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"trace":["`) {
				t.Errorf("--json has no trace: %s", b)
			}
		})
	}
}

// A failure routed through other steps to ABORT is named as the run
// error's cause.
func TestAbortCause(t *testing.T) {
	res := run(t, `test = step("test", shell = "echo 'expected 3, got 4' >&2; exit 1")
notify = step("notify", fn = lambda r: "told")
ok = step("ok")
edge(START, test)
edge(test, ok)
edge(test, notify, on = "failure")
edge(notify, ABORT)
edge(ok, END)
`, nil, vm.Options{})
	if res.Error == nil || res.Error.Code != "aborted" || res.Error.Step != "notify" {
		t.Fatalf("error %+v", res.Error)
	}
	c := res.Error.Cause
	if c == nil || c.Step != "test" || c.Code != "step_failed" || c.Msg != "exit status 1" {
		t.Fatalf("cause %+v", c)
	}
	b, _ := res.MarshalJSON()
	if !strings.Contains(string(b), `"cause":{"code":"step_failed","step":"test","message":"exit status 1"}`) {
		t.Errorf("--json: %s", b)
	}

	// A failure that was handled by running the step again successfully is
	// not the cause of a later ABORT.
	res = run(t, `build = step("build", fn = lambda r: 1 // (r.visits("build") - 1), max_visits = 2)
fix = step("fix")
judge = step("judge")
edge(START, build)
edge(build, fix, on = "failure")
edge(fix, build)
edge(build, judge)
edge(judge, ABORT)
`, nil, vm.Options{})
	if res.Error == nil || res.Error.Code != "aborted" || res.Error.Cause != nil {
		t.Fatalf("error %+v cause %+v", res.Error, res.Error.Cause)
	}
	_ = filepath.Base
}

// Path entries of body steps name their scope: the map item or loop
// iteration they ran in.
func TestPathScopes(t *testing.T) {
	res := run(t, `
count = step("count", fn = lambda r: r.item)
per_file = map("per_file", over = "[1, 2]", body = [count])
draft = step("draft")
polish = loop("polish", body = [draft], until = lambda it: it.iteration == 2, max_iterations = 5)
chain(START, per_file, polish, END)
`, nil, vm.Options{})
	want := []string{"per_file", "per_file[0].count", "per_file[1].count", "polish", "polish#1.draft", "polish#2.draft"}
	if diff := cmp.Diff(want, res.Path); diff != "" {
		t.Errorf("path (-want +got):\n%s", diff)
	}
}

// TestValueTypeErrorsSayWhere: a map whose over= gives no list and a
// router whose by= gives no string label fail naming where the expression
// is written, as a condition that gives no bool does.
func TestValueTypeErrorsSayWhere(t *testing.T) {
	res := run(t, `a = step("a", fn = lambda r: 3)
s = step("s")
m = map("m", over = "a", body = [s])
edge(START, a)
edge(a, m)
edge(m, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "expr_error", step: "m", msg: `/flow.star:3:22: over "a" must give a list, got int 3`})
	res = run(t, `a = step("a", fn = lambda r: 3)
pick = router("pick", by = "a", routes = {"x": END}, default = END)
edge(START, a)
edge(a, pick)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "expr_error", step: "pick", msg: `/flow.star:2:29: by "a" must give a string label, got int 3`})
	// A function has no one place to name.
	res = run(t, `a = step("a", fn = lambda r: 3)
s = step("s")
m = map("m", over = lambda r: r.a, body = [s])
edge(START, a)
edge(a, m)
edge(m, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "expr_error", step: "m", msg: `map "m": over <function lambda> must give a list, got int 3`})
}
