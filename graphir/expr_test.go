package graphir_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
)

var at = graphir.Pos{File: "f.star", Line: 10, Col: 20}

type ref struct {
	Name, Attr, Key, Pos string
}

func refs(x *graphir.Expr) []ref {
	var out []ref
	for _, r := range x.Refs {
		out = append(out, ref{r.Name, r.Attr, r.Key, r.Pos.String()})
	}
	return out
}

func TestExprRefs(t *testing.T) {
	c := graphir.NewCompiler()
	for _, tc := range []struct {
		src   string
		exact bool
		want  []ref
	}{
		{`critique.ok and visits("draft") < 3`, true, []ref{
			{"critique", "ok", "", "f.star:10:20"},
			{"visits", "", "", "f.star:10:36"},
		}},
		{`build["stdout"].strip() + inputs.name`, true, []ref{
			{"build", "", "stdout", "f.star:10:20"},
			{"inputs", "name", "", "f.star:10:46"},
		}},
		// Builtins, modules and locals are not references.
		{`json.encode([x.n for x in items if len(x.n) > max(1, 2)]) + re.sub("a", "b", self.visits)`, true, []ref{
			{"items", "", "", "f.star:10:46"},
			{"self", "visits", "", "f.star:10:97"},
		}},
		{`(lambda q: q.x + outer)(a)`, true, []ref{
			{"outer", "", "", "f.star:10:37"},
			{"a", "", "", "f.star:10:44"},
		}},
		// Each use of a name is a reference, with what it reads.
		{`a.x + a.y`, true, []ref{{"a", "x", "", "f.star:10:20"}, {"a", "y", "", "f.star:10:26"}}},
		{`a[k]`, true, []ref{{"a", "", "", "f.star:10:20"}, {"k", "", "", "f.star:10:22"}}},
		// Lines after the first start at column 1 of the file. As in
		// Python, an expression spans lines only inside brackets.
		{"(a and\n   b)", true, []ref{{"a", "", "", "f.star:10:21"}, {"b", "", "", "f.star:11:4"}}},
		// Without an exact mapping every position is the expression's.
		{`a or b`, false, []ref{{"a", "", "", "f.star:10:20"}, {"b", "", "", "f.star:10:20"}}},
		{`1 + 2`, true, nil},
	} {
		x := c.Expr(tc.src, at, tc.exact)
		if x.Err != nil {
			t.Errorf("%q: %v", tc.src, x.Err)
			continue
		}
		if diff := cmp.Diff(tc.want, refs(x)); diff != "" {
			t.Errorf("%q refs (-want +got):\n%s", tc.src, diff)
		}
		if x.Src != tc.src || x.Pos != at || x.Exact != tc.exact || x.User || x.String() != tc.src {
			t.Errorf("%q: %+v", tc.src, x)
		}
	}
}

func TestExprSyntax(t *testing.T) {
	c := graphir.NewCompiler()
	for _, tc := range []struct {
		src, pos, msg string
		exact         bool
	}{
		{`a.`, "f.star:10:22", "not an identifier", true},
		{`a. `, "f.star:10:20", "not an identifier", false},
		{``, "f.star:10:20", "empty expression", true},
		{`  `, "f.star:10:20", "empty expression", true},
		{`a = 1`, "f.star:10:22", "got '=' after expression, want EOF", true},
		{`a +`, "f.star:10:23", "got end of file, want primary expression", true},
		{"a and\n  b", "f.star:10:25", "got newline, want primary expression", true},
		{"(a and\n  (b)", "f.star:11:6", "got end of file, want ')'", true},
		{`[x for x in y if]`, "f.star:10:36", "got ']', want primary expression", true},
		{`lambda: x = 1`, "f.star:10:30", "got '=' after expression, want EOF", true},
		{`_S_ + 1`, "", "", true}, // a name like any other
		{`"unterminated`, "f.star:10:20", "unexpected EOF in string", true},
	} {
		x := c.Expr(tc.src, at, tc.exact)
		if tc.pos == "" {
			if x.Err != nil {
				t.Errorf("%q: %v", tc.src, x.Err)
			}
			continue
		}
		if x.Err == nil {
			t.Errorf("%q: no error", tc.src)
			continue
		}
		got := []string{string(x.Err.Code), x.Err.Pos.String(), x.Err.Msg}
		if diff := cmp.Diff([]string{"expr_syntax", tc.pos, tc.msg}, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.src, diff)
		}
		if x.Func != nil || x.Refs != nil {
			t.Errorf("%q: a failed expression has a function or refs", tc.src)
		}
	}
	// An error's position is per use, even though the compilation is
	// shared.
	x1 := c.Expr("a.", at, true)
	x2 := c.Expr("a.", graphir.Pos{File: "g.star", Line: 1, Col: 1}, true)
	if x1.Err.Pos.String() != "f.star:10:22" || x2.Err.Pos.String() != "g.star:1:3" {
		t.Errorf("positions %s, %s", x1.Err.Pos, x2.Err.Pos)
	}
}

// The compiled function is called with a view whose attributes are the free
// names, and is shared by every use of the same source.
// Starlark reports "got X" past the token X; diagnostics point at its start.
func TestSyntaxErrorStart(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"s = step(\"a\"\nchain(START, s)\n", "2:1"}, // got identifier
		{"if x\n  pass\n", "1:5"},                    // got newline: end of the line
		{"if x   # why\n  pass\n", "1:5"},            // ... before a comment
		{"if x == '#'\n  pass\n", "1:12"},            // ... a # in a string is not one
		{"x = (1 ** 2)\n", "1:8"},                    // got '**'
		{"x = (1 += 2)\n", "1:8"},                    // got '+='
		{"x = [1 for]\n", "1:11"},                    // got ']': already at its start
		{"x = f(1 def)\n", "1:9"},                    // got def
		{"x = f(1 2.5)\n", "1:9"},                    // got float literal
		{"x = f(1 'a')\n", "1:9"},                    // got string literal
		{"x = f(1 r\"a\\\"\")\n", "1:9"},             // with a prefix and an escape
		{"x = f(1 '''a'b''')\n", "1:9"},              // triple-quoted
		{"x = (1\n", "2:1"},                          // end of file: as is
		{"é = 1 2\n", "1:7"},                         // columns count runes
	} {
		_, err := graphir.FileOptions.Parse("f.star", tc.src, 0)
		e, ok := err.(syntax.Error)
		if !ok {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		p := graphir.SyntaxErrorStart(tc.src, e)
		if got := fmt.Sprintf("%d:%d", p.Line, p.Col); got != tc.want {
			t.Errorf("%q (%s): at %s, want %s", tc.src, e.Msg, got, tc.want)
		}
	}
}

func TestExprEval(t *testing.T) {
	c := graphir.NewCompiler()
	x := c.Expr(`critique.ok and visits("draft") < 3 and len(json.encode(items)) > 2`, at, true)
	if x.Err != nil {
		t.Fatal(x.Err)
	}
	visits := starlark.NewBuiltin("visits", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return starlark.MakeInt(2), nil
	})
	view := starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"critique": starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{"ok": starlark.True}),
		"visits":   visits,
		"items":    starlark.NewList([]starlark.Value{starlark.MakeInt(1)}),
	})
	v, err := starlark.Call(&starlark.Thread{}, x.Func, starlark.Tuple{view}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v != starlark.True {
		t.Errorf("got %v", v)
	}
	if y := c.Expr(x.Src, graphir.Pos{File: "other.star", Line: 1, Col: 1}, false); y.Func != x.Func {
		t.Error("the same source compiled twice")
	}
	// A name not read is not looked up: the branch not taken never fails.
	x = c.Expr(`a if cond else b`, at, true)
	view = starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{"cond": starlark.True, "a": starlark.MakeInt(1)})
	if v, err := starlark.Call(&starlark.Thread{}, x.Func, starlark.Tuple{view}, nil); err != nil || v.String() != "1" {
		t.Errorf("got %v, %v", v, err)
	}
	// A user's function is wrapped as it is.
	fn := starlark.NewBuiltin("cond", nil)
	u := c.Func(fn, at, nil)
	if !u.User || u.Func != fn || u.String() != "<function cond>" || u.Pos != at {
		t.Errorf("%+v", u)
	}
	var nilExpr *graphir.Expr
	if nilExpr.String() != "" {
		t.Error("nil expression")
	}
}

type part struct {
	Lit, X, Pos string
}

func parts(tm *graphir.Template) []part {
	var out []part
	for _, p := range tm.Parts {
		if p.X == nil {
			out = append(out, part{Lit: p.Lit})
		} else {
			out = append(out, part{X: p.X.Src, Pos: p.X.Pos.String()})
		}
	}
	return out
}

func TestTemplate(t *testing.T) {
	c := graphir.NewCompiler()
	for _, tc := range []struct {
		src  string
		want []part
	}{
		{"--msg={{ fix.summary }}", []part{{Lit: "--msg="}, {X: "fix.summary", Pos: "f.star:10:29"}}},
		{"plain text", []part{{Lit: "plain text"}}},
		{"", nil},
		{"{{x}}", []part{{X: "x", Pos: "f.star:10:22"}}},
		{"a {{ b }} c {{ d }}", []part{{Lit: "a "}, {X: "b", Pos: "f.star:10:25"}, {Lit: " c "}, {X: "d", Pos: "f.star:10:35"}}},
		// A hole may contain "}}" inside a string; "{{" is written as a hole.
		{`{{ "}}" }}`, []part{{X: `"}}"`, Pos: "f.star:10:23"}}},
		{`{{ "{{" }} literal {{ "}}" }}`, []part{{X: `"{{"`, Pos: "f.star:10:23"}, {Lit: " literal "}, {X: `"}}"`, Pos: "f.star:10:42"}}},
		{`{{ {"a": {"b": 1}}["a"] }}`, []part{{X: `{"a": {"b": 1}}["a"]`, Pos: "f.star:10:23"}}},
		// "}}" outside a hole is literal text.
		{"}} and }", []part{{Lit: "}} and }"}}},
		{"x {{\n  a.b\n}} y", []part{{Lit: "x "}, {X: "a.b", Pos: "f.star:11:3"}, {Lit: " y"}}},
		{"é{{ a }}", []part{{Lit: "é"}, {X: "a", Pos: "f.star:10:24"}}},
	} {
		tm := c.Template(tc.src, at, true)
		if tm.Err != nil {
			t.Errorf("%q: %v", tc.src, tm.Err)
			continue
		}
		if diff := cmp.Diff(tc.want, parts(tm)); diff != "" {
			t.Errorf("%q parts (-want +got):\n%s", tc.src, diff)
		}
		if tm.Src != tc.src || tm.Pos != at {
			t.Errorf("%q: src %q pos %s", tc.src, tm.Src, tm.Pos)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	c := graphir.NewCompiler()
	for _, tc := range []struct {
		src, pos, msg string
	}{
		{"{{ x", "f.star:10:20", `unclosed {{ in template "{{ x"`},
		{"ok {{ a }} then {{ b", "f.star:10:36", `unclosed {{ in template`},
		{"{{ x. }}", "f.star:10:25", "not an identifier"},
		{"{{}}", "f.star:10:22", "empty expression"},
		{"{{ a }} {{ b + }}", "f.star:10:34", "got end of file, want primary expression"},
	} {
		tm := c.Template(tc.src, at, true)
		if tm.Err == nil {
			t.Errorf("%q: no error", tc.src)
			continue
		}
		got := []string{string(tm.Err.Code), tm.Err.Pos.String()}
		if diff := cmp.Diff([]string{"expr_syntax", tc.pos}, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.src, diff)
		}
		if !strings.Contains(tm.Err.Msg, tc.msg) {
			t.Errorf("%q: message %q does not contain %q", tc.src, tm.Err.Msg, tc.msg)
		}
	}
}

func TestTemplateWhole(t *testing.T) {
	c := graphir.NewCompiler()
	for _, tc := range []struct {
		src     string
		whole   string
		literal bool
		holes   int
	}{
		{"{{ gather.words }}", "gather.words", false, 1},
		{"{{gather.words}}", "gather.words", false, 1},
		{" {{ x }}", "", false, 1},
		{"{{ x }} ", "", false, 1},
		{"{{ x }}{{ y }}", "", false, 2},
		{"x", "", true, 0},
		{"", "", true, 0},
	} {
		tm := c.Template(tc.src, at, true)
		whole := ""
		if x := tm.Whole(); x != nil {
			whole = x.Src
		}
		if whole != tc.whole || tm.IsLiteral() != tc.literal || len(tm.Exprs()) != tc.holes {
			t.Errorf("%q: whole %q literal %v holes %d", tc.src, whole, tm.IsLiteral(), len(tm.Exprs()))
		}
	}
	var nilT *graphir.Template
	if nilT.Whole() != nil {
		t.Error("nil template")
	}
}

func TestNames(t *testing.T) {
	for name, valid := range map[string]bool{
		"a": true, "_": true, "build_2": true, "a1b2": true,
		"": false, "2a": false, "A": false, "fix-it": false, "é": false, "a b": false,
	} {
		if graphir.ValidName(name) != valid {
			t.Errorf("ValidName(%q) != %v", name, valid)
		}
	}
	for name, reserved := range map[string]bool{
		"inputs": true, "self": true, "loop": true, "item": true, "index": true, "r": true,
		"visits": true, "json": true, "re": true, "len": true, "range": true, "def": true, "class": true,
		"build": false, "items": false, "review": false,
	} {
		if graphir.Reserved(name) != reserved {
			t.Errorf("Reserved(%q) != %v", name, reserved)
		}
	}
}

func TestPos(t *testing.T) {
	for _, tc := range []struct {
		p    graphir.Pos
		want string
	}{
		{graphir.Pos{}, "<unknown>"},
		{graphir.Pos{File: "a.star"}, "a.star"},
		{graphir.Pos{File: "a.star", Line: 3}, "a.star:3"},
		{graphir.Pos{File: "a.star", Line: 3, Col: 7}, "a.star:3:7"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.p, got, tc.want)
		}
	}
	a := graphir.Pos{File: "a", Line: 2, Col: 9}
	if !a.Less(graphir.Pos{File: "a", Line: 3, Col: 1}) || !a.Less(graphir.Pos{File: "b", Line: 1}) || a.Less(a) {
		t.Error("Less")
	}

	stack := graphir.Stack{
		{Func: "<toplevel>", Pos: graphir.Pos{File: "flow.star", Line: 5, Col: 1}},
		{Func: "helper", Pos: graphir.Pos{File: "lib.star", Line: 2, Col: 5}},
		{Func: "fan_out", Pos: graphir.Pos{File: "@std/patterns.star", Line: 30, Col: 9}},
	}
	if u := stack.UserFrame(); u != 0 {
		t.Errorf("user frame %d", u)
	}
	want := []string{"@std/patterns.star:30:9: in fan_out", "lib.star:2:5: in helper"}
	if diff := cmp.Diff(want, stack.Trace(0)); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
	if u := stack[2:].UserFrame(); u != 0 {
		t.Errorf("std-only user frame %d", u)
	}
	if u := (graphir.Stack{}).UserFrame(); u != -1 || stack[:1].Trace(0) != nil {
		t.Error("empty stack")
	}

	e := &graphir.Error{Code: "load_error", Pos: graphir.Pos{File: "a.star", Line: 1, Col: 2}, Msg: `step "x": bad`}
	if got, want := e.Error(), `a.star:1:2: step "x": bad [load_error]`; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestTemplateLimits(t *testing.T) {
	c := graphir.NewCompiler()
	// After a hole that does not parse, the rest is text: one error.
	tm := c.Template("{{ a }} {{ b. }} {{ c }}", at, true)
	want := []part{{X: "a", Pos: "f.star:10:23"}, {Lit: " "}, {X: "b.", Pos: "f.star:10:31"}, {Lit: " {{ c }}"}}
	if diff := cmp.Diff(want, parts(tm)); diff != "" || tm.Err == nil || tm.Err.Pos.String() != "f.star:10:33" {
		t.Errorf("parts (-want +got):\n%s\nerror %v", diff, tm.Err)
	}

	// Many holes, or many "}}" after an unclosed one, take linear time.
	tm = c.Template(strings.Repeat("{{ a }}\n", 20000), at, true)
	if tm.Err != nil || len(tm.Exprs()) != 20000 || tm.Parts[len(tm.Parts)-2].X.Pos.String() != "f.star:20009:4" {
		t.Errorf("20000 holes: %v", tm.Err)
	}
	tm = c.Template("{{ ("+strings.Repeat("}} ", 20000), at, true)
	if tm.Err == nil || tm.Err.Code != "expr_syntax" {
		t.Errorf("unclosed paren: %v", tm.Err)
	}
	// A hole tries at most 64 "}}" as its end.
	ok := "{{ '" + strings.Repeat("}} ", 63) + "' }}"
	if tm := c.Template(ok, at, true); tm.Err != nil || tm.Whole() == nil {
		t.Errorf("63 }} in a string: %v", tm.Err)
	}
	if tm := c.Template("{{ '"+strings.Repeat("}} ", 64)+"' }}", at, true); tm.Err == nil {
		t.Error("64 }} in a string parsed")
	}
}

// A runtime error inside a string expression is reported inside its
// compiled function; FilePos maps that back to where the failing part is
// written in the file.
func TestExprFilePos(t *testing.T) {
	c := graphir.NewCompiler()
	view := starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"a": starlark.NewDict(0),
		"b": starlark.MakeInt(1),
	})
	for _, tc := range []struct {
		src  string
		want string // position of the error in the file
	}{
		{`a["missing"]`, "f.star:10:21"},           // the index: after the name
		{`b + a["k"]`, "f.star:10:25"},             // after two rewritten names
		{`b == 1 and b.nope`, "f.star:10:32"},      // the dot of .nope
		{"b == 1 and (\n  a['x'])", "f.star:11:4"}, // a second line
		{`b + "s"`, "f.star:10:22"},                // the operator
	} {
		x := c.Expr(tc.src, at, true)
		if x.Err != nil {
			t.Fatal(x.Err)
		}
		_, err := starlark.Call(&starlark.Thread{}, x.Func, starlark.Tuple{view}, nil)
		ee, ok := err.(*starlark.EvalError)
		if !ok {
			t.Fatalf("%s: want an evaluation error, got %v", tc.src, err)
		}
		fr := ee.CallStack[len(ee.CallStack)-1]
		if fr.Pos.Filename() == "<builtin>" {
			fr = ee.CallStack[len(ee.CallStack)-2]
		}
		if fr.Pos.Filename() != graphir.ExprFile {
			t.Fatalf("%s: innermost frame in %s", tc.src, fr.Pos.Filename())
		}
		if got := x.FilePos(int(fr.Pos.Line), int(fr.Pos.Col)).String(); got != tc.want {
			t.Errorf("%s: error at %s, want %s (%v)", tc.src, got, tc.want, err)
		}
		// Not exact: the expression's own position.
		y := c.Expr(tc.src, graphir.Pos{File: "lib.star", Line: 3, Col: 1}, false)
		if got := y.FilePos(int(fr.Pos.Line), int(fr.Pos.Col)).String(); got != "lib.star:3:1" {
			t.Errorf("%s inexact: %s", tc.src, got)
		}
	}
}
