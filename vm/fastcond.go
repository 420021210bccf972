package vm

// This file evaluates the commonest conditions without the interpreter. A
// when= condition that compares two operands, each a name the view
// resolves (a step, inputs, loop, ...), one attribute of such a name, or a
// literal — `critique < inputs.n`, `review.verdict == "ok"`,
// `loop.iteration >= 3` — is read and compared directly, with the same
// starlark.Compare the interpreter calls; one that is such a name or
// attribute alone, or `not` it — `critique.ok`, `not critique.ok` — is
// read directly when it is True or False. Anything else, any operand that
// is not a plain scalar (or, alone, not a bool), and any read or
// comparison that fails goes to the interpreter, which evaluates the condition as before and reports its
// error with the usual position; reads have no effects, so reading again is
// safe. A run under a Pacer (Temporal workflows) always uses the
// interpreter, so its count of Starlark steps does not change.

import (
	"math/big"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
)

// fastConds turns the fast path on; tests turn it off to compare.
var fastConds = true

// fastCond is a comparison of two operands, or one operand alone (op
// ILLEGAL, y unused) or negated (op NOT).
type fastCond struct {
	op   syntax.Token // EQL, NEQ, LT, LE, GT, GE, ILLEGAL or NOT
	x, y fastOperand
}

// fastOperand is a name the view resolves with, if attr is set, one
// attribute of its value; or, when name is "", the literal val.
type fastOperand struct {
	name, attr string
	val        starlark.Value
}

// compileFast returns the fast form of condition x, or nil if it has none.
func compileFast(x *graphir.Expr) *fastCond {
	if x == nil || x.User || x.Err != nil || x.Func == nil {
		return nil
	}
	e, err := graphir.ParseExpr(graphir.ExprFile, x.Src, 0)
	if err != nil {
		return nil
	}
	e = stdlib.Unparen(e)
	op := syntax.ILLEGAL
	if u, ok := e.(*syntax.UnaryExpr); ok && u.Op == syntax.NOT {
		op, e = syntax.NOT, stdlib.Unparen(u.X)
	}
	if _, ok := e.(*syntax.BinaryExpr); !ok || op == syntax.NOT {
		c := &fastCond{op: op}
		if !operand(x, e, &c.x) || c.x.name == "" {
			return nil // a literal condition is rare, and checked already
		}
		return c
	}
	b := e.(*syntax.BinaryExpr)
	switch b.Op {
	case syntax.EQL, syntax.NEQ, syntax.LT, syntax.LE, syntax.GT, syntax.GE:
	default:
		return nil
	}
	c := &fastCond{op: b.Op}
	if !operand(x, stdlib.Unparen(b.X), &c.x) || !operand(x, stdlib.Unparen(b.Y), &c.y) {
		return nil
	}
	return c
}

// operand reads e as an operand of x into o: a name x reads through the
// view (one of its Refs), that name's attribute, or a literal.
func operand(x *graphir.Expr, e syntax.Expr, o *fastOperand) bool {
	switch e := e.(type) {
	case *syntax.Ident:
		if refers(x, e.Name) {
			o.name = e.Name
			return true
		}
		switch e.Name {
		case "True":
			o.val = starlark.True
		case "False":
			o.val = starlark.False
		case "None":
			o.val = starlark.None
		default:
			return false // a builtin or module
		}
		return true
	case *syntax.DotExpr:
		id, ok := stdlib.Unparen(e.X).(*syntax.Ident)
		if !ok || !refers(x, id.Name) {
			return false
		}
		o.name, o.attr = id.Name, e.Name.Name
		return true
	case *syntax.Literal:
		switch v := e.Value.(type) {
		case string:
			if e.Token != syntax.STRING {
				return false
			}
			o.val = starlark.String(v)
		case int64:
			o.val = starlark.MakeInt64(v)
		case *big.Int:
			o.val = starlark.MakeBigInt(v)
		case float64:
			o.val = starlark.Float(v)
		default:
			return false
		}
		return true
	}
	return false
}

// refers reports whether x reads name through the view.
func refers(x *graphir.Expr, name string) bool {
	for _, r := range x.Refs {
		if r.Name == name {
			return true
		}
	}
	return false
}

// fastEval evaluates condition c of step self in frame f with the run
// locked; ok is false when the interpreter must evaluate it instead.
func (r *run) fastEval(f *frame, self *graphir.Node, c *fastCond) (live, ok bool) {
	if r.pacer != nil {
		return false, false
	}
	g := r.gen
	if g == nil {
		g = r.newGen()
		r.gen = g
	}
	v := g.view
	v.f, v.self = f, self
	x, ok := c.x.value(v)
	if !ok {
		return false, false
	}
	if c.op == syntax.ILLEGAL || c.op == syntax.NOT {
		b, ok := x.(starlark.Bool)
		return bool(b) != (c.op == syntax.NOT), ok
	}
	y, ok := c.y.value(v)
	if !ok {
		return false, false
	}
	b, err := starlark.Compare(c.op, x, y)
	if err != nil {
		return false, false
	}
	return b, true
}

// value is the operand's value in view v, if it is a plain scalar.
func (o *fastOperand) value(v *view) (starlark.Value, bool) {
	if o.name == "" {
		return o.val, true
	}
	x, err := v.attr(o.name)
	if err != nil || x == nil {
		return nil, false
	}
	if o.attr != "" {
		h, ok := x.(starlark.HasAttrs)
		if !ok {
			return nil, false
		}
		if x, err = h.Attr(o.attr); err != nil || x == nil {
			return nil, false
		}
	}
	switch x.(type) {
	case starlark.Int, starlark.String, starlark.Float, starlark.Bool, starlark.NoneType:
		return x, true
	}
	return nil, false
}
