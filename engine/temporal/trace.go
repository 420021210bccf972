package temporal

// This file is what the Temporal engine adds to a run's trace: the trace
// context a task's process is handed, named as the spans the client
// makes from the run's events name it (docs/observability.md).

import (
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/vm"
)

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
