package telemetry_test

import (
	"context"
	"testing"

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
