package stdlib

// This file rewrites a parsed file or expression, before it is resolved, so
// that the operations whose result can be far bigger than their operands go
// through the checked builtins of CheckedOps (see alloc.go):
//
//	x * y          ->  ·mul(x, y)
//	x % y          ->  ·mod(x, y)
//	x.join         ->  ·attr(x, "join")      (also replace, format)
//	v *= y         ->  v = ·mul(v, y)
//	a[k] *= y      ->  ·augindex("*", a, k)(y)
//	a.f *= y       ->  ·augfield("*", a, "f")(y)
//
// (the inner call reads a[k] or a.f, the outer one evaluates y, multiplies
// and stores: the order in which go.starlark.net evaluates an augmented
// assignment, each of a and k once).
//
// Each call is placed at the operator (or the dot), where go.starlark.net
// reports an error of the operation, so errors keep their positions. Only
// the tree that is compiled is rewritten; formatting and the editor parse
// their own.

import (
	"strconv"

	"go.starlark.net/syntax"
)

// Rewrite rewrites the statements of f in place.
func Rewrite(f *syntax.File) {
	f.Stmts = rewriteStmts(f.Stmts)
}

// RewriteExpr returns e rewritten (e itself may be changed).
func RewriteExpr(e syntax.Expr) syntax.Expr { return rx(e) }

// IsAttrCall reports whether call is the rewritten form of x.name, and
// returns x, name and where name is: what reads a rewritten tree sees the
// attribute read.
func IsAttrCall(call *syntax.CallExpr) (x syntax.Expr, name string, at syntax.Position, ok bool) {
	id, isID := call.Fn.(*syntax.Ident)
	if !isID || id.Name != attrName || len(call.Args) != 2 {
		return nil, "", at, false
	}
	lit, isLit := call.Args[1].(*syntax.Literal)
	if !isLit || lit.Token != syntax.STRING {
		return nil, "", at, false
	}
	return call.Args[0], lit.Value.(string), lit.TokenPos, true
}

func rewriteStmts(stmts []syntax.Stmt) []syntax.Stmt {
	for i, s := range stmts {
		stmts[i] = rs(s)
	}
	return stmts
}

func rs(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.RHS = rx(s.RHS)
		if s.Op != syntax.STAR_EQ && s.Op != syntax.PERCENT_EQ {
			rtarget(s.LHS)
			return s
		}
		name, sym := mulName, "*"
		if s.Op == syntax.PERCENT_EQ {
			name, sym = modName, "%"
		}
		switch lhs := Unparen(s.LHS).(type) {
		case *syntax.Ident:
			cp := &syntax.Ident{NamePos: lhs.NamePos, Name: lhs.Name}
			s.Op = syntax.EQ
			s.RHS = call(name, lhs.NamePos, s.OpPos, cp, s.RHS)
			return s
		case *syntax.IndexExpr:
			// Two calls, so that a and k are evaluated and a[k] is read
			// before y, as go.starlark.net does: the inner call reads
			// the slot (its error at "[", where Starlark reports it),
			// the outer one evaluates y, then applies op and stores.
			start, _ := lhs.Span()
			read := call(augIdxName, start, lhs.Lbrack, str(sym, s.OpPos), rx(lhs.X), rx(lhs.Y))
			return &syntax.ExprStmt{X: callOf(read, s.OpPos, s.RHS)}
		case *syntax.DotExpr:
			start, _ := lhs.Span()
			read := call(augAttrName, start, lhs.Dot, str(sym, s.OpPos), rx(lhs.X), str(lhs.Name.Name, lhs.NamePos))
			return &syntax.ExprStmt{X: callOf(read, s.OpPos, s.RHS)}
		}
		rtarget(s.LHS) // an error the resolver reports
	case *syntax.DefStmt:
		rparams(s.Params)
		s.Body = rewriteStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rx(s.X)
	case *syntax.ForStmt:
		rtarget(s.Vars)
		s.X = rx(s.X)
		s.Body = rewriteStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rx(s.Cond)
		s.Body = rewriteStmts(s.Body)
	case *syntax.IfStmt:
		s.Cond = rx(s.Cond)
		s.True = rewriteStmts(s.True)
		s.False = rewriteStmts(s.False)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rx(s.Result)
		}
	}
	return s
}

// rtarget rewrites inside an assignment's target, leaving the target itself
// (a name, x.f, x[k]) as it is.
func rtarget(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.ParenExpr:
		rtarget(e.X)
	case *syntax.TupleExpr:
		for _, x := range e.List {
			rtarget(x)
		}
	case *syntax.ListExpr:
		for _, x := range e.List {
			rtarget(x)
		}
	case *syntax.IndexExpr:
		e.X, e.Y = rx(e.X), rx(e.Y)
	case *syntax.DotExpr:
		e.X = rx(e.X)
	}
}

func rparams(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rx(b.Y)
		}
	}
}

func rxs(list []syntax.Expr) {
	for i, e := range list {
		list[i] = rx(e)
	}
}

func rx(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = rx(e.X), rx(e.Y)
		switch e.Op {
		case syntax.STAR:
			if !(numeric(e.X) && numeric(e.Y)) && !isFloat(e.X) && !isFloat(e.Y) {
				start, _ := e.X.Span()
				return call(mulName, start, e.OpPos, e.X, e.Y)
			}
		case syntax.PERCENT:
			if !numeric(e.X) {
				start, _ := e.X.Span()
				return call(modName, start, e.OpPos, e.X, e.Y)
			}
		}
	case *syntax.CallExpr:
		e.Fn = rx(e.Fn)
		for i, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				b.Y = rx(b.Y) // name=value
				continue
			}
			e.Args[i] = rx(a)
		}
	case *syntax.Comprehension:
		e.Body = rx(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				rtarget(c.Vars)
				c.X = rx(c.X)
			case *syntax.IfClause:
				c.Cond = rx(c.Cond)
			}
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = rx(e.Cond), rx(e.True), rx(e.False)
	case *syntax.DictExpr:
		for _, x := range e.List {
			if d, ok := x.(*syntax.DictEntry); ok {
				d.Key, d.Value = rx(d.Key), rx(d.Value)
			}
		}
	case *syntax.DotExpr:
		e.X = rx(e.X)
		if checkedMethods[e.Name.Name] {
			start, _ := e.X.Span()
			return call(attrName, start, e.Dot, e.X, str(e.Name.Name, e.Name.NamePos))
		}
	case *syntax.IndexExpr:
		e.X, e.Y = rx(e.X), rx(e.Y)
	case *syntax.LambdaExpr:
		rparams(e.Params)
		e.Body = rx(e.Body)
	case *syntax.ListExpr:
		rxs(e.List)
	case *syntax.TupleExpr:
		rxs(e.List)
	case *syntax.ParenExpr:
		e.X = rx(e.X)
	case *syntax.SliceExpr:
		e.X = rx(e.X)
		if e.Lo != nil {
			e.Lo = rx(e.Lo)
		}
		if e.Hi != nil {
			e.Hi = rx(e.Hi)
		}
		if e.Step != nil {
			e.Step = rx(e.Step)
		}
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = rx(e.X)
		}
	}
	return e
}

// call makes name(args...): its name at start (where a call's error points
// once the loader maps "(" to the start of the call), its "(" at op (where
// the interpreter reports the error of the operation).
func call(name string, start, op syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	_, end := args[len(args)-1].Span()
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: start, Name: name}, Lparen: op, Args: args, Rparen: end}
}

// callOf makes fn(arg), its "(" at op.
func callOf(fn syntax.Expr, op syntax.Position, arg syntax.Expr) *syntax.CallExpr {
	_, end := arg.Span()
	return &syntax.CallExpr{Fn: fn, Lparen: op, Args: []syntax.Expr{arg}, Rparen: end}
}

func str(s string, at syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: at, Raw: strconv.Quote(s), Value: s}
}

// Unparen is e without the parentheses around it.
func Unparen(e syntax.Expr) syntax.Expr {
	for {
		p, ok := e.(*syntax.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// numeric reports whether e is a number literal, which no * or % of it can
// make big.
func numeric(e syntax.Expr) bool {
	l, ok := Unparen(e).(*syntax.Literal)
	return ok && (l.Token == syntax.INT || l.Token == syntax.FLOAT)
}

func isFloat(e syntax.Expr) bool {
	l, ok := Unparen(e).(*syntax.Literal)
	return ok && l.Token == syntax.FLOAT
}
