package lang

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
)

// memFS is a flow tree held in memory, read through Options.ReadFile. Paths
// are relative to the test's working directory, as the loader names them.
type memFS map[string]string

func (m memFS) read(name string) ([]byte, error) {
	if src, ok := m[filepath.ToSlash(filepath.Clean(name))]; ok {
		return []byte(src), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// load loads file from files and returns the graph or the *graphir.Error.
func (m memFS) load(t *testing.T, file string) (*graphir.Graph, *graphir.Error) {
	t.Helper()
	return m.loadOpts(t, file, Options{})
}

func (m memFS) loadOpts(t *testing.T, file string, opts Options) (*graphir.Graph, *graphir.Error) {
	t.Helper()
	opts.ReadFile = m.read
	g, err := Load(file, opts)
	if err == nil {
		return g, nil
	}
	var ge *graphir.Error
	if !errors.As(err, &ge) {
		t.Fatalf("Load(%s) returned %T, want *graphir.Error: %v", file, err, err)
	}
	if g != nil {
		t.Errorf("Load(%s) returned a graph with an error", file)
	}
	return nil, ge
}

// mustLoad loads file and fails the test on an error.
func (m memFS) mustLoad(t *testing.T, file string) *graphir.Graph {
	t.Helper()
	g, err := m.load(t, file)
	if err != nil {
		t.Fatalf("Load(%s): %v", file, err)
	}
	return g
}

// wantError checks an error's code, position and message fragments. A
// position without a column matches any column on that line.
func wantError(t *testing.T, err *graphir.Error, code, pos string, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s at %s", code, pos)
	}
	got := err.Pos.String()
	if strings.Count(pos, ":") == 1 {
		got = graphir.Pos{File: err.Pos.File, Line: err.Pos.Line}.String()
	}
	if string(err.Code) != code || got != pos {
		t.Errorf("got %s at %s (%s), want %s at %s", err.Code, err.Pos, err.Msg, code, pos)
	}
	for _, f := range frags {
		if !strings.Contains(err.Msg, f) {
			t.Errorf("message %q does not contain %q", err.Msg, f)
		}
	}
}

func stepNames(g *graphir.Graph) []string { return g.StepNames() }

func edgeList(g *graphir.Graph) []string {
	var out []string
	for _, e := range g.Edges {
		s := g.Nodes[e.From].Name + "->" + g.Nodes[e.To].Name
		if e.When != nil {
			s += " when " + e.When.String()
		}
		if e.On != graphir.OnSuccess {
			s += " on " + e.On.String()
		}
		if e.Back {
			s += " (back)"
		}
		out = append(out, s)
	}
	return out
}

func TestLoadRelative(t *testing.T) {
	files := memFS{
		"flow.star": `load("lib/util.star", "mk")
mk("a")
mk("b")
`,
		// lib/util.star loads its neighbour relative to its own directory.
		"lib/util.star": `load("names.star", "prefix")
def mk(name):
    return step(prefix + name)
`,
		"lib/names.star": `prefix = "p_"`,
	}
	g := files.mustLoad(t, "flow.star")
	if diff := cmp.Diff([]string{"p_a", "p_b"}, stepNames(g)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"flow.star", "lib/util.star", "lib/names.star"}, g.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// A step made by a library function points at the user's call, and
	// keeps the library frame in its stack.
	n := g.Node("p_b")
	if got, want := n.Pos.String(), "flow.star:3:1"; got != want {
		t.Errorf("p_b at %s, want %s", got, want)
	}
	if got := len(n.Stack); got != 2 {
		t.Fatalf("p_b has %d frames, want 2: %v", got, n.Stack)
	}
	if got, want := n.Stack[1].Pos.String(), "lib/util.star:3:12"; got != want {
		t.Errorf("p_b inner frame at %s, want %s", got, want)
	}
	if got, want := n.Stack[1].Func, "mk"; got != want {
		t.Errorf("p_b inner frame in %s, want %s", got, want)
	}
}

func TestLoadStd(t *testing.T) {
	files := memFS{
		"flow.star": `load("@std/patterns.star", "review_loop", "fan_out")
draft = step("draft", max_visits = 3)
review = step("review")
chain(START, draft)
review_loop(draft, review, approved = "review.ok", then = END)
`,
	}
	g := files.mustLoad(t, "flow.star")
	want := []string{
		"START->draft",
		"draft->review",
		"review->draft when not (review.ok) (back)",
		"review->END when review.ok",
	}
	if diff := cmp.Diff(want, edgeList(g)); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	// Edges made inside @std point at the user's call.
	for _, e := range g.Edges[1:] {
		if got := e.Pos.String(); got != "flow.star:5:1" {
			t.Errorf("edge %s->%s at %s, want flow.star:5:1", g.Nodes[e.From].Name, g.Nodes[e.To].Name, got)
		}
		if len(e.Stack) != 2 || e.Stack[1].Pos.File != "@std/patterns.star" {
			t.Errorf("edge stack %v, want the user's frame then @std/patterns.star", e.Stack)
		}
	}

	_, err := memFS{"flow.star": `load("@std/pattern.star", "fan_out")`}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:1:1", "no standard module @std/pattern.star")
	if err != nil && err.Hint != `did you mean "@std/patterns.star"?` {
		t.Errorf("hint %q", err.Hint)
	}
	// A name near none of them lists them.
	_, err = memFS{"flow.star": `load("@std/retries.star", "retry")`}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:1:1", "no standard module @std/retries.star (the standard modules are @std/patterns.star)")
	_, err = memFS{"flow.star": `load("@std/patterns.star", "nope")`}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:1:1", "name nope not found in module @std/patterns.star")
}

func TestLoadOnce(t *testing.T) {
	files := memFS{
		"flow.star": `load("a.star", "a")
load("b.star", "b")
load("c.star", "c")
step(a + b + c)
`,
		"a.star": `load("c.star", "c")
a = "a" + c`,
		"b.star": `load("./c.star", "c")
b = "b" + c`,
		"c.star": `print("loading c")
c = "c"`,
	}
	var prints []string
	g, err := files.loadOpts(t, "flow.star", Options{Print: func(pos graphir.Pos, msg string) {
		prints = append(prints, pos.String()+": "+msg)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c.star:1:6: loading c"}, prints); diff != "" {
		t.Errorf("prints (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"acbcc"}, stepNames(g)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestLoadCycle(t *testing.T) {
	files := memFS{
		"flow.star": `load("a.star", "a")
step("s")`,
		"a.star": `load("b.star", "b")
a = 1`,
		"b.star": `load("a.star", "a")
b = 2`,
	}
	_, err := files.load(t, "flow.star")
	wantError(t, err, "load_error", "b.star:1:1", "load cycle: a.star -> b.star -> a.star")
	// The trace leads back to the flow.
	if err != nil && !strings.Contains(strings.Join(err.Trace, "\n"), "flow.star:1:1") {
		t.Errorf("trace %q does not show flow.star:1:1", err.Trace)
	}

	// The flow itself can be part of the cycle.
	_, err = memFS{"flow.star": `load("flow.star", "x")`}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:1:1", "load cycle: flow.star -> flow.star")
	_, err = memFS{
		"flow.star": `load("lib/a.star", "x")`,
		"lib/a.star": `load("../flow.star", "y")
x = 1`,
	}.load(t, "flow.star")
	wantError(t, err, "load_error", "lib/a.star:1:1", "load cycle: flow.star -> lib/a.star -> flow.star")
}

func TestLoadConfined(t *testing.T) {
	for _, tc := range []struct {
		name, src, frag string
	}{
		{"parent", `load("../x.star", "x")`, "outside the flow root"},
		{"sneaky", `load("lib/../../x.star", "x")`, "outside the flow root"},
		{"absolute", `load("/etc/x.star", "x")`, "absolute path"},
		{"empty", `load("", "x")`, "empty module name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := memFS{"flow.star": "s = step(\"s\")\n" + tc.src, "../x.star": "x = 1", "/etc/x.star": "x = 1"}
			_, err := files.load(t, "flow.star")
			wantError(t, err, "load_error", "flow.star:2:1", tc.frag)
		})
	}

	// A library may load a sibling of its directory inside the root, and a
	// wider root allows what the flow's directory alone would not.
	files := memFS{
		"proj/flows/flow.star": `load("lib/a.star", "a")
load("../shared.star", "s")
step(a + s)`,
		"proj/flows/lib/a.star":   `load("../b.star", "b"); a = b`,
		"proj/flows/b.star":       `b = "b"`,
		"proj/shared.star":        `s = "s"`,
		"proj/flows/escape.star":  `load("../../x.star", "x")`,
		"x.star":                  `x = 1`,
		"proj/flows/escape2.star": `load("lib/../../../x.star", "x")`,
	}
	if _, err := files.load(t, "proj/flows/flow.star"); err == nil || !strings.Contains(err.Msg, "outside the flow root") {
		t.Errorf("load outside the default root: got %v", err)
	}
	g, err := files.loadOpts(t, "proj/flows/flow.star", Options{Root: "proj"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"bs"}, stepNames(g)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for _, f := range []string{"proj/flows/escape.star", "proj/flows/escape2.star"} {
		_, err = files.loadOpts(t, f, Options{Root: "proj"})
		wantError(t, err, "load_error", f+":1:1", "outside the flow root")
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := memFS{}.load(t, "nope.star")
	wantError(t, err, "load_error", "nope.star", "cannot read nope.star", "file does not exist")

	_, err = memFS{"flow.star": "load(\"lib/nope.star\", \"x\")\nstep(\"s\")"}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:1:1", "cannot load lib/nope.star", "cannot read lib/nope.star")

	// A real file system, through os.ReadFile.
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.star")
	if err := os.WriteFile(flow, []byte(`load("gone.star", "x")`), 0o666); err != nil {
		t.Fatal(err)
	}
	_, lerr := Load(flow, Options{})
	var ge *graphir.Error
	if !errors.As(lerr, &ge) {
		t.Fatalf("got %v, want a *graphir.Error", lerr)
	}
	wantError(t, ge, "load_error", flow+":1:1", "no such file or directory")
	_, lerr = Load(filepath.Join(dir, "none.star"), Options{})
	if !errors.As(lerr, &ge) || !errors.Is(lerr, fs.ErrNotExist) {
		t.Fatalf("got %v, want a *graphir.Error wrapping fs.ErrNotExist", lerr)
	}
}

func TestLoadBudget(t *testing.T) {
	// 100M iterations: range() alone is capped at 10M elements, so nest.
	src := `s = step("s")
def spin():
    n = 0
    for i in range(10000):
        for j in range(10000):
            n += 1
    return n
x = spin()
`
	_, err := memFS{"flow.star": src}.load(t, "flow.star")
	if err == nil {
		t.Fatal("100M iterations loaded")
	}
	if err.Code != "load_error" || err.Pos.File != "flow.star" || err.Pos.Line < 4 || err.Pos.Line > 6 {
		t.Errorf("got %s at %s, want load_error inside spin (flow.star:4-6)", err.Code, err.Pos)
	}
	if !strings.Contains(err.Msg, "step budget of 10000000 steps exceeded") {
		t.Errorf("message %q", err.Msg)
	}
	if diff := cmp.Diff([]string{"flow.star:8:5: in <toplevel>"}, err.Trace); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}

	// The budget is shared by the flow and its modules: each half fits,
	// both do not.
	files := memFS{
		"flow.star": `load("lib.star", "x")
y = 0
for i in range(100):
    y += i
`,
		"lib.star": `x = 0
for i in range(100):
    x += i
`,
	}
	opts := Options{MaxSteps: 1500} // each loop takes about 1000
	half := memFS{"flow.star": files["lib.star"]}
	if _, err := half.loadOpts(t, "flow.star", opts); err != nil {
		t.Fatalf("half the work: %v", err)
	}
	_, err = files.loadOpts(t, "flow.star", opts)
	wantError(t, err, "load_error", "flow.star:4", "step budget of 1500 steps exceeded")

	// Running out inside the module points there, with the load line in
	// the trace.
	opts.MaxSteps = 500
	_, err = files.loadOpts(t, "flow.star", opts)
	if err == nil || err.Pos.File != "lib.star" {
		t.Fatalf("got %v, want an error in lib.star", err)
	}
	if diff := cmp.Diff([]string{"flow.star:1:1: in <toplevel>"}, err.Trace); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
}

func hintOf(err *graphir.Error) string {
	if err == nil {
		return ""
	}
	return err.Hint
}

func TestLoadSyntaxError(t *testing.T) {
	type syntaxCase struct {
		src, pos, frag string
	}
	for _, tc := range []syntaxCase{
		{"s = step(\"a\"\nedge(s, END)\n", "flow.star:2:1", "got identifier, want ','"},
		{"s = step(\"a\")\nif s\n  pass\n", "flow.star:2:5", "got newline, want ':'"},
		{"x = 1\nwhile x:\n  pass\n", "flow.star:2:1", "does not support while loops"},
		{"x = 1\nif x:\n  load(\"m.star\", \"y\")\n", "flow.star:3:3", "load statement within a conditional"},
		{"def f(n):\n  return f(n)\n", "", ""}, // recursion is a run-time error only when called
		{"s = step(\"a\")\nedge(s, ENDD)\n", "flow.star:2:9", "undefined: ENDD"},
		{"x = 'unterminated\n", "flow.star:1:5", "unexpected newline in string"},
		{"\tx = 1\n", "flow.star:1:2", "got indent, want primary expression"},
	} {
		_, err := memFS{"flow.star": tc.src}.load(t, "flow.star")
		if tc.pos == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.src, err)
			}
			continue
		}
		wantError(t, err, "parse_error", tc.pos, tc.frag)
	}

	// Python's habits get a hint naming the Starlark way.
	for _, tc := range []struct{ src, pos, frag, hint string }{
		{"load = step(\"load\")\n", "flow.star:1:6", "got '=', want '('", "load is a statement of Starlark"},
		{"x = 1\ns = step(\"s\", run = [\"echo\", f\"v{x}\"])\n", "flow.star:2:31", "got string literal", "Starlark has no f-strings"},
		{"import os\n", "flow.star:1:1", "got import", "Starlark has no import: load("},
		{"from os import path\n", "flow.star:1:1", "got from", "Starlark has no import"},
		{"n = sum([1, 2])\n", "flow.star:1:5", "undefined: sum", "Starlark has no sum()"},
		{"s = step(\"s\", fn = lambda r: sum([1]))\n", "flow.star:1:30", "undefined: sum", "Starlark has no sum()"},
		// Not a habit: no such hint.
		{"loader = step(\"s\")\nloader = = 1\n", "flow.star:2:10", "want primary expression", ""},
	} {
		_, err := memFS{"flow.star": tc.src}.load(t, "flow.star")
		wantError(t, err, "parse_error", tc.pos, tc.frag)
		if h := hintOf(err); tc.hint == "" && strings.Contains(h, "Starlark") || !strings.Contains(h, tc.hint) {
			t.Errorf("%q: hint %q, want %q", tc.src, h, tc.hint)
		}
	}

	// Misspelled names get a hint.
	_, err := memFS{"flow.star": "s = step(\"a\")\nchian(START, s, END)\n"}.load(t, "flow.star")
	wantError(t, err, "parse_error", "flow.star:2:1", "undefined: chian")
	if err != nil && err.Hint != `did you mean "chain"?` {
		t.Errorf("hint %q", err.Hint)
	}
	// The hint prefers names that make sense where the name is written:
	// a step variable in an argument that takes steps, the file's own
	// names over builtins as near, a local name the resolver knows.
	for _, tc := range []struct{ src, hint string }{
		{"build = step(\"build\")\ntest = step(\"test\")\nchain(START, build, tset, END)\n", `did you mean "test"?`},
		{"test = step(\"test\")\nedge(START, tset)\n", `did you mean "test"?`},
		{"test = step(\"test\")\nl = loop(\"l\", body = [tset], until = lambda it: True, max_iterations = 2)\n", `did you mean "test"?`},
		{"test = step(\"test\")\nx = tset\n", `did you mean "test"?`},
		{"test = 1\nx = lenn([1])\n", `did you mean "len"?`},
		{"len_x = 1\ny = lenx\n", `did you mean "len_x"?`},
		{"def f(r):\n    count = 1\n    return coutn\n", `did you mean "count"?`},
		{"s = step(\"s\")\nchain(START, s, ENDD)\n", `did you mean "END"?`},
		// A name used before its assignment: not a typo of another name.
		{"a = step(\"a\")\nedge(a, b)\nb = step(\"b\")\n", `b is assigned later, at line 3: a name can be used only after it is assigned (move the step() or assignment above this line)`},
		{"a = step(\"a\")\nedge(a, report)\nif True:\n    report = step(\"report\")\n", `report is assigned later, at line 4: a name can be used only after it is assigned (move the step() or assignment above this line)`},
		// A local of the same name in a function does not count.
		{"a = step(\"a\")\nedge(a, reprt)\ndef f():\n    reprt = 1\n    return reprt\n", `did you mean "repr"?`},
	} {
		_, err := memFS{"flow.star": tc.src}.load(t, "flow.star")
		if err == nil || err.Hint != tc.hint {
			t.Errorf("%q: got %v (hint %q), want hint %q", tc.src, err, hintOf(err), tc.hint)
		}
	}
	// Recursion is refused when it happens.
	_, err = memFS{"flow.star": "def f(n):\n  return f(n)\nf(1)\n"}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:2:10", "called recursively")
}

func TestLoadLibraryError(t *testing.T) {
	files := memFS{
		"flow.star": `load("lib/util.star", "mk")
s = step("s")
mk("a")
`,
		"lib/util.star": `def mk(name):
    return step(name, run = "echo")
`,
	}
	_, err := files.load(t, "flow.star")
	wantError(t, err, "load_error", "lib/util.star:2:12", `step "a": run must be a list of strings, got string "echo"`)
	if err != nil {
		if diff := cmp.Diff([]string{"flow.star:3:1: in <toplevel>"}, err.Trace); diff != "" {
			t.Errorf("trace (-want +got):\n%s", diff)
		}
	}

	// A library failing at its top level: the error is in the library,
	// the load() line in the trace.
	files = memFS{
		"flow.star":     "s = step(\"s\")\nload(\"lib/util.star\", \"mk\")\n",
		"lib/util.star": "x = {}\ny = x[\"missing\"]\n",
	}
	files["flow.star"] = "load(\"lib/util.star\", \"mk\")\ns = step(\"s\")\n"
	_, err = files.load(t, "flow.star")
	wantError(t, err, "load_error", "lib/util.star:2:6", `key "missing" not in dict`)
	if err != nil {
		if diff := cmp.Diff([]string{"flow.star:1:1: in <toplevel>"}, err.Trace); diff != "" {
			t.Errorf("trace (-want +got):\n%s", diff)
		}
	}

	// A failure inside an @std helper points at the user's call; the
	// helper's frame is in the trace.
	_, err = memFS{"flow.star": `load("@std/patterns.star", "fan_out")
a = step("a")
fan_out(a, [a], a)
`}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:3:1", "fan_out: want at least two branches, got 1")
	if err != nil && (len(err.Trace) != 1 || !strings.HasPrefix(err.Trace[0], "@std/patterns.star:")) {
		t.Errorf("trace %q, want the @std frame", err.Trace)
	}
}

func TestLoadUntil(t *testing.T) {
	g := memFS{"flow.star": `b = step("b")
l = loop("l", body = [b], until = "done", max_iterations = 3)
m = loop("m", body = [step("c")], until = "helper", max_iterations = 3)
n = loop("n", body = [step("d")], until = "nothing", max_iterations = 3)
o = loop("o", body = [step("e")], until = "data", max_iterations = 3)
p = loop("p", body = [step("f")], until = lambda it: True, max_iterations = 3)
q = loop("q", body = [step("g")], until = 42, max_iterations = 3)
chain(START, l, m, n, o, p, q, END)
load("lib.star", "helper")
data = [1]
def done(it):
    return True
`, "lib.star": `def helper(it):
    return True
def unexported(it):
    return True
`}.mustLoad(t, "flow.star")
	type until struct {
		Name, Fn, Bad string
	}
	get := func(name string) until {
		n := g.Node(name)
		u := until{Name: n.Loop.UntilName, Bad: n.Loop.UntilBad}
		if n.Loop.Until != nil {
			u.Fn = n.Loop.Until.Name()
		}
		return u
	}
	for _, tc := range []struct {
		step string
		want until
	}{
		{"l", until{Name: "done", Fn: "done"}},
		{"m", until{Name: "helper", Fn: "helper"}},
		{"n", until{Name: "nothing"}},
		{"o", until{Name: "data", Bad: "data (a list)"}},
		{"p", until{Fn: "lambda"}},
		{"q", until{Bad: "int 42"}},
	} {
		if diff := cmp.Diff(tc.want, get(tc.step)); diff != "" {
			t.Errorf("loop %s until (-want +got):\n%s", tc.step, diff)
		}
	}
	if diff := cmp.Diff([]string{"done", "helper", "unexported"}, g.Funcs); diff != "" {
		t.Errorf("funcs (-want +got):\n%s", diff)
	}
	// until= given as a literal name points at the literal.
	if got, want := g.Node("l").Loop.UntilPos.String(), "flow.star:2:36"; got != want {
		t.Errorf("until at %s, want %s", got, want)
	}
}

func TestLoadChildren(t *testing.T) {
	files := memFS{
		"flow.star": `a = step("a", flow = "sub/child.star", inputs = {"x": "{{ inputs.x }}"})
b = step("b", flow = "sub/missing.star")
c = step("c", flow = "sub/loop.star")
d = step("d", flow = "{{ inputs.which }}")
e = step("e", flow = "../outside.star")
f = step("f", flow = "sub/broken.star")
chain(START, a, b, c, d, e, f, END)
`,
		"sub/child.star":  `flow(name = "kid", inputs = {"x": None})` + "\nstep(\"k\")\n",
		"sub/loop.star":   `step("l1", flow = "loop2.star")`,
		"sub/loop2.star":  `step("l2", flow = "loop.star")`,
		"sub/broken.star": `step(`,
		"../outside.star": `step("o")`,
	}
	g := files.mustLoad(t, "flow.star")
	a := g.Node("a")
	if a.Subflow.Child == nil || a.Subflow.ChildErr != nil {
		t.Fatalf("a: child %v, err %v", a.Subflow.Child, a.Subflow.ChildErr)
	}
	if a.Subflow.Child.Name != "kid" || a.Subflow.ChildPath != "sub/child.star" || a.Subflow.Child.Node("k") == nil {
		t.Errorf("a: child %q at %s", a.Subflow.Child.Name, a.Subflow.ChildPath)
	}

	type childErr struct{ Code, Pos, Step string }
	for _, tc := range []struct {
		step string
		want *childErr
		frag string
	}{
		{"b", &childErr{"subflow_not_found", "flow.star:2:23", "b"}, "sub/missing.star does not exist"},
		{"c", nil, ""}, // the cycle is on sub/loop2.star's step, below
		{"d", nil, ""},
		{"e", &childErr{"subflow_not_found", "flow.star:5:23", "e"}, "outside the flow root"},
		{"f", &childErr{"parse_error", "sub/broken.star:1:6", ""}, "got end of file"},
	} {
		n := g.Node(tc.step)
		var got *childErr
		if n.Subflow.ChildErr != nil {
			got = &childErr{string(n.Subflow.ChildErr.Code), n.Subflow.ChildErr.Pos.String(), n.Subflow.ChildErr.Step}
			if !strings.Contains(n.Subflow.ChildErr.Msg, tc.frag) {
				t.Errorf("%s: message %q does not contain %q", tc.step, n.Subflow.ChildErr.Msg, tc.frag)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: child error (-want +got):\n%s", tc.step, diff)
		}
	}
	// The loop is recorded on the child whose step closes it.
	c := g.Node("c")
	if c.Subflow.Child == nil || c.Subflow.Child.Node("l1").Subflow.Child == nil {
		t.Fatalf("c: children not loaded: %v", c.Subflow.ChildErr)
	}
	l2 := c.Subflow.Child.Node("l1").Subflow.Child.Node("l2")
	if e := l2.Subflow.ChildErr; e == nil || e.Code != "subflow_cycle" || e.Pos.String() != "sub/loop2.star:1:20" ||
		!strings.Contains(e.Msg, "sub/loop.star -> sub/loop2.star -> sub/loop.star") {
		t.Errorf("l2: child error %v, want subflow_cycle", e)
	}
	want := []string{"flow.star", "sub/child.star", "sub/missing.star", "sub/loop.star", "sub/loop2.star", "sub/broken.star"}
	if diff := cmp.Diff(want, g.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	// A directory is not a flow.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	flow := filepath.Join(dir, "flow.star")
	if err := os.WriteFile(flow, []byte(`step("d", flow = "sub")`), 0o666); err != nil {
		t.Fatal(err)
	}
	dg, err := Load(flow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := dg.Node("d").Subflow.ChildErr; e == nil || e.Code != "subflow_not_found" || e.Pos.String() != flow+":1:19" ||
		!strings.Contains(e.Msg, "is a directory") {
		t.Errorf("directory child: %v", e)
	}

	// A flow that names itself.
	g = memFS{"self.star": `step("me", flow = "self.star")`}.mustLoad(t, "self.star")
	if e := g.Node("me").Subflow.ChildErr; e == nil || e.Code != "subflow_cycle" || !strings.Contains(e.Msg, "self.star -> self.star") {
		t.Errorf("self: %v", e)
	}
}

func TestLoadPositions(t *testing.T) {
	g := memFS{"flow.star": `a = step("a")
b = step(
    "b",
    run = ["echo", "{{ a.out }}"],
)
chain(START, a, b)
if True:
    edge(b, END, when = "b.exit_code == 0")
`}.mustLoad(t, "flow.star")
	for _, tc := range []struct{ what, got, want string }{
		{"a", g.Node("a").Pos.String(), "flow.star:1:5"},
		{"b", g.Node("b").Pos.String(), "flow.star:2:5"},
		{"chain edge", g.Edges[0].Pos.String(), "flow.star:6:1"},
		{"edge", g.Edges[2].Pos.String(), "flow.star:8:5"},
		{"when", g.Edges[2].When.Pos.String(), "flow.star:8:26"},
		{"when ref", g.Edges[2].When.Refs[0].Pos.String(), "flow.star:8:26"},
		{"argv", g.Node("b").Argv[1].Pos.String(), "flow.star:4:21"},
		{"argv hole", g.Node("b").Argv[1].Parts[0].X.Pos.String(), "flow.star:4:24"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s at %s, want %s", tc.what, tc.got, tc.want)
		}
	}
}

func TestLoadSource(t *testing.T) {
	// LoadSource needs no file; modules still come through ReadFile.
	g, err := LoadSource("x/flow.star", []byte(`load("m.star", "n")
step(n)`), Options{ReadFile: memFS{"x/m.star": `n = "from_m"`}.read})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"from_m"}, stepNames(g)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if g.Root != "x" || g.File != "x/flow.star" || g.Name != "flow" {
		t.Errorf("root %q file %q name %q", g.Root, g.File, g.Name)
	}
}

func TestLoadFrozenGlobals(t *testing.T) {
	// A module's values are frozen: an importer cannot change them.
	_, err := memFS{
		"flow.star": "load(\"m.star\", \"xs\")\nxs.append(1)\n",
		"m.star":    "xs = []\n",
	}.load(t, "flow.star")
	wantError(t, err, "load_error", "flow.star:2:1", "cannot append to frozen list")
}

func TestLoadMemory(t *testing.T) {
	// Each step doubles the string: the step budget alone would let it
	// take all the memory there is.
	src := `s = step("s")
x = "ab" * 1000000
for i in range(30): x = x + x
`
	// The watch stops the thread wherever it is when it notices, the
	// loop's header or its body: both are on line 3.
	_, err := memFS{"flow.star": src}.loadOpts(t, "flow.star", Options{MaxMemory: 64 << 20})
	wantError(t, err, "load_error", "flow.star:3", "load-time memory limit of 64 MiB exceeded")
}

// TestLoadMemoryScalesWithGraph: the memory bound grows with the steps and
// edges a flow records, so a big generated flow loads under a bound its
// graph alone exceeds, while a value growing without bound beside a few
// steps is still stopped.
func TestLoadMemoryScalesWithGraph(t *testing.T) {
	src := `prev = START
for i in range(30000):
    s = step("s%d" % i)
    edge(prev, s)
    prev = s
edge(prev, END)
`
	g, err := memFS{"flow.star": src}.loadOpts(t, "flow.star", Options{MaxMemory: 4 << 20})
	if err != nil {
		t.Fatalf("a 30,000-step flow under a 4 MiB bound: %v", err)
	}
	if n := len(g.Steps()); n != 30000 {
		t.Fatalf("%d steps, want 30000", n)
	}
	src = `for i in range(100):
    step("s%d" % i)
x = "ab" * 1000000
for i in range(30): x = x + x
`
	_, err = memFS{"flow.star": src}.loadOpts(t, "flow.star", Options{MaxMemory: 4 << 20})
	wantError(t, err, "load_error", "flow.star:4", "load-time memory limit of 4 MiB exceeded")
}

// TestLoadMaxSteps: Options.MaxSteps sets the load-time step budget.
func TestLoadMaxSteps(t *testing.T) {
	src := `for i in range(2000):
    step("s%d" % i)
`
	_, err := memFS{"flow.star": src}.loadOpts(t, "flow.star", Options{MaxSteps: 1000})
	wantError(t, err, "load_error", "flow.star:2", "load-time step budget of 1000 steps exceeded")
	fs := memFS{"flow.star": src}
	if _, err := fs.loadOpts(t, "flow.star", Options{MaxSteps: 1_000_000}); err != nil {
		t.Fatalf("with a budget of 1,000,000: %v", err)
	}
}

// Deep values fail fast at load with the position of the call, rather than
// overflowing the stack or taking minutes (issue 9).
func TestLoadDeepValues(t *testing.T) {
	deep := "s = step(\"s\")\nx = []\nfor i in range(100000):\n    x = [x]\n"
	for _, tc := range []struct{ src, frag string }{
		{"s = step(\"s\")\nx = json.decode(\"[\" * 2000000)\n", "json.decode: JSON nested more than 64 deep"},
		{deep + "y = len(str(x))\n", "str: value nested more than 1000 deep"},
		{deep + "y = repr(x)\n", "repr: value nested more than 1000 deep"},
		{deep + "y = json.encode(x)\n", "json.encode: value nested more than 64 deep"},
	} {
		_, err := memFS{"flow.star": tc.src}.load(t, "flow.star")
		line := strings.Count(tc.src, "\n")
		wantError(t, err, "load_error", fmt.Sprintf("flow.star:%d", line), tc.frag)
	}
}
