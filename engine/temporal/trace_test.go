package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/skeinlang/skein/engine/runs"

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

// spanTree draws spans as an indented tree, children in the order of
// their names and attributes, each with its events' names; spans whose
// parent is not among them are roots.
func spanTree(spans tracetest.SpanStubs) string {
	kids := map[trace.SpanID][]tracetest.SpanStub{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if !ids[s.Parent.SpanID()] {
			roots = append(roots, s)
			continue
		}
		kids[s.Parent.SpanID()] = append(kids[s.Parent.SpanID()], s)
	}
	line := func(s tracetest.SpanStub) string {
		l := s.Name
		for _, a := range s.Attributes {
			switch a.Key {
			case "skein.step.visit", "skein.step.attempt", "skein.scope", "skein.run.status", "skein.step.status", "temporal.workflow.executions":
				l += " " + string(a.Key) + "=" + a.Value.String()
			}
		}
		for _, e := range s.Events {
			l += " @" + e.Name
		}
		return l
	}
	var b strings.Builder
	var draw func(ss []tracetest.SpanStub, depth int)
	draw = func(ss []tracetest.SpanStub, depth int) {
		slices.SortFunc(ss, func(a, b tracetest.SpanStub) int { return strings.Compare(line(a), line(b)) })
		for _, s := range ss {
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), line(s))
			draw(kids[s.SpanContext.SpanID()], depth+1)
		}
	}
	draw(roots, 0)
	return b.String()
}

// A run no client follows (Spans: skein run --detach) has its spans
// made by the workflow, in one trace with one run span, whether or not
// its workflow and its child flows' workflows continue as new: the tree
// is the same, each span once, the run's span and each child flow's
// marked once per continuation.
func TestWorkflowSpansAcrossContinueAsNew(t *testing.T) {
	sc := continueScenarios[3] // child flows in a loop, a loop in each child
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func() *telemetry.Provider) { spanProvider = f }(spanProvider)
	spanProvider = func() *telemetry.Provider { return p }

	_, in := runScenario(t, sc)
	in.Spans, in.Traced = true, true
	runContinued(t, in)
	once := exp.GetSpans()
	exp.Reset()
	in.ContinueEvery = 3
	_, n := runContinued(t, in)
	if n < 2 {
		t.Fatalf("continued %d times, want several", n)
	}
	continued := exp.GetSpans()

	strip := func(s string) string { // the continuations' marks
		s = regexp.MustCompile(` temporal\.workflow\.executions=\d+`).ReplaceAllString(s, "")
		return strings.ReplaceAll(s, " @continued_as_new", "")
	}
	want, got := spanTree(once), spanTree(continued)
	if d := cmp.Diff(want, strip(got)); d != "" {
		t.Errorf("span trees (-one execution +continued as new):\n%s", d)
	}
	if strings.Contains(want, "continued_as_new") {
		t.Errorf("a run that did not continue as new is marked:\n%s", want)
	}
	seen := map[trace.SpanID]bool{}
	var roots int
	for _, s := range continued {
		if seen[s.SpanContext.SpanID()] {
			t.Errorf("span %s exported twice", s.Name)
		}
		seen[s.SpanContext.SpanID()] = true
		if s.SpanContext.TraceID() != continued[0].SpanContext.TraceID() {
			t.Errorf("span %s in trace %s, not %s", s.Name, s.SpanContext.TraceID(), continued[0].SpanContext.TraceID())
		}
	}
	for _, s := range continued {
		if !seen[s.Parent.SpanID()] {
			roots++
		}
	}
	if roots != 1 {
		t.Errorf("%d spans without a parent among them, want the run's alone:\n%s", roots, got)
	}
	// The run's span, and each child flow's (its loop of 7 tasks
	// continues every 3 effects), carry their continuations.
	marks := map[string]int{}
	for _, s := range continued {
		for _, e := range s.Events {
			if e.Name == "continued_as_new" {
				marks[s.Name]++
			}
		}
	}
	if marks["run flow"] != n {
		t.Errorf("the run's span has %d continued_as_new events, want %d:\n%s", marks["run flow"], n, got)
	}
	if marks["run child"] < 8*2 {
		t.Errorf("the child flows' spans have %d continued_as_new events, want 2 or more each of 8:\n%s", marks["run child"], got)
	}
}

// Workers with no traces configured make no spans: a detached run's
// workflow (Spans) with no provider runs as any other, and carries no
// spans across its continue-as-new.
func TestWorkflowSpansNoProvider(t *testing.T) {
	defer func(f func() *telemetry.Provider) { spanProvider = f }(spanProvider)
	spanProvider = func() *telemetry.Provider { return nil }
	sc := continueScenarios[3] // child flows in a loop, a loop in each child
	local, in := runScenario(t, sc)
	in.Spans, in.Traced, in.ContinueEvery = true, true, 3
	var executions int
	for ; ; executions++ {
		env := newEnvWith(t, &Activities{})
		env.ExecuteWorkflow(WorkflowName, in)
		var next RunInput
		if !continued(t, env.GetWorkflowError(), &next) {
			remote := decode(t, output(t, env).Result)
			if d := cmp.Diff(local.WithoutTimes(), remote.WithoutTimes()); d != "" {
				t.Errorf("local (-) and temporal with no span provider (+) differ:\n%s", d)
			}
			break
		}
		if next.SpanCarry != nil {
			t.Errorf("execution %d carried spans on with no provider: %+v", executions, next.SpanCarry)
		}
		in = next
	}
	if executions == 0 {
		t.Fatal("the run did not continue as new")
	}
}

// startClient is a Temporal client that starts no workflow: it keeps
// the input of the one asked for.
type startClient struct {
	client.Client
	in RunInput
}

func (c *startClient) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	c.in = args[0].(RunInput)
	return startedRun{id: o.ID}, nil
}

func (c *startClient) OperatorService() operatorservice.OperatorServiceClient { return noOperator{} }

func (c *startClient) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	return nil, errors.New("no server")
}

type startedRun struct {
	client.WorkflowRun
	id string
}

func (r startedRun) GetID() string { return r.id }

type noOperator struct {
	operatorservice.OperatorServiceClient
}

func (noOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return nil, errors.New("no server")
}

// An attached run's spans are made by the client alone: the run Start
// starts asks the workflow for spans (Spans) only when it is detached,
// and for its tasks' TRACEPARENT (Traced) when traces are configured.
func TestStartAsksWorkflowSpansWhenDetached(t *testing.T) {
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `chain(START, step("t", run = ["true"]), END)`}})
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func() *telemetry.Provider) { spanProvider = f }(spanProvider)
	for _, tc := range []struct {
		traced, detach bool
	}{{true, false}, {true, true}, {false, false}, {false, true}} {
		spanProvider = func() *telemetry.Provider { return nil }
		if tc.traced {
			spanProvider = func() *telemetry.Provider { return p }
		}
		c := &startClient{}
		r, err := NewEngine(NewClient(c, "test", "default"), "q").Start(context.Background(), &runs.Spec{Graph: g, Named: sources, Detach: tc.detach})
		if err != nil {
			t.Fatal(err)
		}
		r.(*remote).tel.End(nil)
		if c.in.Traced != tc.traced || c.in.Spans != (tc.traced && tc.detach) {
			t.Errorf("traced %v, detached %v: the workflow's input has Traced %v, Spans %v", tc.traced, tc.detach, c.in.Traced, c.in.Spans)
		}
	}
}
