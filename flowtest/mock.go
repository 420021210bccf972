package flowtest

// This file defines scripted outcomes (t.ok, t.fail, t.answer, t.approve,
// t.reject, t.pending) and the producers that answer effects with them: [Mocks] for
// flow tests, [DryRun] for `skein run --dry-run`.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// Outcome is a scripted outcome of one effect, the value of t.ok(...),
// t.fail(...), t.answer(...), t.approve(...) and t.reject(...).
type Outcome struct {
	Kind     string // "ok", "fail", "answer", "approve", "reject"
	Stdout   string
	Stderr   string
	ExitCode int
	Output   starlark.Value // ok: a non-task step's output; answer: the answer
	Code     codes.Code     // fail
	Error    string         // fail, reject
	By       string         // approve
	Reason   starlark.Value // approve, reject
	Values   *starlark.Dict // approve: the values of the step's fields, by name
}

var _ starlark.HasAttrs = (*Outcome)(nil)

func (o *Outcome) String() string        { return fmt.Sprintf("t.%s(...)", o.Kind) }
func (o *Outcome) Type() string          { return "outcome" }
func (o *Outcome) Freeze()               {}
func (o *Outcome) Truth() starlark.Bool  { return true }
func (o *Outcome) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: outcome") }
func (o *Outcome) AttrNames() []string   { return []string{"kind"} }
func (o *Outcome) Attr(name string) (starlark.Value, error) {
	if name == "kind" {
		return starlark.String(o.Kind), nil
	}
	return nil, nil
}

// OK is the outcome of a successful effect with empty output: what a dry
// run gives every effect.
var OK = &Outcome{Kind: "ok", Output: starlark.None}

// Fail is a failed effect, as `--mock STEP=fail` gives.
var Fail = &Outcome{Kind: "fail", Code: codes.StepFailed, Error: "mocked failure", ExitCode: 1}

// completion turns an outcome into the completion of the effect req asked
// for.
func (o *Outcome) completion(req *vm.EffectRequest, now time.Time) *vm.EffectCompletion {
	task := req.Kind == graphir.KindTask || req.Kind == graphir.KindShell
	switch o.Kind {
	case "fail":
		c := &vm.EffectCompletion{Code: o.Code, Error: o.Error}
		if c.Error == "" {
			c.Error = "mocked failure"
		}
		if task {
			c.ExitCode, c.Stdout, c.Stderr = o.ExitCode, o.Stdout, o.Stderr
		}
		return c
	case "reject":
		msg := "rejected"
		if s, ok := o.Reason.(starlark.String); ok && s != "" {
			msg += ": " + string(s)
		}
		return &vm.EffectCompletion{Code: codes.Rejected, Error: msg}
	case "approve":
		reason := o.Reason
		if reason == nil {
			reason = starlark.None
		}
		keys := []string{"approved", "by", "reason", "at"}
		vals := []starlark.Value{starlark.True, starlark.String(o.By), reason, starlark.String(now.UTC().Format(time.RFC3339))}
		if fields := req.Fields(); len(fields) > 0 || o.Values != nil {
			// Checked as skein approve --set's are: a value that does
			// not fit fails the step, saying why.
			given := map[string]any{}
			if o.Values != nil {
				for _, it := range o.Values.Items() {
					k, _ := starlark.AsString(it[0])
					given[k] = it[1]
				}
			}
			values, err := graphir.BindFields(req.Step, fields, given, true)
			if err != nil {
				return &vm.EffectCompletion{Code: codes.StepFailed, Error: "t.approve(): " + err.Error()}
			}
			if len(fields) > 0 {
				keys, vals = append(keys, "values"), append(vals, values)
			}
		}
		return &vm.EffectCompletion{OK: true, Output: stdlib.NewMap(keys, vals)}
	}
	// ok, answer
	if task {
		return &vm.EffectCompletion{OK: true, Stdout: o.Stdout, Stderr: o.Stderr, ExitCode: o.ExitCode}
	}
	out := o.Output
	if out == nil {
		out = starlark.None
	}
	c := &vm.EffectCompletion{OK: true, Output: out}
	if req.Chat != nil {
		// A model call: routers and judges read the reply's text, as
		// they would a live model's.
		c.Model = req.Chat.Model
		if s, ok := out.(starlark.String); ok {
			c.Answer = string(s)
		} else if b, err := stdlib.AppendJSON(nil, out, "", 0); err == nil {
			c.Answer = string(b)
		}
	}
	return c
}

// mockSpec is what a test gave for one step: one outcome, one per request
// in order (the last repeating), or a function of the request.
type mockSpec struct {
	list []*Outcome
	fn   starlark.Callable
}

// Mocks is the producer of a flow test's run: a mocked step's effects are
// answered from its script. An unmocked task, shell or model call (other
// than the offline stub model's) fails the test instead of touching the
// world, unless Live; with Strict every unmocked effect does (approvals,
// waits and stub model calls too). Other effects run for real through
// Fallback. Effects of child flows come here too; mocks name steps, so a
// mock for "build" answers a "build" step at any depth.
type Mocks struct {
	Fallback vm.EffectProducer
	Strict   bool
	Live     bool
	// Now stamps approvals; nil means time.Now.
	Now func() time.Time

	mu       sync.Mutex
	steps    map[string]*mockSpec
	calls    map[string]int
	problems []string // what went wrong in mocks: unmocked effects in strict tests, mock functions that failed
	thread   *starlark.Thread
	// pending holds the effects answered t.pending(), by the child-flow
	// chain of the run that asked, until they are cancelled.
	pending map[string][]*pendingEffect
}

// pendingEffect is an effect answered t.pending(): it finishes only when
// its run cancels it (it lost a race), or fails once its run has nothing
// else to wait for.
type pendingEffect struct {
	ctx  context.Context
	req  *vm.EffectRequest
	done func(*vm.EffectCompletion)
}

// NewMocks makes a producer from the mocks of t.run: a dict of step name to
// an outcome, a list of outcomes, or a function of the request.
func NewMocks(mocks *starlark.Dict) (*Mocks, error) {
	m := &Mocks{Fallback: vm.Local{}, steps: map[string]*mockSpec{}, calls: map[string]int{}, thread: &starlark.Thread{Name: "mock"}}
	if mocks == nil {
		return m, nil
	}
	for _, it := range mocks.Items() {
		name, ok := starlark.AsString(it[0])
		if !ok {
			return nil, fmt.Errorf("mocks: keys are step names, got %s", it[0].Type())
		}
		spec := &mockSpec{}
		switch v := it[1].(type) {
		case *Outcome:
			spec.list = []*Outcome{v}
		case *starlark.List, starlark.Tuple:
			iter := starlark.Iterate(v)
			var x starlark.Value
			for iter.Next(&x) {
				o, ok := x.(*Outcome)
				if !ok {
					iter.Done()
					return nil, fmt.Errorf("mocks[%q]: a list of outcomes (t.ok(), t.fail(), ...), got %s in it", name, x.Type())
				}
				spec.list = append(spec.list, o)
			}
			iter.Done()
			if len(spec.list) == 0 {
				return nil, fmt.Errorf("mocks[%q]: the list of outcomes is empty", name)
			}
		case starlark.Callable:
			spec.fn = v
		default:
			return nil, fmt.Errorf("mocks[%q]: want an outcome (t.ok(), t.fail(), t.answer(), t.approve(), t.reject()), a list of them, or a function of the request; got %s", name, v.Type())
		}
		m.steps[name] = spec
	}
	return m, nil
}

// Names returns the mocked step names, sorted.
func (m *Mocks) Names() []string {
	names := make([]string, 0, len(m.steps))
	for n := range m.steps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Problems returns what went wrong while answering effects.
func (m *Mocks) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.problems...)
}

// Start implements [vm.EffectProducer].
func (m *Mocks) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	m.mu.Lock()
	key := req.Step
	if req.Tool != "" {
		// An agent's tool call is mocked by the tool's name.
		key = req.Tool
	}
	spec := m.steps[key]
	if spec == nil {
		// A child flow (a step's, a flow= tool's) does no work of its
		// own: it runs, and the same rules apply to its effects.
		if why := m.refuses(req); why != "" {
			msg := fmt.Sprintf("step %q (%s) ran without a mock %s: mock it, e.g. mocks = {%q: %s}, or let the test run such steps for real with t.live()", req.Step, effectWhat(req), why, req.Step, mockExample(req))
			if req.Tool != "" {
				msg = fmt.Sprintf("tool %q (called by agent step %q) ran without a mock %s: mock it, e.g. mocks = {%q: t.ok(stdout = \"...\")}, or let the test run it for real with t.live()", req.Tool, req.Step, why, req.Tool)
			}
			m.problem(msg)
			m.mu.Unlock()
			done(&vm.EffectCompletion{Code: codes.StepFailed, Error: "no mock " + why})
			return
		}
		m.mu.Unlock()
		m.Fallback.Start(ctx, req, done)
		return
	}
	list := spec.list
	count := key
	if req.Tool != "" && spec.fn == nil {
		// A tool's mocks answer its calls, and t.approve() and
		// t.reject() among them the approvals of its calls (approve=).
		list, count = toolOutcomes(list, req.Kind == graphir.KindApproval), key+"\x00"+req.Kind.String()
		if len(list) == 0 {
			m.mu.Unlock()
			if req.Kind == graphir.KindApproval {
				m.unmocked(ctx, req, done, fmt.Sprintf("the approval of a call of tool %q (called by agent step %q) was asked without t.approve() or t.reject() among the tool's mocks", req.Tool, req.Node.Name))
				return
			}
			m.unmocked(ctx, req, done, fmt.Sprintf("tool %q (called by agent step %q) ran without a mock among the tool's mocks", req.Tool, req.Node.Name))
			return
		}
	}
	n := m.calls[count]
	m.calls[count] = n + 1
	var o *Outcome
	if spec.fn != nil {
		var err error
		o, err = m.call(spec.fn, req)
		if err == nil {
			n := req.Node
			if req.Tool != "" {
				n = nil
			}
			if why := misfit(o, n); why != "" {
				err = fmt.Errorf("the function returned %s, but %s", o, why)
			}
		}
		if err != nil {
			what := "step"
			if req.Tool != "" {
				what = "tool"
			}
			msg := fmt.Sprintf("mock of %s %q: %v", what, key, err)
			m.problem(msg)
			m.mu.Unlock()
			done(&vm.EffectCompletion{Code: codes.StepFailed, Error: msg})
			return
		}
	} else {
		o = list[min(n, len(list)-1)]
	}
	if o.Kind == "pending" {
		m.hold(ctx, req, done)
		m.mu.Unlock()
		req.Nudge()
		return
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	m.mu.Unlock()
	done(o.completion(req, now()))
}

// hold keeps req, answered t.pending(), until its run cancels it; m.mu is
// held.
func (m *Mocks) hold(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	key := strings.Join(req.Flow, "/")
	p := &pendingEffect{ctx: ctx, req: req, done: done}
	if m.pending == nil {
		m.pending = map[string][]*pendingEffect{}
	}
	m.pending[key] = append(m.pending[key], p)
	go func() {
		<-ctx.Done()
		if m.release(key, p) {
			done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		}
	}()
}

// release drops p from what is held, reporting whether it was held (it
// is completed once: cancelled, or failed by Idle).
func (m *Mocks) release(key string, p *pendingEffect) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pending[key]
	for i, q := range ps {
		if q == p {
			m.pending[key] = append(ps[:i:i], ps[i+1:]...)
			return true
		}
	}
	return false
}

// Idle implements [vm.EffectIdler]: when all that the run with the
// child-flow chain flow still waits for is effects answered t.pending(),
// nothing will cancel them, and they fail, each a problem of the test.
func (m *Mocks) Idle(flow []string) {
	key := strings.Join(flow, "/")
	m.mu.Lock()
	ps := m.pending[key]
	if len(ps) == 0 || ps[0].req.Outstanding() != len(ps) || slices.ContainsFunc(ps, func(p *pendingEffect) bool { return p.ctx.Err() != nil }) {
		// Other work is still to come, or the run is cancelling one
		// (its completion is on its way).
		m.mu.Unlock()
		return
	}
	delete(m.pending, key)
	for _, p := range ps {
		m.problem(fmt.Sprintf("step %q was mocked t.pending(), but nothing cancelled it: nothing else of the run could go on (t.pending() is for the losers of a join = \"first\" race; with parallel = 1 nothing else starts while it runs: give t.run parallel = 2 or more)", p.req.Step))
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.done(&vm.EffectCompletion{Code: codes.StepFailed, Error: "mocked t.pending(), and nothing cancelled it"})
	}
}

// refuses says why req, which no mock answers, may not run for real ("in
// a strict test", "in a test"), or "" when it may: a child flow always
// runs (its effects come back here); an approval, a wait and a stub
// model's call touch nothing outside and run unless the test is strict;
// a task, a shell or a model call runs only when the test is live.
func (m *Mocks) refuses(req *vm.EffectRequest) string {
	switch {
	case req.Kind == graphir.KindSubflow:
		return ""
	case m.Strict:
		return "in a strict test"
	case m.Live:
		return ""
	case req.Kind == graphir.KindTask || req.Kind == graphir.KindShell:
		return "in a test"
	case req.Chat != nil && req.Chat.Provider != model.ProviderStub:
		return "in a test"
	}
	return ""
}

// effectWhat names the kind of effect req is, for a message.
func effectWhat(req *vm.EffectRequest) string {
	if req.Chat != nil {
		return "a model call"
	}
	return req.Kind.String()
}

// mockExample is an outcome that would answer req, for a message.
func mockExample(req *vm.EffectRequest) string {
	switch {
	case req.Chat != nil:
		return `t.answer("...")`
	case req.Kind == graphir.KindApproval:
		return "t.approve()"
	case req.Kind == graphir.KindTask || req.Kind == graphir.KindShell:
		return `t.ok(stdout = "...")`
	}
	return "t.ok()"
}

// toolOutcomes are the outcomes of a tool's mocks that answer the
// approvals of its calls (approvals true: t.approve(), t.reject()) or
// the calls themselves (every other).
func toolOutcomes(list []*Outcome, approvals bool) []*Outcome {
	var out []*Outcome
	for _, o := range list {
		if (o.Kind == "approve" || o.Kind == "reject") == approvals {
			out = append(out, o)
		}
	}
	return out
}

// unmocked answers an effect its step's mocks have nothing for: a
// problem when [Mocks.refuses] it, else it runs for real (an approval
// parks).
func (m *Mocks) unmocked(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion), msg string) {
	if why := m.refuses(req); why != "" {
		m.mu.Lock()
		m.problem(msg + " " + why)
		m.mu.Unlock()
		done(&vm.EffectCompletion{Code: codes.StepFailed, Error: "no mock " + why})
		return
	}
	m.Fallback.Start(ctx, req, done)
}

// problem records msg once; m.mu is held.
func (m *Mocks) problem(msg string) {
	for _, p := range m.problems {
		if p == msg {
			return
		}
	}
	m.problems = append(m.problems, msg)
}

// call asks a mock function for the outcome of req.
func (m *Mocks) call(fn starlark.Callable, req *vm.EffectRequest) (*Outcome, error) {
	m.thread.Uncancel()
	m.thread.SetMaxExecutionSteps(1_000_000)
	m.thread.Steps = 0
	v, err := starlark.Call(m.thread, fn, starlark.Tuple{RequestValue(req)}, nil)
	if err != nil {
		if ee, ok := err.(*starlark.EvalError); ok {
			// Where in the test file, as a test's own errors say it, not
			// go.starlark.net's traceback with absolute paths.
			stack := ee.CallStack
			for i := len(stack) - 1; i >= 0; i-- {
				if p := stack[i].Pos; p.IsValid() && p.Line > 0 {
					return nil, fmt.Errorf("%s:%d:%d: %s", shownPath(p.Filename()), p.Line, p.Col, ee.Msg)
				}
			}
			return nil, fmt.Errorf("%s", ee.Msg)
		}
		return nil, err
	}
	o, ok := v.(*Outcome)
	if !ok {
		return nil, fmt.Errorf("the function returned %s, want an outcome (t.ok(), t.fail(), ...)", v.Type())
	}
	return o, nil
}

// shownPath is file as diagnostics name it: relative to the working
// directory when it is under it.
func shownPath(file string) string {
	if rel, ok := confine.Rel(".", file); ok {
		return rel
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, ok := confine.Rel(wd, file); ok {
			return rel
		}
	}
	return file
}

// RequestValue is what a mock function receives: the rendered request, as
// a dict with step, kind, visit, attempt, argv, env (the variables the step
// adds), stdin, dir, and for other kinds the fields they have.
func RequestValue(req *vm.EffectRequest) starlark.Value {
	keys := []string{"step", "kind", "visit", "attempt", "argv", "env", "stdin", "dir"}
	argv := make([]starlark.Value, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = starlark.String(a)
	}
	env := starlark.NewDict(0)
	for _, kv := range AddedEnv(req) {
		k, v, _ := strings.Cut(kv, "=")
		env.SetKey(starlark.String(k), starlark.String(v))
	}
	env.Freeze()
	var stdin starlark.Value = starlark.None
	if req.Stdin != nil {
		stdin = starlark.String(*req.Stdin)
	}
	vals := []starlark.Value{starlark.String(req.Step), starlark.String(req.Kind.String()),
		starlark.MakeInt(req.Visit), starlark.MakeInt(req.Attempt), starlark.NewList(argv), env, stdin, starlark.String(req.Dir)}
	for _, f := range requestExtras(req) {
		keys = append(keys, f.name)
		vals = append(vals, starlark.String(f.value))
	}
	m := stdlib.NewMap(keys, vals)
	m.Freeze()
	return m
}

// AddedEnv returns the environment variables a task step's env= adds, in
// the step's order, as NAME=value.
func AddedEnv(req *vm.EffectRequest) []string {
	if req.Node == nil || len(req.Node.Env) == 0 {
		return nil
	}
	var out []string
	for _, e := range req.Node.Env {
		prefix := e.Name + "="
		for i := len(req.Env) - 1; i >= 0; i-- {
			if strings.HasPrefix(req.Env[i], prefix) {
				out = append(out, req.Env[i])
				break
			}
		}
	}
	return out
}

type extra struct{ name, value string }

// requestExtras are the kind-specific texts of a request that are not a
// process: a model step's prompt, an approval's message.
func requestExtras(req *vm.EffectRequest) []extra {
	if req.Chat != nil {
		return []extra{{"prompt", req.Prompt}}
	}
	if req.Tool != "" && req.Kind == graphir.KindApproval {
		return []extra{{"tool", req.Tool}, {"arguments", req.ToolArgs}, {"message", req.Message}}
	}
	if req.Tool != "" {
		return []extra{{"tool", req.Tool}, {"arguments", req.ToolArgs}}
	}
	if req.Kind == graphir.KindApproval {
		return []extra{{"message", req.Message}}
	}
	return nil
}

// DryRun is the producer of `skein run --dry-run`: every effect succeeds
// with empty output, or has the outcome given for its step, and Report
// hears of each request first.
type DryRun struct {
	Outcomes map[string]*Outcome
	Report   func(req *vm.EffectRequest)
}

// Start implements [vm.EffectProducer].
func (d *DryRun) Start(_ context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if d.Report != nil {
		d.Report(req)
	}
	key := req.Step
	if req.Tool != "" {
		key = req.Tool
	}
	o := d.Outcomes[key]
	if req.Kind == graphir.KindApproval {
		// An approval's "empty output" is an approval, so the walk takes
		// the approved path; --mock STEP=fail rejects it.
		switch o {
		case nil, OK:
			o = &Outcome{Kind: "approve", By: "dry-run", Reason: starlark.None}
		case Fail:
			o = &Outcome{Kind: "reject", Reason: starlark.String("--mock")}
		}
	}
	if o == nil {
		o = OK
	}
	done(o.completion(req, time.Now()))
}
