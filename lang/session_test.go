package lang

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
)

// sessionTree writes files (path -> source) under a new temporary directory
// and returns it.
func sessionTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		writeTree(t, dir, name, src)
	}
	return dir
}

func writeTree(t *testing.T, dir, name, src string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exec runs chunk and fails the test on an error.
func exec(t *testing.T, s *Session, chunk string) starlark.Value {
	t.Helper()
	v, err := s.Exec(context.Background(), chunk)
	if err != nil {
		t.Fatalf("Exec(%q): %v", chunk, err)
	}
	return v
}

// execErr runs chunk and returns its *graphir.Error, failing the test if
// there is none.
func execErr(t *testing.T, s *Session, chunk string) *graphir.Error {
	t.Helper()
	_, err := s.Exec(context.Background(), chunk)
	var ge *graphir.Error
	if !errors.As(err, &ge) {
		t.Fatalf("Exec(%q) = %v, want a *graphir.Error", chunk, err)
	}
	return ge
}

func edgeNames(g *graphir.Graph) []string {
	var out []string
	for _, e := range g.Edges {
		out = append(out, g.Nodes[e.From].Name+"->"+g.Nodes[e.To].Name)
	}
	return out
}

func TestSessionExpressionsAndStatements(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	if v := exec(t, s, "1 + 2\n"); v.String() != "3" {
		t.Errorf("1 + 2 = %v", v)
	}
	if v := exec(t, s, "x = [1, 2]\n"); v != nil {
		t.Errorf("an assignment returned %v", v)
	}
	exec(t, s, "def double(n):\n    return n * 2\n")
	if v := exec(t, s, "double(len(x))"); v.String() != "4" {
		t.Errorf("double(len(x)) = %v", v)
	}
	// Values stay mutable until the graph is taken, as in Python.
	exec(t, s, "x.append(3)\n")
	if v := exec(t, s, "x"); v.String() != "[1, 2, 3]" {
		t.Errorf("x = %v", v)
	}
	// The builtins and modules are there.
	if v := exec(t, s, `json.encode({"a": 1})`); v.String() != `"{\"a\":1}"` {
		t.Errorf("json.encode = %v", v)
	}
	if diff := cmp.Diff([]string{"double", "x"}, keys(s.Globals())); diff != "" {
		t.Errorf("Globals() (-want +got):\n%s", diff)
	}
	for _, want := range []string{"double", "step", "json", "len", "x"} {
		if !contains(s.Names(), want) {
			t.Errorf("Names() lacks %q", want)
		}
	}
}

func keys(d starlark.StringDict) []string { return d.Keys() }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestSessionBuildsAFlow(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	exec(t, s, `a = step("a", run = ["true"])`)
	exec(t, s, "b = step(\"b\",\n    fn = lambda r: 1)\n")
	exec(t, s, `c = step("c")`)
	if v := exec(t, s, "c"); v.String() != "<step c>" {
		t.Errorf(`c = %v`, v)
	}
	exec(t, s, "chain(START, a, b, END)\n")
	g := s.Graph()
	if diff := cmp.Diff([]string{"a", "b", "c"}, g.StepNames()); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	// Positions count the lines of the whole session.
	for name, want := range map[string]string{"a": "<stdin>:1:5", "b": "<stdin>:2:5", "c": "<stdin>:4:5"} {
		if got := g.Node(name).Pos.String(); got != want {
			t.Errorf("step %s at %s, want %s", name, got, want)
		}
	}
	if diff := cmp.Diff([]string{"START->a", "a->b", "b->END"}, edgeNames(g)); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	// The snapshot is a value: later chunks do not change it.
	exec(t, s, "edge(b, c)\n")
	if len(g.Edges) != 3 {
		t.Errorf("the snapshot changed: %v", edgeNames(g))
	}
	if got := len(s.Graph().Edges); got != 4 {
		t.Errorf("a new snapshot has %d edges, want 4", got)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, s.StepNames()); diff != "" {
		t.Errorf("StepNames (-want +got):\n%s", diff)
	}
}

func TestSessionErrors(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	exec(t, s, "x = 1\n")
	cases := []struct {
		chunk, code, pos, msg, hint string
	}{
		{"y = = 2\n", "parse_error", "<stdin>:2:5", "got '=', want primary expression", ""},
		{"stpe(\"a\")\n", "parse_error", "<stdin>:3:1", "undefined: stpe", `did you mean "step"?`},
		{"\n\nstep(\"a\", run = 3)\n", "load_error", "<stdin>:6:1", `step "a": run`, ""},
		{"def f():\n    return 1 // 0\n\nf()\n", "load_error", "<stdin>:8:14", "floored division by zero", ""},
	}
	for _, c := range cases {
		err := execErr(t, s, c.chunk)
		if string(err.Code) != c.code || err.Pos.String() != c.pos || !strings.Contains(err.Msg, c.msg) || err.Hint != c.hint {
			t.Errorf("Exec(%q) = %s (hint %q), want %s: %s [%s] (hint %q)", c.chunk, err, err.Hint, c.pos, c.msg, c.code, c.hint)
		}
	}
	// The session's own names are suggested.
	exec(t, s, "loud = 1\n")
	if err := execErr(t, s, "lod + 1\n"); err.Hint != `did you mean "loud"?` {
		t.Errorf("undefined global: %v (hint %q)", err, err.Hint)
	}
	// Where steps are expected, a step entered before is preferred to the
	// builtin set.
	exec(t, s, "test = step(\"test\")\n")
	if err := execErr(t, s, "chain(START, tset, END)\n"); err.Hint != `did you mean "test"?` {
		t.Errorf("undefined step: %v (hint %q)", err, err.Hint)
	}

	// A failing chunk keeps what it did before failing; the session goes on.
	execErr(t, s, "z = 5\nfail(\"stop\")\n")
	if v := exec(t, s, "x + z"); v.String() != "6" {
		t.Errorf("x + z = %v", v)
	}
}

func TestSessionBudget(t *testing.T) {
	s := NewSession(t.TempDir(), Options{MaxSteps: 10_000})
	err := execErr(t, s, "for i in range(100000):\n    pass\n")
	if !strings.Contains(err.Msg, "budget of 10000 steps exceeded") {
		t.Errorf("budget: %v", err)
	}
	// Each chunk has a budget of its own.
	for i := 0; i < 3; i++ {
		exec(t, s, "for i in range(1000):\n    pass\n")
	}
}

func TestSessionCancel(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Exec(ctx, "for i in range(1000000):\n    pass\n")
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("cancelled chunk: %v", err)
	}
	exec(t, s, "1")
}

func TestSessionLoad(t *testing.T) {
	dir := sessionTree(t, map[string]string{
		"lib/util.star": "def task(name):\n    return step(name, run = [\"echo\", name])\n",
		"bad.star":      "load(\"nope.star\", \"x\")\n",
	})
	s := NewSession(dir, Options{})
	exec(t, s, `load("lib/util.star", "task")`+"\n")
	exec(t, s, "task(\"t1\")\n")
	g := s.Graph()
	if diff := cmp.Diff([]string{"t1"}, g.StepNames()); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "lib/util.star")}, g.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// The step's position is the user's line; the library's frame is in the trace.
	if got := g.Node("t1").Pos.String(); got != "<stdin>:2:1" {
		t.Errorf("t1 at %s", got)
	}

	// A module that failed is tried again once fixed.
	err := execErr(t, s, `load("bad.star", "x")`+"\n")
	if !strings.Contains(err.Msg, "nope.star") {
		t.Errorf("bad module: %v", err)
	}
	writeTree(t, dir, "bad.star", "x = 42\n")
	exec(t, s, `load("bad.star", "x")`+"\n")
	if v := exec(t, s, "x"); v.String() != "42" {
		t.Errorf("x = %v", v)
	}

	// Modules may not leave the root.
	if err := execErr(t, s, `load("../out.star", "y")`+"\n"); !strings.Contains(err.Msg, "outside the flow root") {
		t.Errorf("escape: %v", err)
	}
}

func TestSessionLoadFile(t *testing.T) {
	dir := sessionTree(t, map[string]string{
		"flows/build.star": `load("lib.star", "greet")
flow(name = "build", inputs = {"who": "world"})
hello = step("hello", run = ["echo", greet]) 
chain(START, hello, END)
`,
		"flows/lib.star":   "greet = \"hi\"\n",
		"flows/child.star": "step(\"inner\")\n",
	})
	file := filepath.Join(dir, "flows/build.star")
	s := NewSession(dir, Options{})
	exec(t, s, "before = step(\"before\")\n")
	if err := s.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	if s.Lookup("before") != nil {
		t.Error("the globals from before the load survived it")
	}
	if v := exec(t, s, "greet + \" \" + hello.name"); v.String() != `"hi hello"` {
		t.Errorf("the file's globals: %v", v)
	}
	// Chunks continue the file: load() and child flows are relative to it.
	exec(t, s, `load("lib.star", g2 = "greet")`+"\n")
	exec(t, s, `sub = step("sub", flow = "child.star")`+"\n")
	g := s.Graph()
	if g.File != file || g.Name != "build" {
		t.Errorf("graph of %s named %s", g.File, g.Name)
	}
	if diff := cmp.Diff([]string{"hello", "sub"}, g.StepNames()); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if n := g.Node("sub"); n.Subflow.Child == nil || n.Subflow.ChildErr != nil {
		t.Errorf("child flow: %v %v", n.Subflow.Child, n.Subflow.ChildErr)
	}
	want := []string{file, filepath.Join(dir, "flows/lib.star"), filepath.Join(dir, "flows/child.star")}
	if diff := cmp.Diff(want, g.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// Snapshots do not pile up files.
	if got := s.Graph().Files; len(got) != 3 {
		t.Errorf("second snapshot files: %v", got)
	}

	// Reload reads everything afresh and drops what chunks added.
	writeTree(t, dir, "flows/lib.star", "greet = \"hello\"\n")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := exec(t, s, "greet"); v.String() != `"hello"` {
		t.Errorf("after reload greet = %v", v)
	}
	if got := s.Graph().StepNames(); len(got) != 1 {
		t.Errorf("after reload: %v", got)
	}

	// A file that fails leaves the session as it was.
	writeTree(t, dir, "flows/build.star", "step(\"x\"\n")
	err := s.Reload()
	var ge *graphir.Error
	if !errors.As(err, &ge) || ge.Code != "parse_error" || ge.Pos.File != file {
		t.Fatalf("reload of a broken file: %v", err)
	}
	if v := exec(t, s, "greet"); v.String() != `"hello"` {
		t.Errorf("after a failed reload greet = %v", v)
	}
	if s.File() != file {
		t.Errorf("File() = %q", s.File())
	}
	if err := s.LoadFile(filepath.Join(dir, "missing.star")); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("missing file: %v", err)
	}

	s.Reset()
	if len(s.Globals()) != 0 || len(s.StepNames()) != 0 {
		t.Errorf("after reset: %v %v", s.Globals(), s.StepNames())
	}
}

func TestSessionUntil(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	exec(t, s, "b = step(\"b\")\nl = loop(\"l\", body = [b], until = \"done\", max_iterations = 3)\n")
	if n := s.Graph().Node("l"); n.Loop.Until != nil || n.Loop.UntilBad != "" {
		t.Errorf("until before it is defined: %v %q", n.Loop.Until, n.Loop.UntilBad)
	}
	exec(t, s, "done = 3\n")
	if n := s.Graph().Node("l"); n.Loop.UntilBad == "" {
		t.Errorf("until naming an int: %v %q", n.Loop.Until, n.Loop.UntilBad)
	}
	exec(t, s, "def done(it):\n    return True\n")
	g := s.Graph()
	if n := g.Node("l"); n.Loop.Until == nil || n.Loop.UntilBad != "" {
		t.Errorf("until once defined: %v %q", n.Loop.Until, n.Loop.UntilBad)
	}
	if diff := cmp.Diff([]string{"done"}, g.Funcs); diff != "" {
		t.Errorf("funcs (-want +got):\n%s", diff)
	}
	// A builtin is not a function of the flow's.
	exec(t, s, "l2 = loop(\"l2\", body = [step(\"c\")], until = \"step\", max_iterations = 3)\n")
	if n := s.Graph().Node("l2"); n.Loop.Until != nil {
		t.Errorf("until resolved to a builtin")
	}
}

func TestSessionGraphFreezes(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	exec(t, s, "xs = [1]\n")
	s.Graph()
	if err := execErr(t, s, "xs.append(2)\n"); !strings.Contains(err.Msg, "frozen") {
		t.Errorf("append after the graph was taken: %v", err)
	}
	exec(t, s, "xs = [3]\nxs.append(4)\n")
}

func TestSessionPrint(t *testing.T) {
	var got []string
	s := NewSession(t.TempDir(), Options{Print: func(p graphir.Pos, msg string) { got = append(got, p.String()+": "+msg) }})
	exec(t, s, "x = 1\nprint(\"hi\", x)\n")
	if diff := cmp.Diff([]string{"<stdin>:2:6: hi 1"}, got); diff != "" {
		t.Errorf("print (-want +got):\n%s", diff)
	}
}

// Drop removes a step, its body and its edges; the name can be declared
// again, routes naming it follow the new step, and a Step value of the
// dropped one is refused.
func TestSessionDrop(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	exec(t, s, `a = step("a")`)
	exec(t, s, `b = step("b")`)
	exec(t, s, `c = step("c")`)
	exec(t, s, `pick = router("pick", cases = [("True", b)], default = c)`)
	exec(t, s, `chain(START, a, pick)`)
	exec(t, s, `edge(b, END)`)
	exec(t, s, `edge(c, END)`)
	exec(t, s, `x = step("x")`)
	exec(t, s, `y = step("y")`)
	exec(t, s, `l = loop("l", body = [x, y], until = lambda it: True, max_iterations = 2)`)

	if _, err := s.Drop("nope"); err == nil || !strings.Contains(err.Error(), `no step "nope"`) {
		t.Errorf("drop nope: %v", err)
	}
	gone, err := s.Drop("b")
	if err != nil || !cmp.Equal(gone, []string{"b"}) {
		t.Fatalf("drop b: %v %v", gone, err)
	}
	if _, err := s.Exec(context.Background(), "edge(b, END)\n"); err == nil || !strings.Contains(err.Error(), `step "b" was dropped`) {
		t.Errorf("a dropped Step value: %v", err)
	}
	exec(t, s, `b = step("b", fn = lambda r: 1)`)
	exec(t, s, `edge(b, END)`)
	if gone, err := s.Drop("y"); err != nil || !cmp.Equal(gone, []string{"y"}) {
		t.Fatalf("drop y: %v %v", gone, err)
	}
	if _, err := s.Drop("x"); err == nil || !strings.Contains(err.Error(), `only step of the body of loop "l"`) {
		t.Errorf("drop the last body step: %v", err)
	}
	if gone, err := s.Drop("l"); err != nil || !cmp.Equal(gone, []string{"x", "l"}) {
		t.Fatalf("drop l: %v %v", gone, err)
	}

	g := s.Graph()
	var names []string
	for _, n := range g.Steps() {
		names = append(names, n.Name)
		if g.Nodes[n.ID] != n {
			t.Errorf("node %s has id %d", n.Name, n.ID)
		}
	}
	if diff := cmp.Diff([]string{"a", "c", "pick", "b"}, names); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	var edges []string
	for _, e := range g.Edges {
		edges = append(edges, g.Nodes[e.From].Name+"->"+g.Nodes[e.To].Name)
	}
	// The router's case goes to the new b (by name); the old b's edge to
	// END went with it.
	want := []string{"START->a", "a->pick", "c->END", "b->END", "pick->b", "pick->c"}
	if diff := cmp.Diff(want, edges); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
}

// The REPL bounds the value one operation makes, in statements and in an
// expression it prints (issue 9).
func TestSessionHugeValue(t *testing.T) {
	s := NewSession(t.TempDir(), Options{})
	for _, chunk := range []string{"x = 'a' * 999999999", "[0] * 1000000000", "y = 'ab'\ny *= 999999999"} {
		err := execErr(t, s, chunk)
		if !strings.Contains(err.Msg, "one value may take at most 64 MiB") {
			t.Errorf("%q: %v", chunk, err)
		}
	}
	if v := exec(t, s, "'ab' * 2"); v.String() != `"abab"` {
		t.Errorf("'ab' * 2 = %s", v)
	}
}
