package lang

// This file formats flow files the way buildifier formats Starlark, and
// proves that the result means what the source meant.

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/bazelbuild/buildtools/build"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// formatRewrites are the buildifier rewrites Format applies: the ones that
// only respell what is written. It leaves out the rewrites that move or
// merge load() statements (a module's top-level code may declare steps, so
// load order is declaration order) and the "# keep sorted" list sort (a
// list's order is its meaning).
var formatRewrites = []string{"loadsort", "formatdocstrings", "reorderarguments", "editoctal", "editfloat", "collapseEmpty"}

// Format returns src, the source of file, formatted the way buildifier
// formats Starlark, comments kept. Source that does not parse in the flow
// dialect is a *graphir.Error with code parse_error at the first error.
// Format never changes what a file means: it compares the syntax trees of
// src and of the result (positions, comments and parentheses aside) and
// returns an error rather than a result that differs. Source over
// [MaxFileSize] is the load_error that reading such a file would be.
func Format(file string, src []byte) ([]byte, error) {
	if len(src) > MaxFileSize {
		return nil, FileError(file, tooBig(file))
	}
	src = dropBOM(src)
	parsed, err := parseFlow(file, src)
	if err != nil {
		return nil, err
	}
	before := meaningOf(parsed)
	f, err := build.ParseDefault(file, untab(parsed, src))
	if err != nil {
		e := &graphir.Error{Code: codes.ParseError, Pos: graphir.Pos{File: file}, Msg: err.Error(), Err: err}
		if pe, ok := err.(build.ParseError); ok {
			e.Pos = graphir.Pos{File: file, Line: pe.Pos.Line, Col: pe.Pos.LineRune}
			e.Msg = pe.Message
		}
		return nil, e
	}
	w := &build.Rewriter{RewriteSet: formatRewrites}
	out := build.FormatWithRewriter(w, f)
	after, err := meaning(file, out)
	if err != nil || after != before {
		return nil, &graphir.Error{Pos: graphir.Pos{File: file}, Msg: "formatting would change what the file means; left as it is (please report this)"}
	}
	return out, nil
}

// meaning parses src in the flow dialect and returns its syntax tree as
// text, without positions, comments or parentheses.
func meaning(file string, src []byte) (string, error) {
	f, err := parseFlow(file, src)
	if err != nil {
		return "", err
	}
	return meaningOf(f), nil
}

// parseFlow parses src in the flow dialect, its error a *graphir.Error.
func parseFlow(file string, src []byte) (*syntax.File, error) {
	f, err := graphir.ParseFile(file, src, 0)
	if err != nil {
		if e, ok := err.(syntax.Error); ok {
			e.Pos = graphir.SyntaxErrorStart(string(src), e)
			err = e
		}
		return nil, convert(err, nil)
	}
	return f, nil
}

// meaningOf is [meaning] of a parsed file.
func meaningOf(f *syntax.File) string {
	// A def's docstring is re-indented by the formatter; it is not part of
	// what the flow does.
	docs := map[syntax.Expr]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if d, ok := n.(*syntax.DefStmt); ok && len(d.Body) > 0 {
			if s, ok := d.Body[0].(*syntax.ExprStmt); ok {
				if lit, ok := s.X.(*syntax.Literal); ok && lit.Token == syntax.STRING {
					docs[lit] = true
				}
			}
		}
		return true
	})
	var b strings.Builder
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case nil:
			b.WriteString("end\n")
		case *syntax.ParenExpr:
			// The tree already says how the operands group.
			syntax.Walk(n.X, visit)
			return false
		case *syntax.LoadStmt:
			// The order of a load's bindings does not matter.
			pairs := make([]string, len(n.From))
			for i := range n.From {
				pairs[i] = n.To[i].Name + "=" + n.From[i].Name
			}
			sort.Strings(pairs)
			fmt.Fprintf(&b, "load %q %s\n", n.ModuleName(), strings.Join(pairs, ","))
			return false
		case *syntax.Ident:
			fmt.Fprintf(&b, "ident %s\n", n.Name)
		case *syntax.Literal:
			if docs[n] {
				b.WriteString("docstring\n")
			} else {
				fmt.Fprintf(&b, "literal %s %#v\n", n.Token, n.Value)
			}
		case *syntax.BinaryExpr:
			fmt.Fprintf(&b, "binary %s\n", n.Op)
		case *syntax.UnaryExpr:
			fmt.Fprintf(&b, "unary %s\n", n.Op)
		case *syntax.AssignStmt:
			fmt.Fprintf(&b, "assign %s\n", n.Op)
		case *syntax.BranchStmt:
			fmt.Fprintf(&b, "branch %s\n", n.Token)
		case *syntax.Comprehension:
			fmt.Fprintf(&b, "comprehension %t\n", n.Curly)
		case *syntax.CallExpr:
			fmt.Fprintf(&b, "call %d\n", len(n.Args))
		case *syntax.DefStmt:
			fmt.Fprintf(&b, "def %s %d\n", n.Name.Name, len(n.Params))
		case *syntax.LambdaExpr:
			fmt.Fprintf(&b, "lambda %d\n", len(n.Params))
		case *syntax.ListExpr:
			fmt.Fprintf(&b, "list %d\n", len(n.List))
		case *syntax.TupleExpr:
			fmt.Fprintf(&b, "tuple %d\n", len(n.List))
		case *syntax.DictExpr:
			fmt.Fprintf(&b, "dict %d\n", len(n.List))
		case *syntax.IfStmt:
			fmt.Fprintf(&b, "if %d %d\n", len(n.True), len(n.False))
		case *syntax.ForStmt:
			fmt.Fprintf(&b, "for %d\n", len(n.Body))
		case *syntax.WhileStmt:
			fmt.Fprintf(&b, "while %d\n", len(n.Body))
		case *syntax.SliceExpr:
			fmt.Fprintf(&b, "slice %t %t %t\n", n.Lo != nil, n.Hi != nil, n.Step != nil)
		default:
			fmt.Fprintf(&b, "%T\n", n)
		}
		return true
	}
	syntax.Walk(f, visit)
	return b.String()
}

// untab returns src with the tabs that indent its lines written as
// spaces, to the next multiple of 8 as the Starlark scanner counts them:
// the loader accepts tab-indented blocks, buildtools' parser does not. A
// line inside a string literal of several lines is its text and is left
// as it is. f is src parsed in the flow dialect.
func untab(f *syntax.File, src []byte) []byte {
	if !bytes.Contains(src, []byte("\n\t")) && !bytes.HasPrefix(src, []byte("\t")) && !bytes.Contains(src, []byte(" \t")) {
		return src
	}
	inString := map[int32]bool{} // lines that begin inside a string literal
	syntax.Walk(f, func(n syntax.Node) bool {
		if lit, ok := n.(*syntax.Literal); ok && (lit.Token == syntax.STRING || lit.Token == syntax.BYTES) {
			start, end := lit.Span()
			for l := start.Line + 1; l <= end.Line; l++ {
				inString[l] = true
			}
		}
		return true
	})
	var out bytes.Buffer
	line := int32(1)
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n') + 1
		if i == 0 {
			i = len(src)
		}
		text := src[:i]
		src = src[i:]
		if !inString[line] {
			col := 0
			j := 0
			for ; j < len(text) && (text[j] == ' ' || text[j] == '\t'); j++ {
				if text[j] == '\t' {
					col += 8 - col%8
				} else {
					col++
				}
			}
			if bytes.IndexByte(text[:j], '\t') >= 0 {
				out.WriteString(strings.Repeat(" ", col))
				text = text[j:]
			}
		}
		out.Write(text)
		line++
	}
	return out.Bytes()
}
