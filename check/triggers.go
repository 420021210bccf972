package check

// This file checks trigger() declarations and flow(concurrency_key=):
// the inputs a clock trigger gives must fit the flow's declared inputs
// (unknown_input, input_type, input_missing), and a concurrency key must
// name a declared input (unknown_input).

import (
	"fmt"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
)

func checkTriggers(p *pass) {
	names := make([]string, len(p.g.Inputs))
	for i, in := range p.g.Inputs {
		names[i] = in.Name
	}
	unknown := func(pos graphir.Pos, what, name string) {
		hint := fmt.Sprintf("the flow declares %s", quoteList(names))
		if near := spell.Nearest(name, names); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		}
		p.report(codes.UnknownInput, nil, pos, fmt.Sprintf("%s names input %q, which the flow does not declare", what, name), hint)
	}
	if k := p.g.ConcurrencyKey; k != "" {
		if name := k[len("inputs."):]; p.g.Input(name) == nil {
			unknown(p.g.ConcurrencyKeyPos, "concurrency_key", name)
		}
	}
	for i := range p.g.Triggers {
		t := &p.g.Triggers[i]
		if t.InputsFunc != nil {
			continue // what a delivery maps to is bound when it comes
		}
		what := "trigger " + t.Key()
		for _, name := range t.InputNames {
			pos := t.InputsPos[name]
			if !pos.IsValid() {
				pos = t.Pos
			}
			decl := p.g.Input(name)
			if decl == nil {
				unknown(pos, what, name)
				continue
			}
			if _, err := decl.Check(t.Inputs[name]); err != nil {
				p.report(codes.InputType, nil, pos, fmt.Sprintf("%s gives %v", what, err),
					fmt.Sprintf("the flow declares %s", decl.Describe()))
			}
		}
		for j := range p.g.Inputs {
			decl := &p.g.Inputs[j]
			if _, given := t.Inputs[decl.Name]; decl.Required && !given {
				p.report(codes.InputMissing, nil, t.Pos,
					fmt.Sprintf("%s starts the flow without its required input %q", what, decl.Name),
					fmt.Sprintf("give it: inputs = {%q: ...}; the flow declares %s", decl.Name, decl.Describe()))
			}
		}
	}
}

// checkEmit reports a flow(emit=) without max_depth (emit_unbounded).
func checkEmit(p *pass) {
	if p.g.Emit != "" && p.g.MaxDepth == 0 {
		pos := p.g.EmitPos
		if !pos.IsValid() {
			pos = p.flowPos()
		}
		p.report(codes.EmitUnbounded, nil, pos,
			fmt.Sprintf("flow(emit = %q) has no max_depth: the items its runs queue could expand without end", p.g.Emit),
			"give max_depth, how many levels of emitted items may expand, as max_depth = 2")
	}
}
