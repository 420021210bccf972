package temporal

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	return newEnvWith(t, &Activities{})
}

// newEnvWith is newEnv with the worker's activities a.
func newEnvWith(t *testing.T, a *Activities) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	Register(env, a)
	env.SetTestTimeout(30 * time.Second)
	// The SDK's deadlock detector fails a workflow task that runs 1s of
	// wall time without yielding. Under -race on a busy machine loading
	// and replaying a flow can take that long; that the driver yields is
	// TestLongFnStretchYields's to prove, by counting its timers.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	return env
}

// result is the workflow's result object.
func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) []byte {
	t.Helper()
	return output(t, env).Result
}

// output is the workflow's output, once it completed without error.
func output(t *testing.T, env *testsuite.TestWorkflowEnvironment) *RunOutput {
	t.Helper()
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

// decider answers approvals locally as a person would: with a decision,
// or not in time.
type decider struct {
	reject  bool
	by      string
	reason  string
	timeout bool
	values  map[string]any
}

func (d decider) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.Kind != graphir.KindApproval {
		vm.Local{}.Start(ctx, req, done)
		return
	}
	if d.timeout {
		done(vm.ApprovalTimedOut(req.Timeout))
		return
	}
	var values starlark.Value
	if fields := req.Fields(); len(fields) > 0 {
		m, err := graphir.BindFields(req.Step, fields, d.values, !d.reject)
		if err != nil {
			done(&vm.EffectCompletion{Code: "step_failed", Error: err.Error()})
			return
		}
		values = m
	}
	done(vm.ApprovalDecision(!d.reject, d.by, d.reason, time.Now(), values))
}

// withoutAt drops the decision time from approval outputs, which the two
// engines take from different clocks.
func withoutAt(c temporaltest.Comparable) temporaltest.Comparable {
	for name, s := range c.Steps {
		if m, ok := s.Output.(map[string]any); ok && m["approved"] != nil {
			delete(m, "at")
			c.Steps[name] = s
		}
	}
	return c
}

const approveFlow = `
flow(inputs = {"v": "1.4"})
deploy = step("deploy", approve = "Deploy {{ inputs.v }} to prod?", timeout = "1h")
ship = step("ship", fn = lambda r: "shipped by " + r.deploy.by)
edge(START, deploy)
edge(deploy, ship)
edge(ship, END)
`

const fieldsFlow = `
deploy = step("deploy", approve = "Deploy?", fields = {"version": input(type = "string"), "replicas": input(2), "mode": input("canary", choices = ["canary", "all"])})
ship = step("ship", fn = lambda r: "%s x%d %s" % (r.deploy.values.version, r.deploy.values.replicas + 1, r.deploy.values.mode))
chain(START, deploy, ship, END)
`

const routedFlow = approveFlow + `
rollback = step("rollback", fn = lambda r: "rolled back: " + r.deploy.error)
edge(deploy, rollback, on = "failure")
edge(rollback, END)
`

func TestApprovalBySignal(t *testing.T) {
	cases := []struct {
		name  string
		flow  string
		local decider
		// signal is sent after a minute, unless timeout.
		signal *Decision
		status string
		// want is the output of the step that ends the run.
		step, want string
	}{
		{name: "approve", flow: approveFlow, local: decider{by: "ann", reason: "ok"},
			signal: &Decision{Step: "deploy", By: "ann", Reason: "ok"}, status: "succeeded", step: "ship", want: "shipped by ann"},
		{name: "reject routed", flow: routedFlow, local: decider{reject: true, by: "bob", reason: "not today"},
			signal: &Decision{Step: "deploy", Reject: true, By: "bob", Reason: "not today"}, status: "succeeded", step: "rollback", want: "rolled back: rejected by bob: not today"},
		{name: "reject unrouted", flow: approveFlow, local: decider{reject: true, by: "bob"},
			signal: &Decision{Step: "deploy", Reject: true, By: "bob"}, status: "failed"},
		{name: "timeout routed", flow: routedFlow, local: decider{timeout: true},
			status: "succeeded", step: "rollback", want: "rolled back: no decision within 1h0m0s"},
		{name: "timeout unrouted", flow: approveFlow, local: decider{timeout: true}, status: "failed"},
		{name: "approve with values", flow: fieldsFlow, local: decider{by: "ann", reason: "ok", values: map[string]any{"version": "1.2", "replicas": "3"}},
			signal: &Decision{Step: "deploy", By: "ann", Reason: "ok", Values: map[string]any{"version": "1.2", "replicas": "3"}}, status: "succeeded", step: "ship", want: "1.2 x4 canary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, sources, given := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": tc.flow}})
			res, err := vm.Run(context.Background(), g, given, vm.Options{Parallel: 1, Effects: tc.local})
			if err != nil {
				t.Fatal(err)
			}
			lb, err := res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			local := withoutAt(decode(t, lb))

			env := newEnv(t)
			if tc.signal != nil {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(ApproveSignal, *tc.signal) }, time.Minute)
			}
			env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
			rb := result(t, env)
			remote := withoutAt(decode(t, rb))
			if diff := cmp.Diff(local, remote); diff != "" {
				t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
			}
			if remote.Status != tc.status {
				t.Errorf("status %s, want %s\n%s", remote.Status, tc.status, rb)
			}
			if tc.step != "" && remote.Steps[tc.step].Output != tc.want {
				t.Errorf("%s output %v, want %q", tc.step, remote.Steps[tc.step].Output, tc.want)
			}
			code := "rejected"
			if tc.signal == nil {
				code = "timeout"
			}
			if c := remote.Steps["deploy"].Code; c != code {
				if tc.signal == nil || tc.signal.Reject {
					t.Errorf("deploy code %q, want %q", c, code)
				}
			}
			if tc.signal != nil && !tc.signal.Reject {
				var r struct {
					Steps struct {
						Deploy struct {
							Output struct {
								Approved bool   `json:"approved"`
								By       string `json:"by"`
								Reason   string `json:"reason"`
								At       string `json:"at"`
							} `json:"output"`
						} `json:"deploy"`
					} `json:"steps"`
				}
				json.Unmarshal(rb, &r)
				o := r.Steps.Deploy.Output
				if at, err := time.Parse(time.RFC3339, o.At); !o.Approved || o.By != "ann" || o.Reason != "ok" || err != nil || at.IsZero() {
					t.Errorf("deploy output %+v, want approved by ann for ok at a time", o)
				}
			}
		})
	}
}

// TestApprovalValuesRefused: a decision whose values do not fit the
// step's fields is refused, saying why, and the approval waits on; the
// next one that fits decides it, its values recorded with it.
func TestApprovalValuesRefused(t *testing.T) {
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": fieldsFlow}})
	env := newEnv(t)
	var between *Approvals
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(ApproveSignal, Decision{ID: "bad", Step: "deploy", By: "ann", Values: map[string]any{"version": "1.2", "mode": "most"}})
	}, time.Minute)
	env.RegisterDelayedCallback(func() { between = queryApprovals(t, env) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(ApproveSignal, Decision{ID: "good", Step: "deploy", By: "ann", Values: map[string]any{"version": "1.3", "replicas": 4.0}})
	}, 3*time.Minute)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	res := decode(t, result(t, env))
	if res.Status != "succeeded" || res.Steps["ship"].Output != "1.3 x5 canary" {
		t.Fatalf("status %s, ship %v", res.Status, res.Steps["ship"].Output)
	}
	why, ok := between.Refusal("bad")
	if !ok || !strings.Contains(why, `field "mode" must be one of "canary", "all", got "most"`) || len(between.Waiting()) != 1 {
		t.Errorf("after the bad decision: refused %v %q, waiting %d", ok, why, len(between.Waiting()))
	}
}

// queryApprovals asks the workflow for its approvals.
func queryApprovals(t *testing.T, env *testsuite.TestWorkflowEnvironment) *Approvals {
	t.Helper()
	v, err := env.QueryWorkflow(ApprovalsQuery)
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	var as Approvals
	if err := v.Get(&as); err != nil {
		t.Fatal(err)
	}
	return &as
}

func TestApprovalDecidedOnce(t *testing.T) {
	// A decision before the step waits, a second decision and one after
	// the first are refused and kept, saying why; the first decision
	// stands.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
pause = step("pause", wait = "1m")
deploy = step("deploy", approve = "Deploy?")
after = step("after", wait = "1h")
chain(START, pause, deploy, after, END)
`}})
	env := newEnv(t)
	var during, final *Approvals
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(ApproveSignal, Decision{ID: "early", Step: "deploy", By: "eve"})
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		during = queryApprovals(t, env)
		env.SignalWorkflow(ApproveSignal, Decision{ID: "first", Step: "deploy", By: "ann", Reason: "go"})
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(ApproveSignal, Decision{ID: "second", Step: "deploy", Reject: true, By: "bob"})
		env.SignalWorkflow(ApproveSignal, Decision{ID: "typo", Step: "deplyo", By: "bob"})
	}, 3*time.Minute)
	env.RegisterDelayedCallback(func() { final = queryApprovals(t, env) }, 30*time.Minute)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	res := decode(t, result(t, env))
	if res.Status != "succeeded" || res.Steps["deploy"].Status != "succeeded" {
		t.Errorf("status %s, deploy %+v; want succeeded, succeeded", res.Status, res.Steps["deploy"])
	}
	if during == nil || final == nil {
		t.Fatal("the queries did not run")
	}
	if w := during.Waiting(); len(w) != 1 || w[0].Step != "deploy" || w[0].Message != "Deploy?" {
		t.Errorf("waiting during the run: %+v, want deploy", w)
	}
	if why, ok := during.Refusal("early"); !ok || !strings.Contains(why, `step "deploy" is not waiting for a decision`) {
		t.Errorf("early decision: refused %v, %q", ok, why)
	}
	a := final.Decided("first")
	if a == nil || a.State != ApprovalApproved || a.By != "ann" || a.Reason != "go" {
		t.Fatalf("first decision: %+v, want approved by ann", a)
	}
	if why, ok := final.Refusal("second"); !ok || !strings.Contains(why, `approval "deploy" was already decided: approved by ann at `) || !strings.Contains(why, "(go)") {
		t.Errorf("second decision: refused %v, %q", ok, why)
	}
	if why, ok := final.Refusal("typo"); !ok || !strings.Contains(why, `step "deplyo" is not waiting`) {
		t.Errorf("misspelt decision: refused %v, %q", ok, why)
	}
	if len(final.Waiting()) != 0 {
		t.Errorf("still waiting: %+v", final.Waiting())
	}
}

func TestApprovalLateDecisionRefused(t *testing.T) {
	// The timeout counts from when the approval was asked and routes as
	// locally; a decision after it is refused.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": approveFlow + `
hold = step("hold", wait = "5h")
edge(deploy, hold, on = "failure")
edge(hold, END)
`}})
	env := newEnv(t)
	var final *Approvals
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(ApproveSignal, Decision{ID: "late", Step: "deploy", By: "ann"})
	}, 2*time.Hour)
	env.RegisterDelayedCallback(func() { final = queryApprovals(t, env) }, 3*time.Hour)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	res := decode(t, result(t, env))
	if res.Status != "succeeded" || res.Steps["deploy"].Code != "timeout" || res.Steps["hold"].Status != "succeeded" || res.Steps["ship"].Status == "succeeded" {
		t.Errorf("status %s, deploy %+v, hold %+v; want the timeout routed to hold", res.Status, res.Steps["deploy"], res.Steps["hold"])
	}
	if final == nil {
		t.Fatal("the query did not run")
	}
	if why, ok := final.Refusal("late"); !ok || !strings.Contains(why, `approval "deploy" is no longer waiting: timed out at `) {
		t.Errorf("late decision: refused %v, %q", ok, why)
	}
	if a := final.Approvals; len(a) != 1 || a[0].State != ApprovalTimedOut {
		t.Errorf("approvals %+v, want one timed out", a)
	}
}

func TestApprovalInChildFlow(t *testing.T) {
	// An approval of a child flow waits in the child workflow; Locate
	// finds it from the run's id, and the decision sent there decides it.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{
		"flow.star": `
flow(output = "child")
child = step("child", flow = "child.star")
`,
		"child.star": `
flow(output = "ship")
deploy = step("deploy", approve = "Deploy?")
ship = step("ship", fn = lambda r: "shipped by " + r.deploy.by)
chain(START, deploy, ship, END)
`}})
	env := newEnv(t)
	top := "default-test-workflow-id"
	var misspelt, none error
	env.RegisterDelayedCallback(func() {
		_, misspelt = Locate(context.Background(), envQuery(env), top, "deplyo")
		w, err := Locate(context.Background(), envQuery(env), top, "")
		if err != nil {
			t.Errorf("locate: %v", err)
			return
		}
		if w.Workflow != top+"/child#1.1" || w.Where() != "child › deploy" {
			t.Errorf("located %s in %s, want child › deploy in the child workflow", w.Where(), w.Workflow)
		}
		if err := env.SignalWorkflowByID(w.Workflow, ApproveSignal, Decision{Step: w.Step, Scope: w.Scope, Visit: w.Visit, By: "ann"}); err != nil {
			t.Error(err)
		}
	}, time.Minute)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	res := decode(t, result(t, env))
	if res.Status != "succeeded" || res.Output != "shipped by ann" {
		t.Errorf("status %s output %v, want succeeded, shipped by ann", res.Status, res.Output)
	}
	if c := res.Steps["child"].Child; c == nil || c.Steps["deploy"].Status != "succeeded" {
		t.Errorf("the child step's record lacks the child's steps: %+v", res.Steps["child"])
	}
	_, none = Locate(context.Background(), envQuery(env), top, "deploy")
	if misspelt == nil || !strings.Contains(misspelt.Error(), `step "deplyo" of run default-test-workflow-id is not waiting for a decision; the run waits for deploy (did you mean "deploy"?)`) {
		t.Errorf("misspelt step: %v", misspelt)
	}
	// Once the child has ended, the run waits for nothing.
	if none == nil || !strings.Contains(none.Error(), "not waiting for a decision; the run waits for no approval") {
		t.Errorf("after the run: %v", none)
	}
}

func TestApprovalsOfOneStepInAMap(t *testing.T) {
	// The approvals of one step in a map's items are told apart by their
	// place, as Where shows it.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
flow(inputs = {"envs": ["staging", "prod"]}, output = "m")
deploy = step("deploy", approve = "Deploy to {{ item }}?")
m = map("m", over = "inputs.envs", body = [deploy], concurrency = 2)
chain(START, m, END)
`}})
	env := newEnv(t)
	top := "default-test-workflow-id"
	var ambiguous error
	env.RegisterDelayedCallback(func() {
		_, ambiguous = Locate(context.Background(), envQuery(env), top, "deploy")
		// Each place as shown, or with "/" as for a local run.
		for _, where := range []string{"m[1]/deploy", "m[0] › deploy"} {
			w, err := Locate(context.Background(), envQuery(env), top, where)
			if err != nil {
				t.Errorf("locate %s: %v", where, err)
				return
			}
			env.SignalWorkflow(ApproveSignal, Decision{Step: w.Step, Scope: w.Scope, Visit: w.Visit, By: "ann", Reason: w.Where()})
		}
	}, time.Minute)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 2})
	res := decode(t, result(t, env))
	if res.Status != "succeeded" {
		t.Errorf("status %s, want succeeded", res.Status)
	}
	out, _ := res.Output.([]any)
	if len(out) != 2 || out[0].(map[string]any)["reason"] != "m[0] › deploy" || out[1].(map[string]any)["reason"] != "m[1] › deploy" {
		t.Errorf("the map's outputs %v, want each item decided for its own place", res.Output)
	}
	if ambiguous == nil || !strings.Contains(ambiguous.Error(), `waits for 2 approvals of step "deploy": name one as it is shown here: "m[0] › deploy", "m[1] › deploy"`) {
		t.Errorf("the step's name alone: %v", ambiguous)
	}
}
