package check

// This file checks what an expression gives, where that is known before
// the run: a map's over= that is surely no list (over_type), a condition
// that is surely no bool (condition_type). Known are literals, inputs
// declared with a type, and the fields of a task's record (stdout is text,
// not lines; exit_code an int). What cannot be known (a fn step's output,
// an expression that computes) is left to the run, which fails with
// expr_error naming the value and where the expression is written.

import (
	"fmt"

	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// known is what the checker knows an expression gives: its type, as
// input() names types ("string", "int", "float", "bool", "list", "dict",
// or "none"), and words for it.
type known struct {
	typ, what string
	step      *graphir.Node // the task it reads, if any
	field     string        // the task's field it reads, if any
	input     string        // the input it reads, if any
}

func checkOver(p *pass) {
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindMap {
			continue
		}
		k := p.knownValue(n.Map.Over, n.Parent)
		if k == nil || k.typ == "list" {
			continue
		}
		hint := `write a list, e.g. over = "[1, 2, 3]"`
		switch {
		case k.typ == "dict" && k.step == nil:
			// A map never iterates a dict's keys for it: say which.
			hint = fmt.Sprintf(`map over its keys or its items: over = "list(%s)" or over = "%s.items()"`, n.Map.Over.Src, n.Map.Over.Src)
		case k.step != nil && (k.field == "" || k.field == "stdout" || k.field == "stderr" || k.field == "text"):
			field := k.field
			if field == "" {
				field = "stdout"
			}
			hint = fmt.Sprintf(`map over its lines: over = "%s.%s.splitlines()"`, k.step.Name, field)
		case k.input != "":
			hint = fmt.Sprintf(`declare it a list: flow(inputs = {%q: input(type = "list")}), given as --input '%s=["a", "b"]'`, k.input, k.input)
			if k.typ == "string" {
				hint += fmt.Sprintf(`, or split it: over = "inputs.%s.split(',')"`, k.input)
			}
		case k.typ == "string":
			hint = `a string is no list of items: write a list, e.g. over = "['a', 'b']", or split it: over = "'a b'.split()"`
		case k.typ == "int":
			hint += `, or over = "range(3)"`
		case k.typ == "none" && k.step != nil:
			hint = "map over a list another step computes, e.g. a fn step's result"
		}
		p.report(codes.OverType, n, n.Map.Over.Pos,
			fmt.Sprintf("over= of map %q gives %s, not a list", n.Name, k.what), hint)
	}
}

// checkConditions reports a condition that surely gives no bool: the run
// would fail with expr_error the first time it is evaluated (a condition is
// never taken as true for being non-empty).
func checkConditions(p *pass) {
	g := p.g
	report := func(n *graphir.Node, x *graphir.Expr, scope graphir.NodeID, where string) {
		k := p.knownValue(x, scope)
		if k == nil || k.typ == "bool" {
			return
		}
		hint := "compare it: a condition must give True or False"
		switch {
		case k.step != nil && k.field == "exit_code":
			hint = fmt.Sprintf(`compare it: %s.exit_code == 0`, k.step.Name)
		case k.step != nil && k.field == "text":
			hint = fmt.Sprintf(`compare it: %s.text != "" (a string is not taken as true for being non-empty)`, k.step.Name)
		case k.step != nil && (k.field == "stdout" || k.field == "stderr"):
			hint = fmt.Sprintf(`compare it: %s.%s.strip() != "" (a string is not taken as true for being non-empty)`, k.step.Name, k.field)
		case k.step != nil && k.field == "":
			hint = fmt.Sprintf(`read a field and compare it: %s.exit_code == 0`, k.step.Name)
		case k.input != "":
			hint = fmt.Sprintf(`compare it (inputs.%s == ...), or declare it a bool: input(False)`, k.input)
		}
		p.report(codes.ConditionType, n, x.Pos, fmt.Sprintf("%s gives %s, not True or False", where, k.what), hint)
	}
	for _, e := range g.Edges {
		if e.When != nil && !e.Router {
			from := g.Nodes[e.From]
			report(from, e.When, from.Parent, fmt.Sprintf("the condition of edge %s -> %s", from.Name, g.Nodes[e.To].Name))
		}
	}
	for _, n := range g.Steps() {
		if n.RetryWhen != nil {
			report(n, n.RetryWhen, n.Parent, fmt.Sprintf("retry_when= of step %q", n.Name))
		}
		if n.Router != nil {
			for i, c := range n.Router.Cases {
				report(n, c.When, n.Parent, fmt.Sprintf("case %d of router %q", i, n.Name))
			}
		}
	}
}

// knownValue says what the string expression x, read in scope, surely
// gives; nil when that is not known before the run.
func (p *pass) knownValue(x *graphir.Expr, scope graphir.NodeID) *known {
	if x == nil || x.User || x.Err != nil {
		return nil
	}
	e, err := graphir.ParseExpr("", x.Src, 0)
	if err != nil {
		return nil
	}
	for {
		pe, ok := e.(*syntax.ParenExpr)
		if !ok {
			break
		}
		e = pe.X
	}
	switch e := e.(type) {
	case *syntax.Literal:
		switch e.Token {
		case syntax.STRING:
			return &known{typ: "string", what: "the string " + e.Raw}
		case syntax.INT:
			return &known{typ: "int", what: "the int " + e.Raw}
		case syntax.FLOAT:
			return &known{typ: "float", what: "the float " + e.Raw}
		}
	case *syntax.ListExpr:
		return &known{typ: "list", what: "a list"}
	case *syntax.DictExpr:
		return &known{typ: "dict", what: "a dict"}
	case *syntax.Ident:
		switch e.Name {
		case "None":
			return &known{typ: "none", what: "None"}
		case "True", "False":
			return &known{typ: "bool", what: e.Name}
		}
		if n := p.stepIn(scope, e.Name); n != nil {
			switch {
			case n.Kind.IsProcess():
				return &known{typ: "dict", step: n, what: fmt.Sprintf("the record of %s step %q (a dict of stdout, stderr, exit_code, ...)", n.Kind, n.Name)}
			case n.Kind == graphir.KindNoop || n.Kind == graphir.KindWait:
				return &known{typ: "none", step: n, what: fmt.Sprintf("the output of %s step %q, which is None", n.Kind, n.Name)}
			}
		}
	case *syntax.DotExpr:
		base, ok := e.X.(*syntax.Ident)
		if !ok {
			return nil
		}
		field := e.Name.Name
		if base.Name == "inputs" {
			in := p.g.Input(field)
			if in == nil || in.Type == "any" || in.Type == "" {
				return nil // unknown_input says so, or anything goes
			}
			return &known{typ: in.Type, input: field, what: fmt.Sprintf("input %q, declared %s %s", field, article(in.Type), in.Type)}
		}
		if n := p.stepIn(scope, base.Name); n != nil && n.Kind.IsProcess() {
			switch field {
			case "stdout", "stderr", "text":
				return &known{typ: "string", step: n, field: field, what: fmt.Sprintf("the %s of %s step %q, a string", field, n.Kind, n.Name)}
			case "exit_code":
				return &known{typ: "int", step: n, field: field, what: fmt.Sprintf("the exit_code of %s step %q, an int", n.Kind, n.Name)}
			}
		}
	}
	return nil
}

// stepIn returns the step called name that an expression read in scope
// reads, or nil when name is bound otherwise there (an enclosing map's
// item, loop) or is no step.
func (p *pass) stepIn(scope graphir.NodeID, name string) *graphir.Node {
	if scopeVar(p.g, scope, name) {
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
