package telemetry_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/vm"
)

// TestReplayedEventsExportNothing: a Run made again from events given
// before (a Temporal workflow replaying its history on a worker) exports
// none of the spans those events end, and the spans they leave open end
// later with the ids they had the first time, their parents' included.
func TestReplayedEventsExportNothing(t *testing.T) {
	events := []*vm.Event{
		{Type: vm.RunStarted, RunID: "run-1", FlowName: "f"},
		{Type: vm.StepStarted, Step: "l", Kind: "loop", Visit: 1},
		{Type: vm.StepStarted, Step: "t", Kind: "task", Visit: 1, Scope: []string{"l#1"}},
		{Type: vm.StepFinished, Step: "t", Kind: "task", Visit: 1, Scope: []string{"l#1"}, Status: "succeeded"},
		{Type: vm.StepStarted, Step: "t", Kind: "task", Visit: 1, Scope: []string{"l#2"}},
	}
	rest := []*vm.Event{
		{Type: vm.StepFinished, Step: "t", Kind: "task", Visit: 1, Scope: []string{"l#2"}, Status: "succeeded"},
		{Type: vm.LoopIteration, Step: "l", Index: 2, Stop: true},
		{Type: vm.StepFinished, Step: "l", Kind: "loop", Visit: 1, Status: "succeeded"},
		{Type: vm.RunFinished, Status: "succeeded"},
	}
	run := func(replayed int) tracetest.SpanStubs {
		exp := tracetest.NewInMemoryExporter()
		p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		r := p.Start(nil, telemetry.RunInfo{Engine: "temporal", Replaying: func() bool { return n < replayed }})
		for _, ev := range append(append([]*vm.Event{}, events...), rest...) {
			r.Event(ev)
			n++
		}
		return exp.GetSpans()
	}
	whole, replayed := run(0), run(len(events))
	ids := map[string]string{}
	for _, s := range whole {
		ids[s.Name+" "+s.SpanContext.SpanID().String()] = s.Parent.SpanID().String()
	}
	if len(replayed) != 5 { // t in l#2, l#2, l, the run, and l#1 ended by l's end
		var names []string
		for _, s := range replayed {
			names = append(names, s.Name)
		}
		t.Errorf("after the replay, %d spans exported: %v", len(replayed), names)
	}
	for _, s := range replayed {
		parent, ok := ids[s.Name+" "+s.SpanContext.SpanID().String()]
		if !ok || parent != s.Parent.SpanID().String() {
			t.Errorf("span %s %s (parent %s) is not one of the run made at once", s.Name, s.SpanContext.SpanID(), s.Parent.SpanID())
		}
	}
}

// TestChildRunOfItsOwn: a child flow's run whose spans are made apart
// (a Temporal child workflow's) hangs under its step's span in the top
// run's trace, and its steps' metrics name the flow at the top; replayed
// events record no metrics.
func TestChildRunOfItsOwn(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	p, err := telemetry.NewMetered(context.Background(), reader, sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	parent := telemetry.Traceparent("run-1", nil, nil, "kid", 1, 1)
	replaying := true
	r := p.Start(nil, telemetry.RunInfo{Engine: "temporal", Top: "run-1", TopFlow: "top",
		Parent: telemetry.Parent(http.Header{"Traceparent": {parent}}), Replaying: func() bool { return replaying }})
	kid := []string{"kid"}
	r.Event(&vm.Event{Type: vm.RunStarted, RunID: "run-1/kid#1.1", FlowName: "child", Flow: kid})
	r.Event(&vm.Event{Type: vm.StepStarted, Step: "a", Kind: "task", Visit: 1, Flow: kid})
	r.Event(&vm.Event{Type: vm.StepFinished, Step: "a", Kind: "task", Visit: 1, Flow: kid, Status: "succeeded"})
	replaying = false
	r.Event(&vm.Event{Type: vm.StepStarted, Step: "b", Kind: "task", Visit: 1, Flow: kid})
	r.Event(&vm.Event{Type: vm.StepFinished, Step: "b", Kind: "task", Visit: 1, Flow: kid, Status: "succeeded"})
	r.Event(&vm.Event{Type: vm.RunFinished, RunID: "run-1/kid#1.1", FlowName: "child", Flow: kid, Status: "succeeded"})
	r.End(nil)

	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	if len(byName) != 2 || byName["task a"].Name != "" {
		t.Fatalf("spans %v, want run child and task b", byName)
	}
	run, b := byName["run child"], byName["task b"]
	if got := "00-" + run.SpanContext.TraceID().String() + "-" + run.Parent.SpanID().String() + "-01"; got != parent {
		t.Errorf("run child under %s, want under %s", got, parent)
	}
	if b.Parent.SpanID() != run.SpanContext.SpanID() {
		t.Errorf("task b is not under run child")
	}
	if want := telemetry.Traceparent("run-1", kid, nil, "b", 1, 1); "00-"+b.SpanContext.TraceID().String()+"-"+b.SpanContext.SpanID().String()+"-01" != want {
		t.Errorf("task b's span is not the one its TRACEPARENT %s names", want)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || m.Name != "skein.step.duration" {
				continue
			}
			for _, dp := range h.DataPoints {
				flow, _ := dp.Attributes.Value("skein.flow")
				step, _ := dp.Attributes.Value("skein.step.name")
				got = append(got, fmt.Sprintf("%s/%s x%d", flow.AsString(), step.AsString(), dp.Count))
			}
		}
	}
	if strings.Join(got, " ") != "top/b x1" {
		t.Errorf("step durations %v, want top/b x1 (a was replayed)", got)
	}
}
