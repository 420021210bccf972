package temporal

// This file is what the Temporal engine adds to a run's trace: the trace
// context a task's process is handed, named as the spans the client
// makes from the run's events name it (docs/observability.md).

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/skeinlang/skein/engine/telemetry"
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
