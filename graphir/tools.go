package graphir

// This file defines tools: effect templates an agent step's model may call,
// with arguments from the model's tool call.

import (
	"fmt"

	"go.starlark.net/starlark"
)

// ParamTypes are the JSON-schema types a tool parameter may have.
var ParamTypes = []string{"string", "integer", "number", "boolean", "array", "object"}

// ToolParam is one declared parameter of a tool.
type ToolParam struct {
	Name string
	Type string // one of ParamTypes
	Pos  Pos    // where the name is written in params=, else the tool() call
}

// Tool is one tool() declaration: a run= argv or shell= script whose
// templates read the call's arguments as args.NAME (and the flow's inputs),
// a function of the arguments, or a child flow whose inputs they are.
type Tool struct {
	Name   string
	Kind   Kind              // KindTask (run=), KindShell (shell=), KindFn (fn=) or KindSubflow (flow=)
	Argv   []*Template       // run=
	Shell  *Template         // shell=: run verbatim; the arguments reach it as environment variables ARG_NAME
	Env    []EnvVar          // env= of run= and shell= tools, sorted by name: set for each call
	Fn     starlark.Callable // fn=: called with the arguments (a dict-like value); its result goes back to the model
	Params []ToolParam       // in declaration order
	Help   string
	Pos    Pos
	// Final (final=True): the tool's result, when a call succeeds, is the
	// agent step's answer; the turn's other calls finish first.
	Final bool
	// Approve (approve=): the question a person answers before each call
	// runs, a template reading args.NAME; nil for none.
	Approve *Template

	// flow= tools: the literal path of the child flow (relative to the
	// flow's file), and what the loader made of it, as for child-flow
	// steps.
	Flow      *Template
	Child     *Graph // the child flow, loaded by the loader; nil if it could not be
	ChildPath string // the resolved path
	ChildErr  *Error // why the child could not be loaded
}

// Param returns the parameter called name, or nil.
func (t *Tool) Param(name string) *ToolParam {
	for i := range t.Params {
		if t.Params[i].Name == name {
			return &t.Params[i]
		}
	}
	return nil
}

// ParamNames lists the parameter names in order.
func (t *Tool) ParamNames() []string {
	names := make([]string, len(t.Params))
	for i, p := range t.Params {
		names[i] = p.Name
	}
	return names
}

// Schema returns the JSON schema of the tool's arguments, as OpenAI's
// function definitions want it: every parameter required, no others.
func (t *Tool) Schema() map[string]any {
	props := map[string]any{}
	req := []any{}
	for _, p := range t.Params {
		s := map[string]any{"type": p.Type}
		if p.Type == "array" {
			s["items"] = map[string]any{}
		}
		props[p.Name] = s
		req = append(req, p.Name)
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

// InputFits reports whether arguments of JSON-schema type param (one of
// ParamTypes) fit a flow input of type input (one of InputTypes).
func InputFits(param, input string) bool {
	switch input {
	case "any":
		return true
	case "float":
		return param == "number" || param == "integer"
	}
	want := map[string]string{"string": "string", "integer": "int", "boolean": "bool", "array": "list", "object": "dict"}[param]
	return want == input
}

// ToolRef is a tool named by an agent step's tools= or flow(tools=).
type ToolRef struct {
	Name string
	Pos  Pos
}

// AddTool records a tool() declaration; it fails on a name declared before.
func (b *Builder) AddTool(t *Tool) error {
	for _, o := range b.tools {
		if o.Name == t.Name {
			return fmt.Errorf("tool %q was already declared at %s", t.Name, o.Pos)
		}
	}
	b.tools = append(b.tools, t)
	return nil
}

// Tools returns the tool() declarations recorded so far, in order.
func (b *Builder) Tools() []*Tool { return b.tools }

// Tool returns the tool() declaration called name, or nil.
func (g *Graph) Tool(name string) *Tool {
	for _, t := range g.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// ToolNames lists the declared tools' names in order.
func (g *Graph) ToolNames() []string {
	names := make([]string, len(g.Tools))
	for i, t := range g.Tools {
		names[i] = t.Name
	}
	return names
}
