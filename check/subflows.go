package check

// This file checks nested flows (SPEC §3): subflow_not_found, subflow_cycle
// and subflow_depth, the inputs a parent passes to a literal child, and the
// child's own errors. The loader has already loaded every literal flow=
// target, transitively, and recorded on the step why one could not be;
// templated flow= paths are known only at run time and left to its guard.

import (
	"fmt"
	"strings"

	"github.com/skeinlang/skein/graphir"
)

// MaxSubflowDepth is how deeply child flows may nest (SPEC §3).
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
	g := p.g
	for _, n := range g.Steps() {
		if n.Kind != graphir.KindSubflow {
			continue
		}
		if e := n.ChildErr; e != nil {
			d := FromError(e)
			if d.Step == "" {
				d.Step = n.Name
			}
			if d.Pos.File != n.Pos.File || !d.Pos.IsValid() {
				d.Trace = append(append([]string(nil), d.Trace...), fmt.Sprintf("%s: in child flow of step %q", p.flowArgPos(n), n.Name))
			}
			if !d.Pos.IsValid() {
				d.Pos = p.flowArgPos(n)
			}
			p.diags = append(p.diags, d)
		}
		if n.Child == nil {
			continue
		}
		cc := p.child(n.Child)
		for _, d := range cc.errors {
			d.Trace = append(append([]string(nil), d.Trace...), fmt.Sprintf("%s: in child flow of step %q", p.flowArgPos(n), n.Name))
			p.diags = append(p.diags, d)
		}
		if len(cc.chain) > len(p.deepest) {
			p.deepest = cc.chain
		}
		if len(cc.chain) > MaxSubflowDepth {
			p.report("subflow_depth", n, p.flowArgPos(n),
				fmt.Sprintf("child flows nest %d deep through step %q, more than %d: %s", len(cc.chain), n.Name,
					MaxSubflowDepth, strings.Join(append([]string{g.File}, cc.chain...), " -> ")),
				"flatten the chain: run some of these flows side by side instead of inside each other")
		}
		p.checkChildInputs(n)
	}
}

// checkChildInputs reports what a step passes to its literal child flow:
// inputs the child does not declare (unknown_input), required inputs it
// does not pass (input_missing), and literal values of the wrong type
// (input_type).
func (p *pass) checkChildInputs(n *graphir.Node) {
	c := n.Child
	names := make([]string, len(c.Inputs))
	for i, in := range c.Inputs {
		names[i] = in.Name
	}
	passed := map[string]bool{}
	for _, in := range n.Inputs {
		passed[in.Name] = true
		pos := n.Pos
		if in.Value != nil && in.Value.Pos.IsValid() {
			pos = in.Value.Pos
		}
		if decl := c.Input(in.Name); decl != nil {
			if in.Literal != nil {
				if _, err := decl.Check(in.Literal); err != nil {
					p.report("input_type", n, pos,
						fmt.Sprintf("step %q passes %s to child flow %s: %v", n.Name, graphir.ValueString(in.Literal), c.Name, err),
						fmt.Sprintf("child flow %s declares %s", c.Name, decl.Describe()))
				}
			}
			continue
		}
		hint := fmt.Sprintf("child flow %s declares %s", c.Name, quoteList(names))
		if near := graphir.Nearest(in.Name, names); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		}
		p.report("unknown_input", n, pos,
			fmt.Sprintf("step %q passes input %q, which child flow %s does not declare", n.Name, in.Name, c.Name), hint)
	}
	for i := range c.Inputs {
		decl := &c.Inputs[i]
		if !decl.Required || passed[decl.Name] {
			continue
		}
		p.report("input_missing", n, p.flowArgPos(n),
			fmt.Sprintf("step %q runs child flow %s without its required input %q", n.Name, c.Name, decl.Name),
			fmt.Sprintf("pass it: inputs = {%q: ...}; child flow %s declares %s", decl.Name, c.Name, decl.Describe()))
	}
}

// flowArgPos is where a subflow step's flow= is written, else the step.
func (p *pass) flowArgPos(n *graphir.Node) graphir.Pos {
	if n.Flow != nil && n.Flow.Pos.IsValid() {
		return n.Flow.Pos
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
