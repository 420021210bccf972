package check

// This file checks nested flows (docs/language.md): subflow_not_found, subflow_cycle
// and subflow_depth, the inputs a parent passes to a literal child (a
// step's inputs=, a flow= tool's params), and the child's own errors. The loader has already loaded every literal flow=
// target, transitively, and recorded on the step why one could not be;
// templated flow= paths are known only at run time and left to its guard.

import (
	"fmt"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
)

// MaxSubflowDepth is how deeply child flows may nest (docs/language.md).
const MaxSubflowDepth = 8

// childCheck is the result of checking one literal child flow.
type childCheck struct {
	errors []Diagnostic // its own errors, which stop the parent too
	chain  []string     // its file, then the files of its deepest literal child chain
}

// child checks the child flow c once per top-level check, whichever parents
// reach it.
func (p *pass) child(c *graphir.Graph) *childCheck {
	if cc, ok := p.children[c]; ok {
		return cc // checked, or (never for a loader's graphs) in progress on a cycle
	}
	cc := &childCheck{chain: []string{c.File}}
	p.children[c] = cc
	cp := newPass(c, p.children)
	for _, d := range cp.run() {
		if d.Severity == Error {
			cc.errors = append(cc.errors, d)
		}
	}
	cc.chain = append(cc.chain, cp.deepest...)
	return cc
}

func checkSubflows(p *pass) {
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindSubflow {
			continue
		}
		p.checkChild(n, fmt.Sprintf("step %q", n.Name), n.Subflow.Child, n.Subflow.ChildErr, p.flowArgPos(n))
		if n.Subflow.Child != nil {
			p.checkChildInputs(n)
		}
	}
	for _, t := range p.g.Tools {
		if t.Flow != nil {
			at := t.Flow.Pos
			if !at.IsValid() {
				at = t.Pos
			}
			p.checkChild(nil, fmt.Sprintf("tool %q", t.Name), t.Child, t.ChildErr, at)
			if t.Child != nil {
				p.checkToolInputs(t)
			}
		}
	}
}

// checkChild reports why the literal child flow of a subflow step n (or of
// a tool, n nil; what names it) could not be loaded, the child's own
// errors, and a chain of children nested too deep. at is where flow= is
// written.
func (p *pass) checkChild(n *graphir.Node, what string, child *graphir.Graph, loadErr *graphir.Error, at graphir.Pos) {
	in := fmt.Sprintf("%s: in child flow of %s", at, what)
	if e := loadErr; e != nil {
		d := FromError(e)
		if d.Step == "" && n != nil {
			d.Step = n.Name
		}
		if d.Pos.File != at.File || !d.Pos.IsValid() {
			d.Trace = append(append([]string(nil), d.Trace...), in)
		}
		if !d.Pos.IsValid() {
			d.Pos = at
		}
		p.diags = append(p.diags, d)
	}
	if child == nil {
		return
	}
	cc := p.child(child)
	for _, d := range cc.errors {
		d.Trace = append(append([]string(nil), d.Trace...), in)
		p.diags = append(p.diags, d)
	}
	if len(cc.chain) > len(p.deepest) {
		p.deepest = cc.chain
	}
	if len(cc.chain) > MaxSubflowDepth {
		p.report(codes.SubflowDepth, n, at,
			fmt.Sprintf("child flows nest %d deep through %s, more than %d: %s", len(cc.chain), what,
				MaxSubflowDepth, strings.Join(append([]string{p.g.File}, cc.chain...), " -> ")),
			"flatten the chain: run some of these flows side by side instead of inside each other")
	}
}

// checkToolInputs reports what a flow= tool passes its child: the call's
// arguments are the child's inputs, so every parameter must be an input
// the child declares (unknown_input) of a type its arguments fit
// (input_type), and every required input of the child a parameter
// (input_missing).
func (p *pass) checkToolInputs(t *graphir.Tool) {
	c := t.Child
	names := make([]string, len(c.Inputs))
	for i, in := range c.Inputs {
		names[i] = in.Name
	}
	for _, prm := range t.Params {
		pos := prm.Pos
		if !pos.IsValid() {
			pos = t.Pos
		}
		decl := c.Input(prm.Name)
		if decl == nil {
			hint := fmt.Sprintf("child flow %s declares %s; a flow= tool's params are the child's inputs", c.Name, quoteList(names))
			if near := spell.Nearest(prm.Name, names); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			}
			p.report(codes.UnknownInput, nil, pos,
				fmt.Sprintf("tool %q has parameter %q, which child flow %s does not declare as an input", t.Name, prm.Name, c.Name), hint)
			continue
		}
		if !graphir.InputFits(prm.Type, decl.TypeName()) {
			p.report(codes.InputType, nil, pos,
				fmt.Sprintf("tool %q declares parameter %q as %q, which does not fit input %q of child flow %s", t.Name, prm.Name, prm.Type, prm.Name, c.Name),
				fmt.Sprintf("child flow %s declares %s; give the parameter the matching JSON type", c.Name, decl.Describe()))
		}
	}
	for i := range c.Inputs {
		decl := &c.Inputs[i]
		if !decl.Required || t.Param(decl.Name) != nil {
			continue
		}
		at := t.Flow.Pos
		if !at.IsValid() {
			at = t.Pos
		}
		p.report(codes.InputMissing, nil, at,
			fmt.Sprintf("tool %q runs child flow %s without its required input %q", t.Name, c.Name, decl.Name),
			fmt.Sprintf("add it to params (params = {%q: %q}); child flow %s declares %s", decl.Name, paramType(decl.TypeName()), c.Name, decl.Describe()))
	}
}

// paramType is the JSON-schema type of a tool parameter for an input of
// type input.
func paramType(input string) string {
	switch input {
	case "int":
		return "integer"
	case "float":
		return "number"
	case "bool":
		return "boolean"
	case "list":
		return "array"
	case "dict":
		return "object"
	}
	return "string"
}

// checkChildInputs reports what a step passes to its literal child flow:
// inputs the child does not declare (unknown_input), required inputs it
// does not pass (input_missing), and literal values of the wrong type
// (input_type).
func (p *pass) checkChildInputs(n *graphir.Node) {
	c := n.Subflow.Child
	names := make([]string, len(c.Inputs))
	for i, in := range c.Inputs {
		names[i] = in.Name
	}
	passed := map[string]bool{}
	for _, in := range n.Subflow.Inputs {
		passed[in.Name] = true
		pos := n.Pos
		if in.Value != nil && in.Value.Pos.IsValid() {
			pos = in.Value.Pos
		}
		if decl := c.Input(in.Name); decl != nil {
			if in.Literal != nil {
				if _, err := decl.Check(in.Literal); err != nil {
					p.report(codes.InputType, n, pos,
						fmt.Sprintf("step %q passes %s to child flow %s: %v", n.Name, graphir.ValueString(in.Literal), c.Name, err),
						fmt.Sprintf("child flow %s declares %s", c.Name, decl.Describe()))
				}
			}
			continue
		}
		hint := fmt.Sprintf("child flow %s declares %s", c.Name, quoteList(names))
		if near := spell.Nearest(in.Name, names); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		}
		p.report(codes.UnknownInput, n, pos,
			fmt.Sprintf("step %q passes input %q, which child flow %s does not declare", n.Name, in.Name, c.Name), hint)
	}
	for i := range c.Inputs {
		decl := &c.Inputs[i]
		if !decl.Required || passed[decl.Name] {
			continue
		}
		p.report(codes.InputMissing, n, p.flowArgPos(n),
			fmt.Sprintf("step %q runs child flow %s without its required input %q", n.Name, c.Name, decl.Name),
			fmt.Sprintf("pass it: inputs = {%q: ...}; child flow %s declares %s", decl.Name, c.Name, decl.Describe()))
	}
}

// flowArgPos is where a subflow step's flow= is written, else the step.
func (p *pass) flowArgPos(n *graphir.Node) graphir.Pos {
	if sub := n.Subflow; sub != nil && sub.Flow != nil && sub.Flow.Pos.IsValid() {
		return sub.Flow.Pos
	}
	return n.Pos
}

func quoteList(xs []string) string {
	if len(xs) == 0 {
		return "no inputs"
	}
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "inputs " + strings.Join(q, ", ")
}
