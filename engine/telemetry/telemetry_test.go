package telemetry_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.starlark.net/starlark"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/telemetry/telemetrytest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

const secret = "s3cr3t-token-value-4242"

// provider returns a provider configured from the environment to export
// to rc.
func provider(t *testing.T, rc *telemetrytest.Receiver) *telemetry.Provider {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=team-"+secret)
	t.Setenv("OTEL_SERVICE_NAME", "skein-test")
	t.Setenv("DEPLOY_TOKEN", secret)
	p, err := telemetry.FromEnv(context.Background())
	if err != nil || p == nil {
		t.Fatalf("FromEnv: %v, %v", p, err)
	}
	return p
}

const tracedFlow = `
model("m", provider = "stub", answers = [
    {"match": "Summarize", "reply": "all good"},
    {"match": "Fix", "turns": [{"tool_calls": [{"name": "where", "arguments": {}}]}, {"reply": "fixed"}]},
])
flow(name = "traced", inputs = {"files": ["a", "b"]}, output = "summary")
where = tool("where", run = ["sh", "-c", "echo $TRACEPARENT"], help = "say where in the trace it runs")

flaky = step("flaky", shell = 'if [ "$SKEIN_ATTEMPT" -lt 2 ]; then echo "no $DEPLOY_TOKEN" >&2; exit 1; fi; echo "$TRACEPARENT"', retries = 1, backoff = "1ms")

tick = step("tick", fn = lambda r: r.loop.index)
def enough(it):
    return it.output >= 2
polish = loop("polish", body = [tick], until = "enough", max_iterations = 3)

one = step("one", run = ["echo", "{{ item }}"])
per_file = map("per_file", over = "inputs.files", body = [one])

child = step("child", flow = "child.star", inputs = {"n": 2})
gate = step("gate", approve = "Ship it?")
summary = step("summary", llm = "Summarize {{ flaky.stdout }}", model = "m")
fix = step("fix", agent = "Fix it", model = "m", tools = [where])

chain(START, flaky, polish, per_file, child, gate, summary, fix, END)
`

const childFlow = `
flow(name = "child", inputs = {"n": 1})
inner = step("inner", fn = lambda r: r.inputs.n * 2)
chain(START, inner, END)
`

type approve struct{}

func (approve) Ask(context.Context, *vm.EffectRequest, time.Time) (runs.Decision, bool) {
	return runs.Decision{Approved: true, By: "tester"}, true
}

// load writes files into a fresh directory and loads the first.
func load(t testing.TB, files ...string) *graphir.Graph {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < len(files); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := frontend.Load(filepath.Join(dir, files[0]), frontend.Options{Root: dir})
	if err := f.Err(); err != nil {
		t.Fatalf("the flow does not check: %v", err)
	}
	return f.Graph
}

func run(t *testing.T, p *telemetry.Provider, g *graphir.Graph, spec *runs.Spec, kv ...string) *vm.Result {
	t.Helper()
	given := map[string]starlark.Value{}
	for i := 0; i < len(kv); i += 2 {
		given[kv[i]] = starlark.String(kv[i+1])
	}
	in, err := vm.BindInputs(g, given)
	if err != nil {
		t.Fatal(err)
	}
	spec.Graph, spec.Inputs = g, in
	svc := &runs.Service{Telemetry: p}
	r, err := svc.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	r.OnEvent = func(ev *vm.Event) {
		if ev.Type == vm.ToolCalled {
			toolResults.Store(ev.Tool, ev.Result)
		}
	}
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return res
}

// toolResults are the results of the latest run's tool calls, by tool.
var toolResults sync.Map

// shown are the attributes a tree shows of each span.
var shown = []string{"skein.step.visit", "skein.step.attempt", "skein.step.status", "error.type", "skein.scope",
	"skein.loop.iteration", "skein.map.index", "gen_ai.operation.name", "gen_ai.request.model",
	"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "skein.run.status", "skein.inputs"}

// tree draws spans as an indented tree, children in the order of their
// names (map items run at once), each with the attributes shown and
// whether it failed.
func tree(spans []*tracepb.Span) string {
	kids := map[string][]*tracepb.Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[hex.EncodeToString(s.SpanId)] = true
	}
	var roots []*tracepb.Span
	for _, s := range spans {
		p := hex.EncodeToString(s.ParentSpanId)
		if !ids[p] {
			roots = append(roots, s)
			continue
		}
		kids[p] = append(kids[p], s)
	}
	var b strings.Builder
	var draw func(ss []*tracepb.Span, depth int)
	draw = func(ss []*tracepb.Span, depth int) {
		slices.SortFunc(ss, func(a, b *tracepb.Span) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return int(a.StartTimeUnixNano - b.StartTimeUnixNano)
		})
		for _, s := range ss {
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name)
			for _, k := range shown {
				for _, a := range s.Attributes {
					if a.Key == k {
						fmt.Fprintf(&b, " %s=%s", k, show(a.Value))
					}
				}
			}
			if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
				b.WriteString(" !error")
			}
			b.WriteByte('\n')
			draw(kids[hex.EncodeToString(s.SpanId)], depth+1)
		}
	}
	draw(roots, 0)
	return b.String()
}

func show(v *common.AnyValue) string {
	switch x := v.Value.(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *common.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *common.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, show(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return v.String()
}

func attr(s *tracepb.Span, k string) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			return show(a.Value)
		}
	}
	return ""
}

// TestSpanTree runs a flow with a retried task, a loop, a map, a child
// flow, an approval and a model call, and compares the tree of the spans
// the receiver got with testdata/tree.golden (UPDATE=1 rewrites it).
func TestSpanTree(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	p := provider(t, rc)
	g := load(t, "traced.star", tracedFlow, "child.star", childFlow)
	res := run(t, p, g, &runs.Spec{Ask: approve{}})
	if res.Status != vm.Succeeded {
		t.Fatalf("run %s: %v", res.Status, res.Error)
	}
	got := tree(rc.Spans())
	golden := filepath.Join("testdata", "tree.golden")
	if os.Getenv("UPDATE") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("span tree (-want +got):\n%s", d)
	}

	// One trace; the run's span carries the run's id and the flow's file,
	// a step's its declaration.
	var root *tracepb.Span
	for _, s := range rc.Spans() {
		if string(s.TraceId) != string(rc.Spans()[0].TraceId) {
			t.Errorf("span %s is in another trace", s.Name)
		}
		if len(s.ParentSpanId) == 0 {
			root = s
		}
		if s.Name == "shell flaky" && attr(s, "code.lineno") != "9" {
			t.Errorf("shell flaky: code.lineno %q, want 9", attr(s, "code.lineno"))
		}
		if s.Name == "fn inner" && !strings.HasSuffix(attr(s, "code.filepath"), "child.star") {
			t.Errorf("fn inner: code.filepath %q, want child.star's", attr(s, "code.filepath"))
		}
	}
	if root == nil || attr(root, "skein.run.id") != res.RunID {
		t.Fatalf("no run span with the run's id %s", res.RunID)
	}

	// The task's second attempt printed the TRACEPARENT it was given: its
	// attempt's span.
	var attempt2 *tracepb.Span
	for _, s := range rc.Spans() {
		if s.Name == "shell flaky" && attr(s, "skein.step.attempt") == "2" {
			attempt2 = s
		}
	}
	want2 := fmt.Sprintf("00-%x-%x-01", attempt2.TraceId, attempt2.SpanId)
	if got := strings.TrimSpace(outputOf(t, res, "flaky")); got != want2 {
		t.Errorf("the task's TRACEPARENT is %q, want %q", got, want2)
	}
	// An engine that does not see the spans names the attempt alike.
	if tp := telemetry.Traceparent(res.RunID, nil, nil, "flaky", 1, 2); tp != want2 {
		t.Errorf("Traceparent names %s, the attempt's span is %s", tp, want2)
	}
	// The agent's tool's process got its call's span.
	for _, s := range rc.Spans() {
		if s.Name == "execute_tool where" {
			want := fmt.Sprintf("00-%x-%x-01", s.TraceId, s.SpanId)
			if got, _ := toolResults.Load("where"); !strings.Contains(fmt.Sprint(got), want) {
				t.Errorf("the tool's TRACEPARENT is in %q, want %q", got, want)
			}
		}
	}
}

func outputOf(t *testing.T, res *vm.Result, step string) string {
	t.Helper()
	for _, s := range res.Steps {
		if m, ok := s.Output.(*stdlib.Map); ok && s.Name == step {
			v, _ := m.Lookup("stdout")
			if out, ok := v.(starlark.String); ok {
				return string(out)
			}
		}
	}
	t.Fatalf("no stdout of step %s", step)
	return ""
}

const leakyFlow = `
model("m", provider = "stub", answers = [{"match": "Summarize", "reply": "ok"}])
flow(name = "leaky", inputs = {"token": "none"})
ask = step("ask", llm = "Summarize {{ inputs.token }}", model = "m")
leak = step("leak", fn = lambda r: fail("bad token " + r.inputs.token))
chain(START, ask, leak, END)
`

// TestSecretsMasked: a secret of the environment that reaches an error
// message or a prompt (recorded on request), and the exporter's own
// headers, never appear in an attribute or a status.
func TestSecretsMasked(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	t.Setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
	p := provider(t, rc)
	g := load(t, "leaky.star", leakyFlow)
	if res := run(t, p, g, &runs.Spec{}, "token", secret); res.Status != vm.Failed {
		t.Fatalf("run %s, want failed", res.Status)
	}
	if rc.Headers().Get("X-Team") != "team-"+secret {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: %v", rc.Headers())
	}
	var status, prompt bool
	for _, s := range rc.Spans() {
		text := protojson.Format(s)
		if strings.Contains(text, secret) {
			t.Errorf("span %s holds the secret: %s", s.Name, text)
		}
		status = status || strings.Contains(s.Status.GetMessage(), "bad token ***")
		prompt = prompt || strings.Contains(attr(s, "gen_ai.input.messages"), "Summarize ***")
	}
	if !status || !prompt {
		t.Errorf("the secret was not met masked in a status (%v) and a prompt (%v): the test does not reach it", status, prompt)
	}
}

// TestEventsOnly: the spans made from a run's events alone, read back
// from their JSON as a remote engine's client reads a workflow's events
// (skein run --engine temporal), form the tree a local run's do.
func TestEventsOnly(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	p := provider(t, rc)
	g := load(t, "traced.star", tracedFlow, "child.star", childFlow)
	var mu sync.Mutex
	var lines [][]byte
	in, err := vm.BindInputs(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&runs.Service{Telemetry: p}).Start(&runs.Spec{Graph: g, Inputs: in, Ask: approve{}})
	if err != nil {
		t.Fatal(err)
	}
	r.OnEvent = func(ev *vm.Event) {
		mu.Lock()
		lines = append(lines, ev.AppendJSON(nil))
		mu.Unlock()
	}
	if res, _ := r.Run(context.Background()); res.Status != vm.Succeeded {
		t.Fatalf("run %s: %v", res.Status, res.Error)
	}
	p.Shutdown(context.Background())
	local := tree(rc.Spans())

	rc2 := telemetrytest.NewReceiver(t)
	p2 := provider(t, rc2)
	remote := p2.Start(g, telemetry.RunInfo{Engine: "temporal"})
	for _, l := range lines {
		ev, err := vm.DecodeEvent(l)
		if err != nil {
			t.Fatal(err)
		}
		remote.Event(&ev)
	}
	remote.End(nil)
	p2.Shutdown(context.Background())
	if d := cmp.Diff(local, tree(rc2.Spans())); d != "" {
		t.Errorf("the tree from the events alone (-local +events):\n%s", d)
	}
	// The tool call's span has the id its process was handed on a
	// remote engine (ToolTraceparent), and says the call's id.
	var tool *tracepb.Span
	var runID, callID string
	for _, l := range lines {
		ev, _ := vm.DecodeEvent(l)
		if ev.Type == vm.ToolCalled {
			callID = ev.CallID
		}
		if ev.Type == vm.RunStarted && len(ev.Flow) == 0 {
			runID = ev.RunID
		}
	}
	for _, s := range rc2.Spans() {
		if s.Name == "execute_tool where" {
			tool = s
		}
	}
	if tool == nil || callID == "" {
		t.Fatalf("no tool call span (%v) or no call id in its event (%q)", tool, callID)
	}
	want := telemetry.ToolTraceparent(runID, nil, nil, "fix", 1, 1, 1, callID)
	if got := "00-" + hex.EncodeToString(tool.TraceId) + "-" + hex.EncodeToString(tool.SpanId) + "-01"; got != want {
		t.Errorf("the tool call's span is %s, its process was handed %s", got, want)
	}
	if got := attr(tool, "gen_ai.tool.call.id"); got != callID {
		t.Errorf("gen_ai.tool.call.id %q, want %q", got, callID)
	}
}

const gateFlow = `
flow(name = "gated")
build = step("build", run = ["echo", "built"])
gate = step("gate", approve = "Ship it?")
ship = step("ship", run = ["echo", "shipped"])
chain(START, build, gate, ship, END)
`

// TestResumeLinks: a run parked at an approval ends its trace with the
// approval's span waiting; its resume is a trace of its own whose run
// span links to the parked run's.
func TestResumeLinks(t *testing.T) {
	rc := telemetrytest.NewReceiver(t)
	p := provider(t, rc)
	dir := t.TempDir()
	g := load(t, "gated.star", gateFlow)
	st, err := store.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := &runs.Service{Store: st, Telemetry: p}
	in, _ := vm.BindInputs(g, nil)
	var sources []store.Source
	for _, f := range g.Files {
		text, _ := os.ReadFile(f)
		sources = append(sources, store.Source{Path: f, Text: text})
	}
	r, err := svc.Start(&runs.Spec{Graph: g, Inputs: in, Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := r.Run(context.Background())
	if res.Status != vm.Waiting {
		t.Fatalf("run %s, want waiting", res.Status)
	}
	p.Flush(context.Background())
	rec, err := st.Get(res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := svc.Resume(&runs.ResumeSpec{Run: rec, Options: rec.Options, Ask: approve{}})
	if err != nil {
		t.Fatal(err)
	}
	if res2, _ := next.Run(context.Background()); res2.Status != vm.Succeeded {
		t.Fatalf("resumed run %s: %v", res2.Status, res2.Error)
	}
	p.Shutdown(context.Background())

	first := telemetry.RunSpan(res.RunID)
	firstTrace, firstSpan := first.TraceID(), first.SpanID()
	var parked, resumed *tracepb.Span
	for _, s := range rc.Spans() {
		switch {
		case s.Name == "run gated" && len(s.Links) == 0:
			parked = s
		case s.Name == "run gated":
			resumed = s
		case s.Name == "approval gate" && attr(s, "skein.step.status") == "waiting":
			if string(s.TraceId) != string(firstTrace[:]) {
				t.Errorf("the waiting approval is not in the parked run's trace")
			}
		}
	}
	if parked == nil || resumed == nil {
		t.Fatalf("want a parked and a resumed run span: %s", tree(rc.Spans()))
	}
	if string(parked.TraceId) != string(firstTrace[:]) || string(parked.SpanId) != string(firstSpan[:]) {
		t.Errorf("the parked run's span is not RunSpan(%s)", res.RunID)
	}
	if string(resumed.TraceId) == string(parked.TraceId) {
		t.Error("the resumed run is in the parked run's trace")
	}
	l := resumed.Links[0]
	if string(l.TraceId) != string(parked.TraceId) || string(l.SpanId) != string(parked.SpanId) || attr(resumed, "skein.run.resumes") != res.RunID {
		t.Errorf("the resumed run links to %x/%x, not the parked run's span", l.TraceId, l.SpanId)
	}
}

// TestMetrics: a run exports, beside its spans, the run's duration, each
// step visit's, each model call's and its tokens, as OTLP metrics
// (JSON over HTTP); OTEL_METRICS_EXPORTER=none turns them off and leaves
// the spans.
func TestMetrics(t *testing.T) {
	g := load(t, "traced.star", tracedFlow, "child.star", childFlow)
	rc := telemetrytest.NewReceiver(t)
	p := provider(t, rc)
	run(t, p, g, &runs.Spec{Ask: approve{}})
	p.Shutdown(context.Background())
	// Encoded as the build says: JSON, or protobuf by the SDK's own
	// exporter with -tags otlp.
	encodings := rc.MetricsEncodings()
	if len(encodings) == 0 {
		t.Fatal("no metrics posted")
	}
	for _, e := range encodings {
		if e != metricsEncoding {
			t.Errorf("metrics posted as %s, want %s", e, metricsEncoding)
		}
	}
	got := map[string][]string{}
	for _, m := range rc.Metrics() {
		h := m.GetHistogram()
		if h == nil {
			t.Errorf("metric %s is not a histogram", m.Name)
			continue
		}
		for _, dp := range h.DataPoints {
			var attrs []string
			for _, a := range dp.Attributes {
				if a.Key == "skein.flow" || a.Key == "skein.run.status" || a.Key == "skein.step.name" || a.Key == "skein.step.status" || a.Key == "gen_ai.token.type" || a.Key == "skein.engine" {
					attrs = append(attrs, a.Key+"="+show(a.Value))
				}
			}
			slices.Sort(attrs)
			got[m.Name] = append(got[m.Name], fmt.Sprintf("%s count=%d sum>0=%v", strings.Join(attrs, ","), dp.Count, dp.GetSum() > 0))
		}
		if m.Name == "skein.run.duration" && m.Unit != "s" {
			t.Errorf("skein.run.duration in %q, want s", m.Unit)
		}
	}
	for name, want := range map[string]string{
		"skein.run.duration":        "skein.engine=local,skein.flow=traced,skein.run.status=succeeded count=1 sum>0=true",
		"skein.step.duration":       "skein.flow=traced,skein.step.name=flaky,skein.step.status=succeeded count=1 sum>0=true",
		"gen_ai.client.token.usage": "gen_ai.token.type=input count=",
	} {
		var found bool
		for _, g := range got[name] {
			if strings.HasPrefix(g, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s point %q among %q", name, want, got[name])
		}
	}
	if len(got["gen_ai.client.operation.duration"]) == 0 {
		t.Errorf("no gen_ai.client.operation.duration: %v", got)
	}

	rc2 := telemetrytest.NewReceiver(t)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	p2 := provider(t, rc2)
	run(t, p2, g, &runs.Spec{Ask: approve{}})
	p2.Shutdown(context.Background())
	if n := len(rc2.Metrics()); n != 0 || len(rc2.Spans()) == 0 {
		t.Errorf("OTEL_METRICS_EXPORTER=none: %d metrics, %d spans", n, len(rc2.Spans()))
	}
}

// The ids of a step attempt's span and of a tool call's are hashed from
// where they are: they must not change from one skein to the next (a
// Temporal run continued on newer workers, a task's TRACEPARENT, would
// leave the trace).
func TestSpanIDsStable(t *testing.T) {
	flow, scope := []string{"kid#2"}, []string{"l#3"}
	if got, want := telemetry.Traceparent("run-1", flow, scope, "fix", 2, 3), "00-fd317cd84b46fbc31c9f7289e6ebf10a-e79ef64692b0e76f-01"; got != want {
		t.Errorf("attempt's traceparent %s, want %s", got, want)
	}
	if got, want := telemetry.ToolTraceparent("run-1", flow, scope, "fix", 2, 3, 4, "call_9"), "00-fd317cd84b46fbc31c9f7289e6ebf10a-39b668dadcf9e406-01"; got != want {
		t.Errorf("tool call's traceparent %s, want %s", got, want)
	}
}
