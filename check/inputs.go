package check

// This file checks the flow's own input declarations: a default that does
// not have the declared type, or is not among the declared choices
// (input_type). What a parent passes to a child flow is checked in
// subflows.go.

import (
	"fmt"

	"github.com/skeinlang/skein/graphir/codes"
)

func checkInputs(p *pass) {
	for i := range p.g.Inputs {
		in := &p.g.Inputs[i]
		if in.Required || in.Default == nil {
			continue
		}
		if _, err := in.Check(in.Default); err != nil {
			pos := in.Pos
			if !pos.IsValid() {
				pos = p.flowPos()
			}
			p.report(codes.InputType, nil, pos,
				fmt.Sprintf("the default of input %q does not fit its declaration: %v", in.Name, err),
				fmt.Sprintf("give a default of type %s, or change type= to match it", in.TypeName()))
		}
	}
}
