package graphir_test

import (
	"strings"
	"testing"

	"github.com/skeinlang/skein/graphir"
)

// FuzzTemplate parses arbitrary strings as templates: it must never panic,
// every hole must be an expression of the source, and literal parts and
// holes must account for the whole string.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		"--msg={{ fix.summary }}", `{{ "}}" }}`, `{{ "{{" }}`, "{{ x", "{{}}", "a {{ b }} c {{ d }}",
		"x {{\n  a.b\n}} y", "é{{ a }}", "{{ [x for x in y] }}", "{{ lambda: 1 }}", "}}{{",
	} {
		f.Add(s)
	}
	c := graphir.NewCompiler()
	f.Fuzz(func(t *testing.T, src string) {
		tm := c.Template(src, graphir.Pos{File: "f.star", Line: 3, Col: 7}, true)
		var lits strings.Builder
		for _, p := range tm.Parts {
			if p.X == nil {
				lits.WriteString(p.Lit)
				continue
			}
			if !strings.Contains(src, p.X.Src) {
				t.Fatalf("hole %q is not in %q", p.X.Src, src)
			}
			if p.X.Err == nil && p.X.Func == nil {
				t.Fatalf("hole %q compiled to nothing", p.X.Src)
			}
			if p.X.Pos.Line < 3 || p.X.Pos.Col < 1 {
				t.Fatalf("hole %q at %s", p.X.Src, p.X.Pos)
			}
		}
		if tm.Err == nil && tm.IsLiteral() && lits.String() != src {
			t.Fatalf("literal template %q parsed as %q", src, lits.String())
		}
		x := c.Expr(src, graphir.Pos{File: "f.star", Line: 1, Col: 1}, true)
		if (x.Err == nil) == (x.Func == nil) {
			t.Fatalf("expression %q: error %v, function %v", src, x.Err, x.Func)
		}
		if x.Err != nil && (x.Err.Code != "expr_syntax" || x.Err.Pos.Line < 1) {
			t.Fatalf("expression %q: %v", src, x.Err)
		}
	})
}
