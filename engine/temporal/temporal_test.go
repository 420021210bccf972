package temporal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.temporal.io/sdk/testsuite"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// setup writes the scenario's files and loads flow.star.
func setup(t *testing.T, sc temporaltest.Scenario) (*graphir.Graph, map[string]string, map[string]starlark.Value) {
	t.Helper()
	dir := t.TempDir()
	if _, err := sc.Write(dir); err != nil {
		t.Fatal(err)
	}
	f := frontend.Load(filepath.Join(dir, "flow.star"), frontend.Options{})
	if f.Graph == nil {
		t.Fatalf("load: %v", f.Err())
	}
	g, sources := f.Graph, f.Sources.ByName()
	if sc.AllSources {
		for name, src := range sc.Files {
			sources[filepath.Join(dir, filepath.FromSlash(name))] = src
		}
	}
	return g, sources, givenInputs(t, sc)
}

// givenInputs is sc's inputs as Starlark values.
func givenInputs(t *testing.T, sc temporaltest.Scenario) map[string]starlark.Value {
	t.Helper()
	given := map[string]starlark.Value{}
	for k, v := range sc.Inputs {
		sv, err := stdlib.FromJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		given[k] = sv
	}
	return given
}

func decode(t *testing.T, b []byte) temporaltest.Comparable {
	t.Helper()
	c, err := temporaltest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runLocal(t *testing.T, g *graphir.Graph, given map[string]starlark.Value, parallel int) []byte {
	t.Helper()
	return runLocalScripted(t, g, given, parallel, temporaltest.Scenario{})
}

// runLocalScripted runs g locally as runLocal does, with sc's decisions
// answering its approvals, cancelled once sc's CancelWhen file exists (in
// the current directory, where the flow's tasks run).
func runLocalScripted(t *testing.T, g *graphir.Graph, given map[string]starlark.Value, parallel int, sc temporaltest.Scenario) []byte {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if sc.CancelWhen != "" {
		go func() {
			for ctx.Err() == nil {
				if _, err := os.Stat(sc.CancelWhen); err == nil {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	res, err := vm.Run(ctx, g, given, vm.Options{Parallel: parallel, Effects: &scripted{decisions: slices.Clone(sc.Decisions)},
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

// scripted answers approvals with a scenario's decisions, in order, each
// the next one for its step; an approval with none left waits until it is
// cancelled. Every other effect runs locally.
type scripted struct {
	mu        sync.Mutex
	decisions []temporaltest.Decision
}

func (s *scripted) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.Kind != graphir.KindApproval {
		vm.Local{}.Start(ctx, req, done)
		return
	}
	s.mu.Lock()
	i := slices.IndexFunc(s.decisions, func(d temporaltest.Decision) bool { return d.Step == req.Step })
	var d temporaltest.Decision
	if i >= 0 {
		d = s.decisions[i]
		s.decisions = slices.Delete(s.decisions, i, i+1)
	}
	s.mu.Unlock()
	if i < 0 {
		go func() {
			<-ctx.Done()
			done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		}()
		return
	}
	var values starlark.Value
	if fields := req.Fields(); len(fields) > 0 {
		m, err := graphir.BindFields(req.Step, fields, d.Values, !d.Reject)
		if err != nil {
			done(&vm.EffectCompletion{Code: "step_failed", Error: err.Error()})
			return
		}
		values = m
	}
	done(vm.ApprovalDecision(!d.Reject, d.By, d.Reason, time.Now(), values))
}

func runTemporal(t *testing.T, in RunInput) *RunOutput {
	t.Helper()
	return runTemporalScripted(t, in, temporaltest.Scenario{})
}

// runTemporalScripted runs in on the SDK's test environment, signalling
// sc's decisions as the run asks for them and cancelling the workflow once
// sc's CancelWhen file exists (in the current directory).
func runTemporalScripted(t *testing.T, in RunInput, sc temporaltest.Scenario) *RunOutput {
	t.Helper()
	env := newEnv(t)
	decisions := slices.Clone(sc.Decisions)
	script(t, env, sc, &decisions)
	env.ExecuteWorkflow(WorkflowName, in)
	return output(t, env)
}

// script has a person act on the workflow env runs as sc says: decide its
// approvals (taking each decision made from *decisions, so a run that
// continues as new in another env gets the rest) and cancel it.
func script(t *testing.T, env *testsuite.TestWorkflowEnvironment, sc temporaltest.Scenario, decisions *[]temporaltest.Decision) {
	t.Helper()
	if len(*decisions) > 0 {
		// The test environment's clock skips ahead while the workflow
		// waits: look for an approval to decide every virtual minute.
		var decide func()
		decide = func() {
			for _, w := range queryApprovals(t, env).Waiting() {
				i := slices.IndexFunc(*decisions, func(d temporaltest.Decision) bool { return d.Step == w.Step })
				if i < 0 {
					continue
				}
				d := (*decisions)[i]
				*decisions = slices.Delete(*decisions, i, i+1)
				env.SignalWorkflow(ApproveSignal, Decision{Step: w.Step, Scope: w.Scope, Visit: w.Visit, Reject: d.Reject, Reason: d.Reason, By: d.By, Values: d.Values})
				break
			}
			if len(*decisions) > 0 {
				env.RegisterDelayedCallback(decide, time.Minute)
			}
		}
		env.RegisterDelayedCallback(decide, time.Minute)
	}
	if sc.CancelWhen != "" {
		var cancelOnce func()
		cancelOnce = func() {
			if _, err := os.Stat(sc.CancelWhen); err != nil {
				env.RegisterDelayedCallback(cancelOnce, 100*time.Millisecond)
				return
			}
			env.CancelWorkflow()
		}
		env.RegisterDelayedCallback(cancelOnce, 100*time.Millisecond)
	}
}

// runScenario runs sc on the local engine and gives its result and the
// input that runs sc on the Temporal engine. As `skein run flow.star`
// does, the flow is named relative to the directory the run starts in
// (the test's, for the test's duration), so messages naming files
// (traces, subflow_cycle's) must read the same on both engines.
func runScenario(t *testing.T, sc temporaltest.Scenario) (temporaltest.Comparable, RunInput) {
	t.Helper()
	parallel := sc.ParallelOrOne()
	dir := t.TempDir()
	if _, err := sc.Write(dir); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	f := frontend.Load("flow.star", frontend.Options{})
	if f.Graph == nil {
		t.Fatalf("load: %v", f.Err())
	}
	g, sources := f.Graph, f.Sources.ByName()
	if sc.AllSources {
		for name, src := range sc.Files {
			sources[filepath.FromSlash(name)] = src
		}
	}
	given := givenInputs(t, sc)
	local := decode(t, runLocalScripted(t, g, given, parallel, sc))
	if sc.CancelWhen != "" {
		// Made by the local run: the Temporal run makes its own.
		os.Remove(sc.CancelWhen)
	}
	inputs, err := EncodeInputs(given)
	if err != nil {
		t.Fatal(err)
	}
	return local, RunInput{Flow: g.File, Root: g.Root, Cwd: dir, Sources: sources, Inputs: inputs, Parallel: parallel}
}

func TestScenariosBothEngines(t *testing.T) {
	scenarios, err := temporaltest.Load("testdata/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			local, in := runScenario(t, sc)
			out := runTemporalScripted(t, in, sc)
			remote := decode(t, out.Result)
			if out.Status != remote.Status {
				t.Errorf("output status %s, result status %s", out.Status, remote.Status)
			}
			if diff := cmp.Diff(local.WithoutTimes(), remote.WithoutTimes()); diff != "" {
				t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
			}
			if len(sc.Forks) > 0 {
				forkBothEngines(t, sc)
			}
		})
	}
}

func TestRelativePathsRunInCwd(t *testing.T) {
	// A run named relative to where it started keeps its names in the
	// workflow, but a worker elsewhere runs its tasks where the flow is:
	// in the directories made absolute with the input's Cwd.
	local, in := runScenario(t, temporaltest.Scenario{Files: map[string]string{
		"flow.star":      `chain(START, step("kid", flow = "sub/child.star"), END)`,
		"sub/child.star": `flow(output = "t")` + "\n" + `chain(START, step("t", run = ["sh", "-c", "pwd"], dir = "../data"), END)`,
		"data/keep":      "",
	}})
	if in.Flow != "flow.star" {
		t.Fatalf("flow named %q, want flow.star", in.Flow)
	}
	t.Chdir(t.TempDir()) // the worker's directory
	remote := decode(t, runTemporal(t, in).Result)
	if diff := cmp.Diff(local, remote); diff != "" {
		t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
	}
	want := filepath.Join(in.Cwd, "data") + "\n"
	if got := remote.Steps["kid"].Output; !cmp.Equal(got, map[string]any{"stdout": want, "stderr": "", "exit_code": 0.0, "error": nil, "code": nil, "text": strings.TrimSuffix(want, "\n")}) {
		t.Errorf("the task ran with output %v, want stdout %q", got, want)
	}
}

func TestCancelKillsTask(t *testing.T) {
	// Cancelling the workflow while a task runs cancels its activity,
	// which kills the task's process group; the run ends cancelled and
	// the exit handler still runs.
	dir := t.TempDir()
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
flow(on_exit = "cleanup")
slow = step("slow", run = ["sh", "-c", 'echo $$ > "$1/pid"; sleep 600; echo late > "$1/late"', "slow", "` + dir + `"])
cleanup = step("cleanup", fn = lambda r: r.run.status)
`}})
	env := newEnv(t)
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
	// process (a minute, a hang guard), far less than the task's 600 s.
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i == 1200 {
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
