package temporal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// runContinued runs the workflow on the test suite, continuing it as new
// (a fresh environment for the input the execution ended with) until it
// completes; it returns the output and how many executions continued.
func runContinued(t *testing.T, in RunInput) (*RunOutput, int) {
	t.Helper()
	return runContinuedWith(t, in, &Activities{}, nil)
}

// continued says whether err is the workflow continuing as new and, if
// so, decodes the input it continues with into in.
func continued(t *testing.T, err error, in *RunInput) bool {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		return false
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, in); err != nil {
		t.Fatal(err)
	}
	return true
}

// runContinuedWith is runContinued with the worker's activities a, and,
// when sc is not nil, a person acting as sc says in every execution.
func runContinuedWith(t *testing.T, in RunInput, a *Activities, sc *temporaltest.Scenario) (*RunOutput, int) {
	t.Helper()
	var decisions []temporaltest.Decision
	if sc != nil {
		decisions = slices.Clone(sc.Decisions)
	}
	for n := 0; ; n++ {
		env := newEnvWith(t, a)
		if sc != nil {
			script(t, env, *sc, &decisions)
		}
		env.ExecuteWorkflow(WorkflowName, in)
		if !env.IsWorkflowCompleted() {
			t.Fatal("workflow did not complete")
		}
		err := env.GetWorkflowError()
		var next RunInput
		if continued(t, err, &next) {
			if next.Executions != n+1 || next.Snapshot == nil {
				t.Fatalf("execution %d continued as %d with a snapshot of %d bytes", n, next.Executions, len(next.Snapshot))
			}
			in = next
			continue
		}
		if err != nil {
			t.Fatalf("workflow: %v", err)
		}
		var out RunOutput
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
		return &out, n
	}
}

// continueScenarios are long enough to continue as new several times.
var continueScenarios = []temporaltest.Scenario{
	{Name: "long loop", Files: map[string]string{"flow.star": `
flow(output = "l")
t = step("t", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [t], until = lambda it: len(it.history) == 119 and it.output.stdout.strip() == "120", max_iterations = 200)
after = step("after", fn = lambda r: r.l.stdout.strip())
chain(START, l, after, END)
`}},
	{Name: "back-edges in a loop", Files: map[string]string{"flow.star": `
build = step("build", run = ["sh", "-c", 'test "$1" -ge 4', "build", "{{ self.visits }}"], max_visits = 5)
fix = step("fix", fn = lambda r: {"fixed": r.build.exit_code, "f": 0.5})
edge(build, fix, on = "failure")
edge(fix, build)
l = loop("l", body = [build, fix], until = lambda it: it.iteration == 6, max_iterations = 9)
chain(START, l, END)
`}},
	{Name: "map in a loop", Files: map[string]string{"flow.star": `
flow(output = "l")
work = step("work", run = ["sh", "-c", "echo $1", "work", "{{ item }}"])
shape = step("shape", fn = lambda r: (r.index, r.work.stdout.strip()))
m = map("m", over = "[loop.iteration * 10 + i for i in range(7)]", body = [work, shape], concurrency = 3)
l = loop("l", body = [m], until = lambda it: it.iteration == 5, max_iterations = 10)
chain(START, l, END)
`}},
	{Name: "child flows in a loop", Files: map[string]string{
		"flow.star": `
flow(output = "l")
kid = step("kid", flow = "child.star", inputs = {"n": "{{ loop.iteration }}"})
l = loop("l", body = [kid], until = lambda it: it.iteration == 8, max_iterations = 10)
chain(START, l, END)
`,
		"child.star": `
flow(inputs = {"n": None}, output = "l")
t = step("t", run = ["echo", "child {{ inputs.n }}"])
l = loop("l", body = [t], until = lambda it: it.iteration == 7, max_iterations = 9)
`}},
}

func TestContinueAsNewBothEngines(t *testing.T) {
	// Every scenario, continued as new every few effects, gives what the
	// local engine gives; the long ones continue several times.
	scenarios, err := temporaltest.Load("testdata/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	all := append(scenarios, continueScenarios...)
	for _, sc := range all {
		t.Run(sc.Name, func(t *testing.T) {
			local, in := runScenario(t, sc)
			in.ContinueEvery = 3
			out, n := runContinuedWith(t, in, &Activities{}, &sc)
			remote := decode(t, out.Result)
			if diff := cmp.Diff(local.WithoutTimes(), remote.WithoutTimes()); diff != "" {
				t.Errorf("local (-) and temporal continued %d times (+) differ:\n%s", n, diff)
			}
			if strings.HasPrefix(sc.Name, "long") && n < 10 {
				t.Errorf("continued %d times, want at least 10", n)
			}
		})
	}
}

// longLoop is a loop of n iterations with one task each.
func longLoop(n int) temporaltest.Scenario {
	return temporaltest.Scenario{Name: "long", Files: map[string]string{"flow.star": fmt.Sprintf(`
flow(output = "l")
t = step("t", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [t], until = lambda it: it.iteration == %d, max_iterations = %d)
`, n, n)}}
}

func TestLongLoopContinuesAsNew(t *testing.T) {
	// A loop of many iterations with one task each finishes, continuing
	// as new every 50 effects, with its path's tail and its counters
	// carried over. (20,000 iterations run against a real server in
	// servertest.)
	const n = 600
	g, sources, _ := setup(t, longLoop(n))
	out, conts := runContinued(t, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, ContinueEvery: 50, MaxPath: 100})
	res := decode(t, out.Result)
	if res.Status != "succeeded" || res.Output.(map[string]any)["stdout"] != fmt.Sprintf("%d\n", n) {
		t.Fatalf("status %s, output %v", res.Status, res.Output)
	}
	if conts != n/50-1 && conts != n/50 {
		t.Errorf("continued %d times, want about %d", conts, n/50)
	}
	if len(res.Path) != 100 || res.Path[99] != fmt.Sprintf("l#%d.t", n) || res.Steps["t"].Visits != n {
		t.Errorf("path tail %v, t visits %d", res.Path[len(res.Path)-3:], res.Steps["t"].Visits)
	}
}

func TestContinueAsNewPayloadLimit(t *testing.T) {
	// A snapshot that would not fit Temporal's payload limit fails the
	// workflow with an error naming the limit.
	g, sources, _ := setup(t, longLoop(20))
	env := newEnv(t)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, ContinueEvery: 5, MaxPayload: 600})
	err := env.GetWorkflowError()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "payload_limit" || !strings.Contains(ae.Error(), "over the payload limit of 600 bytes") {
		t.Fatalf("err = %v, want a payload_limit error naming 600 bytes", err)
	}
}

func TestContinuedRecordSoFar(t *testing.T) {
	// The record so far (skein show) of an execution that continued as
	// new starts from where the one before left it; an approval waiting
	// in the last execution is decided by signal as in any other.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
first = step("first", run = ["echo", "one"])
t = step("t", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [t], until = lambda it: it.iteration == 7, max_iterations = 9)
deploy = step("deploy", approve = "Ship?")
chain(START, first, l, deploy, END)
`}})
	in := RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, ContinueEvery: 3}
	var rec map[string]any
	for n := 0; ; n++ {
		env := newEnv(t)
		recordThenApprove(t, env, &rec)
		env.ExecuteWorkflow(WorkflowName, in)
		if continued(t, env.GetWorkflowError(), &in) {
			continue
		}
		res := decode(t, result(t, env))
		if res.Status != "succeeded" || n < 2 {
			t.Fatalf("status %s after %d continues", res.Status, n)
		}
		break
	}
	steps, _ := rec["steps"].(map[string]any)
	tr, _ := steps["t"].(map[string]any)
	// first finished in the first execution: its output came with the
	// snapshot.
	fo, _ := steps["first"].(map[string]any)["output"].(map[string]any)
	if rec["path_total"] != 10.0 || tr["visits"] != 7.0 || tr["status"] != "succeeded" || steps["deploy"].(map[string]any)["status"] != "running" ||
		fo["stdout"] != "one\n" {
		t.Errorf("record so far of the last execution:\n%v", rec)
	}
}
