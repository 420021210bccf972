package graphir

import (
	"fmt"
	"strings"
	"testing"

	"go.starlark.net/syntax"
)

// FuzzBoundLiterals compares BoundLiterals' own reading of source with
// the Starlark scanner's, at a bound of 3 digits so that short inputs
// reach it: for source that parses, it refuses exactly when a number
// literal is longer than the bound (a base prefix or a point being two
// characters more), and at that literal.
func FuzzBoundLiterals(f *testing.F) {
	for _, s := range []string{
		"x = 12345\n", "x = 123\n", "x = 0x1234\n", "s = '12345'\n", "s = \"\"\"\n12345\n\"\"\"\n", "# 12345\nx = 1\n",
		"x12345 = 1\n", "x = 1.2345e10\n", "x = .12345\n", "s = r'\\'12345'\n", "x = [1, 22, 33333]\n", "x = 'a' if 12345 else b'\\x00'\n",
		"é = 12345\n", "x = y.z12345\n", "\x00000000", "# a\x00b\ny = 12345\n", "x = '\x00'\ny = 12345\n", "0\r000000", "00.0.A", "x = 1.5e+12345\n", "x = 0x123456\n", "x = 1.2.345678\n", "x = 1\r\ny = 12345\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		const limit = 3
		err := boundLiterals("f.star", src, limit)
		file, perr := FileOptions.Parse("f.star", src, 0)
		if perr != nil {
			return
		}
		var want *syntax.Literal
		syntax.Walk(file, func(n syntax.Node) bool {
			if lit, ok := n.(*syntax.Literal); ok && (lit.Token == syntax.INT || lit.Token == syntax.FLOAT) && len(lit.Raw) > limit+2 && want == nil {
				want = lit
			}
			return want == nil
		})
		switch {
		case want == nil && err != nil:
			t.Fatalf("%q: refused (%v) with no literal over the bound", src, err)
		case want != nil && err == nil:
			t.Fatalf("%q: literal %s at %v not refused", src, want.Raw, want.TokenPos)
		case want != nil:
			if pos := err.(syntax.Error).Pos; pos.Line != want.TokenPos.Line || pos.Col != want.TokenPos.Col {
				t.Fatalf("%q: refused at %v, the literal %s is at %v", src, pos, want.Raw, want.TokenPos)
			}
		}
	})
}

// The bound at its real size: a literal of MaxIntDigits digits parses.
func TestBoundLiterals(t *testing.T) {
	ok := strings.Repeat("9", 10_000)
	if _, err := ParseFile("f.star", "x = "+ok+"\ny = 0x"+ok+"\n", 0); err != nil {
		t.Error(err)
	}
	if _, err := ParseExpr("e", "1 + "+ok+"999", 0); err == nil || fmt.Sprint(err) != "e:1:5: number literal of 10003 characters; a number may have at most 10000 digits" {
		t.Errorf("ParseExpr: %v", err)
	}
}
