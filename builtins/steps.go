package builtins

// This file defines flow(), step(), edge() and chain().

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
)

// positional refuses more than n positional arguments, since everything
// after them is keyword-only.
func positional(fn string, args starlark.Tuple, n int, names string) error {
	if len(args) > n {
		return fmt.Errorf("%s: takes %d positional argument%s (%s); give the others by keyword", fn, n, plural(n), names)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// flow(name=None, description="", inputs={}, output=None, max_visits=None, timeout=None, on_exit=None)
func flowFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	var name, description, inputs, output, maxVisits, timeout, maxTokens starlark.Value
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var vals [16]starlark.Value
	if err := c.unpack(args, kwargs, flowParams, vals[:]); err != nil {
		return nil, err
	}
	name, description, inputs, output, maxVisits, timeout, maxTokens = vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[7]
	onExit := vals[6]
	f := graphir.FlowDecl{Pos: c.pos}
	if !isNone(name) {
		s, ok := name.(starlark.String)
		if !ok || s == "" {
			return nil, c.errorf("name must be a non-empty string, got %s", describe(name))
		}
		f.Name = string(s)
	}
	if !isNone(description) {
		s, ok := description.(starlark.String)
		if !ok {
			return nil, c.errorf("description must be a string, got %s", describe(description))
		}
		f.Description = string(s)
	}
	if !isNone(inputs) {
		keys, vals, err := c.dict("inputs", inputs)
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			if !graphir.ValidName(k) {
				return nil, c.errorf("inputs: input name %q must match [a-z_][a-z0-9_]*", k)
			}
			in, err := c.flowInput(k, vals[i])
			if err != nil {
				return nil, err
			}
			f.Inputs = append(f.Inputs, in)
		}
	}
	if !isNone(output) {
		if f.Output, err = c.cond("output", output); err != nil {
			return nil, err
		}
	}
	if !isNone(maxVisits) {
		if f.MaxVisits, err = c.intAtLeast("max_visits", maxVisits, 1); err != nil {
			return nil, err
		}
	}
	if !isNone(timeout) {
		if f.Timeout, err = c.duration("timeout", timeout); err != nil {
			return nil, err
		}
	}
	if !isNone(maxTokens) {
		if f.MaxTokens, err = c.intAtLeast("max_tokens", maxTokens, 1); err != nil {
			return nil, err
		}
	}
	if v := vals[15]; !isNone(v) {
		d, ok := starlark.AsFloat(v)
		if _, isBool := v.(starlark.Bool); !ok || isBool || !(d > 0) || math.IsInf(d, 0) {
			return nil, c.errorf("max_cost must be a positive number of US dollars, got %s", describe(v))
		}
		f.MaxCost = d
	}
	if !isNone(vals[8]) {
		if f.Tools, err = c.toolRefs("tools", vals[8]); err != nil {
			return nil, err
		}
	}
	f.MaxGrants = defaultMaxGrants
	if !isNone(vals[9]) {
		if f.MaxGrants, err = c.intAtLeast("max_grants", vals[9], 0); err != nil {
			return nil, err
		}
	}
	if err := c.concurrency(&f, vals[10], vals[11]); err != nil {
		return nil, err
	}
	if err := c.emit(&f, vals[12], vals[13]); err != nil {
		return nil, err
	}
	if !isNone(vals[14]) {
		if f.Keep, err = c.duration("keep", vals[14]); err != nil {
			return nil, err
		}
	}
	switch h := onExit.(type) {
	case nil, starlark.NoneType:
	case starlark.String:
		// A name lets flow() come before the handler is declared.
		if h == "" {
			return nil, c.errorf("on_exit must name a step, got \"\"")
		}
		f.OnExit = string(h)
		f.OnExitPos, _ = c.locate("on_exit", string(h))
	case *Step:
		s, err := c.step("on_exit", h)
		if err != nil {
			return nil, err
		}
		f.OnExit, f.OnExitPos = s.name, c.pos
	default:
		return nil, c.errorf("on_exit must be a step or the name of one, got %s", describe(onExit))
	}
	if err := c.b.SetFlow(f); err != nil {
		return nil, err
	}
	return starlark.None, nil
}

// step(name, *, run=None, shell=None, fn=None, flow=None, args=[], env={},
// stdin=None, dir=None, inputs={}, max_visits=None, retries=0, backoff="1s",
// timeout=None, join="and", retry_when=None, wait=None, approve=None)
func stepFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var name, run, shell, fnv, flow, argv, env, stdin, dir, inputs, maxVisits, retries, backoff, timeout, join starlark.Value
	var vals [32]starlark.Value
	if err := c.unpack(args, kwargs, stepParams, vals[:]); err != nil {
		return nil, err
	}
	name, run, shell, fnv, flow, argv, env, stdin, dir, inputs, maxVisits, retries, backoff, timeout, join = vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6], vals[7], vals[8], vals[9], vals[10], vals[11], vals[12], vals[13], vals[14]
	llm, system, modelName, schema, maxTokens := vals[15], vals[16], vals[17], vals[18], vals[19]
	retryWhen, wait, approve := vals[20], vals[21], vals[22]
	agent, tools, maxTurns := vals[23], vals[24], vals[25]
	factor, maxBackoff, jitter := vals[26], vals[27], vals[28]
	waitUntil := vals[29]
	partial := vals[30]
	fields := vals[31]
	n := &graphir.Node{Pos: c.pos, Stack: c.stack, Kind: graphir.KindNoop, Backoff: defaultBackoff}
	if n.Name, err = c.name(name); err != nil {
		return nil, err
	}
	c.named("step", n.Name)

	var kinds []string
	for _, k := range []struct {
		param string
		v     starlark.Value
	}{{"run", run}, {"shell", shell}, {"fn", fnv}, {"flow", flow}, {"llm", llm}, {"wait", wait}, {"wait_until", waitUntil}, {"approve", approve}, {"agent", agent}} {
		if !isNone(k.v) {
			kinds = append(kinds, k.param)
		}
	}
	if len(kinds) > 1 {
		return nil, c.errorf("give at most one of run, shell, fn, flow, llm, agent, wait, wait_until, approve; got %s and %s", kinds[0], kinds[1])
	}
	switch {
	case !isNone(run):
		n.Kind = graphir.KindTask
		if n.Argv, err = c.argv(run); err != nil {
			return nil, err
		}
	case !isNone(shell):
		n.Kind = graphir.KindShell
		if n.Shell, err = c.template("shell", shell); err != nil {
			return nil, err
		}
	case !isNone(fnv):
		n.Kind = graphir.KindFn
		f, ok := fnv.(starlark.Callable)
		if !ok {
			return nil, c.errorf("fn must be a function of one parameter r, got %s", describe(fnv))
		}
		if err := c.arity("fn", f); err != nil {
			return nil, err
		}
		n.Fn = f
		n.FnReads = c.reads(f)
	case !isNone(flow):
		n.Kind = graphir.KindSubflow
		n.Subflow = &graphir.Subflow{}
		if n.Subflow.Flow, err = c.template("flow", flow); err != nil {
			return nil, err
		}
		if n.Subflow.Flow.Src == "" {
			return nil, c.errorf("flow must name the child flow file, got \"\"")
		}
	case !isNone(llm):
		n.Kind = graphir.KindLLM
		n.Call = &graphir.ModelCall{}
		if n.Call.Prompt, err = c.template("llm", llm); err != nil {
			return nil, err
		}
	case !isNone(agent):
		n.Kind = graphir.KindAgent
		n.Call = &graphir.ModelCall{}
		if n.Call.Prompt, err = c.template("agent", agent); err != nil {
			return nil, err
		}
	case !isNone(approve):
		n.Kind = graphir.KindApproval
		if n.Approve, err = c.template("approve", approve); err != nil {
			return nil, err
		}
	case !isNone(wait):
		n.Kind = graphir.KindWait
		if n.Wait, err = c.template("wait", wait); err != nil {
			return nil, err
		}
		if n.Wait.IsLiteral() {
			// A literal duration is checked now; a templated one when the
			// step runs.
			if _, err := graphir.ParseWait(n.Wait.Src); err != nil {
				return nil, c.errorf("wait: %v", err)
			}
		}
	case !isNone(waitUntil):
		n.Kind, n.WaitUntil = graphir.KindWait, true
		if n.Wait, err = c.template("wait_until", waitUntil); err != nil {
			return nil, err
		}
		if n.Wait.IsLiteral() {
			if _, err := graphir.ParseWaitUntil(n.Wait.Src); err != nil {
				return nil, c.errorf("wait_until: %v", err)
			}
		}
	}

	// Parameters that belong to one kind only.
	only := func(param string, v starlark.Value, ok bool, kinds string) error {
		if !isNone(v) && !ok {
			return c.errorf("%s applies only to %s steps", param, kinds)
		}
		return nil
	}
	proc := n.Kind.IsProcess()
	model := n.Kind == graphir.KindLLM || n.Kind == graphir.KindAgent
	for _, chk := range []error{
		only("args", argv, n.Kind == graphir.KindTask, "run="),
		only("env", env, proc, "run= and shell="),
		only("stdin", stdin, proc, "run= and shell="),
		only("dir", dir, proc, "run= and shell="),
		only("inputs", inputs, n.Kind == graphir.KindSubflow, "flow="),
		only("system", system, model, "llm= and agent="),
		only("model", modelName, model, "llm= and agent="),
		only("schema", schema, model, "llm= and agent="),
		only("max_tokens", maxTokens, model, "llm= and agent="),
		only("tools", tools, n.Kind == graphir.KindAgent, "agent="),
		only("max_turns", maxTurns, n.Kind == graphir.KindAgent, "agent="),
		only("partial", partial, model, "llm= and agent="),
		only("fields", fields, n.Kind == graphir.KindApproval, "approve="),
	} {
		if chk != nil {
			return nil, chk
		}
	}
	if !isNone(fields) {
		if n.Fields, err = c.fields(fields); err != nil {
			return nil, err
		}
	}
	if !isNone(argv) {
		more, err := c.strings("args", argv)
		if err != nil {
			return nil, err
		}
		n.Argv = append(n.Argv, more...)
	}
	if !isNone(env) {
		if n.Env, err = c.env(env); err != nil {
			return nil, err
		}
	}
	if !isNone(stdin) {
		if n.Stdin, err = c.template("stdin", stdin); err != nil {
			return nil, err
		}
	}
	if !isNone(dir) {
		if n.Dir, err = c.template("dir", dir); err != nil {
			return nil, err
		}
	}
	if !isNone(inputs) {
		keys, vals, err := c.dict("inputs", inputs)
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			var t *graphir.Template
			var lit starlark.Value
			if sv, ok := vals[i].(*SecretValue); ok {
				if t, err = c.secretTemplate(fmt.Sprintf("inputs[%q]", k), sv); err != nil {
					return nil, err
				}
			} else if s, ok := vals[i].(starlark.String); ok {
				t = c.tmpl("inputs", string(s))
				if t.IsLiteral() && t.Err == nil {
					lit = s
				}
			} else {
				// A non-string value is passed as it is: wrap it as a
				// constant expression so the child sees its type.
				d, err := stdlib.Data(vals[i])
				if err != nil {
					return nil, c.errorf("inputs[%q]: %v", k, err)
				}
				// It is reported at its key, the nearest literal to it.
				at, _ := c.locate("inputs", k)
				x := c.b.Compiler.Expr(d.String(), at, false)
				if x.Err != nil {
					return nil, c.errorf("inputs[%q]: a %s cannot be passed as an input", k, d.Type())
				}
				t = &graphir.Template{Src: d.String(), Pos: at, Parts: []graphir.TemplatePart{{X: x}}}
				lit = d
			}
			n.Subflow.Inputs = append(n.Subflow.Inputs, graphir.NamedTemplate{Name: k, Value: t, Literal: lit})
		}
	}
	if model {
		if err := c.modelParams(n, system, modelName, schema, maxTokens); err != nil {
			return nil, err
		}
		if !isNone(partial) {
			b, ok := partial.(starlark.Bool)
			if !ok {
				return nil, c.errorf("partial must be True or False, got %s", describe(partial))
			}
			n.Call.Partial = bool(b)
		}
		n.Retries = defaultModelRetries
	}
	if n.Kind == graphir.KindAgent {
		if !isNone(tools) {
			if n.Call.Tools, err = c.toolRefs("tools", tools); err != nil {
				return nil, err
			}
		}
		n.Call.MaxTurns = defaultMaxTurns
		if !isNone(maxTurns) {
			if n.Call.MaxTurns, err = c.intAtLeast("max_turns", maxTurns, 1); err != nil {
				return nil, err
			}
		}
	}
	if err := c.common(n, maxVisits, retries, backoff, timeout, join); err != nil {
		return nil, err
	}
	if err := c.kindBounds(n.Kind, retries, backoff, retryWhen, timeout); err != nil {
		return nil, err
	}
	if err := c.retryShape(n, factor, maxBackoff, jitter); err != nil {
		return nil, err
	}
	if !isNone(retryWhen) {
		if n.RetryWhen, err = c.cond("retry_when", retryWhen); err != nil {
			return nil, err
		}
		if n.Retries == 0 {
			return nil, c.errorf("retry_when needs retries=N: it decides which failed attempts use one of the N retries")
		}
	}
	id := c.b.AddStep(n)
	return &Step{b: c.b, n: c.b.Node(id), name: n.Name, kind: n.Kind.String()}, nil
}

const defaultBackoff = time.Second

// retryShape unpacks backoff_factor=, max_backoff= and jitter=, which
// shape the delays of the retries the core makes (docs/runs.md): on task,
// shell, fn and flow steps only.
func (c *call) retryShape(n *graphir.Node, factor, maxBackoff, jitter starlark.Value) error {
	if isNone(factor) && isNone(maxBackoff) && isNone(jitter) {
		return nil
	}
	for _, p := range []struct {
		name string
		v    starlark.Value
	}{{"backoff_factor", factor}, {"max_backoff", maxBackoff}, {"jitter", jitter}} {
		if isNone(p.v) {
			continue
		}
		switch n.Kind {
		case graphir.KindTask, graphir.KindShell, graphir.KindFn, graphir.KindSubflow:
		default:
			return c.errorf("%s applies only to run=, shell=, fn= and flow= steps, whose retries the run makes (a model call backs off as its server asks)", p.name)
		}
	}
	rs := graphir.DefaultRetryShape
	if !isNone(factor) {
		var f float64
		switch v := factor.(type) {
		case starlark.Int:
			i, _ := v.Int64()
			f = float64(i)
		case starlark.Float:
			f = float64(v)
		default:
			return c.errorf("backoff_factor must be a number, got %s", describe(factor))
		}
		if !(f >= 1 && f <= 100) {
			return c.errorf("backoff_factor must be between 1.0 (a constant interval) and 100, got %s", factor)
		}
		rs.Factor = f
	}
	if !isNone(maxBackoff) {
		d, err := c.duration("max_backoff", maxBackoff)
		if err != nil {
			return err
		}
		if d < n.Backoff {
			return c.errorf("max_backoff %s is shorter than backoff %s", graphir.FormatDuration(d), graphir.FormatDuration(n.Backoff))
		}
		rs.Max = d
	}
	if !isNone(jitter) {
		b, ok := jitter.(starlark.Bool)
		if !ok {
			return c.errorf("jitter must be True or False, got %s", describe(jitter))
		}
		rs.Jitter = bool(b)
	}
	if n.Retries == 0 {
		return c.errorf("backoff_factor, max_backoff and jitter shape the delays of retries: give retries=N too")
	}
	n.RetryShape = &rs
	return nil
}

// kindBounds refuses the retry and timeout keywords on the step kinds where
// they could not do what docs/runs.md says: a step that does nothing
// cannot fail or take time, a wait or an approval asked again would end
// the same way, and a model call retries its transient failures itself,
// with no record for retry_when to read.
func (c *call) kindBounds(k graphir.Kind, retries, backoff, retryWhen, timeout starlark.Value) error {
	var what string
	switch k {
	case graphir.KindNoop:
		what = "a step with no run=, shell=, fn=, flow=, llm=, agent=, approve= or wait= (it does nothing, so it cannot fail or time out)"
	case graphir.KindWait:
		what = "wait= and wait_until= steps (a wait waited again ends the same way); timeout= applies"
	case graphir.KindApproval:
		what = "approve= steps (a decision is not asked again); timeout= bounds the wait for it"
	case graphir.KindLLM, graphir.KindAgent:
		if !isNone(retryWhen) {
			return c.errorf("retry_when does not apply to %s= steps: a model call retries transport errors, timeouts, 429 and 5xx by itself, up to retries=", k)
		}
		return nil
	default:
		return nil
	}
	for _, p := range []struct {
		name string
		v    starlark.Value
	}{{"retries", retries}, {"backoff", backoff}, {"retry_when", retryWhen}, {"timeout", timeout}} {
		if isNone(p.v) || (p.name == "timeout" && k != graphir.KindNoop) {
			continue
		}
		return c.errorf("%s does not apply to %s", p.name, what)
	}
	return nil
}

// argv unpacks run=, a non-empty list of strings, hinting at the list (or
// shell=) when it is given one string.
func (c *call) argv(run starlark.Value) ([]*graphir.Template, error) {
	if s, ok := run.(starlark.String); ok {
		return nil, c.hintf(runHint(string(s)), "run must be a list of strings, got string %q", string(s))
	}
	argv, err := c.strings("run", run)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, c.errorf("run must name a command: want a non-empty list of strings")
	}
	return argv, nil
}

// runHint says how to write a command given to run= as one string: as an
// argv (no shell) or, explicitly, with shell=.
func runHint(s string) string {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return `run takes a list: run = ["make", "all"]`
	}
	q := make([]string, len(fields))
	for i, f := range fields {
		q[i] = fmt.Sprintf("%q", f)
	}
	argv := fmt.Sprintf("run = [%s]", strings.Join(q, ", "))
	if strings.ContainsAny(s, "|&;<>()$`\\\"'*?[]#~") {
		return fmt.Sprintf("run= executes a program without a shell; for a shell command line write shell = %q (or split it into an argv: %s)", s, argv)
	}
	return fmt.Sprintf("write %s (an argv, no shell), or shell = %q", argv, s)
}

// name unpacks a step name. Its validity is the checker's to report, so that
// one load can show every bad name at once.
func (c *call) name(v starlark.Value) (string, error) {
	s, ok := v.(starlark.String)
	if !ok {
		return "", c.errorf("name must be a string, got %s", describe(v))
	}
	return string(s), nil
}

// common unpacks the parameters shared by all step kinds.
func (c *call) common(n *graphir.Node, maxVisits, retries, backoff, timeout, join starlark.Value) error {
	var err error
	if !isNone(maxVisits) {
		if n.MaxVisits, err = c.intAtLeast("max_visits", maxVisits, 1); err != nil {
			return err
		}
	}
	if !isNone(retries) {
		if n.Retries, err = c.intAtLeast("retries", retries, 0); err != nil {
			return err
		}
		if n.Retries > MaxRetries {
			return c.errorf("retries must be at most %d, got %d (with backoff doubling up to an hour, more would retry for days)", MaxRetries, n.Retries)
		}
	}
	if !isNone(backoff) {
		if n.Backoff, err = c.duration("backoff", backoff); err != nil {
			return err
		}
	}
	if !isNone(timeout) {
		if n.Timeout, err = c.duration("timeout", timeout); err != nil {
			return err
		}
	}
	if !isNone(join) {
		s, ok := join.(starlark.String)
		if !ok {
			return c.errorf("join must be \"and\", \"or\", \"all\", \"done\" or \"first\", got %s", describe(join))
		}
		if err := oneOf("join", string(s), "and", "or", "all", "done", "first"); err != nil {
			return c.errorf("%v", err)
		}
		n.JoinSet = true
		n.Join, _ = graphir.ParseJoin(string(s))
	}
	return nil
}

// env unpacks env=, a dict of variable names to templates or secret()s,
// sorted by name.
func (c *call) env(v starlark.Value) ([]graphir.EnvVar, error) {
	keys, vals, err := c.dict("env", v)
	if err != nil {
		return nil, err
	}
	var out []graphir.EnvVar
	for i, k := range keys {
		if k == "" || containsAny(k, "=\x00") {
			return nil, c.errorf("env: %q is not a valid variable name", k)
		}
		t, err := c.template(fmt.Sprintf("env[%q]", k), vals[i])
		if err != nil {
			return nil, err
		}
		out = append(out, graphir.EnvVar{Name: k, Value: t})
	}
	graphir.SortedEnv(out)
	return out, nil
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// edge(src, dst, *, when=None, on="success")
func edgeFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 2, "src, dst"); err != nil {
		return nil, err
	}
	var src, dst, when, on starlark.Value
	var vals [4]starlark.Value
	if err := c.unpack(args, kwargs, edgeParams, vals[:]); err != nil {
		return nil, err
	}
	src, dst, when, on = vals[0], vals[1], vals[2], vals[3]
	from, err := c.step("src", src, graphir.Start)
	if err != nil {
		return nil, err
	}
	to, err := c.step("dst", dst, graphir.End, graphir.Abort)
	if err != nil {
		return nil, err
	}
	e := &graphir.Edge{From: from.ID(), To: to.ID(), Pos: c.pos, Stack: c.stack}
	if !isNone(when) {
		if e.When, err = c.cond("when", when); err != nil {
			return nil, err
		}
	}
	if !isNone(on) {
		s, ok := on.(starlark.String)
		if !ok {
			return nil, c.errorf("on must be \"success\", \"failure\" or \"always\", got %s", describe(on))
		}
		switch s {
		case "success":
		case "failure":
			e.On = graphir.OnFailure
		case "always":
			e.On = graphir.OnAlways
		default:
			return nil, c.errorf("on must be \"success\", \"failure\" or \"always\", got %q", string(s))
		}
		if from.ID() == graphir.Start && e.On != graphir.OnSuccess {
			return nil, c.errorf("an edge from START cannot have on=%q", string(s))
		}
	}
	c.b.AddEdge(e)
	return starlark.None, nil
}

// chain(*steps): an unconditional success edge between each consecutive
// pair; it may begin with START and end with END or ABORT.
func chainFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if len(kwargs) > 0 {
		return nil, c.errorf("takes no keyword arguments")
	}
	if len(args) == 1 {
		if l, ok := args[0].(*starlark.List); ok {
			args = make(starlark.Tuple, l.Len())
			for i := range args {
				args[i] = l.Index(i)
			}
		}
	}
	if len(args) < 2 {
		return nil, c.errorf("needs at least two steps, got %d", len(args))
	}
	steps := make([]*Step, len(args))
	for i, a := range args {
		var allow []graphir.NodeID
		switch i {
		case 0:
			allow = []graphir.NodeID{graphir.Start}
		case len(args) - 1:
			allow = []graphir.NodeID{graphir.End, graphir.Abort}
		}
		if steps[i], err = c.step(fmt.Sprintf("argument %d", i+1), a, allow...); err != nil {
			return nil, err
		}
	}
	for i := 1; i < len(steps); i++ {
		c.b.AddEdge(&graphir.Edge{From: steps[i-1].ID(), To: steps[i].ID(), Pos: c.pos, Stack: c.stack})
	}
	return starlark.None, nil
}

// Parameter names, in order; "?" marks an optional one.
var (
	flowParams = []string{"name?", "description?", "inputs?", "output?", "max_visits?", "timeout?", "on_exit?", "max_tokens?", "tools?", "max_grants?", "concurrency?", "concurrency_key?", "emit?", "max_depth?", "keep?", "max_cost?"}
	stepParams = []string{"name", "run?", "shell?", "fn?", "flow?", "args?", "env?", "stdin?", "dir?", "inputs?", "max_visits?", "retries?", "backoff?", "timeout?", "join?",
		"llm?", "system?", "model?", "schema?", "max_tokens?", "retry_when?", "wait?", "approve?", "agent?", "tools?", "max_turns?",
		"backoff_factor?", "max_backoff?", "jitter?", "wait_until?", "partial?", "fields?"}
	edgeParams = []string{"src", "dst", "when?", "on?"}
)
