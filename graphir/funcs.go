package graphir

// This file reads the body of a user's function of one parameter (a fn
// step, a condition, a router's by or case, a map's over, the flow's
// output, a loop's until) for what it reads of that parameter: `r.build`,
// `r.build.stdout`, `r.inputs.n`, `it.result["probe"]`. The checker
// resolves these like the names of a string expression (docs/codes.md). The
// loader finds the function's syntax; this file needs only the syntax tree,
// resolved, never a thread.

import (
	"go.starlark.net/resolve"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/stdlib"
)

// FuncRefs is what a function reads of its parameter.
type FuncRefs struct {
	Param string // the parameter's name, "r" by convention
	// Refs lists each r.NAME read, with the attribute or constant key read
	// from it (r.NAME.attr, r.NAME["key"]), at NAME's position, in source
	// order.
	Refs []Ref
	// Guards lists the steps the function asks about with
	// r.visits("name") or r.status("name"): a read of such a step is taken
	// to be guarded, as in expressions.
	Guards []string
	// Opaque is set when the parameter is used other than as r.NAME
	// (passed to a helper, stored, indexed): what it reads then cannot all
	// be followed, so only the reads seen are checked, and the function may
	// read anything.
	Opaque bool
}

// ReadsOf returns what the function fn (a *syntax.DefStmt or
// *syntax.LambdaExpr of a resolved file) reads of its first parameter, or
// nil when fn is neither or has no parameter.
func ReadsOf(fn syntax.Node) *FuncRefs {
	var params []syntax.Expr
	var body []syntax.Node
	switch f := fn.(type) {
	case *syntax.DefStmt:
		params = f.Params
		for _, s := range f.Body {
			body = append(body, s)
		}
	case *syntax.LambdaExpr:
		params = f.Params
		body = []syntax.Node{f.Body}
	default:
		return nil
	}
	if len(params) == 0 {
		return nil
	}
	var param *syntax.Ident
	switch p := params[0].(type) {
	case *syntax.Ident:
		param = p
	case *syntax.BinaryExpr: // r=default
		param, _ = p.X.(*syntax.Ident)
	}
	if param == nil {
		return nil
	}
	isParam := func(x syntax.Expr) bool {
		id, ok := x.(*syntax.Ident)
		if !ok || id.Name != param.Name {
			return false
		}
		b, ok := id.Binding.(*resolve.Binding)
		return ok && b.First == param
	}

	fr := &FuncRefs{Param: param.Name}
	outer := map[syntax.Expr]Ref{}   // r.NAME -> what is read from it
	used := map[*syntax.Ident]bool{} // uses of r as r.NAME
	var calls []*syntax.CallExpr
	// dot handles n, which reads x.name (name at at).
	subs := map[syntax.Expr]string{} // r.NAME.attr -> what is read from it
	dot := func(n, x syntax.Expr, name string, at syntax.Position) {
		if in, ok := x.(*syntax.DotExpr); ok && isParam(in.X) {
			outer[in] = Ref{Attr: name, Sub: subs[n]}
		}
		if in, ok := x.(*syntax.DotExpr); ok {
			if in2, ok := in.X.(*syntax.DotExpr); ok && isParam(in2.X) {
				subs[in] = name
			}
		}
		if in, ok := x.(*syntax.CallExpr); ok {
			if ix, _, _, ok := stdlib.IsAttrCall(in); ok && isParam(ix) {
				outer[in] = Ref{Attr: name}
			}
		}
		if isParam(x) {
			r := outer[n]
			r.Name = name
			r.Pos = Pos{File: at.Filename(), Line: int(at.Line), Col: int(at.Col)}
			fr.Refs = append(fr.Refs, r)
			used[x.(*syntax.Ident)] = true
		}
	}
	walk := func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.DotExpr:
			dot(n, n.X, n.Name.Name, n.Name.NamePos)
		case *syntax.IndexExpr:
			if in, ok := n.X.(*syntax.DotExpr); ok && isParam(in.X) {
				if lit, ok := n.Y.(*syntax.Literal); ok && lit.Token == syntax.STRING {
					outer[in] = Ref{Key: lit.Value.(string)}
				}
			}
			if in, ok := n.X.(*syntax.DotExpr); ok {
				if in2, ok := in.X.(*syntax.DotExpr); ok && isParam(in2.X) {
					if lit, ok := n.Y.(*syntax.Literal); ok && lit.Token == syntax.STRING {
						subs[in] = lit.Value.(string)
					}
				}
			}
		case *syntax.CallExpr:
			// The loader rewrites x.join into a checked call
			// (stdlib.Rewrite): it still reads x.join.
			if x, name, at, ok := stdlib.IsAttrCall(n); ok {
				dot(n, x, name, at)
			}
			calls = append(calls, n)
		case *syntax.Ident:
			if isParam(n) && !used[n] {
				fr.Opaque = true
			}
		}
		return true
	}
	for _, n := range body {
		syntax.Walk(n, walk)
	}
	var reveals spans
	for _, n := range body {
		reveals = append(reveals, revealSpans(n)...)
	}
	for i := range fr.Refs {
		p := fr.Refs[i].Pos
		fr.Refs[i].Revealed = reveals.contain(syntax.MakePosition(nil, int32(p.Line), int32(p.Col)))
	}
	for _, c := range calls {
		d, ok := c.Fn.(*syntax.DotExpr)
		if !ok || !isParam(d.X) || (d.Name.Name != "visits" && d.Name.Name != "status") || len(c.Args) != 1 {
			continue
		}
		if lit, ok := c.Args[0].(*syntax.Literal); ok && lit.Token == syntax.STRING {
			fr.Guards = append(fr.Guards, lit.Value.(string))
		}
	}
	return fr
}
