package servertest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/skeinlang/skein/engine/telemetry/telemetrytest"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// shownAttrs are the attributes a span tree shows of each span.
var shownAttrs = []string{"skein.step.visit", "skein.step.attempt", "skein.step.status", "error.type", "skein.scope",
	"skein.loop.iteration", "skein.map.index", "gen_ai.operation.name", "gen_ai.request.model",
	"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "skein.run.status", "skein.inputs"}

// spanTree draws spans as an indented tree, children in the order of
// their names (map items run at once), each with the attributes shown
// and whether it failed.
func spanTree(spans []*tracepb.Span) string {
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
			if c := strings.Compare(spanAttr(a, "skein.step.attempt"), spanAttr(b, "skein.step.attempt")); c != 0 {
				return c
			}
			return strings.Compare(spanAttr(a, "skein.scope"), spanAttr(b, "skein.scope"))
		})
		for _, s := range ss {
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name)
			for _, k := range shownAttrs {
				if v, ok := lookupAttr(s, k); ok {
					fmt.Fprintf(&b, " %s=%s", k, v)
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

func showValue(v *common.AnyValue) string {
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
			parts = append(parts, showValue(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return v.String()
}

func lookupAttr(s *tracepb.Span, k string) (string, bool) {
	for _, a := range s.Attributes {
		if a.Key == k {
			return showValue(a.Value), true
		}
	}
	return "", false
}

func spanAttr(s *tracepb.Span, k string) string {
	v, _ := lookupAttr(s, k)
	return v
}

// tracedFlow has a retried task that prints its TRACEPARENT, a loop, a
// map, a child flow, a stub model's llm step and an agent calling a tool.
const tracedFlow = `
model("m", provider = "stub", answers = [
    {"match": "Summarize", "reply": "all good"},
    {"match": "Fix", "turns": [{"tool_calls": [{"name": "where", "arguments": {}}]}, {"reply": "fixed"}]},
])
flow(name = "traced", inputs = {"files": ["a", "b"]}, output = "summary")
where = tool("where", run = ["echo", "here"], help = "say where it runs")

flaky = step("flaky", shell = 'if [ "$SKEIN_ATTEMPT" -lt 2 ]; then echo "not yet" >&2; exit 1; fi; echo "$TRACEPARENT"', retries = 1, backoff = "1ms")

tick = step("tick", fn = lambda r: r.loop.index)
def enough(it):
    return it.output >= 2
polish = loop("polish", body = [tick], until = "enough", max_iterations = 3)

one = step("one", run = ["echo", "{{ item }}"])
per_file = map("per_file", over = "inputs.files", body = [one])

child = step("child", flow = "child.star", inputs = {"n": 2})
summary = step("summary", llm = "Summarize {{ flaky.stdout }}", model = "m")
fix = step("fix", agent = "Fix it", model = "m", tools = [where])

chain(START, flaky, polish, per_file, child, summary, fix, END)
`

const tracedChild = `
flow(name = "child", inputs = {"n": 1})
inner = step("inner", fn = lambda r: r.inputs.n * 2)
chain(START, inner, END)
`

// TestTraceShapeBothEngines runs one flow (a retried task, a loop, a
// map, a child flow, a stub model's llm step and an agent's tool call)
// with skein run on the local engine and with skein run --engine
// temporal on the dev server, each exporting its spans over OTLP/HTTP to
// a receiver of its own, and compares the two span trees (names,
// parents, key attributes): they are one shape. The worker, whose
// environment configures traces too, adds a span under each task
// attempt's; and the task's TRACEPARENT names its attempt's span in the
// run's trace.
func TestTraceShapeBothEngines(t *testing.T) {
	dir, flow, want := tracedLocal(t)

	remoteRC := telemetrytest.NewReceiver(t)
	q := queue(t)
	w := worker(t, q, append(otel(remoteRC), "OTEL_BSP_SCHEDULE_DELAY=100"))
	remote := start(t, dir, otel(remoteRC), skeinBin, "run", flow, "--json", "--engine", "temporal", "--address", address, "--task-queue", q)
	if code := remote.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("temporal run: exit %d\n%s", code, remote.stderr.String())
	}
	var runSpans, workerSpans, temporalSpans []*tracepb.Span
	split := func() {
		runSpans, workerSpans, temporalSpans = nil, nil, nil
		for _, s := range remoteRC.Spans() {
			switch op, _, _ := strings.Cut(s.Name, ":"); {
			case strings.HasPrefix(s.Name, "worker "):
				workerSpans = append(workerSpans, s)
			case temporalOps[op]:
				temporalSpans = append(temporalSpans, s)
			default:
				runSpans = append(runSpans, s)
			}
		}
	}
	split()
	got := spanTree(runSpans)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("span trees (-local +temporal):\n%s", d)
	}
	for _, want := range []string{"shell flaky skein.step.visit=1 skein.step.attempt=2", "run child", "polish#2", "per_file[1]", "chat stub", "execute_tool where"} {
		if !strings.Contains(got, want) {
			t.Errorf("the temporal run's tree has no %q:\n%s", want, got)
		}
	}

	// One trace, whose root is the run's span, with the engine named.
	var root *tracepb.Span
	byID := map[string]*tracepb.Span{}
	for _, s := range runSpans {
		byID[string(s.SpanId)] = s
		if len(s.ParentSpanId) == 0 {
			root = s
		}
	}
	if root == nil || root.Name != "run traced" || spanAttr(root, "skein.engine") != "temporal" {
		t.Fatalf("no root span run traced with skein.engine=temporal:\n%s", got)
	}
	for _, s := range remoteRC.Spans() {
		if string(s.TraceId) != string(root.TraceId) {
			t.Errorf("span %s is in trace %x, not the run's %x", s.Name, s.TraceId, root.TraceId)
		}
	}

	// The second attempt printed the TRACEPARENT the worker gave it: its
	// attempt's span, in the run's trace.
	var res struct {
		Steps struct {
			Flaky struct {
				Output struct {
					Stdout string `json:"stdout"`
				} `json:"output"`
			} `json:"flaky"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(remote.stdout.String()), &res); err != nil {
		t.Fatalf("skein run --json: %v\n%s", err, remote.stdout.String())
	}
	var attempt2 *tracepb.Span
	for _, s := range runSpans {
		if s.Name == "shell flaky" && spanAttr(s, "skein.step.attempt") == "2" {
			attempt2 = s
		}
	}
	if attempt2 == nil {
		t.Fatalf("no span of flaky's second attempt:\n%s", got)
	}
	wantTP := fmt.Sprintf("00-%x-%x-01", attempt2.TraceId, attempt2.SpanId)
	if tp := strings.TrimSpace(res.Steps.Flaky.Output.Stdout); tp != wantTP {
		t.Errorf("the task's TRACEPARENT is %q, want %q (its attempt's span)", tp, wantTP)
	}

	// The worker exports its spans in batches (OTEL_BSP_SCHEDULE_DELAY
	// apart), not as it is interrupted: wait for its five task attempts'
	// (flaky's two, the map's items, the agent's tool call).
	waitFor(t, time.Minute, "the worker's spans", func() bool {
		split()
		return len(workerSpans) >= 5
	})

	// Each task attempt run by the worker has the worker's span under it:
	// both attempts of flaky, the map's two items, the agent's tool call
	// (under its step's attempt).
	under := map[string]int{}
	for _, s := range workerSpans {
		p := byID[string(s.ParentSpanId)]
		if p == nil {
			t.Errorf("worker span %s has no parent among the run's spans", s.Name)
			continue
		}
		under[s.Name+" < "+p.Name+" attempt "+spanAttr(p, "skein.step.attempt")]++
	}
	wantUnder := map[string]int{
		"worker shell flaky < shell flaky attempt 1":    1,
		"worker shell flaky < shell flaky attempt 2":    1,
		"worker task one < task one attempt 1":          2,
		"worker task fix < execute_tool where attempt ": 1, // its tool call's span
	}
	if d := cmp.Diff(wantUnder, under); d != "" {
		t.Errorf("the worker's spans, by parent (-want +got):\n%s\nworker's stderr:\n%s", d, w.stderr.String())
	}

	// Temporal's own spans (its SDK's OpenTelemetry interceptor, on the
	// client and the worker), in the run's trace: the workflow's start
	// under the run's span, each execution under its start, the
	// activities under the execution, the child flow's workflow under
	// its start; and each worker span links to its activity's span.
	wants := []string{
		"StartWorkflow:skein.run < run traced",
		"RunWorkflow:skein.run < StartWorkflow:skein.run",
		"StartActivity:skein.task < RunWorkflow:skein.run",
		"RunActivity:skein.task < StartActivity:skein.task",
		"StartActivity:skein.model < RunWorkflow:skein.run",
		"StartChildWorkflow:skein.run < RunWorkflow:skein.run",
		"RunWorkflow:skein.run < StartChildWorkflow:skein.run",
	}
	tids := map[string]*tracepb.Span{}
	shape := map[string]int{}
	shapes := func() {
		split()
		clear(tids)
		clear(shape)
		for _, s := range temporalSpans {
			tids[string(s.SpanId)] = s
		}
		parentName := func(s *tracepb.Span) string {
			if p := tids[string(s.ParentSpanId)]; p != nil {
				return p.Name
			}
			if p := byID[string(s.ParentSpanId)]; p != nil {
				return p.Name
			}
			return "?"
		}
		for _, s := range temporalSpans {
			shape[s.Name+" < "+parentName(s)]++
		}
	}
	// The client's and each worker's spans come in their own batches, the
	// run's workflow span when its execution ends: wait for every shape
	// (a child's workflow span may come before its parent's).
	complete := func() bool {
		shapes()
		for _, want := range wants {
			if shape[want] == 0 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(time.Minute); !complete() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range wants {
		if shape[want] == 0 {
			t.Errorf("no Temporal span %s; Temporal's spans: %v", want, shape)
		}
	}
	for _, s := range workerSpans {
		var linked string
		for _, l := range s.Links {
			if a := tids[string(l.SpanId)]; a != nil {
				linked = a.Name
			}
		}
		if linked != "RunActivity:skein.task" {
			t.Errorf("worker span %s links to %q, want its RunActivity:skein.task span", s.Name, linked)
		}
	}
}

// temporalOps are the operations Temporal's interceptor names its spans
// by ("RunWorkflow:skein.run").
var temporalOps = map[string]bool{"StartWorkflow": true, "RunWorkflow": true, "StartActivity": true, "RunActivity": true,
	"StartChildWorkflow": true, "SignalWorkflow": true, "HandleSignal": true, "SignalChildWorkflow": true, "SignalExternalWorkflow": true}

// TestTraceShapeDetached runs the flow of TestTraceShapeBothEngines with
// skein run --engine temporal --detach, which follows nothing: the
// workflow makes the run's spans on the worker, and the receiver gets the
// same span tree as from a local run (and so as from an attached one),
// once each, in the run's trace, with Temporal's spans and the worker's
// task spans in it too; a worker replaying the history later (for a
// query) exports none of them again.
func TestTraceShapeDetached(t *testing.T) {
	dir, flow, want := tracedLocal(t)

	remoteRC := telemetrytest.NewReceiver(t)
	q := queue(t)
	w := worker(t, q, append(otel(remoteRC), "OTEL_BSP_SCHEDULE_DELAY=100"))
	remote := start(t, dir, otel(remoteRC), skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q, "--detach")
	if code := remote.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("temporal run --detach: exit %d\n%s", code, remote.stderr.String())
	}
	id := strings.TrimSpace(remote.stdout.String())

	// The run's spans come from the worker in batches as the workflow
	// makes them; its span once the run has ended.
	runSpans := func() (run, wk, tmp []*tracepb.Span) {
		for _, s := range remoteRC.Spans() {
			switch op, _, _ := strings.Cut(s.Name, ":"); {
			case strings.HasPrefix(s.Name, "worker "):
				wk = append(wk, s)
			case temporalOps[op]:
				tmp = append(tmp, s)
			default:
				run = append(run, s)
			}
		}
		return
	}
	var got string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		run, wk, _ := runSpans()
		if got = spanTree(run); got == want && len(wk) >= 5 {
			break
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("span trees (-local +temporal --detach):\n%s\nworker's stderr:\n%s", d, w.stderr.String())
	}
	run, workerSpans, temporalSpans := runSpans()
	var root *tracepb.Span
	byID := map[string]*tracepb.Span{}
	for _, s := range run {
		if byID[string(s.SpanId)] != nil {
			t.Errorf("span %s is exported twice", s.Name)
		}
		byID[string(s.SpanId)] = s
		if len(s.ParentSpanId) == 0 {
			root = s
		}
	}
	if root == nil || spanAttr(root, "skein.engine") != "temporal" || spanAttr(root, "skein.run.id") != id {
		t.Fatalf("no root span with skein.engine=temporal and skein.run.id=%s:\n%s", id, got)
	}
	for _, s := range remoteRC.Spans() {
		if string(s.TraceId) != string(root.TraceId) {
			t.Errorf("span %s is in trace %x, not the run's %x", s.Name, s.TraceId, root.TraceId)
		}
	}
	// The worker's task spans under the attempts' spans, and Temporal's
	// workflow start under the run's span.
	for _, s := range workerSpans {
		if byID[string(s.ParentSpanId)] == nil {
			t.Errorf("worker span %s has no parent among the run's spans", s.Name)
		}
	}
	waitFor(t, time.Minute, "Temporal's StartWorkflow span", func() bool {
		_, _, temporalSpans = runSpans()
		for _, s := range temporalSpans {
			if strings.HasPrefix(s.Name, "StartWorkflow:") {
				return true
			}
		}
		return false
	})
	for _, s := range temporalSpans {
		if strings.HasPrefix(s.Name, "StartWorkflow:") && string(s.ParentSpanId) != string(root.SpanId) {
			t.Errorf("Temporal's %s is not under the run's span", s.Name)
		}
	}

	// A worker that never ran the workflow replays its history to answer
	// a query (skein show on the closed run): it exports none of the
	// run's spans again. Each worker exports what it has as it stops.
	w.stop(t)
	before := len(run)
	w2 := worker(t, q, append(otel(remoteRC), "OTEL_BSP_SCHEDULE_DELAY=100"))
	out, stderr, code := skein(t, dir, "show", id, "--engine", "temporal", "--address", address)
	if code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("skein show: exit %d\n%s%s", code, out, stderr)
	}
	w2.stop(t)
	if run, _, _ = runSpans(); len(run) != before {
		t.Errorf("%d of the run's spans after a replay, %d before:\n%s", len(run), before, spanTree(run))
	}
}

// otel is the environment that sends a skein's traces to rc.
func otel(rc *telemetrytest.Receiver) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.URL, "OTEL_SERVICE_NAME=skein-servertest", "TRACEPARENT="}
}

// tracedLocal writes the traced flow and its child into a new directory
// and runs it on the local engine: the directory, the flow's file and the
// span tree its run exported.
func tracedLocal(t *testing.T) (dir, flow, tree string) {
	t.Helper()
	dir = t.TempDir()
	flow, err := (&temporaltest.Scenario{Files: map[string]string{"flow.star": tracedFlow, "child.star": tracedChild}}).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	rc := telemetrytest.NewReceiver(t)
	local := start(t, dir, otel(rc), skeinBin, "run", flow, "--json", "--no-store")
	if code := local.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("local run: exit %d\n%s", code, local.stderr.String())
	}
	return dir, flow, spanTree(rc.Spans())
}
