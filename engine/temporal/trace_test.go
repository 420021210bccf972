package temporal

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/model/modeltest"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// A traced run's tasks, a child flow's included, get the TRACEPARENT of
// their attempt's span as the client names it from the run's events; an
// untraced run's get none.
func TestTracedTaskGetsTraceparent(t *testing.T) {
	for _, traced := range []bool{true, false} {
		_, in := runScenario(t, temporaltest.Scenario{Files: map[string]string{
			"flow.star":      `chain(START, step("kid", flow = "sub/child.star"), END)`,
			"sub/child.star": `flow(output = "t")` + "\n" + `chain(START, step("t", run = ["sh", "-c", "echo $SKEIN_RUN_ID ${TRACEPARENT:-none}"]), END)`,
		}})
		in.Traced = traced
		out := decode(t, runTemporal(t, in).Result)
		m, _ := out.Steps["kid"].Output.(map[string]any)
		got := strings.Fields(strings.TrimSpace(m["stdout"].(string)))
		if len(got) != 2 {
			t.Fatalf("the task printed %q", m["stdout"])
		}
		want := "none"
		if traced {
			want = telemetry.Traceparent(got[0], []string{"kid"}, nil, "t", 1, 1)
		}
		if got[1] != want {
			t.Errorf("traced %v: the task's TRACEPARENT is %s, want %s", traced, got[1], want)
		}
	}
}

// An agent's tool call that runs as a task gets the TRACEPARENT of its
// own tool-call span, as the client names it from the run's tool_call
// event, not its step attempt's: its process joins under the call, as on
// the local engine.
func TestTracedToolCallGetsItsSpan(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "flow.star")
	const flow = `
say = tool("say", run = ["sh", "-c", "echo $SKEIN_RUN_ID $TRACEPARENT"], help = "where it runs")
fix = step("fix", agent = "fix the bug", tools = [say])
chain(START, fix, END)
`
	if err := os.WriteFile(path, []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	f := frontend.Load(path, frontend.Options{})
	if f.Graph == nil {
		t.Fatalf("load: %v", f.Err())
	}
	ms := modeltest.New(modeltest.Rule{Match: "fix the bug", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "call-7", Name: "say", Arguments: `{}`}}},
		{Content: "fixed it"},
	}})
	defer ms.Close()
	in := RunInput{Flow: f.Graph.File, Root: f.Graph.Root, Sources: f.Sources.ByName(), Parallel: 1, Traced: true,
		ModelEnv: []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ms.BaseURL()}}
	e := newEnvWith(t, &Activities{Env: append(os.Environ(), "OPENAI_API_KEY=sk-test")})
	e.ExecuteWorkflow(WorkflowName, in)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	reqs := ms.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	// The second turn's request carries the tool's output.
	m := regexp.MustCompile(`([A-Za-z0-9_.:-]+) (00-[0-9a-f]{32}-[0-9a-f]{16}-01)`).FindStringSubmatch(reqs[1].Raw)
	if m == nil {
		t.Fatalf("the tool printed no run id and traceparent: %s", reqs[1].Raw)
	}
	runID, got := m[1], m[2]
	if want := telemetry.ToolTraceparent(runID, nil, nil, "fix", 1, 1, 1, "call-7"); got != want {
		t.Errorf("the tool's TRACEPARENT is %s, want its call's span %s (its attempt's is %s)", got, want,
			telemetry.Traceparent(runID, nil, nil, "fix", 1, 1))
	}
}
