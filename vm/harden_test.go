package vm_test

// Tests of hostile flows (issue 9): evaluations that never return on their
// own, cancellation during loops of fn steps.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// stuck is a builtin that stands for one long builtin call (str of a list
// nested a million deep): it returns only when released, then reports what
// reading the run view gave it.
type stuck struct {
	release chan struct{}
	after   chan error
	entered chan struct{}
	once    sync.Once
}

func newStuck() *stuck {
	return &stuck{release: make(chan struct{}), after: make(chan error, 1), entered: make(chan struct{})}
}

func (s *stuck) fn() *starlark.Builtin {
	return starlark.NewBuiltin("stuck", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		s.once.Do(func() { close(s.entered) })
		<-s.release
		_, err := args[0].(starlark.HasAttrs).Attr("inputs")
		s.after <- err
		return starlark.None, nil
	})
}

// finish releases the stuck call and checks that, abandoned, it could no
// longer read the run.
func (s *stuck) finish(t *testing.T) {
	t.Helper()
	close(s.release)
	if err := <-s.after; err == nil {
		t.Error("an abandoned evaluation read the run view")
	}
}

// runStuck runs g with the given context and options, failing the test if
// Run does not return: the hang that abandoning evaluations, or killing
// timed-out tasks, prevents. The deadline only detects a hang; nothing
// here measures speed.
func runStuck(t *testing.T, ctx context.Context, g *graphir.Graph, opts vm.Options, inputs ...map[string]starlark.Value) *vm.Result {
	t.Helper()
	done := make(chan *vm.Result, 1)
	var in map[string]starlark.Value
	if len(inputs) > 0 {
		in = inputs[0]
	}
	go func() {
		res, err := vm.Run(ctx, g, in, opts)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		return res
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60s: an evaluation or a task was not stopped")
		return nil
	}
}

func TestStuckFnHonoursTimeout(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `
flow(output = "b")
a = step("a", fn = lambda r: 1, timeout = "100ms")
b = step("b", fn = lambda r: r.a.error)
edge(START, a)
edge(a, b, on = "failure")
edge(b, END)
`})
	s := newStuck()
	g.Node("a").Fn = s.fn()
	res := runStuck(t, context.Background(), g, vm.Options{})
	// The run went on after the timeout, on a fresh evaluator.
	check(t, res, want{status: vm.Succeeded, output: "timed out after 100ms"})
	if rec := res.Step("a"); rec.Code != "timeout" {
		t.Errorf("a: code %q, want timeout", rec.Code)
	}
	s.finish(t)
}

func TestStuckEvaluationCancelled(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		stick     func(g *graphir.Graph, fn starlark.Callable)
	}{
		{"fn", `step("a", fn = lambda r: 1)`, func(g *graphir.Graph, fn starlark.Callable) { g.Node("a").Fn = fn }},
		{"template", `step("a", run = ["echo", "{{ inputs }}"])`, func(g *graphir.Graph, fn starlark.Callable) {
			g.Node("a").Argv[1].Parts[0].X.Func = fn
		}},
		{"condition", "a = step(\"a\")\nedge(START, a)\nedge(a, END, when = \"inputs\")", func(g *graphir.Graph, fn starlark.Callable) {
			g.Edges[g.Node("a").Out[0]].When.Func = fn
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := load(t, map[string]string{"flow.star": tc.src})
			s := newStuck()
			tc.stick(g, s.fn())
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-s.entered; cancel() }()
			res := runStuck(t, ctx, g, vm.Options{})
			check(t, res, want{status: vm.Cancelled, code: "cancelled"})
			s.finish(t)
		})
	}
}

func TestStuckFnFlowTimeout(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `step("a", fn = lambda r: 1)`})
	s := newStuck()
	g.Node("a").Fn = s.fn()
	res := runStuck(t, context.Background(), g, vm.Options{Timeout: 100 * time.Millisecond})
	check(t, res, want{status: vm.Failed, code: "flow_timeout"})
	s.finish(t)
}

// printingWork defines work, a fn step body that prints, then computes.
const printingWork = `
def work(r):
    print("working")
    n = 0
    for i in range(100):
        n += i
    return n
`

// Cancelling a loop of fn steps, or a back-edge loop of them, is a
// cancellation, not a pruned path (no_route). The signal lands while a fn
// step runs (here: when it prints), so that step never finishes.
func TestCancelFnLoops(t *testing.T) {
	for name, src := range map[string]string{
		"loop": printingWork + `
b = step("b", fn = work)
c = step("c", fn = work)
edge(b, c)
l = loop("l", body = [b, c], until = lambda it: False, max_iterations = 2000000000)
chain(START, l, END)
`,
		"back-edge": printingWork + `
a = step("a", fn = work, max_visits = 2000000000)
b = step("b", fn = work)
chain(START, a, b)
edge(b, a, when = "True")
edge(b, END, when = "False")
`,
	} {
		t.Run(name, func(t *testing.T) {
			g := load(t, map[string]string{"flow.star": src})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var started atomic.Int64
			res := runStuck(t, ctx, g, vm.Options{OnEvent: func(ev *vm.Event) {
				if ev.Type == vm.StepLog && started.Add(1) == 1000 {
					cancel()
					// Give a context.AfterFunc time to reach the thread.
					time.Sleep(20 * time.Millisecond)
				}
			}})
			check(t, res, want{status: vm.Cancelled, code: "cancelled"})
		})
	}
}

// A templated child flow that is a symbolic link out of the flow root is
// refused like any path outside it (issue 9).
func TestSubflowTemplatedSymlinkRefused(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "evil.star"), []byte(`step("evil", run = ["true"])`), 0o644); err != nil {
		t.Fatal(err)
	}
	g := load(t, map[string]string{"flow.star": templatedChild})
	dir := filepath.Dir(g.File)
	if err := os.Symlink(filepath.Join(outside, "evil.star"), filepath.Join(dir, "link.star")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	for _, which := range []string{"link.star", "sub/evil.star"} {
		res, err := vm.Run(context.Background(), g, map[string]starlark.Value{"which": starlark.String(which)}, vm.Options{Parallel: 1,
			LoadFlow: func(_ context.Context, path, root string) (*graphir.Graph, error) {
				return lang.Load(path, lang.Options{Root: root})
			}})
		if err != nil {
			t.Fatal(err)
		}
		check(t, res, want{status: vm.Succeeded, path: []string{"child", "refused"}})
		if got := goValue(t, res.Output).(string); !strings.Contains(got, "outside the flow root") {
			t.Errorf("flow=%q: error %q", which, got)
		}
	}
}

// A cancelled task keeps the output it produced, in its record and its
// final event, as a timed-out one does (issue 9).
func TestCancelledTaskKeepsOutput(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	g := load(t, map[string]string{"flow.star": `
flow(inputs = {"marker": None})
step("a", run = ["sh", "-c", "echo partial; echo err >&2; : > \"$0\"; sleep 30", "{{ inputs.marker }}"])
`})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var mu sync.Mutex
	var final *vm.Event
	res := runStuck(t, ctx, g, vm.Options{KillGrace: 100 * time.Millisecond, OnEvent: func(ev *vm.Event) {
		if ev.Type == vm.StepFinished && ev.Step == "a" {
			mu.Lock()
			c := *ev
			final = &c
			mu.Unlock()
		}
	}}, map[string]starlark.Value{"marker": starlark.String(marker)})
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	rec := res.Step("a")
	if rec.Status != vm.StepCancelled {
		t.Errorf("a is %s, want cancelled", rec.Status)
	}
	out, _ := rec.Output.(*stdlib.Map)
	if out == nil {
		t.Fatalf("a's output is %v, want its task fields", rec.Output)
	}
	if v, _ := out.Lookup("stdout"); v != starlark.String("partial\n") {
		t.Errorf("stdout %v, want \"partial\\n\"", v)
	}
	if v, _ := out.Lookup("stderr"); v != starlark.String("err\n") {
		t.Errorf("stderr %v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if final == nil || final.Status != "cancelled" || final.Output == nil {
		t.Errorf("final event of a: %+v", final)
	}
}

// Runtime evaluations are under a heap bound like loading: a value growing
// without bound in a fn step, a template or a condition is a clear error,
// not an out-of-memory crash (issue 9). The bound is set low here.
func TestRuntimeMemoryBound(t *testing.T) {
	grow := `[("a" * 1000000) + str(i) for i in range(5000)]`
	for _, tc := range []struct {
		name, src, code string
	}{
		{"fn", `
def grow(r):
    x = "ab" * 1000000
    for i in range(40):
        x = x + x
    return len(x)
step("a", fn = grow)
`, "step_failed"},
		{"template", `step("a", run = ["echo", "{{ len(` + strings.ReplaceAll(grow, `"`, `'`) + `) }}"])`, "expr_error"},
		{"condition", "a = step(\"a\")\nedge(START, a)\nedge(a, END, when = \"len(" + strings.ReplaceAll(grow, `"`, `'`) + ") > 0\")", "expr_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.src, nil, vm.Options{MaxMemory: 16 << 20})
			check(t, res, want{status: vm.Failed, code: tc.code, msg: "runtime memory limit of 16 MiB exceeded"})
		})
	}
	// Within the bound, the same run is fine afterwards.
	res := run(t, `step("a", fn = lambda r: len("ab" * 1000))`, nil, vm.Options{MaxMemory: 16 << 20})
	check(t, res, want{status: vm.Succeeded, output: 2000.0})
}

// One operation that would make a huge value fails at run time before it
// allocates, as at load time: a fn step fails, a template or a condition
// is an expr_error, with the operation's position (issue 9).
func TestRuntimeHugeValue(t *testing.T) {
	skipBigUnderRace(t)
	fn := func(body string) string {
		return "def f(r):\n    s = 'x' * 1000000\n    return " + body + "\nstep(\"a\", fn = f)\n"
	}
	for _, tc := range []struct {
		name, src, code, msg string
	}{
		{"fn", fn("len('a' * 999999999)"), "step_failed", "flow.star:3:20: repeating a 1-byte string 999999999 times would make 953.7 MiB; one value may take at most 64 MiB"},
		{"fn list", fn("len([0] * 1000000000)"), "step_failed", "flow.star:3:20: repeating a 1-element list 1000000000 times"},
		{"fn join", fn("len(''.join([s] * 100))"), "step_failed", "join: joining 68 or more strings"},
		{"fn replace", fn("len(s.replace('x', 'yy' * 50))"), "step_failed", "replace: replacing 1000000 matches"},
		{"fn re.sub", fn("len(re.sub('x', 'y' * 100, s))"), "step_failed", "re.sub: replacing 1000000 matches"},
		{"fn str", fn("len(str([s] * 100))"), "step_failed", "str: the text of its arguments"},
		{"fn output", fn("[[s] * 10] * 10"), "output_too_large", "its result is too large: writing out this list would make more than 64 MiB, the most one value may take"},
		{"template", `step("a", run = ["echo", "{{ 'a' * 999999999 }}"])`, "expr_error", "flow.star:1:34: repeating a 1-byte string 999999999 times"},
		{"template shift", `step("a", run = ["echo", "{{ len('x' * (1 << 29)) }}"])`, "expr_error", "1-byte string 536870912 times"},
		{"template value", `step("a", run = ["echo", "{{ ['x' * 1000000] * 100 }}"])`, "expr_error", "writing out this list would make"},
		{"template join", `step("a", run = ["echo", "{{ ','.join(['x' * 1000000] * 100) }}"])`, "expr_error", "join: joining"},
		{"template list of range", `step("a", run = ["echo", "{{ len(list(range(2000000000))) }}"])`, "expr_error", "list: making 2000000000 elements of 16 bytes would make 29.8 GiB"},
		{"fn enumerate", fn("len(enumerate((s * 2).elems()))"), "step_failed", "enumerate: making 6000000 elements"},
		{"fn output shared", fn("[[{}] * 2000] * 4000"), "output_too_large", "its result is too large: copying this list as flow data would make more than 64 MiB, the most one value may take"},
		{"fn json.decode", fn("len(json.decode('[' + '{},' * 200000 + '{}]'))"), "step_failed", "flow.star:3:27: json.decode: decoding this JSON would make about 101.0 MiB (past the bound at byte 381302); one value may take at most 64 MiB"},
		{"json.decode of a task's output", "t = step(\"t\", shell = \"printf '['; yes '{},' | head -n 300000 | tr -d '\\\\n'; printf '{}]'\")\nd = step(\"d\", fn = lambda r: len(json.decode(r.t.stdout)))\nchain(START, t, d, END)", "step_failed", "flow.star:2:45: json.decode: decoding this JSON would make about 151.6 MiB"},
		{"template json.decode", `step("a", run = ["echo", "{{ json.decode('[' + '{},' * 200000 + '{}]') }}"])`, "expr_error", "json.decode: decoding this JSON would make about 101.0 MiB"},
		{"condition", "a = step(\"a\", fn = lambda r: 1)\nedge(START, a)\nedge(a, END, when = \"len([0] * 1000000000) > 0\")", "expr_error", "flow.star:3:30: repeating a 1-element list 1000000000 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.src, nil, vm.Options{})
			check(t, res, want{status: vm.Failed, code: tc.code, msg: tc.msg})
		})
	}
}
