package check

// This file checks tools and agent steps: what a tool's templates read
// (unknown_param, unknown_input, unknown_name, expr_syntax,
// shell_interpolation) and the tools agent steps and flow(tools=) name
// (unknown_tool), and that no tool with approve= is named like an agent
// step that may call it (tool_named_like_step).
//
// A tool's templates are evaluated when an agent's model calls it, at any
// turn of any agent step that has it, so they read only the call's
// arguments (args.NAME, each a declared parameter) and the flow's inputs;
// a step's output reaches a tool through the agent's prompt instead.

import (
	"fmt"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
)

func checkTools(p *pass) {
	g := p.g
	for _, t := range g.Tools {
		for i, a := range t.Argv {
			p.checkToolTemplate(t, a, fmt.Sprintf("run[%d]", i))
		}
		if t.Approve != nil {
			p.checkToolTemplate(t, t.Approve, "approve")
		}
		if t.Shell != nil {
			for _, part := range t.Shell.Parts {
				if part.X != nil {
					p.report(codes.ShellInterpolation, nil, part.X.Pos,
						fmt.Sprintf("shell= of tool %q contains the template {{ %s }}: its value would be parsed by the shell", t.Name, part.X.Src),
						"a shell tool's arguments reach the script as environment variables: write \"$ARG_NAME\" (quoted), or use run= for an argv")
				}
			}
		}
	}
	names := g.ToolNames()
	unknown := func(n *graphir.Node, r graphir.ToolRef, where string) {
		if r.Name == "request_tool" || g.Tool(r.Name) != nil {
			return
		}
		hint := "declare it with tool()"
		if near := spell.Nearest(r.Name, names); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		} else if len(names) > 0 {
			hint = fmt.Sprintf("the flow declares %s", quoted(names))
		}
		pos := r.Pos
		if pos.Line == 0 && n != nil {
			pos = n.Pos
		} else if pos.Line == 0 {
			pos = p.flowPos()
		}
		p.report(codes.UnknownTool, n, pos, fmt.Sprintf("%s names tool %q, which no tool() declares", where, r.Name), hint)
	}
	for _, n := range g.Steps() {
		if n.Call == nil {
			continue
		}
		for _, r := range n.Call.Tools {
			unknown(n, r, fmt.Sprintf("step %q", n.Name))
		}
	}
	for _, r := range g.ToolPool {
		unknown(nil, r, "flow(tools=)")
	}
	// A call's approval is keyed by the tool's name and the call by the
	// step's, in the same turn's scope: the same name would make one key.
	for _, n := range g.Steps() {
		if n.Call == nil || n.Kind != graphir.KindAgent {
			continue
		}
		refs := n.Call.Tools
		if len(g.ToolPool) > 0 {
			refs = append(refs[:len(refs):len(refs)], g.ToolPool...)
		}
		for _, r := range refs {
			if t := g.Tool(r.Name); t != nil && t.Approve != nil && t.Name == n.Name {
				pos := r.Pos
				if pos.Line == 0 {
					pos = t.Pos
				}
				p.report(codes.ToolNamedLikeStep, n, pos,
					fmt.Sprintf("tool %q has approve= and the name of agent step %q, which may call it: the approval of a call and the call would be recorded under one name", t.Name, n.Name),
					fmt.Sprintf("rename the tool (tool(%q, ...)) or the step", t.Name+"_tool"))
				break
			}
		}
	}
}

// checkToolTemplate checks the names one template of tool t reads.
func (p *pass) checkToolTemplate(t *graphir.Tool, tm *graphir.Template, field string) {
	if tm == nil {
		return
	}
	where := fmt.Sprintf("%s of tool %q", field, t.Name)
	if tm.Err != nil && !holeErr(tm) {
		p.report(codes.ExprSyntax, nil, tm.Err.Pos, fmt.Sprintf("invalid template in %s: %s", where, tm.Err.Msg), `write a literal "{{" as {{ "{{" }}`)
	}
	for _, part := range tm.Parts {
		x := part.X
		if x == nil {
			continue
		}
		if x.Err != nil {
			p.report(codes.ExprSyntax, nil, x.Err.Pos, fmt.Sprintf("invalid expression in %s: %s", where, x.Err.Msg), syntaxHint(x.Src))
			continue
		}
		for _, r := range x.Refs {
			switch r.Name {
			case "args":
				name := r.Attr + r.Key
				if name == "" || t.Param(name) != nil {
					continue
				}
				hint := fmt.Sprintf("declare it in params= (params = {%q: \"string\"})", name)
				if near := spell.Nearest(name, t.ParamNames()); near != "" {
					hint = fmt.Sprintf("did you mean %q?", near)
				}
				p.report(codes.UnknownParam, nil, r.Pos, fmt.Sprintf("tool %q has no parameter %q (in %s)", t.Name, name, where), hint)
			case "inputs":
				if name := r.Attr + r.Key; name != "" && p.g.Input(name) == nil {
					p.report(codes.UnknownInput, nil, r.Pos, fmt.Sprintf("unknown input %q in %s", name, where), p.inputHint(name))
				}
			default:
				hint := "a tool's templates read its arguments (args.NAME) and the flow's inputs (inputs.NAME); pass a step's output to the agent in its prompt"
				if near := spell.Nearest(r.Name, []string{"args", "inputs"}); near != "" {
					hint = fmt.Sprintf("did you mean %q?", near)
				}
				p.report(codes.UnknownName, nil, r.Pos, fmt.Sprintf("unknown name %q in %s", r.Name, where), hint)
			}
		}
	}
}
