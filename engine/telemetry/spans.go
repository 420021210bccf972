package telemetry

// This file turns a run's events into spans: the run's, each step
// attempt's, each loop iteration's and map item's, each model call's and
// each child flow's, parented as the run nested them.

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// RunInfo is what a run's span says beside what its events say.
type RunInfo struct {
	// File is the flow's file as the run records it.
	File string
	// Parent is the span the run continues (a caller's, from the
	// traceparent of the request that started it); invalid for none.
	Parent trace.SpanContext
	// Predecessor is the id of the run this one resumes (the same id
	// for a run resumed under its own id); "" for a new run.
	Predecessor string
	// Engine names the engine running the flow ("local", "temporal").
	Engine string
	// Top, for a child flow's run whose spans are made apart from its
	// parent's (a Temporal child workflow's, made where it runs), is the
	// id of the run at the top of its tree, whose trace it is in; Parent
	// is then the span of the step that runs it.
	Top string
	// TopFlow, with Top, is the name of the flow at the top of the tree,
	// which the metrics of the run's steps name (as they do when one
	// Run makes the whole tree's spans).
	TopFlow string
	// Replaying, when set, says whether the events given now are ones
	// given before, to a Run that was lost (a Temporal workflow replaying
	// its history on a worker): the spans they end are not exported
	// again and their metrics not recorded again, but the spans they
	// leave open are made again, with the same ids.
	Replaying func() bool
	// Carried is what [Run.Carry] returned for the run when its last
	// process stopped making its spans (a Temporal workflow that
	// continued as new): the spans still open then go on.
	Carried *Carried
}

// Run makes the spans of one run from its events. A nil *Run does
// nothing. Its methods may be called from any goroutine.
type Run struct {
	p    *Provider
	g    *graphir.Graph
	info RunInfo
	// runID: the run began its own trace, whose ids derive from its id
	// (see RunSpan and Traceparent); "" when it did not.
	runID string
	// trace is the trace id of runID's trace; wantIDs the ids the span
	// started next is to have (see wantKey).
	trace   trace.TraceID
	wantIDs wantedIDs
	// local: the run's effects go through [Run.Effects], which makes the
	// tool calls' spans as they run (else they come from the events).
	local bool

	mu     sync.Mutex
	root   trace.Span
	ctx    context.Context  // the run span's
	runs   map[string]*open // child flows' runs, by their flow chain
	steps  map[string]*open // step attempts under way, by key
	iters  map[string]*open // loop iterations and map items, by flow and scope
	graphs map[string]*graphir.Graph
	msgs   map[string]*content // a model call's prompt and answer, by step key
	ended  bool
	// executions: the times the run's workflow (by the flow chain's
	// key, "" for the run's own) continued as new.
	executions map[string]int
	flow       string // the flow's name, for metrics
}

// open is a span under way and the context its children start from.
type open struct {
	span    trace.Span
	ctx     context.Context
	visit   int
	attempt int
	attrs   []attribute.KeyValue // a step's, which its next attempt repeats
	placed  bool                 // a step's code.* attributes are set
}

// content is what a model call was sent and answered, when recorded.
type content struct{ prompt, answer string }

// Start returns the span maker of a run of g (nil: a remote engine's run,
// whose flow it does not see). Its run's span starts with the run's
// run_started event.
func (p *Provider) Start(g *graphir.Graph, info RunInfo) *Run {
	if p == nil {
		return nil
	}
	if info.Engine == "" {
		info.Engine = "local"
	}
	r := &Run{p: p, g: g, info: info, runs: map[string]*open{}, steps: map[string]*open{},
		iters: map[string]*open{}, graphs: map[string]*graphir.Graph{}, msgs: map[string]*content{}, executions: map[string]int{}}
	if info.Top != "" {
		r.setRunID(info.Top)
		r.flow = info.TopFlow
		r.ctx = trace.ContextWithRemoteSpanContext(context.Background(), info.Parent)
	}
	if info.Carried != nil {
		r.restore(info.Carried)
	}
	return r
}

// setRunID says the run's spans are in the trace of run id, their ids
// derived from it.
func (r *Run) setRunID(id string) {
	r.runID = id
	if id != "" {
		r.trace = RunSpan(id).TraceID()
	}
}

// want returns parent asking the span started with it next to have the
// ids of the run's trace and span id s. The run's lock is held from the
// call until that span has started.
func (r *Run) want(parent context.Context, s trace.SpanID) context.Context {
	r.wantIDs = wantedIDs{r.trace, s}
	return context.WithValue(parent, wantKey{}, &r.wantIDs)
}

// replaying reports whether the events given now were given before
// (see RunInfo.Replaying).
func (r *Run) replaying() bool { return r.info.Replaying != nil && r.info.Replaying() }

// end ends span at t, unless the event ending it is replayed: a span a
// replay ends was exported when the event was first given, and is
// dropped unended.
func (r *Run) end(span trace.Span, t time.Time) {
	if !r.replaying() {
		span.End(trace.WithTimestamp(t))
	}
}

// wanted returns parent asking the span started with it to have the
// span id derived from what (see derivedSpan) when the run began its own
// trace (or is a child flow's in one): the ids of the spans that have
// children are the same whoever makes them, and whenever.
func (r *Run) wanted(parent context.Context, what ...string) context.Context {
	if r.runID == "" {
		return parent
	}
	return r.want(parent, derivedSpan(r.runID, trace.SpanContextFromContext(parent).SpanID(), what...))
}

// Events returns f after making the spans of the event it is given (f
// nil: only that). On a nil *Run it returns f.
func (r *Run) Events(f func(*vm.Event)) func(*vm.Event) {
	if r == nil {
		return f
	}
	return func(ev *vm.Event) {
		r.Event(ev)
		if f != nil {
			f(ev)
		}
	}
}

// key is the key of step step in scope of the run at flow chain flow.
func key(flow, scope []string, step string) string {
	var buf [128]byte
	return string(appendKey(buf[:0], flow, scope, step))
}

// appendKey appends the key of step step in scope of the run at flow
// chain flow to b.
func appendKey(b []byte, flow, scope []string, step string) []byte {
	for _, s := range flow {
		b = append(append(b, s...), '/')
	}
	b = append(b, 0)
	for _, s := range scope {
		b = append(append(b, s...), '/')
	}
	return append(append(b, 0), step...)
}

// Event makes the spans event ev starts, ends or reports.
func (r *Run) Event(ev *vm.Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	if r.p.m != nil {
		if ev.Type == vm.RunStarted && len(ev.Flow) == 0 {
			r.flow = ev.FlowName
		}
		if !r.replaying() {
			r.p.m.record(ev, r.flow, r.info.Engine)
		}
	}
	t := ev.Time
	if t.IsZero() {
		t = time.Now()
	}
	switch ev.Type {
	case vm.RunStarted:
		if len(ev.Flow) == 0 {
			r.startRoot(ev, t)
			return
		}
		k := key(ev.Flow, nil, "")
		parent, g := r.childParent(ev.Flow)
		if g != nil {
			r.graphs[k] = g
		}
		_, span := r.p.tracer.Start(r.wanted(parent, "run", k), "run "+ev.FlowName, trace.WithTimestamp(t),
			trace.WithAttributes(attribute.String("skein.flow", ev.FlowName), attribute.String("skein.flow.path", strings.Join(ev.Flow, " › "))))
		r.runs[k] = &open{span: span, ctx: trace.ContextWithSpan(parent, span)}
	case vm.RunFinished:
		if len(ev.Flow) == 0 {
			r.endAll(ev, t)
			return
		}
		k := key(ev.Flow, nil, "")
		if o := r.runs[k]; o != nil {
			o.span.SetAttributes(attribute.String("skein.run.status", ev.Status))
			r.setStatus(o.span, ev)
			r.end(o.span, t)
			delete(r.runs, k)
		}
	case vm.StepStarted:
		r.startAttempt(ev, key(ev.Flow, ev.Scope, ev.Step), ev.Visit, 1, t, nil)
	case vm.StepRetrying:
		k := key(ev.Flow, ev.Scope, ev.Step)
		o := r.steps[k]
		if o == nil {
			return
		}
		o.span.SetAttributes(attribute.String("skein.step.status", "failed"))
		o.span.SetStatus(codes.Error, r.p.mask(ev.Error))
		r.end(o.span, t)
		delete(r.steps, k)
		r.startAttempt(ev, k, o.visit, ev.Attempt, t.Add(ev.Duration), o.attrs)
	case vm.StepFinished:
		k := key(ev.Flow, ev.Scope, ev.Step)
		o := r.steps[k]
		if o == nil {
			return
		}
		o.span.SetAttributes(attribute.String("skein.step.status", ev.Status))
		if ev.Replayed {
			o.span.SetAttributes(attribute.Bool("skein.step.replayed", true))
		}
		r.setStatus(o.span, ev)
		r.end(o.span, t)
		delete(r.steps, k)
	case vm.LoopIteration, vm.MapItem:
		var el string
		if ev.Type == vm.LoopIteration {
			el = ev.Step + "#" + strconv.Itoa(ev.Index)
		} else {
			el = ev.Step + "[" + strconv.Itoa(ev.Index) + "]"
		}
		k := key(ev.Flow, append(ev.Scope[:len(ev.Scope):len(ev.Scope)], el), "")
		if o := r.iters[k]; o != nil {
			if ev.Type == vm.LoopIteration {
				o.span.SetAttributes(attribute.Bool("skein.loop.stop", ev.Stop))
			}
			r.end(o.span, t)
			delete(r.iters, k)
		}
	case vm.ModelCall:
		r.modelCall(ev, t)
	case vm.ToolCalled:
		if r.local {
			return // made by Effects as the call ran
		}
		parent := r.parentOf(ev.Flow, ev.Scope, ev.Step, t)
		start := parent
		if o := r.steps[key(ev.Flow, ev.Scope, ev.Step)]; o != nil && r.runID != "" && ev.CallID != "" {
			// The id ToolTraceparent names the call by, which its
			// process was handed.
			start = r.want(parent, toolSpan(r.runID, ev.Flow, ev.Scope, ev.Step, o.visit, o.attempt, ev.Index, ev.CallID))
		}
		_, span := r.p.tracer.Start(start, "execute_tool "+ev.Tool, trace.WithTimestamp(t), trace.WithAttributes(r.toolAttrs(ev.Tool, ev.CallID, ev.Args)...))
		if ev.Status == "failed" {
			span.SetStatus(codes.Error, r.p.mask(ev.Result))
		}
		r.end(span, t)
	}
}

// startRoot starts the run's span.
func (r *Run) startRoot(ev *vm.Event, t time.Time) {
	if r.root != nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("skein.flow", ev.FlowName),
		attribute.String("skein.run.id", ev.RunID),
		attribute.String("skein.engine", r.info.Engine),
		attribute.String("gen_ai.operation.name", "invoke_workflow"),
	}
	if r.info.File != "" {
		attrs = append(attrs, attribute.String("code.filepath", r.info.File))
	}
	if r.g != nil && len(r.g.Inputs) > 0 {
		names := make([]string, len(r.g.Inputs))
		for i, in := range r.g.Inputs {
			names[i] = in.Name
		}
		attrs = append(attrs, attribute.StringSlice("skein.inputs", names))
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(t), trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal)}
	parent := context.Background()
	switch {
	case r.info.Parent.IsValid():
		parent = trace.ContextWithRemoteSpanContext(parent, r.info.Parent)
	case r.info.Predecessor == "" && ev.RunID != "":
		// A new trace whose ids a resume can find again, and its
		// attempts' ids an engine can name (see Traceparent).
		r.setRunID(ev.RunID)
		parent = r.want(parent, RunSpan(ev.RunID).SpanID())
	}
	if r.info.Predecessor != "" {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: RunSpan(r.info.Predecessor),
			Attributes: []attribute.KeyValue{attribute.String("skein.link", "resumes"), attribute.String("skein.run.id", r.info.Predecessor)}}))
		opts = append(opts, trace.WithAttributes(attribute.String("skein.run.resumes", r.info.Predecessor)))
	}
	_, span := r.p.tracer.Start(parent, "run "+ev.FlowName, opts...)
	r.root = span
	// Children start from a context without the wanted ids.
	r.ctx = trace.ContextWithSpan(context.Background(), span)
}

// startAttempt starts attempt of visit of the step event ev is about, at
// t; attrs are the step's attributes when known (a retry's).
func (r *Run) startAttempt(ev *vm.Event, k string, visit, attempt int, t time.Time, attrs []attribute.KeyValue) {
	if prev := r.steps[k]; prev != nil {
		r.end(prev.span, t) // a visit that never said it ended
	}
	parent := r.parentOf(ev.Flow, ev.Scope, "", t)
	if attrs == nil {
		attrs = []attribute.KeyValue{
			attribute.String("skein.step.name", ev.Step),
			attribute.String("skein.step.kind", ev.Kind),
		}
		if len(ev.Scope) > 0 {
			attrs = append(attrs, attribute.String("skein.scope", strings.Join(ev.Scope, " › ")))
		}
		if len(ev.Flow) > 0 {
			attrs = append(attrs, attribute.String("skein.flow.path", strings.Join(ev.Flow, " › ")))
		}
		if g := r.graphOf(ev.Flow); g != nil {
			if n := g.Node(ev.Step); n != nil && n.Pos.IsValid() {
				attrs = append(attrs, attribute.String("code.filepath", n.Pos.File), attribute.Int("code.lineno", n.Pos.Line))
			}
		}
		if ev.Kind == "agent" {
			attrs = append(attrs, attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", ev.Step))
		}
	}
	start := parent
	if r.runID != "" {
		// The id Traceparent names the attempt by.
		start = r.want(parent, attemptSpan(r.runID, ev.Flow, ev.Scope, ev.Step, visit, attempt))
	}
	_, span := r.p.tracer.Start(start, ev.Kind+" "+ev.Step, trace.WithTimestamp(t), trace.WithAttributes(attrs...),
		trace.WithAttributes(attribute.Int("skein.step.visit", visit), attribute.Int("skein.step.attempt", attempt)))
	r.steps[k] = &open{span: span, ctx: trace.ContextWithSpan(parent, span), visit: visit, attempt: attempt, attrs: attrs}
}

// graphOf returns the graph of the run at flow chain flow, when known.
func (r *Run) graphOf(flow []string) *graphir.Graph {
	if len(flow) == 0 || r.info.Top != "" { // a child flow's run of its own: g is its graph
		return r.g
	}
	return r.graphs[key(flow, nil, "")]
}

// parentOf returns the context of the span a span of step in scope of
// the run at flow hangs under: the step's attempt under way (step ""
// skips it), else the innermost iteration of scope, else the run.
func (r *Run) parentOf(flow, scope []string, step string, t time.Time) context.Context {
	if step != "" {
		if o := r.steps[key(flow, scope, step)]; o != nil {
			return o.ctx
		}
	}
	if len(scope) == 0 {
		if len(flow) > 0 {
			if o := r.runs[key(flow, nil, "")]; o != nil {
				return o.ctx
			}
		}
		if r.ctx == nil {
			return context.Background()
		}
		return r.ctx
	}
	k := key(flow, scope, "")
	if o := r.iters[k]; o != nil {
		return o.ctx
	}
	// The iteration's first step: its span starts here, under its loop's
	// or map's step.
	last := scope[len(scope)-1]
	name, idx, isLoop := element(last)
	outer := scope[:len(scope)-1]
	parent := r.parentOf(flow, outer, name, t)
	attrs := []attribute.KeyValue{attribute.String("skein.scope", strings.Join(scope, " › "))}
	if isLoop {
		attrs = append(attrs, attribute.String("skein.loop", name), attribute.Int("skein.loop.iteration", idx))
	} else {
		attrs = append(attrs, attribute.String("skein.map", name), attribute.Int("skein.map.index", idx))
	}
	_, span := r.p.tracer.Start(r.wanted(parent, "iteration", k), last, trace.WithTimestamp(t), trace.WithAttributes(attrs...))
	ctx := trace.ContextWithSpan(parent, span)
	r.iters[k] = &open{span: span, ctx: ctx}
	return ctx
}

// element splits a scope element, "polish#2" or "per_file[3]", into its
// step's name and its number.
func element(s string) (name string, n int, loop bool) {
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		n, _ = strconv.Atoi(s[i+1:])
		return s[:i], n, true
	}
	if i := strings.LastIndexByte(s, '['); i >= 0 {
		n, _ = strconv.Atoi(strings.TrimSuffix(s[i+1:], "]"))
		return s[:i], n, false
	}
	return s, 0, false
}

// childParent returns the context of the step attempt that runs the
// child flow at flow chain flow, and the child's graph when the step's
// request named it. A chain ends with the step's scope and the step
// (its name, ":visit.attempt" when not the first, "@turn.call" and the
// tool's name for an agent's tool), after the chain of the run that ran
// it, so the split is looked for among the steps under way.
func (r *Run) childParent(flow []string) (context.Context, *graphir.Graph) {
	for i := len(flow) - 1; i >= 0; i-- {
		name := flow[i]
		if j := strings.IndexAny(name, ":@"); j >= 0 {
			name = name[:j]
		}
		for j := i; j >= 0; j-- {
			k := key(flow[:j], flow[j:i], name)
			if o := r.steps[k]; o != nil {
				return o.ctx, r.graphs[k]
			}
		}
	}
	return r.parentOf(nil, nil, "", time.Time{}), nil
}

// modelCall makes the span of a model call that ended.
func (r *Run) modelCall(ev *vm.Event, t time.Time) {
	parent := r.parentOf(ev.Flow, ev.Scope, ev.Step, t)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", ev.Model),
		attribute.Int("gen_ai.usage.input_tokens", ev.Usage.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", ev.Usage.CompletionTokens),
		attribute.String("skein.step.name", ev.Step),
	}
	if provider, _, ok := strings.Cut(ev.Model, "/"); ok {
		attrs = append(attrs, attribute.String("gen_ai.provider.name", provider))
	}
	if ev.Usage.CachedTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.usage.cache_read.input_tokens", ev.Usage.CachedTokens))
	}
	attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{finishReason(ev)}))
	k := key(ev.Flow, ev.Scope, ev.Step)
	if c := r.msgs[k]; c != nil {
		attrs = append(attrs, attribute.String("gen_ai.input.messages", r.p.mask(c.prompt)), attribute.String("gen_ai.output.messages", r.p.mask(c.answer)))
		delete(r.msgs, k)
	}
	_, span := r.p.tracer.Start(parent, "chat "+ev.Model, trace.WithTimestamp(t.Add(-ev.Duration)),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	r.setStatus(span, ev)
	r.end(span, t)
}

// finishReason is the GenAI finish reason of a model call's event.
func finishReason(ev *vm.Event) string {
	switch ev.Code {
	case "":
		if ev.Calls > 0 {
			return "tool_calls"
		}
		return "stop"
	case "model_truncated":
		return "length"
	case "model_filtered":
		return "content_filter"
	}
	return "error"
}

// toolAttrs are the attributes of a tool call's span.
func (r *Run) toolAttrs(tool, id, args string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", tool)}
	if id != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.call.id", id))
	}
	if r.p.content && args != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.call.arguments", r.p.mask(args)))
	}
	return attrs
}

// setStatus sets a span's status from a failed event's error.
func (r *Run) setStatus(span trace.Span, ev *vm.Event) {
	if ev.Code == "" && ev.Error == "" {
		return
	}
	if ev.Code != "" {
		span.SetAttributes(attribute.String("error.type", string(ev.Code)))
	}
	if ev.Status == "cancelled" {
		return // not an error of the step's own
	}
	span.SetStatus(codes.Error, r.p.mask(ev.Error))
}

// endAll ends the run's span, and any span still under way (a step
// parked waiting for an approval, an iteration the run abandoned).
func (r *Run) endAll(ev *vm.Event, t time.Time) {
	for k, o := range r.steps {
		o.span.SetAttributes(attribute.String("skein.step.status", unfinished(ev.Status)))
		r.end(o.span, t)
		delete(r.steps, k)
	}
	for k, o := range r.iters {
		r.end(o.span, t)
		delete(r.iters, k)
	}
	for k, o := range r.runs {
		r.end(o.span, t)
		delete(r.runs, k)
	}
	if r.root != nil {
		r.root.SetAttributes(attribute.String("skein.run.status", ev.Status))
		if ev.Step != "" {
			r.root.SetAttributes(attribute.String("skein.run.failed_step", ev.Step))
		}
		r.setStatus(r.root, ev)
		r.end(r.root, t)
	}
	r.ended = true
}

// unfinished is the status of a step still under way when its run ended
// with status.
func unfinished(status string) string {
	if status == string(vm.Waiting) {
		return "waiting"
	}
	return "cancelled"
}

// End ends whatever the run's events left under way when the run ended
// without reporting it (a suspended run); res is its result.
func (r *Run) End(res *vm.Result) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	ev := &vm.Event{Type: vm.RunFinished}
	if res != nil {
		ev.Status = string(res.Status)
		if res.Error != nil {
			ev.Code, ev.Error, ev.Step = res.Error.Code, res.Error.Msg, res.Error.Step
		}
	}
	r.endAll(ev, time.Now())
}

// Continued marks on the span of the run at flow chain flow (nil: the
// run's own) that its Temporal workflow continued as new, from execution
// (run id) from to to: the run stays one span in one trace across its
// executions, and each execution is an event on it, naming the execution
// before (docs/observability.md).
func (r *Run) Continued(flow []string, from, to string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key(flow, nil, "")
	span := r.root
	if len(flow) > 0 {
		span = nil
		if o := r.runs[k]; o != nil {
			span = o.span
		}
	}
	if span == nil || r.ended {
		return
	}
	r.executions[k]++
	n := r.executions[k] + 1
	span.AddEvent("continued_as_new", trace.WithAttributes(
		attribute.String("temporal.workflow.run_id", to),
		attribute.String("temporal.workflow.previous_run_id", from),
		attribute.Int("temporal.workflow.execution", n)))
	span.SetAttributes(attribute.Int("temporal.workflow.executions", n))
}
