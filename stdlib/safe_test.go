package stdlib_test

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/stdlib"
)

// run executes a file of Starlark with the modules and bounded builtins.
func run(t *testing.T, src string) (starlark.StringDict, error) {
	t.Helper()
	pre := starlark.StringDict{}
	for k, v := range stdlib.Modules() {
		pre[k] = v
	}
	for k, v := range stdlib.SafeBuiltins() {
		pre[k] = v
	}
	return starlark.ExecFileOptions(&syntax.FileOptions{Set: true, TopLevelControl: true, GlobalReassign: true}, &starlark.Thread{}, "test", src, pre)
}

// Deep values fail fast and clearly instead of overflowing the stack or
// taking quadratic time (issue 9).
func TestBoundedDepth(t *testing.T) {
	stdlib.SkipBigUnderRace(t)
	deep := "x = []\nfor i in range(200000):\n    x = [x]\n"
	cases := []struct{ src, want string }{
		{`json.decode("[" * 2000000)`, "json.decode: JSON nested more than 64 deep"},
		{`json.decode('{"a":' * 100000)`, "json.decode: JSON nested more than 64 deep"},
		{deep + `str(x)`, "str: value nested more than 1000 deep"},
		{deep + `repr(x)`, "repr: value nested more than 1000 deep"},
		{deep + `print(x)`, "print: value nested more than 1000 deep"},
		{deep + `json.encode(x)`, "json.encode: value nested more than 64 deep"},
		{deep + `json.encode_indent(x)`, "json.encode_indent: value nested more than 64 deep"},
		{"x = ()\nfor i in range(200000):\n    x = (x,)\nstr(x)", "str: value nested more than 1000 deep"},
		{"x = {}\nfor i in range(200000):\n    x = {'k': x}\nstr(x)", "str: value nested more than 1000 deep"},
		{"x = struct()\nfor i in range(200000):\n    x = struct(a = x)\nstr(x)", "str: value nested more than 1000 deep"},
	}
	for _, c := range cases {
		_, err := run(t, c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: got %v, want %q", c.src, err, c.want)
		}
	}
}

// What is within the bounds works as before: JSON strings holding
// brackets, self-containing lists, values sharing one another.
func TestBoundedDepthAllows(t *testing.T) {
	g, err := run(t, `
a = json.decode('{"s": "[[[[[[[[\\"[[[[[", "l": [[[1]]]}')
b = []
b.append(b)
c = str(b)
d = [1]
for i in range(10):
    d = [d, d]
e = len(json.encode(d))
f = str([[1]] * 3)
x = []
for i in range(999):
    x = [x]
h = len(str(x))
`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"c": `"[[...]]"`, "f": `"[[1], [1], [1]]"`, "h": "2000"} {
		if got := g[name].String(); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if got := g["a"].String(); !strings.Contains(got, `"l": [[[1]]]`) {
		t.Errorf("a = %s", got)
	}
}

// CheckDepth visits a shared value once: a list whose 100 levels each hold
// the level below twice has 2^100 paths but 100 containers.
func TestCheckDepthShared(t *testing.T) {
	var d starlark.Value = starlark.MakeInt(1)
	for i := 0; i < 100; i++ {
		d = starlark.NewList([]starlark.Value{d, d})
	}
	if err := stdlib.CheckDepth(d, 1000); err != nil {
		t.Fatal(err)
	}
	if err := stdlib.CheckDepth(d, 99); err == nil {
		t.Fatal("100 deep passed a bound of 99")
	}
}

// json.encode writes DEL as JSON has it (go.starlark.net writes "\x7f",
// which no JSON decoder reads; found by FuzzJSONModule).
func TestJSONEncodeDEL(t *testing.T) {
	g, err := run(t, "a = json.encode(\"a\\x7fb\\\\x7f\")\nb = json.decode(a)\nc = json.encode_indent([\"\\x7f\"])")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(g["a"].(starlark.String)), `"a\u007fb\\x7f"`; got != want {
		t.Errorf("encode = %s, want %s", got, want)
	}
	if got := string(g["b"].(starlark.String)); got != "a\x7fb\\x7f" {
		t.Errorf("decode(encode) = %q", got)
	}
	if got := string(g["c"].(starlark.String)); !strings.Contains(got, `"\u007f"`) {
		t.Errorf("encode_indent = %s", got)
	}
}
