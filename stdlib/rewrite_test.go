package stdlib

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// cell is a value with one settable field, f, to try a.f op= y on.
type cell struct {
	f      starlark.Value
	frozen bool
}

func (c *cell) String() string        { return "cell(" + c.f.String() + ")" }
func (c *cell) Type() string          { return "cell" }
func (c *cell) Freeze()               { c.frozen = true; c.f.Freeze() }
func (c *cell) Truth() starlark.Bool  { return true }
func (c *cell) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: cell") }
func (c *cell) AttrNames() []string   { return []string{"f"} }
func (c *cell) Attr(name string) (starlark.Value, error) {
	if name == "f" {
		return c.f, nil
	}
	return nil, nil
}
func (c *cell) SetField(name string, v starlark.Value) error {
	if c.frozen {
		return fmt.Errorf("cannot set .%s of a frozen cell", name)
	}
	if name != "f" {
		return starlark.NoSuchAttrError(fmt.Sprintf("cell has no .%s field", name))
	}
	c.f = v
	return nil
}

// runStar runs src as go.starlark.net compiles it (checked false) or as
// Rewrite leaves it, and returns its globals as text (functions left out)
// and its error with the position it is reported at.
func runStar(t *testing.T, src string, checked bool) (globals, errText string) {
	t.Helper()
	f, err := (&syntax.FileOptions{While: true, TopLevelControl: true, GlobalReassign: true}).Parse("t.star", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	frozenDict := starlark.NewDict(1)
	_ = frozenDict.SetKey(starlark.String("k"), starlark.String("a"))
	frozenDict.Freeze()
	frozenCell := &cell{f: starlark.String("a")}
	frozenCell.Freeze()
	env := starlark.StringDict{
		"struct":      starlark.NewBuiltin("struct", starlarkstruct.Make),
		"frozen_dict": frozenDict,
		"frozen_cell": frozenCell,
		"obj":         &cell{f: starlark.String("a")},
	}
	if checked {
		Rewrite(f)
		for k, v := range CheckedOps() {
			env[k] = v
		}
	}
	prog, err := starlark.FileProgram(f, env.Has)
	if err != nil {
		t.Fatal(err)
	}
	g, err := prog.Init(&starlark.Thread{}, env)
	var lines []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range g {
			if !yield(k) {
				return
			}
		}
	}) {
		if _, isFn := g[name].(*starlark.Function); !isFn {
			lines = append(lines, name+" = "+g[name].String())
		}
	}
	lines = append(lines, "obj = "+env["obj"].String())
	if err != nil {
		e := err.(*starlark.EvalError)
		// The innermost position in the file (a builtin's frame is
		// "<builtin>").
		var at syntax.Position
		for i := len(e.CallStack) - 1; i >= 0; i-- {
			if e.CallStack[i].Pos.Filename() == "t.star" {
				at = e.CallStack[i].Pos
				break
			}
		}
		errText = fmt.Sprintf("%d: %s", at.Line, e.Msg)
	}
	return strings.Join(lines, "\n"), errText
}

// An augmented assignment to a[k] or a.f that Rewrite routes through the
// checked builtins behaves as go.starlark.net's own: a, then k, each once,
// then a[k] is read (an error for a missing key or field before y runs),
// then y, then the operation and the store (an error for a frozen value
// after y has run).
func TestRewriteAugmentedSameAsStarlark(t *testing.T) {
	const prelude = `log = []
def y(v):
    log.append("y")
    return v
`
	for _, tc := range []struct{ name, src string }{
		{"y changes the slot", `d = {"k": "a"}
def f():
    d["k"] = "b"
    return 2
d["k"] *= f()`},
		{"y changes the slot, %=", `d = {"k": "%s!"}
def f():
    d["k"] = "?%s"
    return "v"
d["k"] %= f()`},
		{"list slot", `l = ["x"]
def f():
    l[0] = "z"
    return 3
l[0] *= f()`},
		{"field y changes", `def f():
    obj.f = "b"
    return 2
obj.f *= f()`},
		{"order of a, k and y, each once", `d = {"k": [1]}
def a():
    log.append("a")
    return d
def k():
    log.append("k")
    return "k"
a()[k()] *= y(2)`},
		{"order of a and y for a field", `def a():
    log.append("a")
    return obj
a().f *= y(3)`},
		{"missing key before y", "d = {}\nd[\"k\"] *= y(2)"},
		{"index out of range before y", "l = []\nl[0] *= y(2)"},
		{"no such field before y", "s = struct(g = 1)\ns.f *= y(2)"},
		{"not indexable before y", "n = 1\nn[0] *= y(2)"},
		{"frozen dict after y", `frozen_dict["k"] *= y(2)`},
		{"frozen cell after y", `frozen_cell.f *= y(2)`},
		{"tuple after y", "t = (\"a\",)\nt[0] *= y(2)"},
		{"struct field after y", "s = struct(f = \"a\")\ns.f *= y(2)"},
		{"bad operands after y", "d = {\"k\": {}}\nd[\"k\"] *= y(2)"},
		{"bad format after y", "d = {\"k\": \"%d\"}\nd[\"k\"] %= y(\"s\")"},
		{"nested target", "d = {\"k\": [\"a\"]}\nd[\"k\"][0] *= y(2)"},
		{"in a function", `def h():
    m = {"k": "a"}
    m["k"] *= y(2)
    return m
out = h()`},
		{"parenthesized", "d = {\"k\": \"a\"}\n(d[\"k\"]) *= y(2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := prelude + tc.src + "\n"
			wantG, wantErr := runStar(t, src, false)
			gotG, gotErr := runStar(t, src, true)
			if diff := cmp.Diff(wantG, gotG); diff != "" {
				t.Errorf("globals (-plain +rewritten):\n%s", diff)
			}
			if diff := cmp.Diff(wantErr, gotErr); diff != "" {
				t.Errorf("error (-plain +rewritten):\n%s", diff)
			}
		})
	}
}

// The read of the slot is reported at its "[" or ".", as go.starlark.net
// reports it; the operation at the operator.
func TestRewriteAugmentedErrorColumns(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"d = {}\nd['k'] *= 2", "t.star:2:2"},
		{"n = 1\nn.f *= 2", "t.star:2:2"},
		{"d = {'k': {}}\nd['k'] *= 2", "t.star:2:8"},
		{"d = {'k': 'ab'}\nd['k'] *= 999999999", "t.star:2:8"},
	} {
		f, err := (&syntax.FileOptions{}).Parse("t.star", tc.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		Rewrite(f)
		prog, err := starlark.FileProgram(f, CheckedOps().Has)
		if err != nil {
			t.Fatal(err)
		}
		_, err = prog.Init(&starlark.Thread{}, CheckedOps())
		e, ok := err.(*starlark.EvalError)
		if !ok {
			t.Errorf("%q: got %v, want an error", tc.src, err)
			continue
		}
		var got string
		for i := len(e.CallStack) - 1; i >= 0; i-- {
			if p := e.CallStack[i].Pos; p.Filename() == "t.star" {
				got = p.String()
				break
			}
		}
		if got != tc.want {
			t.Errorf("%q: error %q at %s, want at %s", tc.src, e.Msg, got, tc.want)
		}
	}
}
