package telemetry

// This file is the run's place in the stack of effect producers: it hands
// a task's process the trace context of its step's attempt (TRACEPARENT,
// TRACESTATE), times an agent's tool calls, and keeps what a model call
// was sent and answered when that is to be recorded.

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// Effects returns inner with the run's telemetry around it: the
// innermost producer of a run on this machine. On a nil *Run it returns
// inner.
func (r *Run) Effects(inner vm.EffectProducer) vm.EffectProducer {
	if r == nil {
		return inner
	}
	r.mu.Lock()
	r.local = true
	r.mu.Unlock()
	return &effects{r: r, inner: inner}
}

type effects struct {
	r     *Run
	inner vm.EffectProducer
}

// Start implements [vm.EffectProducer].
func (e *effects) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	r := e.r
	scope := req.Scope
	if req.Tool != "" && len(scope) > 0 {
		scope = scope[:len(scope)-1] // the call's own element
	}
	k := key(req.Flow, scope, req.Step)
	r.mu.Lock()
	var sc context.Context
	if o := r.steps[k]; o != nil {
		sc = o.ctx
		if !o.placed && req.Node != nil && req.Node.Pos.IsValid() {
			// A child flow's step, whose graph the run did not know.
			o.placed = true
			o.span.SetAttributes(attribute.String("code.filepath", req.Node.Pos.File), attribute.Int("code.lineno", req.Node.Pos.Line))
		}
	}
	if req.Kind == graphir.KindSubflow && req.ChildGraph != nil && req.Tool == "" {
		r.graphs[k] = req.ChildGraph
	}
	var tool trace.Span
	if req.Tool != "" && sc != nil && !r.ended {
		sc, tool = r.p.tracer.Start(sc, "execute_tool "+req.Tool, trace.WithAttributes(r.toolAttrs(req.Tool, req.ToolCallID, req.ToolArgs)...))
	}
	record := req.Chat != nil && r.p.content
	r.mu.Unlock()
	if tool != nil || record {
		inner := done
		done = func(c *vm.EffectCompletion) {
			if tool != nil {
				if !c.OK && !c.Cancelled {
					tool.SetStatus(codes.Error, r.p.mask(c.Error))
				}
				tool.End()
			}
			if record {
				answer := c.Answer
				if answer == "" && c.Output != nil {
					answer = c.Output.String()
				}
				r.mu.Lock()
				r.msgs[k] = &content{prompt: req.Prompt, answer: answer}
				r.mu.Unlock()
			}
			inner(c)
		}
	}
	if sc != nil && req.Kind.IsProcess() {
		c := *req
		c.Env = withTrace(req.Env, sc)
		req = &c
	}
	e.inner.Start(ctx, req, done)
}

// withTrace returns env (nil: this process's) with TRACEPARENT and
// TRACESTATE saying ctx's span, in place of any it had.
func withTrace(env []string, ctx context.Context) []string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TRACEPARENT=") && !strings.HasPrefix(kv, "TRACESTATE=") {
			out = append(out, kv)
		}
	}
	out = append(out, "TRACEPARENT="+carrier["traceparent"])
	if ts := carrier["tracestate"]; ts != "" {
		out = append(out, "TRACESTATE="+ts)
	}
	return out
}
