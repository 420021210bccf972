package temporal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// modelFlow calls models every way a flow can: an llm step, one with a
// schema, an LLM router, a judged loop and an agent whose tool calls run
// as tasks.
const modelFlow = `
flow(inputs = {"text": "the build is red"}, output = "report")
echo = tool("echo", run = ["printf", "[%s]", "{{ args.text }}"], params = {"text": "string"})
summary = step("summary", llm = "summarize {{ inputs.text }}", system = "Be brief.")
facts = step("facts", llm = "facts of {{ summary }}", schema = {"type": "object", "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}, "required": ["kind", "n"]})
triage = router("triage", llm = "route {{ facts.kind }}", routes = {"bug": "fix", "feature": "plan"})
fix = step("fix", agent = "fix the bug", tools = [echo])
plan = step("plan", fn = lambda r: "planned")
draft = step("draft", llm = "draft {{ loop.iteration }} feedback={{ loop.feedback }}")
polish = loop("polish", body = [draft], until = judge("the draft is short"), max_iterations = 4)
report = step("report", fn = lambda r: [r.summary, r.facts, r.triage, r.fix, r.polish], join = "or")
edge(START, summary)
edge(summary, facts)
edge(facts, triage)
edge(fix, polish)
edge(polish, report)
edge(plan, report)
edge(report, END)
`

func modelServer() *modeltest.Server {
	return modeltest.New(
		modeltest.Rule{Match: "summarize", Replies: []modeltest.Reply{{Content: "red build", Prompt: 11, Completion: 2}}},
		modeltest.Rule{Match: "facts of", Replies: []modeltest.Reply{{Content: `{"kind": "bug", "n": 2}`}}},
		modeltest.Rule{Match: "route", Replies: []modeltest.Reply{{Content: `{"label": "bug"}`}}},
		modeltest.Rule{Match: "fix the bug", Replies: []modeltest.Reply{
			// One call a turn: calls of one turn run at once, and their
			// record is in the order they finish.
			{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text": "patched"}`}}},
			{ToolCalls: []modeltest.ToolCall{{ID: "c2", Name: "echo", Arguments: `{"text": "tested"}`}}},
			{Content: "fixed it"},
		}},
		modeltest.Rule{Match: "Condition: the draft is short", Replies: []modeltest.Reply{
			{Content: `{"verdict": "CONTINUE", "reason": "shorter"}`}, {Content: `{"verdict": "STOP", "reason": "ok"}`}}},
		modeltest.Rule{Match: "draft", Replies: []modeltest.Reply{{Content: "a draft"}}},
	)
}

// canonicalResult is a result's JSON without durations and run ids.
func canonicalResult(t *testing.T, b []byte) any {
	t.Helper()
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	var strip func(x any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			delete(x, "duration_ms")
			delete(x, "run_id")
			for _, v := range x {
				strip(v)
			}
		case []any:
			for _, v := range x {
				strip(v)
			}
		}
	}
	strip(x)
	return x
}

func TestModelCallsBothEngines(t *testing.T) {
	// The model calls run as activities on the worker (the API key is
	// the worker's), the agent's tool calls as task activities: the
	// result and what the model server receives are those of a local
	// run. With continue-as-new every few effects too.
	dir := t.TempDir()
	path := filepath.Join(dir, "flow.star")
	if err := os.WriteFile(path, []byte(modelFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	f := frontend.Load(path, frontend.Options{})
	if f.Graph == nil {
		t.Fatalf("load: %v", f.Err())
	}
	g, sources := f.Graph, f.Sources.ByName()
	const key = "sk-worker-key"

	ls := modelServer()
	defer ls.Close()
	env := append(os.Environ(), "SKEIN_MODEL=m1", "SKEIN_BASE_URL="+ls.BaseURL(), "OPENAI_API_KEY="+key)
	res, err := vm.Run(context.Background(), g, nil, vm.Options{Parallel: 1, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != vm.Succeeded {
		t.Fatalf("local run %s: %v", res.Status, res.Error)
	}
	lb, _ := res.MarshalJSON()
	local := canonicalResult(t, lb)

	for _, every := range []int{0, 2} {
		ts := modelServer()
		defer ts.Close()
		in := RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, ContinueEvery: every,
			ModelEnv: []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ts.BaseURL()}}
		var out *RunOutput
		if every > 0 {
			var n int
			out, n = runContinuedWith(t, in, &Activities{Env: append(os.Environ(), "OPENAI_API_KEY="+key)}, nil)
			if n == 0 {
				t.Fatal("the run never continued as new")
			}
		} else {
			e := newEnvWith(t, &Activities{Env: append(os.Environ(), "OPENAI_API_KEY="+key)})
			e.ExecuteWorkflow(WorkflowName, in)
			if err := e.GetWorkflowError(); err != nil {
				t.Fatalf("workflow: %v", err)
			}
			out = &RunOutput{}
			if err := e.GetWorkflowResult(out); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(local, canonicalResult(t, out.Result)); diff != "" {
			t.Errorf("continue every %d: local (-) and temporal (+) differ:\n%s", every, diff)
		}
		lr, tr := ls.Requests(), ts.Requests()
		if len(lr) != len(tr) {
			t.Fatalf("local made %d requests, temporal %d", len(lr), len(tr))
		}
		for i := range lr {
			if diff := cmp.Diff(lr[i].Body, tr[i].Body); diff != "" {
				t.Errorf("request %d differs:\n%s", i, diff)
			}
			if tr[i].Authorization != "Bearer "+key {
				t.Errorf("request %d: authorization %q", i, tr[i].Authorization)
			}
		}
	}
}

func TestModelKeyMissingOnWorker(t *testing.T) {
	// A worker without the model's key fails the step with the
	// variable's name (a failure the flow can route).
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
model("remote", model = "m1", base_url = "https://models.example.invalid/v1", api_key_env = "SKEIN_TEST_KEY")
ask = step("ask", llm = "hello", model = "remote")
recover = step("recover", fn = lambda r: r.ask.error)
edge(START, ask)
edge(ask, END)
edge(ask, recover, on = "failure")
edge(recover, END)
`}})
	e := newEnvWith(t, &Activities{Env: []string{"PATH=/usr/bin:/bin"}})
	e.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out RunOutput
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	res := decode(t, out.Result)
	if res.Status != "succeeded" || res.Steps["ask"].Code != string(model.CodeModel) || !strings.Contains(res.Output.(string), "set SKEIN_TEST_KEY") {
		t.Errorf("status %s, ask %+v, output %v", res.Status, res.Steps["ask"], res.Output)
	}
}

func TestModelNotConfigured(t *testing.T) {
	// No SKEIN_MODEL where the run started: the call fails saying so.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `ask = step("ask", llm = "hello")`}})
	out, _ := runContinuedWith(t, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1}, &Activities{}, nil)
	res := decode(t, out.Result)
	if res.Status != "failed" || !strings.Contains(res.Steps["ask"].Code, string(model.CodeModel)) {
		t.Fatalf("status %s, ask %+v", res.Status, res.Steps["ask"])
	}
	var full struct {
		Steps map[string]struct{ Error string } `json:"steps"`
	}
	json.Unmarshal(out.Result, &full)
	if e := full.Steps["ask"].Error; !strings.Contains(e, "no model configured where the run started: set SKEIN_MODEL") {
		t.Errorf("error %q", e)
	}
}

func TestModelCassetteOnWorker(t *testing.T) {
	// A worker answering from a cassette (skein worker --cassette
	// --replay-only) needs no server: what one run recorded, the next
	// replays.
	s := modelServer()
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": modelFlow}})
	cassette := filepath.Join(t.TempDir(), "models.json")
	in := RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1,
		ModelEnv: []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + s.BaseURL()}}
	var results []any
	for _, replayOnly := range []bool{false, true} {
		var live model.Provider
		if !replayOnly {
			live = &model.Client{}
		}
		if replayOnly {
			s.Close() // nothing may reach it now
		}
		c, err := model.OpenCassette(cassette, replayOnly, live)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := runContinuedWith(t, in, &Activities{Models: c}, nil)
		results = append(results, canonicalResult(t, out.Result))
		if st := decode(t, out.Result).Status; st != "succeeded" {
			t.Fatalf("replay only %v: status %s\n%s", replayOnly, st, out.Result)
		}
	}
	if diff := cmp.Diff(results[0], results[1]); diff != "" {
		t.Errorf("recorded (-) and replayed (+) differ:\n%s", diff)
	}
}

func TestModelChildFlowBudget(t *testing.T) {
	// A child flow's model calls count in its parent's usage and spend
	// from the run tree's one token budget, as locally: with a budget of
	// 5, the child's call spends it and the parent's next call is
	// refused (budget_exceeded).
	for _, limit := range []string{"", "max_tokens = 5"} {
		t.Run("flow("+limit+")", func(t *testing.T) {
			rules := func() *modeltest.Server {
				return modeltest.New(
					modeltest.Rule{Match: "child question", Replies: []modeltest.Reply{{Content: "kid answer", Prompt: 10, Completion: 2}}},
					modeltest.Rule{Match: "after", Replies: []modeltest.Reply{{Content: "done", Prompt: 3, Completion: 1}}},
				)
			}
			g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{
				"flow.star": `
flow(` + limit + `)
kid = step("kid", flow = "child.star")
after = step("after", llm = "after {{ kid }}")
chain(START, kid, after, END)
`,
				"child.star": `
flow(output = "ask")
ask = step("ask", llm = "child question")
`}})
			ls := rules()
			defer ls.Close()
			res, err := vm.Run(context.Background(), g, nil, vm.Options{Parallel: 1,
				Env: append(os.Environ(), "SKEIN_MODEL=m1", "SKEIN_BASE_URL="+ls.BaseURL())})
			if err != nil {
				t.Fatal(err)
			}
			if limit != "" && (res.Error == nil || res.Error.Code != model.CodeBudget) {
				t.Fatalf("local: status %s, error %v; want budget_exceeded", res.Status, res.Error)
			}
			lb, _ := res.MarshalJSON()
			ts := rules()
			defer ts.Close()
			out, _ := runContinuedWith(t, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1,
				ModelEnv: []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ts.BaseURL()}}, &Activities{}, nil)
			if diff := cmp.Diff(canonicalResult(t, lb), canonicalResult(t, out.Result)); diff != "" {
				t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
			}
		})
	}
}

// TestToolApprovalBySignal: on Temporal a tool call with approve= waits in
// the workflow for a decision signalled by the tool's name; approved it
// runs as a task activity, rejected the model is told so as the call's
// result, as locally.
func TestToolApprovalBySignal(t *testing.T) {
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
sh = tool("sh", run = ["sh", "-c", "{{ args.cmd }}"], params = {"cmd": "string"}, approve = "Run {{ args.cmd }}?")
fix = step("fix", agent = "fix it", tools = [sh])
chain(START, fix, END)
`}})
	server := func() *modeltest.Server {
		return modeltest.New(modeltest.Rule{Match: "fix it", Replies: []modeltest.Reply{
			{ToolCalls: []modeltest.ToolCall{{ID: "a", Name: "sh", Arguments: `{"cmd": "echo ran"}`}}},
			{ToolCalls: []modeltest.ToolCall{{ID: "b", Name: "sh", Arguments: `{"cmd": "echo danger"}`}}},
			{Content: "done"},
		}})
	}
	ts := server()
	defer ts.Close()
	const key = "sk-worker-key"
	in := RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1,
		ModelEnv: []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ts.BaseURL()}}
	e := newEnvWith(t, &Activities{Env: append(os.Environ(), "OPENAI_API_KEY="+key)})
	var waiting []*Approval
	e.RegisterDelayedCallback(func() {
		v, err := e.QueryWorkflow(ApprovalsQuery)
		if err == nil {
			var as Approvals
			if v.Get(&as) == nil {
				waiting = as.Waiting()
			}
		}
		e.SignalWorkflow(ApproveSignal, Decision{Step: "sh", By: "ann"})
	}, time.Minute)
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(ApproveSignal, Decision{Step: "sh", By: "ann", Reject: true, Reason: "too risky"})
	}, 2*time.Minute)
	e.ExecuteWorkflow(WorkflowName, in)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	out := &RunOutput{}
	if err := e.GetWorkflowResult(out); err != nil {
		t.Fatal(err)
	}
	res := decode(t, out.Result)
	if res.Status != "succeeded" {
		t.Fatalf("status %s\n%s", res.Status, out.Result)
	}
	if len(waiting) != 1 || waiting[0].Message != "Run echo ran?" || waiting[0].Where() != "fix@1.1 › sh" {
		t.Errorf("waiting %+v", waiting)
	}
	reqs := ts.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	if !strings.Contains(reqs[1].Raw, `"content":"ran\n"`) {
		t.Errorf("the approved call's result is not in the second request: %s", reqs[1].Raw)
	}
	if !strings.Contains(reqs[2].Raw, `the call was not run: rejected by ann: too risky`) {
		t.Errorf("the rejection is not in the third request: %s", reqs[2].Raw)
	}
}
