package telemetry

// This file carries the spans a run leaves open from one process making
// them to the next: a Temporal workflow that continues as new ends its
// execution with its run's span, a loop's step and its iteration still
// under way, and the next execution goes on with them.

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Carried is what a run's spans still open are, to go on in another
// process ([Run.Carry], [RunInfo.Carried]); it encodes as JSON.
type Carried struct {
	RunID      string         `json:",omitempty"` // the run's own trace's, see Run.runID
	Flow       string         `json:",omitempty"` // the flow's name, for metrics
	Executions map[string]int `json:",omitempty"`
	Spans      []CarriedSpan  `json:",omitempty"`
}

// CarriedSpan is one span still open: which of the run's it is, and
// what it was started with.
type CarriedSpan struct {
	In      string // "root", "runs", "steps" or "iters"
	Key     string `json:",omitempty"`
	Name    string
	Trace   string
	Span    string
	Parent  string `json:",omitempty"`
	Kind    int    `json:",omitempty"`
	Start   time.Time
	Visit   int           `json:",omitempty"`
	Attempt int           `json:",omitempty"`
	Attrs   []carriedAttr `json:",omitempty"`
	// StepAttrs are a step's own attributes, which its retries repeat.
	StepAttrs []carriedAttr  `json:",omitempty"`
	Events    []carriedEvent `json:",omitempty"`
}

type carriedAttr struct {
	K string
	T string // the value's type: BOOL, INT64, FLOAT64, STRING, STRINGSLICE...
	V json.RawMessage
}

type carriedEvent struct {
	Name  string
	Time  time.Time
	Attrs []carriedAttr `json:",omitempty"`
}

// Carry returns the spans of the run still open, unended: the run goes on
// in another process, which starts them again from it (see
// [RunInfo.Carried]). Nil on a nil *Run, or when no span is recorded.
func (r *Run) Carry() *Carried {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &Carried{RunID: r.runID, Flow: r.flow, Executions: r.executions}
	add := func(in, k string, span trace.Span, o *open) {
		ro, ok := span.(sdktrace.ReadOnlySpan)
		if !ok {
			return // not recorded: nothing to go on with
		}
		cs := CarriedSpan{In: in, Key: k, Name: ro.Name(), Trace: ro.SpanContext().TraceID().String(),
			Span: ro.SpanContext().SpanID().String(), Kind: int(ro.SpanKind()), Start: ro.StartTime(), Attrs: carryAttrs(ro.Attributes())}
		if p := ro.Parent(); p.IsValid() {
			cs.Parent = p.SpanID().String()
		}
		for _, e := range ro.Events() {
			cs.Events = append(cs.Events, carriedEvent{Name: e.Name, Time: e.Time, Attrs: carryAttrs(e.Attributes)})
		}
		if o != nil {
			cs.Visit, cs.Attempt, cs.StepAttrs = o.visit, o.attempt, carryAttrs(o.attrs)
		}
		c.Spans = append(c.Spans, cs)
	}
	if r.root != nil {
		add("root", "", r.root, nil)
	}
	for k, o := range r.runs {
		add("runs", k, o.span, nil)
	}
	for k, o := range r.iters {
		add("iters", k, o.span, nil)
	}
	for k, o := range r.steps {
		add("steps", k, o.span, o)
	}
	return c
}

// restore starts again the spans c carried, with their ids, parents,
// start times, attributes and events.
func (r *Run) restore(c *Carried) {
	r.setRunID(c.RunID)
	r.flow = c.Flow
	for k, n := range c.Executions {
		r.executions[k] = n
	}
	for _, cs := range c.Spans {
		tid, err1 := trace.TraceIDFromHex(cs.Trace)
		sid, err2 := trace.SpanIDFromHex(cs.Span)
		if err1 != nil || err2 != nil {
			continue
		}
		parent := context.Background()
		if pid, err := trace.SpanIDFromHex(cs.Parent); err == nil {
			parent = trace.ContextWithRemoteSpanContext(parent, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled, Remote: true}))
		}
		ctx := want(parent, tid, sid)
		_, span := r.p.tracer.Start(ctx, cs.Name, trace.WithTimestamp(cs.Start), trace.WithSpanKind(trace.SpanKind(cs.Kind)),
			trace.WithAttributes(uncarryAttrs(cs.Attrs)...))
		for _, e := range cs.Events {
			span.AddEvent(e.Name, trace.WithTimestamp(e.Time), trace.WithAttributes(uncarryAttrs(e.Attrs)...))
		}
		o := &open{span: span, ctx: trace.ContextWithSpan(context.Background(), span), visit: cs.Visit, attempt: cs.Attempt}
		if len(cs.StepAttrs) > 0 {
			o.attrs = uncarryAttrs(cs.StepAttrs)
		}
		switch cs.In {
		case "root":
			r.root, r.ctx = span, o.ctx
		case "runs":
			r.runs[cs.Key] = o
		case "iters":
			r.iters[cs.Key] = o
		case "steps":
			r.steps[cs.Key] = o
		}
	}
}

func carryAttrs(kvs []attribute.KeyValue) []carriedAttr {
	out := make([]carriedAttr, 0, len(kvs))
	for _, kv := range kvs {
		b, err := json.Marshal(kv.Value.AsInterface())
		if err != nil {
			continue
		}
		out = append(out, carriedAttr{K: string(kv.Key), T: kv.Value.Type().String(), V: b})
	}
	return out
}

func uncarryAttrs(cas []carriedAttr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(cas))
	for _, ca := range cas {
		k := attribute.Key(ca.K)
		var kv attribute.KeyValue
		var err error
		switch ca.T {
		case "BOOL":
			kv, err = uncarry(ca.V, k.Bool)
		case "INT64":
			kv, err = uncarry(ca.V, k.Int64)
		case "FLOAT64":
			kv, err = uncarry(ca.V, k.Float64)
		case "STRING":
			kv, err = uncarry(ca.V, k.String)
		case "STRINGSLICE":
			kv, err = uncarry(ca.V, k.StringSlice)
		case "INT64SLICE":
			kv, err = uncarry(ca.V, k.Int64Slice)
		case "BOOLSLICE":
			kv, err = uncarry(ca.V, k.BoolSlice)
		default:
			continue // a type no span of a run has
		}
		if err == nil {
			out = append(out, kv)
		}
	}
	return out
}

// uncarry decodes a carried value v of type T into the attribute mk makes.
func uncarry[T any](v json.RawMessage, mk func(T) attribute.KeyValue) (attribute.KeyValue, error) {
	var t T
	if err := json.Unmarshal(v, &t); err != nil {
		return attribute.KeyValue{}, err
	}
	return mk(t), nil
}
