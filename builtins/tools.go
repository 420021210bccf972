package builtins

// This file defines tool(), and the tools= of agent steps and of flow().

import (
	"fmt"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
)

// Tool is the value tool() returns: what an agent step's tools= and
// flow(tools=) name.
type Tool struct{ name string }

var _ starlark.HasAttrs = (*Tool)(nil)

func (t *Tool) String() string        { return fmt.Sprintf("tool(%q)", t.name) }
func (t *Tool) Type() string          { return "tool" }
func (t *Tool) Freeze()               {}
func (t *Tool) Truth() starlark.Bool  { return true }
func (t *Tool) Hash() (uint32, error) { return starlark.String(t.name).Hash() }
func (t *Tool) AttrNames() []string   { return []string{"name"} }
func (t *Tool) Attr(name string) (starlark.Value, error) {
	if name == "name" {
		return starlark.String(t.name), nil
	}
	return nil, nil
}

// defaultMaxTurns bounds the model calls of an agent step without
// max_turns=.
const defaultMaxTurns = 8

// defaultMaxGrants bounds the tools granted during a run without
// flow(max_grants=).
const defaultMaxGrants = 2

// tool(name, *, run=None, shell=None, params={}, help="", fn=None, flow=None, final=False, approve=None, env={})
func toolFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var vals [10]starlark.Value
	if err := c.unpack(args, kwargs, toolParams, vals[:]); err != nil {
		return nil, err
	}
	name, run, shell, params, help, fnv, flow := vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6]
	t := &graphir.Tool{Pos: c.pos}
	s, ok := name.(starlark.String)
	if !ok || !graphir.ValidName(string(s)) {
		return nil, c.errorf("name must be a string matching [a-z_][a-z0-9_]* (the function name the model calls), got %s", describe(name))
	}
	t.Name = string(s)
	if t.Name == requestToolName {
		return nil, c.errorf("%q is the built-in tool agents use to ask for more tools; choose another name", requestToolName)
	}
	c.named("tool", t.Name)
	given := 0
	for _, v := range []starlark.Value{run, shell, fnv, flow} {
		if !isNone(v) {
			given++
		}
	}
	switch {
	case given > 1:
		return nil, c.errorf("give one of run, shell, fn and flow, not several")
	case !isNone(fnv):
		t.Kind = graphir.KindFn
		f, ok := fnv.(starlark.Callable)
		if !ok {
			return nil, c.errorf("fn must be a function of one parameter args, got %s", describe(fnv))
		}
		if err := c.arity("fn", f); err != nil {
			return nil, err
		}
		t.Fn = f
	case !isNone(flow):
		t.Kind = graphir.KindSubflow
		if t.Flow, err = c.template("flow", flow); err != nil {
			return nil, err
		}
		switch {
		case t.Flow.Src == "":
			return nil, c.errorf("flow must name the child flow file, got \"\"")
		case !t.Flow.IsLiteral() || t.Flow.Err != nil:
			return nil, c.hintf("the model chooses a tool's arguments, never which flow it runs: pass what varies as params (the child's inputs)",
				"flow of tool %q must be a literal path, got the template %q", t.Name, t.Flow.Src)
		}
	case !isNone(run):
		t.Kind = graphir.KindTask
		if t.Argv, err = c.argv(run); err != nil {
			return nil, err
		}
	case !isNone(shell):
		t.Kind = graphir.KindShell
		if t.Shell, err = c.template("shell", shell); err != nil {
			return nil, err
		}
	default:
		return nil, c.errorf("a tool needs run= (an argv), shell= (a script), fn= (a function of args) or flow= (a child flow) to say what it does")
	}
	if !isNone(params) {
		keys, vals, err := c.dict("params", params)
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			if !graphir.ValidName(k) {
				return nil, c.errorf("params: parameter name %q must match [a-z_][a-z0-9_]*", k)
			}
			ty, ok := vals[i].(starlark.String)
			if !ok || !contains(graphir.ParamTypes, string(ty)) {
				return nil, c.hintf(`types are "string", "integer", "number", "boolean", "array" and "object"`,
					"params[%q] must be a JSON-schema type, got %s", k, describe(vals[i]))
			}
			pos, _ := c.locate("params", k)
			t.Params = append(t.Params, graphir.ToolParam{Name: k, Type: string(ty), Pos: pos})
		}
	}
	if !isNone(help) {
		if t.Help, err = c.str("help", help, true); err != nil {
			return nil, err
		}
	}
	if final := vals[7]; !isNone(final) {
		b, ok := final.(starlark.Bool)
		if !ok {
			return nil, c.errorf("final must be True or False, got %s", describe(final))
		}
		t.Final = bool(b)
	}
	if approve := vals[8]; !isNone(approve) {
		if t.Approve, err = c.template("approve", approve); err != nil {
			return nil, err
		}
	}
	if env := vals[9]; !isNone(env) {
		if t.Kind != graphir.KindTask && t.Kind != graphir.KindShell {
			return nil, c.errorf("env applies only to run= and shell= tools")
		}
		if t.Env, err = c.env(env); err != nil {
			return nil, err
		}
	}
	if err := c.b.AddTool(t); err != nil {
		return nil, c.errorf("%v", err)
	}
	return &Tool{name: t.Name}, nil
}

// requestToolName is the built-in tool through which an agent asks for a
// tool of the flow's pool.
const requestToolName = "request_tool"

// toolRefs unpacks a list of tools (tool() values or their names).
func (c *call) toolRefs(param string, v starlark.Value) ([]graphir.ToolRef, error) {
	seq, ok := v.(starlark.Indexable)
	if _, isStr := v.(starlark.String); !ok || isStr {
		return nil, c.errorf("%s must be a list of tools (the values tool() returns, or their names), got %s", param, describe(v))
	}
	var out []graphir.ToolRef
	for i := 0; i < seq.Len(); i++ {
		var name string
		switch x := seq.Index(i).(type) {
		case *Tool:
			name = x.name
		case starlark.String:
			name = string(x)
		default:
			return nil, c.errorf("%s[%d] must be a tool or a tool's name, got %s", param, i, describe(x))
		}
		pos, _ := c.locate(param, name)
		out = append(out, graphir.ToolRef{Name: name, Pos: pos})
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

var toolParams = []string{"name", "run?", "shell?", "params?", "help?", "fn?", "flow?", "final?", "approve?", "env?"}
