package graphir

// This file bounds what parsing may cost. The Starlark scanner converts
// an integer literal as it reads it, in time quadratic in its digits
// (stdlib.MaxIntDigits says why), so literals are bounded by their digits
// before the parser sees them. And it bounds how deep a syntax tree may
// be. The Starlark parser
// limits brackets to 1,000 levels but reads a chain of operators, calls,
// attributes or indexes in a loop, so `1+1+…+1`, `s.upper().upper()…` and
// `x[0][0]…` make trees as deep as they are long; every walk after the
// parser (go.starlark.net's resolver and compiler, stdlib.Rewrite,
// Skein's own walks, the formatter's printer) recurses over the tree, and
// a deep enough one overflows the goroutine's stack, a fatal error no
// recover() catches (docs/security.md).

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/stdlib"
)

// MaxSyntaxDepth is how deep the syntax tree of a flow file, a REPL chunk
// or an expression may be: each operator of a chain, each call, attribute,
// index and bracket is a level. Recursing over a tree this deep takes a few
// megabytes of stack; real flows stay far below it.
const MaxSyntaxDepth = 10_000

// BoundLiterals returns a syntax.Error at the first number literal of
// src (a string or []byte; anything else is left to the parser) with more
// than stdlib.MaxIntDigits digits, or nil. It reads src as the scanner
// does as far as it needs to: comments and string literals are skipped,
// and a run of digits inside a name is part of the name.
func BoundLiterals(file string, src any) error {
	var s string
	switch src := src.(type) {
	case string:
		s = src
	case []byte:
		s = string(src)
	default:
		return nil
	}
	return boundLiterals(file, s, stdlib.MaxIntDigits)
}

// boundLiterals is BoundLiterals of the text s with at most limit digits.
func boundLiterals(file, s string, limit int) error {
	if strings.Contains(s, "\r") {
		// Starlark's scanner reads \r\n and a lone \r as one newline.
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	}
	line, col := 1, 1 // of s[i]; col counts bytes, fixed up on error
	lineStart := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			i++
			line, lineStart = line+1, i
			continue
		case c == 0:
			// Starlark's scanner reads a NUL outside a string (a comment's
			// included) as the end of the file: nothing after it is parsed.
			return nil
		case c == '#':
			for i < len(s) && s[i] != '\n' && s[i] != 0 {
				i++
			}
			continue
		case c == '"' || c == '\'':
			q := s[i : i+1]
			if strings.HasPrefix(s[i:], q+q+q) {
				q = q + q + q
			}
			i += len(q)
			for i < len(s) && !strings.HasPrefix(s[i:], q) {
				switch s[i] {
				case '\\':
					i++
					if i < len(s) && s[i] == '\n' {
						line, lineStart = line+1, i+1
					}
				case '\n':
					if len(q) == 1 {
						q = "\n" // unterminated: the parser's error
						continue
					}
					line, lineStart = line+1, i+1
				}
				i++
			}
			if q != "\n" {
				i += len(q)
			}
			continue
		case isDigitByte(c), c == '.' && i+1 < len(s) && isDigitByte(s[i+1]):
			j := numberEnd(s, i)
			if n := j - i; n > limit+2 {
				col = utf8.RuneCountInString(s[lineStart:i]) + 1
				return syntax.Error{Pos: syntax.MakePosition(&file, int32(line), int32(col)),
					Msg: fmt.Sprintf("number literal of %d characters; a number may have at most %d digits", n, limit)}
			}
			i = j
			continue
		case isNameByte(c):
			// A name, the attributes after it, and the string it may
			// prefix (r"...", b'...').
			j := i + 1
			for j < len(s) && (isNameByte(s[j]) || s[j] == '.') {
				j++
			}
			i = j
			continue
		}
		i++
	}
	return nil
}

// numberEnd returns where the number literal at s[i] ends, read as
// Starlark's scanner reads one (syntax.scanNumber): a 0x, 0o or 0b prefix
// and its digits; or digits, at most one fraction, and an exponent with
// its sign. What follows (a second point, a letter) is another token.
func numberEnd(s string, i int) int {
	at := func(j int) byte {
		if j < len(s) {
			return s[j]
		}
		return 0
	}
	digits := func(j int, ok func(byte) bool) int {
		for j < len(s) && ok(s[j]) {
			j++
		}
		return j
	}
	j := i
	if s[i] == '0' {
		switch at(i + 1) {
		case 'x', 'X':
			return digits(i+2, isHexByte)
		case 'o', 'O':
			return digits(i+2, func(c byte) bool { return '0' <= c && c <= '7' })
		case 'b', 'B':
			return digits(i+2, func(c byte) bool { return c == '0' || c == '1' })
		}
	}
	if s[i] != '.' {
		j = digits(i, isDigitByte)
	}
	if at(j) == '.' {
		j = digits(j+1, isDigitByte)
	}
	if c := at(j); c == 'e' || c == 'E' {
		j++
		if c := at(j); c == '+' || c == '-' {
			j++
		}
		j = digits(j, isDigitByte)
	}
	return j
}

func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }

func isHexByte(c byte) bool {
	return isDigitByte(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isNameByte(c byte) bool {
	return isDigitByte(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}

// ParseFile parses src, the source of file, in the flow dialect
// ([FileOptions]) and bounds its literals ([BoundLiterals]) and depth
// ([BoundDepth]).
func ParseFile(file string, src any, mode syntax.Mode) (*syntax.File, error) {
	return ParseFileWith(FileOptions, file, src, mode)
}

// ParseFileWith is [ParseFile] in the dialect opts (the flow dialect
// with a change: a REPL's chunks, whose load() binds globals).
func ParseFileWith(opts *syntax.FileOptions, file string, src any, mode syntax.Mode) (*syntax.File, error) {
	if err := BoundLiterals(file, src); err != nil {
		return nil, err
	}
	f, err := opts.Parse(file, src, mode)
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
	if err := BoundLiterals(file, src); err != nil {
		return nil, err
	}
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
