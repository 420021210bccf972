package check

// This file checks what a map's over= gives, where that is known before
// the run (over_type): a literal that is no list, an input declared as a
// string, number or bool, or a task's stdout, which is text to split, not
// a list of lines. What cannot be known (a fn step's output, an
// expression that computes) is left to the run, which fails with
// expr_error naming the value.

import (
	"fmt"

	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
)

func checkOver(p *pass) {
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindMap || n.Map.Over == nil || n.Map.Over.User || n.Map.Over.Err != nil {
			continue
		}
		x := n.Map.Over
		e, err := syntax.ParseExpr("", x.Src, 0)
		if err != nil {
			continue
		}
		what, hint := p.overValue(n, e)
		if what == "" {
			continue
		}
		p.report("over_type", n, x.Pos,
			fmt.Sprintf("over= of map %q gives %s, not a list", n.Name, what), hint)
	}
}

// overValue says what the over= expression e of map m gives when it is
// surely not a list, with a hint; "" when it may be one.
func (p *pass) overValue(m *graphir.Node, e syntax.Expr) (what, hint string) {
	for {
		pe, ok := e.(*syntax.ParenExpr)
		if !ok {
			break
		}
		e = pe.X
	}
	const writeList = `write a list, e.g. over = "[1, 2, 3]"`
	switch e := e.(type) {
	case *syntax.Literal:
		switch e.Token {
		case syntax.STRING:
			return fmt.Sprintf("the string %s", e.Raw), `a string is no list of items: write a list, e.g. over = "['a', 'b']", or split it: over = "'a b'.split()"`
		case syntax.INT:
			return fmt.Sprintf("the int %s", e.Raw), writeList + `, or over = "range(3)"`
		case syntax.FLOAT:
			return fmt.Sprintf("the float %s", e.Raw), writeList
		}
	case *syntax.Ident:
		switch e.Name {
		case "None", "True", "False":
			return e.Name, writeList
		}
		if n := p.overStep(m, e.Name); n != nil {
			switch {
			case n.Kind.IsProcess():
				return fmt.Sprintf("the record of %s step %q (a dict of stdout, stderr, exit_code, ...)", n.Kind, n.Name),
					fmt.Sprintf(`map over its lines: over = "%s.stdout.splitlines()"`, n.Name)
			case n.Kind == graphir.KindNoop || n.Kind == graphir.KindWait:
				return fmt.Sprintf("the output of %s step %q, which is None", n.Kind, n.Name),
					"map over a list another step computes, e.g. a fn step's result"
			}
		}
	case *syntax.DotExpr:
		base, ok := e.X.(*syntax.Ident)
		if !ok {
			return "", ""
		}
		field := e.Name.Name
		if base.Name == "inputs" {
			in := p.g.Input(field)
			if in == nil {
				return "", "" // unknown_input says so
			}
			switch in.Type {
			case "string", "int", "float", "bool":
				hint := fmt.Sprintf(`declare it a list: flow(inputs = {%q: input(type = "list")}), given as --input '%s=["a", "b"]'`, field, field)
				if in.Type == "string" {
					hint += fmt.Sprintf(`, or split it: over = "inputs.%s.split(',')"`, field)
				}
				return fmt.Sprintf("input %q, declared %s %s", field, article(in.Type), in.Type), hint
			}
			return "", ""
		}
		if n := p.overStep(m, base.Name); n != nil && n.Kind.IsProcess() {
			switch field {
			case "stdout", "stderr":
				return fmt.Sprintf("the %s of %s step %q, a string", field, n.Kind, n.Name),
					fmt.Sprintf(`map over its lines: over = "%s.%s.splitlines()"`, n.Name, field)
			case "exit_code":
				return fmt.Sprintf("the exit_code of %s step %q, an int", n.Kind, n.Name), writeList
			}
		}
	}
	return "", ""
}

// overStep returns the step called name that the over= of map m reads, or
// nil when name is bound otherwise there (an enclosing map's item) or is
// no step.
func (p *pass) overStep(m *graphir.Node, name string) *graphir.Node {
	if scopeVar(p.g, m.Parent, name) {
		return nil
	}
	n := p.g.Node(name)
	if n == nil || !n.IsStep() {
		return nil
	}
	return n
}

func article(word string) string {
	if word != "" && (word[0] == 'i' || word[0] == 'a') {
		return "an"
	}
	return "a"
}
