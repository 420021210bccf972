package check

// This file checks the flow's own input declarations: a default that does
// not have the declared type, or is not among the declared choices
// (input_type). What a parent passes to a child flow is checked in
// subflows.go.

import (
	"fmt"

	"github.com/skeinlang/skein/graphir"

	"github.com/skeinlang/skein/graphir/codes"
)

func checkInputs(p *pass) {
	for i := range p.g.Inputs {
		p.checkDefault(&p.g.Inputs[i], nil)
	}
	// The fields of approval steps are declared the same way.
	for _, n := range p.g.Nodes {
		for i := range n.Fields {
			p.checkDefault(&n.Fields[i], n)
		}
	}
}

// checkDefault reports a default of in, an input or (of approval step n)
// a field, that does not fit its declaration.
func (p *pass) checkDefault(in *graphir.Input, n *graphir.Node) {
	if in.Required || in.Default == nil {
		return
	}
	if _, err := in.Check(in.Default); err != nil {
		hint := fmt.Sprintf("give a default of type %s, or change type= to match it", in.TypeName())
		if graphir.HasType(in.TypeName(), in.Default) {
			hint = "give a default among the choices, or add it to choices="
		}
		pos := in.Pos
		if !pos.IsValid() {
			pos = p.flowPos()
		}
		p.report(codes.InputType, n, pos,
			fmt.Sprintf("the default of %s %q does not fit its declaration: %v", in.Noun(), in.Name, err),
			hint)
	}
}
