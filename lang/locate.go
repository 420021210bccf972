package lang

// This file defines the loader's graphir.Locator: it maps the position of a
// call's "(" (what the interpreter reports) to the start of the call, and
// finds a string argument's literal so that a diagnostic about an expression
// can point inside it.

import (
	"strings"
	"sync"

	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
)

type lineCol struct{ line, col int32 }

// locator indexes the calls of every file parsed during one load.
type locator struct {
	mu    sync.Mutex
	files map[string]map[lineCol]*syntax.CallExpr
	funcs map[string]map[lineCol]syntax.Node // def and lambda, by keyword position
	reads map[graphir.Pos]*graphir.FuncRefs  // what each function reads, computed once
}

func newLocator() *locator {
	return &locator{files: map[string]map[lineCol]*syntax.CallExpr{}, funcs: map[string]map[lineCol]syntax.Node{},
		reads: map[graphir.Pos]*graphir.FuncRefs{}}
}

// add indexes the calls and functions of a parsed file. The file must be
// resolved before [locator.Func] is asked about its functions.
func (l *locator) add(f *syntax.File) {
	calls := map[lineCol]*syntax.CallExpr{}
	funcs := map[lineCol]syntax.Node{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			calls[lineCol{n.Lparen.Line, n.Lparen.Col}] = n
		case *syntax.DefStmt:
			funcs[lineCol{n.Def.Line, n.Def.Col}] = n
		case *syntax.LambdaExpr:
			funcs[lineCol{n.Lambda.Line, n.Lambda.Col}] = n
		}
		return true
	})
	l.mu.Lock()
	// A REPL session parses its input in chunks under one file name: they
	// accumulate (their lines never overlap).
	if old := l.files[f.Path]; old != nil {
		for k, c := range calls {
			old[k] = c
		}
	} else {
		l.files[f.Path] = calls
	}
	if old := l.funcs[f.Path]; old != nil {
		for k, fn := range funcs {
			old[k] = fn
		}
	} else {
		l.funcs[f.Path] = funcs
	}
	l.mu.Unlock()
}

func (l *locator) Func(p graphir.Pos) *graphir.FuncRefs {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fr, ok := l.reads[p]; ok {
		return fr
	}
	fn := l.funcs[p.File][lineCol{int32(p.Line), int32(p.Col)}]
	var fr *graphir.FuncRefs
	if fn != nil {
		fr = graphir.ReadsOf(fn)
	}
	l.reads[p] = fr
	return fr
}

func (l *locator) call(p graphir.Pos) *syntax.CallExpr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files[p.File][lineCol{int32(p.Line), int32(p.Col)}]
}

func (l *locator) CallStart(p graphir.Pos) graphir.Pos {
	c := l.call(p)
	if c == nil {
		return p
	}
	start, _ := c.Fn.Span()
	return graphir.Pos{File: p.File, Line: int(start.Line), Col: int(start.Col)}
}

func (l *locator) Literal(lparen graphir.Pos, keyword, s string) (graphir.Pos, bool, bool) {
	c := l.call(lparen)
	if c == nil {
		return graphir.Pos{}, false, false
	}
	var found *syntax.Literal
	find := func(arg syntax.Expr) {
		syntax.Walk(arg, func(n syntax.Node) bool {
			if found != nil {
				return false
			}
			if lit, ok := n.(*syntax.Literal); ok && lit.Token == syntax.STRING && lit.Value.(string) == s {
				found = lit
			}
			return true
		})
	}
	// The same text may be given to two parameters (a route target and
	// the default): look in the keyword's own argument first.
	if keyword != "" {
		for _, arg := range c.Args {
			if kw, ok := arg.(*syntax.BinaryExpr); ok && kw.Op == syntax.EQ {
				if id, ok := kw.X.(*syntax.Ident); ok && id.Name == keyword {
					find(kw.Y)
				}
			}
		}
	}
	for _, arg := range c.Args {
		if found != nil {
			break
		}
		find(arg)
	}
	if found == nil {
		return graphir.Pos{}, false, false
	}
	raw := found.Raw
	prefix := 0
	if strings.HasPrefix(raw, "r") || strings.HasPrefix(raw, "R") {
		prefix = 1
		raw = raw[1:]
	}
	quote := raw[:1]
	if strings.HasPrefix(raw, `"""`) || strings.HasPrefix(raw, `'''`) {
		quote = raw[:3]
	}
	pos := graphir.Pos{File: lparen.File, Line: int(found.TokenPos.Line), Col: int(found.TokenPos.Col) + prefix + len(quote)}
	exact := raw == quote+s+quote && (prefix == 1 || !strings.Contains(s, `\`))
	return pos, exact, true
}
