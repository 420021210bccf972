package graphir

// This file bounds how deep a syntax tree may be. The Starlark parser
// limits brackets to 1,000 levels but reads a chain of operators, calls,
// attributes or indexes in a loop, so `1+1+…+1`, `s.upper().upper()…` and
// `x[0][0]…` make trees as deep as they are long; every walk after the
// parser (go.starlark.net's resolver and compiler, stdlib.Rewrite,
// Skein's own walks, the formatter's printer) recurses over the tree, and
// a deep enough one overflows the goroutine's stack, a fatal error no
// recover() catches (docs/security.md).

import (
	"fmt"

	"go.starlark.net/syntax"
)

// MaxSyntaxDepth is how deep the syntax tree of a flow file, a REPL chunk
// or an expression may be: each operator of a chain, each call, attribute,
// index and bracket is a level. Recursing over a tree this deep takes a few
// megabytes of stack; real flows stay far below it.
const MaxSyntaxDepth = 10_000

// ParseFile parses src, the source of file, in the flow dialect
// ([FileOptions]) and bounds its depth ([BoundDepth]).
func ParseFile(file string, src any, mode syntax.Mode) (*syntax.File, error) {
	f, err := FileOptions.Parse(file, src, mode)
	if err != nil {
		return nil, err
	}
	if err := BoundDepth(f); err != nil {
		return nil, err
	}
	return f, nil
}

// ParseExpr parses an expression in the flow dialect and bounds its depth.
func ParseExpr(file string, src any, mode syntax.Mode) (syntax.Expr, error) {
	x, err := FileOptions.ParseExpr(file, src, mode)
	if err != nil {
		return nil, err
	}
	if err := BoundDepth(x); err != nil {
		return nil, err
	}
	return x, nil
}

// BoundDepth returns a syntax.Error at the first node of n deeper than
// [MaxSyntaxDepth], or nil. Its own walk stops there, so it never
// recurses deeper than the bound.
func BoundDepth(n syntax.Node) error {
	depth := 0
	var deep syntax.Node
	syntax.Walk(n, func(n syntax.Node) bool {
		switch {
		case n == nil:
			depth--
			return true
		case deep != nil:
			return false
		case depth >= MaxSyntaxDepth:
			deep = n
			return false
		}
		depth++
		return true
	})
	if deep == nil {
		return nil
	}
	return syntax.Error{Pos: tokenPos(deep), Msg: fmt.Sprintf("expression nested too deeply: more than %d levels (an operator chain, calls, attributes or indexes count one level each; split it with variables)", MaxSyntaxDepth)}
}

// tokenPos returns the position of n's own token. Span would walk down
// the left of a deep chain, as deep as the tree.
func tokenPos(n syntax.Node) syntax.Position {
	for {
		t, ok := n.(*syntax.TupleExpr)
		if !ok || t.Lparen.IsValid() || len(t.List) == 0 {
			break
		}
		n = t.List[0]
	}
	switch n := n.(type) {
	case *syntax.TupleExpr:
		if n.Lparen.IsValid() {
			return n.Lparen
		}
	case *syntax.BinaryExpr:
		return n.OpPos
	case *syntax.UnaryExpr:
		return n.OpPos
	case *syntax.CallExpr:
		return n.Lparen
	case *syntax.DotExpr:
		return n.Dot
	case *syntax.IndexExpr:
		return n.Lbrack
	case *syntax.SliceExpr:
		return n.Lbrack
	case *syntax.ParenExpr:
		return n.Lparen
	case *syntax.ListExpr:
		return n.Lbrack
	case *syntax.DictExpr:
		return n.Lbrace
	case *syntax.CondExpr:
		return n.If
	case *syntax.Comprehension:
		return n.Lbrack
	case *syntax.LambdaExpr:
		return n.Lambda
	case *syntax.Ident:
		return n.NamePos
	case *syntax.Literal:
		return n.TokenPos
	}
	start, _ := n.Span()
	return start
}
