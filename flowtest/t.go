package flowtest

// This file defines `t`, the value every test function receives: t.run
// runs a flow on the real VM, t.ok/... script outcomes, t.eq/... assert.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/store"
)

// tester is the `t` of one test function.
type tester struct {
	ctx    context.Context
	file   string // the test file
	root   string
	opts   *Options
	strict bool // t.strict(): every unmocked effect fails the test
	live   bool // t.live(): unmocked tasks, shells and model calls run for real
	res    *TestResult
	attrs  map[string]*starlark.Builtin
	// st records the runs of t.run(..., record = True), for t.fork: a
	// store of the test's own in a temporary directory, made at the first
	// such run and removed when the test ends.
	st    *store.Store
	stDir string
}

// store returns the test's run store, making it at the first call.
func (t *tester) store() (*store.Store, error) {
	if t.st != nil {
		return t.st, nil
	}
	dir, err := os.MkdirTemp("", "skein-test-")
	if err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(dir, store.FileName))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	t.st, t.stDir = st, dir
	return st, nil
}

// close removes the test's run store, if it made one.
func (t *tester) close() {
	if t.st != nil {
		t.st.Close()
		os.RemoveAll(t.stDir)
	}
}

func newTester(ctx context.Context, file, root string, opts *Options, res *TestResult) *tester {
	t := &tester{ctx: ctx, file: file, root: root, opts: opts, res: res}
	t.attrs = map[string]*starlark.Builtin{
		"run":      starlark.NewBuiltin("t.run", t.run),
		"ok":       starlark.NewBuiltin("t.ok", t.ok),
		"fail":     starlark.NewBuiltin("t.fail", t.fail),
		"answer":   starlark.NewBuiltin("t.answer", t.answer),
		"approve":  starlark.NewBuiltin("t.approve", t.approve),
		"reject":   starlark.NewBuiltin("t.reject", t.reject),
		"fork":     starlark.NewBuiltin("t.fork", t.fork),
		"pending":  starlark.NewBuiltin("t.pending", t.pendingFn),
		"strict":   starlark.NewBuiltin("t.strict", t.strictFn),
		"live":     starlark.NewBuiltin("t.live", t.liveFn),
		"eq":       starlark.NewBuiltin("t.eq", t.eq),
		"true":     starlark.NewBuiltin("t.true", t.trueFn),
		"contains": starlark.NewBuiltin("t.contains", t.contains),
		"fails":    starlark.NewBuiltin("t.fails", t.fails),
	}
	return t
}

var _ starlark.HasAttrs = (*tester)(nil)

func (t *tester) String() string        { return "<t " + t.res.Name + ">" }
func (t *tester) Type() string          { return "t" }
func (t *tester) Freeze()               {}
func (t *tester) Truth() starlark.Bool  { return true }
func (t *tester) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: t") }
func (t *tester) Attr(name string) (starlark.Value, error) {
	if b, ok := t.attrs[name]; ok {
		return b, nil
	}
	return nil, nil
}
func (t *tester) AttrNames() []string {
	names := make([]string, 0, len(t.attrs))
	for n := range t.attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// caller is the position in the test file of the call to builtin now
// running.
func caller(th *starlark.Thread) graphir.Pos {
	for i := 1; i < th.CallStackDepth(); i++ {
		if p := th.CallFrame(i).Pos; p.IsValid() && p.Line > 0 {
			return graphir.Pos{File: p.Filename(), Line: int(p.Line), Col: int(p.Col)}
		}
	}
	return graphir.Pos{}
}

// failf records a failure of the test at the caller's position; the test
// goes on, as with Go's t.Errorf.
func (t *tester) failf(th *starlark.Thread, format string, args ...any) {
	t.res.Failures = append(t.res.Failures, Failure{Pos: caller(th), Msg: fmt.Sprintf(format, args...)})
}

func (t *tester) run(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var flow string
	var inputs, mocks *starlark.Dict
	parallel := 1
	record := false
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "flow", &flow, "inputs?", &inputs, "mocks?", &mocks, "parallel?", &parallel, "record?", &record); err != nil {
		return nil, err
	}
	if parallel < 1 {
		return nil, fmt.Errorf("%s: parallel must be at least 1, got %d", b.Name(), parallel)
	}
	path := flow
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(t.file), flow)
	}
	// Named from the working directory when it is under it, as skein
	// check names files: diagnostics then read "flows/b.star:3:1", not
	// an absolute path.
	path = shownPath(path)
	if err := confine.Check(t.root, path); err != nil {
		return nil, fmt.Errorf("%s: flow %q: %v", b.Name(), flow, err)
	}
	f := frontend.Load(path, frontend.Options{Root: t.root})
	if f.Graph == nil {
		return nil, fmt.Errorf("%s: %s", b.Name(), diagText(f.Diagnostics))
	}
	if f.Errors() > 0 {
		return nil, fmt.Errorf("%s: flow %s does not check:\n%s", b.Name(), flow, diagText(f.Diagnostics))
	}
	g := f.Graph
	m, err := NewMocks(mocks)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if err := checkMocks(g, m); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	m.Strict, m.Live = t.strict, t.live
	var given frontend.Inputs
	if inputs != nil {
		for _, it := range inputs.Items() {
			k, ok := starlark.AsString(it[0])
			if !ok {
				return nil, fmt.Errorf("%s: inputs: keys are input names, got %s", b.Name(), it[0].Type())
			}
			v, err := stdlib.Data(it[1])
			if err != nil {
				return nil, fmt.Errorf("%s: inputs[%q]: %v", b.Name(), k, err)
			}
			given.Set(k, v)
		}
	}
	in, err := given.Bind(g)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), graphir.AsError(err).Msg)
	}
	// Run through the run service, as every front end runs a flow: the
	// mocks produce every effect, nothing is recorded, and a templated
	// child flow loads and checks as the flow did.
	svc := &runs.Service{}
	var sources []store.Source
	if record {
		// Recorded, for t.fork, in the test's own store.
		if svc.Store, err = t.store(); err != nil {
			return nil, fmt.Errorf("%s: record: %v", b.Name(), err)
		}
		sources = f.Sources.List()
	}
	run, err := svc.Start(&runs.Spec{Graph: g, Inputs: in, Sources: sources, Options: store.RunOptions{Parallel: parallel}, Effects: m})
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	return t.finish(th, b, run, m)
}

// finish runs run, with its effects answered by m, and returns its result
// object as Starlark values; m's problems fail the test.
func (t *tester) finish(th *starlark.Thread, b *starlark.Builtin, run *runs.Run, m *Mocks) (starlark.Value, error) {
	res, err := run.Run(t.ctx)
	if err != nil {
		// Only a recorded run has an error of its own: its record's.
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	for _, p := range m.Problems() {
		t.failf(th, "%s", p)
	}
	data, err := res.AppendJSON(nil, "")
	if err != nil {
		return nil, fmt.Errorf("%s: cannot encode the result: %v", b.Name(), err)
	}
	v, err := stdlib.FromStoredJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot decode the result: %v", b.Name(), err)
	}
	return v, nil
}

// fork is t.fork(r, set = {...}, from_step = "", mocks = {...}): the
// what-if fork of run r (a result of t.run(..., record = True)), as skein
// resume --set and --from make it: a new run in which each step of set
// ends with the output given instead of running, and what runs after it
// (or after from_step) runs again with mocks; everything before is
// answered from r's record, so no mock is asked for it.
func (t *tester) fork(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var parent starlark.Value
	var set, mocks *starlark.Dict
	var from string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "run", &parent, "set?", &set, "from_step?", &from, "mocks?", &mocks); err != nil {
		return nil, err
	}
	if (set == nil || set.Len() == 0) && from == "" {
		return nil, fmt.Errorf("%s: give set = {STEP: output} or from_step = STEP: what the fork changes", b.Name())
	}
	id, err := runID(parent)
	if err != nil || t.st == nil {
		return nil, fmt.Errorf("%s: want the result of t.run(..., record = True), got %s", b.Name(), parent.Type())
	}
	rec, err := t.st.Get(id)
	if err != nil {
		return nil, fmt.Errorf("%s: want the result of t.run(..., record = True): %v", b.Name(), err)
	}
	var values map[string]json.RawMessage
	if set != nil {
		values = map[string]json.RawMessage{}
		for _, it := range set.Items() {
			k, ok := starlark.AsString(it[0])
			if !ok {
				return nil, fmt.Errorf("%s: set: keys are step names, got %s", b.Name(), it[0].Type())
			}
			js, err := stdlib.AppendJSON(nil, it[1], "", 0)
			if err != nil {
				return nil, fmt.Errorf("%s: set[%q]: %v", b.Name(), k, err)
			}
			values[k] = js
		}
	}
	m, err := NewMocks(mocks)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	m.Strict, m.Live = t.strict, t.live
	run, _, err := (&runs.Service{Store: t.st}).Resume(&runs.ResumeSpec{Run: rec, From: from, Set: values, Options: rec.Options, Effects: m})
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if err := checkMocks(run.Graph(), m); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	return t.finish(th, b, run, m)
}

// runID is the run_id of a result object t.run returned.
func runID(v starlark.Value) (string, error) {
	r, ok := v.(starlark.HasAttrs)
	if !ok {
		return "", fmt.Errorf("not a run's result")
	}
	id, err := r.Attr("run_id")
	if err != nil || id == nil {
		return "", fmt.Errorf("not a run's result")
	}
	s, ok := starlark.AsString(id)
	if !ok || s == "" {
		return "", fmt.Errorf("not a run's result")
	}
	return s, nil
}

// checkMocks refuses a mock for a step that neither the flow nor its
// literal child flows have (with a did-you-mean), for a step that has no
// effect to mock (a fn step, a noop, a router by expression: they always
// run, so the mock would be ignored), and an outcome that cannot answer the
// step it names (t.answer() for a task, a bare t.ok() for an approval).
func checkMocks(g *graphir.Graph, m *Mocks) error {
	steps := map[string][]*graphir.Node{}
	tools := map[string]bool{}
	var all []string
	add := func(name string) {
		if _, ok := steps[name]; !ok && !tools[name] {
			all = append(all, name)
		}
	}
	// Agents' tool calls are mocked by the tool's name.
	g.EachGraph(func(c *graphir.Graph) {
		for _, t := range c.Tools {
			add(t.Name)
			tools[t.Name] = true
		}
		for _, n := range c.Steps() {
			add(n.Name)
			steps[n.Name] = append(steps[n.Name], n)
		}
	})
	sort.Strings(all)
	for _, name := range m.Names() {
		nodes := steps[name]
		if len(nodes) == 0 && !tools[name] {
			msg := fmt.Sprintf("mocks: flow %s has no step %q", g.Name, name)
			msg += spell.Suggest(name, all)
			return fmt.Errorf("%s", msg)
		}
		var effects []*graphir.Node
		for _, n := range nodes {
			if NoEffect(n) == "" {
				effects = append(effects, n)
			}
		}
		if len(effects) == 0 && !tools[name] {
			return fmt.Errorf("mocks[%q]: step %q is %s, which always runs in a test: it has no effect to mock (%s)", name, name, NoEffect(nodes[0]), effectKinds)
		}
		for _, o := range m.steps[name].list {
			if tools[name] && misfit(o, nil) == "" {
				continue
			}
			var why string
			for _, n := range effects {
				if why = misfit(o, n); why == "" {
					break
				}
			}
			if why != "" {
				return fmt.Errorf("mocks[%q]: %s", name, why)
			}
		}
	}
	return nil
}

// NoEffect says what kind of step n is ("a fn step") when its work is no
// effect, which a mock or --mock would answer, and "" when it is: fn
// steps, noops, routers by expression, loops without a judge and maps run
// in the VM itself, in tests and dry runs too.
func NoEffect(n *graphir.Node) string {
	switch n.Kind {
	case graphir.KindTask, graphir.KindShell, graphir.KindSubflow, graphir.KindApproval, graphir.KindWait:
		return ""
	}
	if n.IsModelCall() {
		return ""
	}
	return kindPhrase(n)
}

// effectKinds says which steps have effects, for messages.
const effectKinds = "tasks, shells, child flows, model calls, approvals and waits do"

// kindPhrase names what kind of step n is, with its article.
func kindPhrase(n *graphir.Node) string {
	switch {
	case n.Kind == graphir.KindRouter && n.IsModelCall():
		return "an LLM router"
	case n.Kind == graphir.KindRouter:
		return "a router by expression"
	case n.Kind == graphir.KindLoop && n.IsModelCall():
		return "a judged loop"
	case n.Kind == graphir.KindApproval:
		return "an approval"
	case n.Kind == graphir.KindAgent:
		return "an agent step"
	case n.Kind == graphir.KindLLM:
		return "an llm step"
	}
	return "a " + n.Kind.String() + " step"
}

// misfit says why outcome o cannot answer an effect of step n (nil: an
// agent's tool call), or "" when it can.
func misfit(o *Outcome, n *graphir.Node) string {
	what, give := "tool calls", "t.ok(output = ...) or t.fail()"
	if n != nil {
		what = fmt.Sprintf("step %q is %s", n.Name, kindPhrase(n))
		switch {
		case n.Kind == graphir.KindApproval:
			give = "t.approve() or t.reject()"
		case n.IsModelCall():
			give = "t.answer(...) or t.fail()"
		case n.Kind.IsProcess():
			give = "t.ok(stdout = ...) or t.fail()"
		}
	}
	switch o.Kind {
	case "answer":
		if n != nil && n.IsModelCall() {
			return ""
		}
		return fmt.Sprintf("t.answer() is a model's reply, and %s: give %s", what, give)
	case "approve", "reject":
		if n != nil && n.Kind == graphir.KindApproval {
			return ""
		}
		return fmt.Sprintf("t.%s() decides an approval, and %s: give %s", o.Kind, what, give)
	case "ok":
		if n != nil && n.Kind == graphir.KindApproval && (o.Output == nil || o.Output == starlark.None) {
			return fmt.Sprintf("%s, which t.ok() would leave without its {approved, by, reason, at} output: give %s", what, give)
		}
	}
	return ""
}

// pendingFn is t.pending(): an outcome that never comes, so the effect
// runs until its run cancels it: the loser of a join = "first" race, a
// step its timeout stops.
func (t *tester) pendingFn(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	return &Outcome{Kind: "pending"}, nil
}

func (t *tester) ok(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	o := &Outcome{Kind: "ok", Output: starlark.None}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "stdout?", &o.Stdout, "stderr?", &o.Stderr, "exit_code?", &o.ExitCode, "output?", &o.Output); err != nil {
		return nil, err
	}
	return o.data(b)
}

func (t *tester) fail(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	o := &Outcome{Kind: "fail", ExitCode: 1}
	code := string(codes.StepFailed) // UnpackArgs takes a *string, not a *codes.Code
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "code?", &code, "error?", &o.Error, "exit_code?", &o.ExitCode, "stderr?", &o.Stderr, "stdout?", &o.Stdout); err != nil {
		return nil, err
	}
	o.Code = codes.Code(code)
	if o.Code == "" {
		return nil, fmt.Errorf("%s: code must not be empty", b.Name())
	}
	return o, nil
}

func (t *tester) answer(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	o := &Outcome{Kind: "answer"}
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &o.Output); err != nil {
		return nil, err
	}
	return o.data(b)
}

func (t *tester) approve(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	o := &Outcome{Kind: "approve", By: "test", Reason: starlark.None}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "by?", &o.By, "reason?", &o.Reason, "values?", &o.Values); err != nil {
		return nil, err
	}
	if o.Values != nil {
		if _, err := stdlib.Data(o.Values); err != nil {
			return nil, fmt.Errorf("%s: values: %v", b.Name(), err)
		}
		for _, k := range o.Values.Keys() {
			if _, ok := k.(starlark.String); !ok {
				return nil, fmt.Errorf("%s: values must be a dict of field names to values, got the key %s", b.Name(), k)
			}
		}
		o.Values.Freeze()
	}
	return o.data(b)
}

func (t *tester) reject(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var reason string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "reason?", &reason); err != nil {
		return nil, err
	}
	return &Outcome{Kind: "reject", Reason: starlark.String(reason)}, nil
}

// data checks and freezes the values an outcome carries: they become step
// outputs, so they must be flow data.
func (o *Outcome) data(b *starlark.Builtin) (*Outcome, error) {
	for _, p := range []*starlark.Value{&o.Output, &o.Reason} {
		if *p == nil {
			continue
		}
		v, err := stdlib.Data(*p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		*p = v
	}
	return o, nil
}

func (t *tester) strictFn(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	t.strict, t.live = true, false
	return starlark.None, nil
}

func (t *tester) liveFn(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	t.live, t.strict = true, false
	return starlark.None, nil
}

func (t *tester) eq(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var got, want starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &got, &want); err != nil {
		return nil, err
	}
	// Dicts the test writes and the maps of a run's record compare as
	// flow data.
	g, w := got, want
	if d, err := stdlib.Data(got); err == nil {
		g = d
	}
	if d, err := stdlib.Data(want); err == nil {
		w = d
	}
	same, err := starlark.Equal(g, w)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if !same {
		t.failf(th, "t.eq: values differ (- want + got):\n%s", diff(want, got))
	}
	return starlark.None, nil
}

func (t *tester) trueFn(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var cond starlark.Value
	var msg string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "cond", &cond, "msg?", &msg); err != nil {
		return nil, err
	}
	if !cond.Truth() {
		if msg == "" {
			msg = fmt.Sprintf("got %s", short(cond))
		}
		t.failf(th, "t.true: %s", msg)
	}
	return starlark.None, nil
}

func (t *tester) contains(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var seq, x starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &seq, &x); err != nil {
		return nil, err
	}
	in, err := starlark.Binary(syntax.IN, x, seq)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if !in.Truth() {
		t.failf(th, "t.contains: %s not in %s", short(x), short(seq))
	}
	return starlark.None, nil
}

func (t *tester) fails(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var res starlark.Value
	var code string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &res, &code); err != nil {
		return nil, err
	}
	m, ok := res.(*stdlib.Map)
	if !ok {
		return nil, fmt.Errorf("%s: want the result of t.run, got %s", b.Name(), res.Type())
	}
	status, _ := m.Lookup("status")
	var gotCode starlark.Value = starlark.None
	var msg starlark.Value = starlark.None
	if e, ok := m.Lookup("error"); ok {
		if em, ok := e.(*stdlib.Map); ok {
			gotCode, _ = em.Lookup("code")
			msg, _ = em.Lookup("message")
		}
	}
	if status != starlark.String("failed") || gotCode != starlark.String(code) {
		t.failf(th, "t.fails: want the run to fail with %q, got status %s, code %s, error %s", code, short(status), short(gotCode), short(msg))
	}
	return starlark.None, nil
}

// diff is the - want / + got difference of two values: scalars side by
// side, lists and dicts line by line as indented JSON.
func diff(want, got starlark.Value) string {
	if !container(want) || !container(got) {
		return fmt.Sprintf("- %s\n+ %s", want.String(), got.String())
	}
	w, errW := stdlib.AppendJSON(nil, want, "  ", 0)
	g, errG := stdlib.AppendJSON(nil, got, "  ", 0)
	if errW != nil || errG != nil {
		return fmt.Sprintf("- %s\n+ %s", want.String(), got.String())
	}
	return lineDiff(jsonLines(w), jsonLines(g))
}

// jsonLines splits indented JSON into lines without their trailing commas,
// so an element that gained a successor is still the same line.
func jsonLines(b []byte) []string {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, ",")
	}
	return lines
}

// lineDiff is a longest-common-subsequence diff of two lists of lines:
// "- " lines only in a, "+ " lines only in b, "  " lines in both.
func lineDiff(a, b []string) string {
	const max = 2000
	if len(a) > max || len(b) > max {
		return fmt.Sprintf("- (%d lines)\n+ (%d lines)", len(a), len(b))
	}
	// lcs[i][j] is the length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max2(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	return strings.Join(out, "\n")
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// container reports whether v is a list, tuple or dict, whose differences
// are shown element by element.
func container(v starlark.Value) bool {
	switch v.(type) {
	case *starlark.List, starlark.Tuple, *starlark.Dict, *stdlib.Map:
		return true
	}
	return false
}

// short is a value for a failure message, cut to a line.
func short(v starlark.Value) string {
	if v == nil {
		return "None"
	}
	s := v.String()
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

func diagText(ds []check.Diagnostic) string {
	var b strings.Builder
	check.WriteText(&b, ds)
	return strings.TrimRight(b.String(), "\n")
}
