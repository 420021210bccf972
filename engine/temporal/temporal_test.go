package temporal

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// scenario is a flow run on both engines; files holds flow.star and the
// files it uses.
type scenario struct {
	name     string
	files    map[string]string
	inputs   map[string]any
	parallel int
	// allSources sends every file as a source (templated child flows).
	allSources bool
}

// backEdgeFlow retries build through fix until it passes on visit
// inputs.passes_on or runs out of max_visits.
const backEdgeFlow = `
build = step("build", run = ["sh", "-c", 'test "$1" -ge {{ inputs.passes_on }}', "build", "{{ self.visits }}"], max_visits = 3)
fix = step("fix", fn = lambda r: "fixed " + str(r.build.exit_code))
edge(START, build)
edge(build, END)
edge(build, fix, on = "failure")
edge(fix, build)
flow(inputs = {"passes_on": 2})
`

var scenarios = []scenario{
	{name: "chain", files: map[string]string{"flow.star": `
a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: r.a + 1)
c = step("c", fn = lambda r: r.b * 10)
`}},
	{name: "branch", inputs: map[string]any{"label": "ham"}, files: map[string]string{"flow.star": `
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
`}},
	{name: "fan-out and-join", parallel: 4, files: map[string]string{"flow.star": `
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
`}},
	{name: "router", inputs: map[string]any{"label": "billing"}, files: map[string]string{"flow.star": `
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
`}},
	{name: "loop until", files: map[string]string{"flow.star": `
flow(output = "l")
def body_fn(r):
    return {"n": r.loop.iteration, "fb": r.loop.feedback}
b = step("b", fn = body_fn)
t = step("t", run = ["echo", "{{ b.n }}"])
l = loop("l", body = [b, t], until = "enough", max_iterations = 10)
chain(START, l, END)
def enough(it):
    if it.iteration == 3:
        return True
    return (False, "more than %d" % it.iteration)
`}},
	{name: "map", files: map[string]string{"flow.star": `
flow(inputs = {"xs": [3, 1, 2, 0]}, output = "m")
work = step("work", run = ["sh", "-c", "echo $1", "work", "{{ item }}"])
shape = step("shape", fn = lambda r: {"i": r.index, "x": r.item, "out": r.work.stdout.strip()})
m = map("m", over = "inputs.xs", body = [work, shape], concurrency = 3)
chain(START, m, END)
`}},
	{name: "map failure", parallel: 8, files: map[string]string{"flow.star": `
flow(inputs = {"xs": ["ok", "bad", "ok"]})
work = step("work", run = ["sh", "-c", 'if [ "$1" = bad ]; then exit 3; fi', "work", "{{ item }}"])
m = map("m", over = "inputs.xs", body = [work], concurrency = 1)
chain(START, m, END)
`}},
	{name: "back-edge max_visits", inputs: map[string]any{"passes_on": 99}, files: map[string]string{"flow.star": backEdgeFlow}},
	{name: "back-edge passes", files: map[string]string{"flow.star": backEdgeFlow}},
	{name: "retries with backoff", files: map[string]string{"flow.star": `
def boom(r):
    fail("no")
s = step("s", fn = boom, retries = 2, backoff = "10ms")
t = step("t", run = ["false"], retries = 2, backoff = "20ms")
recover = step("recover", fn = lambda r: r.t.exit_code)
edge(START, s)
edge(s, END)
edge(s, t, on = "failure")
edge(t, END)
edge(t, recover, on = "failure")
edge(recover, END)
`}},
	{name: "wait", files: map[string]string{"flow.star": `
a = step("a", fn = lambda r: 3)
pause = step("pause", wait = "{{ a * 10 }}ms")
b = step("b", fn = lambda r: "after")
chain(START, a, pause, b, END)
`}},
	{name: "flow timeout", files: map[string]string{"flow.star": `
flow(timeout = "200ms")
pause = step("pause", wait = "1h")
b = step("b", fn = lambda r: "after")
chain(START, pause, b, END)
`}},
	{name: "child flow", files: map[string]string{
		"flow.star": `
flow(output = "use")
prep = step("prep", fn = lambda r: {"words": ["a", "bb", "ccc"]})
child = step("child", flow = "sub/child.star", inputs = {"words": "{{ prep.words }}", "title": "n={{ len(prep.words) }}"})
use = step("use", fn = lambda r: r.child)
chain(START, prep, child, use, END)
`,
		"sub/child.star": `
flow(inputs = {"words": None, "title": None}, output = "out")
t = step("t", run = ["echo", "{{ inputs.title }}"])
out = step("out", fn = lambda r: "%s: %s" % (r.t.stdout.strip(), "/".join(r.inputs.words)))
`}},
	{name: "child flow failure routes", files: map[string]string{
		"flow.star": `
child = step("child", flow = "child.star")
recover = step("recover", fn = lambda r: "recovered from: " + r.child.error)
edge(START, child)
edge(child, END)
edge(child, recover, on = "failure")
edge(recover, END)
`,
		"child.star": `step("boom", run = ["false"])`}},
	{name: "child flow cycle", allSources: true, files: map[string]string{
		"flow.star": `step("again", flow = "{{ 'flow' }}.star")`}},
	{name: "exit handler", files: map[string]string{"flow.star": `
flow(on_exit = "cleanup")
a = step("a", run = ["false"])
cleanup = step("cleanup", fn = lambda r: r.run.status)
`}},
}

// setup writes the scenario's files and loads flow.star.
func setup(t *testing.T, sc scenario) (*graphir.Graph, map[string]string, map[string]starlark.Value) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range sc.files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, sources, err := LoadSources(filepath.Join(dir, "flow.star"), lang.Options{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if sc.allSources {
		for name, src := range sc.files {
			sources[filepath.Join(dir, name)] = src
		}
	}
	given := map[string]starlark.Value{}
	for k, v := range sc.inputs {
		sv, err := stdlib.FromGo(v)
		if err != nil {
			t.Fatal(err)
		}
		given[k] = sv
	}
	return g, sources, given
}

// comparable is what both engines must agree on, from the result JSON.
type comparable struct {
	Status string   `json:"status"`
	Error  any      `json:"error"`
	Output any      `json:"output"`
	Path   []string `json:"path"`
	Steps  map[string]struct {
		Status string `json:"status"`
		Visits int    `json:"visits"`
		Output any    `json:"output"`
		Code   string `json:"code"`
	} `json:"steps"`
}

func decode(t *testing.T, b []byte) comparable {
	t.Helper()
	var c comparable
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("result: %v\n%s", err, b)
	}
	return c
}

func runLocal(t *testing.T, g *graphir.Graph, given map[string]starlark.Value, parallel int) []byte {
	t.Helper()
	res, err := vm.Run(context.Background(), g, given, vm.Options{Parallel: parallel,
		LoadFlow: func(_ context.Context, path, root string) (*graphir.Graph, error) {
			return lang.Load(path, lang.Options{Root: root})
		}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runTemporal(t *testing.T, in RunInput) *RunOutput {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	Register(env, &Activities{})
	env.ExecuteWorkflow(WorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var out RunOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestScenariosBothEngines(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			parallel := sc.parallel
			if parallel == 0 {
				parallel = 1
			}
			g, sources, given := setup(t, sc)
			local := decode(t, runLocal(t, g, given, parallel))
			inputs, err := EncodeInputs(given)
			if err != nil {
				t.Fatal(err)
			}
			out := runTemporal(t, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Inputs: inputs, Parallel: parallel})
			remote := decode(t, out.Result)
			if out.Status != remote.Status {
				t.Errorf("output status %s, result status %s", out.Status, remote.Status)
			}
			if diff := cmp.Diff(local, remote); diff != "" {
				t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
			}
		})
	}
}

func TestCancelKillsTask(t *testing.T) {
	// Cancelling the workflow while a task runs cancels its activity,
	// which kills the task's process group; the run ends cancelled and
	// the exit handler still runs.
	dir := t.TempDir()
	g, sources, _ := setup(t, scenario{files: map[string]string{"flow.star": `
flow(on_exit = "cleanup")
slow = step("slow", run = ["sh", "-c", 'echo $$ > "$1/pid"; sleep 30; echo late > "$1/late"', "slow", "` + dir + `"])
cleanup = step("cleanup", fn = lambda r: r.run.status)
`}})
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	Register(env, &Activities{})
	env.SetTestTimeout(20 * time.Second)
	// Cancel once the task runs.
	var cancelOnce func()
	cancelOnce = func() {
		if _, err := os.Stat(filepath.Join(dir, "pid")); err != nil {
			env.RegisterDelayedCallback(cancelOnce, 100*time.Millisecond)
			return
		}
		env.CancelWorkflow()
	}
	env.RegisterDelayedCallback(cancelOnce, 100*time.Millisecond)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, KillGrace: 100 * time.Millisecond})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var out RunOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	res := decode(t, out.Result)
	if res.Status != "cancelled" || res.Steps["slow"].Status != "cancelled" {
		t.Errorf("status %s, slow %s; want cancelled, cancelled\n%s", res.Status, res.Steps["slow"].Status, out.Result)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatalf("the task never started: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The test environment does not wait for the activity to acknowledge
	// its cancellation as a server does: allow it time to kill the
	// process, far less than the task's 30 s.
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i == 100 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the task's process %d outlived the cancellation", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var handler struct {
		OnExit struct {
			Output string `json:"output"`
		} `json:"on_exit"`
	}
	json.Unmarshal(out.Result, &handler)
	if handler.OnExit.Output != "cancelled" {
		t.Errorf("exit handler output %q, want cancelled", handler.OnExit.Output)
	}
}
