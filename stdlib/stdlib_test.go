package stdlib_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/stdlib"
)

// eval evaluates a Starlark expression with the modules and env predeclared.
func eval(t *testing.T, expr string, env starlark.StringDict) (starlark.Value, error) {
	t.Helper()
	pre := starlark.StringDict{}
	for k, v := range stdlib.Modules() {
		pre[k] = v
	}
	for k, v := range env {
		pre[k] = v
	}
	return starlark.EvalOptions(&syntax.FileOptions{Set: true}, &starlark.Thread{}, "test", expr, pre)
}

func TestRe(t *testing.T) {
	cases := []struct{ expr, want string }{
		{`re.match("a+", "aab")`, `"aa"`},
		{`re.match("b", "ab")`, `None`},
		{`re.match("(a)(x)?", "ab")`, `("a", "a", None)`},
		{`re.search("b+", "abbc")`, `"bb"`},
		{`re.search("(\\d+)-(\\d+)", "tel 12-34")`, `("12-34", "12", "34")`},
		{`re.search("z", "abc")`, `None`},
		{`re.findall("\\d", "a1b22")`, `["1", "2", "2"]`},
		{`re.findall("(\\w)=(\\d)", "a=1 b=2")`, `[("a", "1"), ("b", "2")]`},
		{`re.sub("o", "0", "foo boo")`, `"f00 b00"`},
		{`re.sub("(\\w+)@(\\w+)", "${2} at ${1}", "me@host")`, `"host at me"`},
		{`re.sub("o", "0", "foo boo", count = 2)`, `"f00 boo"`},
		{`re.split(",\\s*", "a, b,c")`, `["a", "b", "c"]`},
		{`re.split(",", "a,b,c", maxsplit = 1)`, `["a", "b,c"]`},
	}
	for _, c := range cases {
		v, err := eval(t, c.expr, nil)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if v.String() != c.want {
			t.Errorf("%s = %s, want %s", c.expr, v, c.want)
		}
	}
	if _, err := eval(t, `re.match("(", "x")`, nil); err == nil || !strings.Contains(err.Error(), "bad pattern") {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestMap(t *testing.T) {
	m := stdlib.NewMap([]string{"ok", "n", "keys"}, []starlark.Value{starlark.True, starlark.MakeInt(3), starlark.String("k")})
	env := starlark.StringDict{"m": m}
	cases := []struct{ expr, want string }{
		{`m.ok`, `True`},
		{`m["n"]`, `3`},
		{`m.keys`, `"k"`}, // a key wins over the method of the same name
		{`"n" in m`, `True`},
		{`"x" in m`, `False`},
		{`len(m)`, `3`},
		{`[k for k in m]`, `["ok", "n", "keys"]`},
		{`m.get("n")`, `3`},
		{`m.get("x", 7)`, `7`},
		{`m.items()`, `[("ok", True), ("n", 3), ("keys", "k")]`},
		{`m.values()`, `[True, 3, "k"]`},
		{`type(m)`, `"dict"`},
		{`dict(m)["ok"]`, `True`},
		{`m == m`, `True`},
		{`json.encode(m)`, `"{\"keys\":\"k\",\"n\":3,\"ok\":true}"`}, // json sorts keys
		{`str(m)`, `"{\"ok\": True, \"n\": 3, \"keys\": \"k\"}"`},
	}
	for _, c := range cases {
		v, err := eval(t, c.expr, env)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if v.String() != c.want {
			t.Errorf("%s = %s, want %s", c.expr, v, c.want)
		}
	}
	if _, err := eval(t, `m.missing`, env); err == nil || !strings.Contains(err.Error(), "has no .missing field") {
		t.Errorf("missing attribute: %v", err)
	}
	if _, err := eval(t, `m["missing"]`, env); err == nil {
		t.Error("missing key: no error")
	}
	// Many keys use the index.
	keys := make([]string, 20)
	vals := make([]starlark.Value, 20)
	for i := range keys {
		keys[i] = string(rune('a' + i))
		vals[i] = starlark.MakeInt(i)
	}
	big := stdlib.NewMap(keys, vals)
	if v, ok := big.Lookup("t"); !ok || v != starlark.MakeInt(19) {
		t.Errorf("big map lookup = %v %v", v, ok)
	}
}

func TestData(t *testing.T) {
	v, err := eval(t, `{"a": [1, 2.5, {"b": None}], "s": struct(x = "y"), "t": (True, "z")}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := stdlib.Data(v)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := d.(*stdlib.Map)
	if !ok {
		t.Fatalf("dict became %T", d)
	}
	a, _ := m.Lookup("a")
	if err := a.(*starlark.List).Append(starlark.None); err == nil {
		t.Error("list in data is not frozen")
	}
	s, _ := m.Lookup("s")
	if x, _ := s.(*stdlib.Map).Lookup("x"); x != starlark.String("y") {
		t.Errorf("struct field = %v", x)
	}
	g, err := stdlib.ToGo(d)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(g)
	if want := `{"a":[1,2.5,{"b":null}],"s":{"x":"y"},"t":[true,"z"]}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}

	for expr, msg := range map[string]string{
		`{1: 2}`:          "dict key 1 is a int, want string",
		`[lambda x: x]`:   "a function is not JSON-representable",
		`set([1])`:        "a set is not JSON-representable",
		`float("inf")`:    "not representable in JSON",
		`{"a": b"bytes"}`: "a bytes is not JSON-representable",
	} {
		v, err := eval(t, expr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stdlib.Data(v); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Data(%s) error = %v, want %q", expr, err, msg)
		}
	}
	// A list that contains itself is an error, not a hang.
	l := starlark.NewList(nil)
	l.Append(l)
	if _, err := stdlib.Data(l); err == nil || !strings.Contains(err.Error(), "cyclic") {
		t.Errorf("cyclic list: %v", err)
	}
}

func TestFromJSON(t *testing.T) {
	v, err := stdlib.FromJSON([]byte(`{"z": 1, "a": [true, null, 2.5, "s", 12345678901234567890], "z": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*stdlib.Map)
	if diff := cmp.Diff([]string{"z", "a"}, m.Keys()); diff != "" {
		t.Errorf("key order (-want +got):\n%s", diff)
	}
	if z, _ := m.Lookup("z"); z != starlark.MakeInt(2) {
		t.Errorf("duplicate key: last should win, got %v", z)
	}
	a, _ := m.Lookup("a")
	if got := a.String(); got != `[True, None, 2.5, "s", 12345678901234567890]` {
		t.Errorf("array = %s", got)
	}
	for _, bad := range []string{``, `{`, `[1,]`, `1 2`, `{"a":1}}`} {
		if _, err := stdlib.FromJSON([]byte(bad)); err == nil {
			t.Errorf("FromJSON(%q): no error", bad)
		}
	}
	v, err = stdlib.FromGo(map[string]any{"n": 1})
	if err != nil || v.String() != `{"n": 1}` {
		t.Errorf("FromGo = %v, %v", v, err)
	}
}

func TestStdSources(t *testing.T) {
	names := stdlib.StdNames()
	if len(names) == 0 || names[0] != "patterns.star" {
		t.Fatalf("StdNames = %v", names)
	}
	if _, err := stdlib.StdSource("patterns.star"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"nope.star", "../stdlib.go", "/etc/passwd"} {
		if _, err := stdlib.StdSource(bad); err == nil {
			t.Errorf("StdSource(%q): no error", bad)
		}
	}
}
