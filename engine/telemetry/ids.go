package telemetry

// This file makes the ids of spans: random, except a run's own span when
// it begins a trace, whose ids derive from the run's id, so that a
// resumed run links to its predecessor without the ids being stored.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// ids is the provider's id generator.
type ids struct{}

// wantKey is the context key of the ids a span is to have.
type wantKey struct{}

// wantedIDs are the ids a span is to have. A context holds a pointer to
// them, which boxes without allocating: a Run keeps one to reuse, as the
// ids are read while the span starts.
type wantedIDs struct {
	t trace.TraceID
	s trace.SpanID
}

// want returns ctx asking the span started with it to have ids t and s.
func want(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, wantKey{}, &wantedIDs{t, s})
}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if w, ok := ctx.Value(wantKey{}).(*wantedIDs); ok {
		return w.t, w.s
	}
	var t trace.TraceID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, randomSpanID()
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(wantKey{}).(*wantedIDs); ok {
		return w.s
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}

// RunSpan returns the span context of the span of run id when the run
// began its own trace: what a resumed run links to.
func RunSpan(id string) trace.SpanContext {
	h := sha256.Sum256([]byte("skein run " + id))
	var t trace.TraceID
	var s trace.SpanID
	copy(t[:], h[:16])
	copy(s[:], h[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, TraceFlags: trace.FlagsSampled})
}

// attemptSpan returns the span id of attempt of visit of step in scope
// of the run at flow chain flow, in the trace of run id when the run
// began its own trace (see [RunSpan]). It allocates nothing (one per
// step attempt of a traced run).
func attemptSpan(id string, flow, scope []string, step string, visit, attempt int) trace.SpanID {
	var buf [256]byte
	return spanID(appendAttempt(buf[:0], "skein attempt ", id, flow, scope, step, visit, attempt))
}

// appendAttempt appends to b what names attempt of visit of step in
// scope of the run id at flow chain flow, after what (the kind of span).
func appendAttempt(b []byte, what, id string, flow, scope []string, step string, visit, attempt int) []byte {
	b = append(b, what...)
	b = append(append(b, id...), 0)
	b = append(appendKey(b, flow, scope, step), 0)
	b = append(strconv.AppendInt(b, int64(visit), 10), 0)
	return strconv.AppendInt(b, int64(attempt), 10)
}

// spanID is the span id hashed from b.
func spanID(b []byte) trace.SpanID {
	h := sha256.Sum256(b)
	var s trace.SpanID
	copy(s[:], h[:])
	return s
}

// Traceparent returns the W3C traceparent of a step attempt's span, as
// the spans of run id made from its events name it when the run began
// its own trace: what an engine that runs the attempt where the spans are
// not made (a Temporal worker) hands the task's process. Flow, scope,
// step, visit and attempt are as in [vm.EffectRequest].
func Traceparent(id string, flow, scope []string, step string, visit, attempt int) string {
	t := RunSpan(id).TraceID()
	s := attemptSpan(id, flow, scope, step, visit, attempt)
	return "00-" + t.String() + "-" + s.String() + "-01"
}

// toolSpan returns the span id of an agent's tool call callID (the
// model's id of the call) in turn of attempt of visit of step, in the
// trace of run id when the run began its own trace (see [RunSpan]).
func toolSpan(id string, flow, scope []string, step string, visit, attempt, turn int, callID string) trace.SpanID {
	var buf [256]byte
	b := append(appendAttempt(buf[:0], "skein tool ", id, flow, scope, step, visit, attempt), 0)
	b = append(strconv.AppendInt(b, int64(turn), 10), 0)
	return spanID(append(b, callID...))
}

// ToolTraceparent returns the W3C traceparent of the span of an agent's
// tool call, as the spans of run id made from its events name it when
// the run began its own trace: what the process of a tool call that an
// engine runs where the spans are not made gets, so that it joins under
// its call's span. Flow, scope (without the call's own element), step,
// visit, attempt, turn and callID are as in [vm.EffectRequest].
func ToolTraceparent(id string, flow, scope []string, step string, visit, attempt, turn int, callID string) string {
	t := RunSpan(id).TraceID()
	s := toolSpan(id, flow, scope, step, visit, attempt, turn, callID)
	return "00-" + t.String() + "-" + s.String() + "-01"
}

// derivedSpan returns the span id of the span what names (an iteration
// and its key, a child flow's run and its key) under the span parent, in
// the trace of run id when the run began its own trace.
func derivedSpan(id string, parent trace.SpanID, what ...string) trace.SpanID {
	var buf [256]byte
	b := append(buf[:0], "skein span "...)
	b = append(append(b, id...), 0)
	b = hex.AppendEncode(b, parent[:])
	for _, w := range what {
		b = append(append(b, 0), w...)
	}
	return spanID(b)
}
