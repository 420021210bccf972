package temporal

// This file is what the Temporal engine adds to a run's trace: the trace
// context a task's process is handed, named as the spans the client
// makes from the run's events name it (docs/observability.md).

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// tracing returns Temporal's OpenTelemetry interceptor exporting with
// p, for a client and the workers made from it: spans of the workflow's
// start (StartWorkflow), of each execution (RunWorkflow), of each
// activity it starts (StartActivity) and runs (RunActivity) and of
// signals; none for queries (a follower asks every half second). Nil
// without a provider.
func tracing(p *telemetry.Provider) ([]interceptor.ClientInterceptor, error) {
	if p == nil {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:              p.Tracer("go.temporal.io/sdk"),
		DisableQueryTracing: true,
		DisableBaggage:      true,
	})
	if err != nil {
		return nil, err
	}
	return []interceptor.ClientInterceptor{i}, nil
}

// underRun returns ctx with run id's span (see [telemetry.RunSpan]) as
// the span Temporal's interceptor starts the workflow under, so that its
// spans sit in the run's trace.
func underRun(ctx context.Context, id string) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, telemetry.RunSpan(id))
}

// traceparent is the W3C traceparent of the span a task's process runs
// under: its step attempt's, or for an agent's tool call, the call's (a
// pure function of the request: deterministic).
func traceparent(req *vm.EffectRequest) string {
	if req.Tool == "" {
		return telemetry.Traceparent(req.RunID, req.Flow, req.Scope, req.Step, req.Visit, req.Attempt)
	}
	scope := req.Scope
	if len(scope) > 0 {
		scope = scope[:len(scope)-1] // the call's own element
	}
	return telemetry.ToolTraceparent(req.RunID, req.Flow, scope, req.Step, req.Visit, req.Attempt, req.Turn, req.ToolCallID)
}

// spanProvider is the provider the spans of a run are exported with,
// the client's (Engine.Start, Engine.Fork) and the workflow's alike: the
// process's (a test's own in tests).
var spanProvider = func() *telemetry.Provider {
	p, _ := telemetry.Default()
	return p
}

// spans returns the maker of the spans of the run workflow ctx runs, from
// its events as the workflow makes them, when the run asks for them
// (RunInput.Spans: no client follows it) and this worker's environment
// configures traces; nil otherwise. Its spans are those a client
// following the run would make, with the same ids: the ones a replay of
// the workflow's history ends again are not exported twice, and those
// an execution leaves open when it continues as new go on in the next.
func spans(ctx workflow.Context, g *graphir.Graph, in *RunInput) *telemetry.Run {
	if !in.Spans {
		return nil
	}
	tp := spanProvider()
	if tp == nil {
		return nil
	}
	info := telemetry.RunInfo{File: in.abs(g.File), Engine: "temporal", Carried: in.SpanCarry,
		Replaying: func() bool { return workflow.IsReplaying(ctx) }}
	if in.Nesting != nil {
		info.Top, info.TopFlow = in.Nesting.Top, in.SpanFlow
		info.Parent = telemetry.Parent(http.Header{"Traceparent": {in.SpanParent}})
	}
	tel := tp.Start(g, info)
	if in.Executions > 0 {
		wi := workflow.GetInfo(ctx)
		var flow []string
		if in.Nesting != nil {
			flow = in.Nesting.Prefix
		}
		tel.Continued(flow, wi.ContinuedExecutionRunID, wi.WorkflowExecution.RunID)
	}
	return tel
}
