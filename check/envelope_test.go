package check_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	codetable "github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
)

// worstCase is an effect producer that makes a run spend as much as it
// can: every task and shell attempt fails (so every retry is taken and
// every failure edge followed), every model reply is as long as its
// max_tokens allows (DefaultMaxTokens without one), every approval is
// granted, and child flows run under the same rules. It counts what the
// run spent.
type worstCase struct {
	mu                                  sync.Mutex
	models, tokens, procs, tools, asked float64
}

func (w *worstCase) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if req.Tool != "" && req.Kind != graphir.KindApproval {
		w.tools++
	}
	switch {
	case req.Chat != nil:
		w.models++
		go func() {
			c := req.CallModel(ctx) // the stub model answers
			max := req.Chat.MaxTokens
			if max == 0 {
				max = check.DefaultMaxTokens
			}
			c.Usage.CompletionTokens = max
			w.mu.Lock()
			w.tokens += float64(max)
			w.mu.Unlock()
			done(c)
		}()
	case req.Kind == graphir.KindTask || req.Kind == graphir.KindShell:
		w.procs++
		done(&vm.EffectCompletion{ExitCode: 1, Code: codetable.StepFailed, Error: "failed on purpose"})
	case req.Kind == graphir.KindSubflow:
		go func() { done(req.RunChild(ctx)) }()
	case req.Kind == graphir.KindApproval:
		w.asked++
		done(&vm.EffectCompletion{OK: true, Output: starlark.True})
	default:
		done(&vm.EffectCompletion{OK: true, Output: starlark.None})
	}
}

// TestEnvelopeBoundsWorstCase runs flows of every shape against a
// producer that spends all it can, and checks that the envelope is never
// below what the run spent. It logs by how much it is above.
func TestEnvelopeBoundsWorstCase(t *testing.T) {
	const stub = `model("m", provider = "stub", max_tokens = 100)
`
	tests := []struct {
		name  string
		files map[string]string
		input map[string]starlark.Value
	}{
		{"retried task", map[string]string{"flow.star": `
build = step("build", run = ["make"], retries = 4, backoff = "1ms")
chain(START, build, END)
`}, nil},
		{"back-edge with an llm fix", map[string]string{"flow.star": stub + `
build = step("build", run = ["make"], retries = 1, backoff = "1ms", max_visits = 3)
fix = step("fix", llm = "fix {{ build.stderr }}", model = "m")
edge(build, END)
edge(build, fix, on = "failure")
edge(fix, build)
edge(START, build)
`}, nil},
		{"nested loops", map[string]string{"flow.star": stub + `
t = step("t", run = ["true"])
w = step("w", llm = "write", model = "m", retries = 0)
step_out = step("step_out", fn = lambda r: 1)
inner = loop("inner", body = [t, step_out], until = lambda it: False, max_iterations = 3)
outer = loop("outer", body = [inner, w], until = lambda it: False, max_iterations = 4)
edge(t, step_out, on = "failure")
chain(START, outer, END)
`}, nil},
		{"retries on a child flow", map[string]string{
			"flow.star": `
c = step("c", flow = "child.star", retries = 2, backoff = "1ms")
chain(START, c, END)
`,
			"child.star": stub + `
a = step("a", run = ["true"], retries = 1, backoff = "1ms")
b = step("b", llm = "hi", model = "m")
chain(START, b, a, END)
`}, nil},
		{"agent with grants", map[string]string{"flow.star": stub + `
look = tool("look", run = ["ls"])
flow(tools = [look], max_grants = 1)
a = step("a", agent = "fix it", model = "m", max_turns = 4)
chain(START, a, END)
`}, nil},
		{"agent without tools", map[string]string{"flow.star": stub + `
a = step("a", agent = "say it", model = "m", max_turns = 3, retries = 1)
chain(START, a, END)
`}, nil},
		{"map of known size", map[string]string{"flow.star": stub + `
t = step("t", run = ["lint", "{{ item }}"], retries = 1, backoff = "1ms")
s = step("s", llm = "sum {{ item }}", model = "m")
edge(t, s, on = "always")
each = map("each", over = "[1, 2, 3, 4, 5]", body = [t, s], concurrency = 2)
chain(START, each, END)
`}, nil},
		{"map with max_items", map[string]string{"flow.star": stub + `
flow(inputs = {"files": []})
t = step("t", run = ["lint", "{{ item }}"], retries = 2, backoff = "1ms")
each = map("each", over = "inputs.files", body = [t], max_items = 6)
edge(START, each)
edge(each, END, on = "always")
`}, map[string]starlark.Value{"files": starlark.NewList([]starlark.Value{starlark.String("a"), starlark.String("b"), starlark.String("c")})}},
		{"approval and router", map[string]string{"flow.star": stub + `
gate = step("gate", approve = "ship?")
ship = step("ship", run = ["ship"], retries = 2, backoff = "1ms")
pick = router("pick", llm = "pick", model = "m", routes = {"a": "x", "b": "y"})
x = step("x", run = ["x"])
y = step("y", run = ["y"])
chain(START, gate, ship, pick)
edge(ship, pick, on = "failure")
chain(x, END)
chain(y, END)
`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, src := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g, err := lang.Load(filepath.Join(dir, "flow.star"), lang.Options{Root: dir})
			if err != nil {
				t.Fatal(err)
			}
			if ds := check.Graph(g); len(ds) > 0 {
				for _, d := range ds {
					if d.Severity == check.Error {
						t.Fatalf("check: %s", d)
					}
				}
			}
			fe := check.ComputeEnvelope(g)
			w := &worstCase{}
			res, err := vm.Run(context.Background(), g, tc.input, vm.Options{Effects: w, Parallel: 4,
				LoadFlow: func(_ context.Context, path, root string) (*graphir.Graph, error) {
					return lang.Load(path, lang.Options{Root: root})
				}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{"model calls": w.models, "completion tokens": w.tokens,
				"processes": w.procs, "tool calls": w.tools, "approvals": w.asked}
			bound := map[string]check.Amount{"model calls": fe.Total.ModelCalls, "completion tokens": fe.Total.Tokens,
				"processes": fe.Total.Processes, "tool calls": fe.Total.ToolCalls, "approvals": fe.Total.Approvals}
			var report []string
			for what, n := range got {
				b := bound[what]
				if len(b.PerItem) > 0 {
					t.Errorf("%s: bound %s is per item; the test flows give sizes", what, b)
					continue
				}
				if b.Bounded() && n > b.Max {
					t.Errorf("%s: the run spent %v, more than the envelope's %s (run %s)", what, n, b, res.Status)
				}
				if b.Bounded() && n > 0 {
					report = append(report, what+" "+ratio(b.Max, n))
				} else if !b.Bounded() {
					report = append(report, what+" unbounded, spent "+check.Thousands(n))
				}
			}
			if w.procs == 0 && w.models == 0 {
				t.Errorf("the run spent nothing (status %s): the test flow is wrong", res.Status)
			}
			t.Logf("status %s; envelope over spent: %s", res.Status, strings.Join(slices.Sorted(slices.Values(report)), "; "))
		})
	}
}

func ratio(bound, spent float64) string {
	return check.Thousands(bound) + "/" + check.Thousands(spent) + " = " + strconv.FormatFloat(bound/spent, 'f', 2, 64) + "x"
}

// TestEnvelopeExamples computes the envelope of every example: each
// has one, with a total, a line per step and no panic.
func TestEnvelopeExamples(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.star")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.star") {
			continue
		}
		g, err := lang.Load(f, lang.Options{Root: "../examples"})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		fe := check.ComputeEnvelope(g)
		fe.File = f
		var b strings.Builder
		if err := check.WriteEnvelope(&b, fe); err != nil {
			t.Fatal(err)
		}
		if len(fe.Steps) != len(g.Steps()) || !strings.Contains(b.String(), "  run: ") {
			t.Errorf("%s: envelope of %d steps for %d:\n%s", f, len(fe.Steps), len(g.Steps()), b.String())
		}
	}
}
