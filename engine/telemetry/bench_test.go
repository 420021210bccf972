package telemetry_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/vm"
)

// TestNotConfigured: without an endpoint, or with traces and metrics
// turned off, there is no provider, and making none starts no goroutine.
func TestNotConfigured(t *testing.T) {
	for _, env := range [][]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", ""},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER", "none", "OTEL_METRICS_EXPORTER", "none"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces", "OTEL_SDK_DISABLED", "true"},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
		t.Setenv("OTEL_METRICS_EXPORTER", "")
		for i := 0; i < len(env); i += 2 {
			t.Setenv(env[i], env[i+1])
		}
		before := runtime.NumGoroutine()
		p, err := telemetry.FromEnv(context.Background())
		if p != nil || err != nil {
			t.Errorf("%v: a provider (%v, %v)", env, p, err)
		}
		if n := runtime.NumGoroutine(); n != before {
			t.Errorf("%v: %d goroutines, %d before", env, n, before)
		}
	}
}

// TestBadConfig: a configuration skein cannot use is an error that says
// which variable.
func TestBadConfig(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")
	if _, err := telemetry.FromEnv(context.Background()); err == nil {
		t.Error("an endpoint without a scheme was taken")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
	if _, err := telemetry.FromEnv(context.Background()); err == nil {
		t.Error("an unknown protocol was taken")
	}
}

// discard is an exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

const loopFlow = `
flow(name = "spin")
tick = step("tick", fn = lambda r: r.loop.index)
spin = loop("spin", body = [tick], until = lambda it: False, max_iterations = 1000)
chain(START, spin, END)
`

// BenchmarkLoopIteration runs a loop of 1000 iterations of one fn step
// by the VM alone (the baseline), through the run service untraced (no
// provider: the VM is not even asked for events), traced (spans made
// and batched to an exporter that drops them) and traced with metrics
// recorded too, and reports the time and allocations per iteration.
func BenchmarkLoopIteration(b *testing.B) {
	g := load(b, "spin.star", loopFlow)
	traced, err := telemetry.New(context.Background(), sdktrace.WithBatcher(discard{}))
	if err != nil {
		b.Fatal(err)
	}
	defer traced.Shutdown(context.Background())
	metered, err := telemetry.NewMetered(context.Background(), sdkmetric.NewManualReader(), sdktrace.WithBatcher(discard{}))
	if err != nil {
		b.Fatal(err)
	}
	defer metered.Shutdown(context.Background())
	for _, c := range []struct {
		name string
		p    *telemetry.Provider
	}{{"vm", nil}, {"untraced", nil}, {"traced", traced}, {"traced+metrics", metered}} {
		b.Run(c.name, func(b *testing.B) {
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			svc := &runs.Service{Telemetry: c.p}
			in, _ := vm.BindInputs(g, nil)
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.name == "vm" {
					// The VM alone, without the service: the baseline.
					if res := vm.Prepare(g).Run(context.Background(), in, vm.Options{}); res.Status != vm.Succeeded {
						b.Fatalf("run %s: %v", res.Status, res.Error)
					}
					continue
				}
				r, err := svc.Start(&runs.Spec{Graph: g, Inputs: in})
				if err != nil {
					b.Fatal(err)
				}
				if res, _ := r.Run(context.Background()); res.Status != vm.Succeeded {
					b.Fatalf("run %s: %v", res.Status, res.Error)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			iters := float64(b.N) * 1000
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/iters, "ns/iteration")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/iters, "allocs/iteration")
		})
	}
}

// TestRemote: a span another process makes under a traceparent (a
// Temporal worker's, under its attempt's span) is the child of the span
// it names; none is made without a valid one.
func TestRemote(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	tp := telemetry.Traceparent("run-1", []string{"kid"}, nil, "t", 1, 2)
	ctx := context.Background()
	p.Remote(ctx, tp, "worker task t")("exit status 3")
	p.Remote(ctx, "", "none")("")
	p.Remote(ctx, "00-zz-yy-01", "bad")("")
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if got := "00-" + s.SpanContext.TraceID().String() + "-" + s.Parent.SpanID().String() + "-01"; got != tp || s.Status.Description != "exit status 3" {
		t.Errorf("span under %s (%q), want under %s", got, s.Status.Description, tp)
	}
}

// TestContinuedMarksRunSpan: a Temporal run that continued as new stays
// one span, with an event per continuation naming the execution before
// and the one after.
func TestContinuedMarksRunSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Start(nil, telemetry.RunInfo{Engine: "temporal"})
	r.Event(&vm.Event{Type: vm.RunStarted, RunID: "run-1", FlowName: "long"})
	r.Continued(nil, "e1", "e2")
	r.Continued(nil, "e2", "e3")
	r.Event(&vm.Event{Type: vm.RunFinished, Status: "succeeded"})
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the run's alone", len(spans))
	}
	var got []string
	for _, ev := range spans[0].Events {
		s := ev.Name
		for _, a := range ev.Attributes {
			s += " " + string(a.Key) + "=" + a.Value.String()
		}
		got = append(got, s)
	}
	want := []string{
		"continued_as_new temporal.workflow.run_id=e2 temporal.workflow.previous_run_id=e1 temporal.workflow.execution=2",
		"continued_as_new temporal.workflow.run_id=e3 temporal.workflow.previous_run_id=e2 temporal.workflow.execution=3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the run span's events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var n int64
	for _, a := range spans[0].Attributes {
		if a.Key == "temporal.workflow.executions" {
			n = a.Value.AsInt64()
		}
	}
	if n != 3 {
		t.Errorf("temporal.workflow.executions = %d, want 3", n)
	}
}
