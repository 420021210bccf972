package graphir_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

func load(t *testing.T, src string) *graphir.Graph {
	t.Helper()
	g, err := lang.LoadSource("flow.star", []byte(src), lang.Options{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return g
}

// edges lists a graph's edges as "from->to", with " (back)" and
// " (implicit)" where they apply.
func edges(g *graphir.Graph) []string {
	var out []string
	for _, e := range g.Edges {
		s := g.Nodes[e.From].Name + "->" + g.Nodes[e.To].Name
		if e.On != graphir.OnSuccess {
			s += " on " + e.On.String()
		}
		if e.Back {
			s += " (back)"
		}
		if e.Implicit {
			s += " (implicit)"
		}
		out = append(out, s)
	}
	return out
}

func TestBackEdges(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"cycle", `a, b, c = step("a"), step("b"), step("c")
chain(START, a, b, c, END)
edge(c, a)
`, []string{"START->a", "a->b", "b->c", "c->END", "c->a (back)"}},
		{"diamond", `a, b, c, d = step("a"), step("b"), step("c"), step("d")
chain(START, a, b, d, END)
edge(a, c)
edge(c, d)
`, []string{"START->a", "a->b", "b->d", "d->END", "a->c", "c->d"}},
		// The walk follows out-edges in declaration order: from a it
		// reaches c first, so of b and c the edge into c's ancestor is
		// the back one.
		{"declaration order", `a, b, c = step("a"), step("b"), step("c")
edge(START, a)
edge(a, c)
edge(a, b)
edge(b, c)
edge(c, b)
edge(c, END)
`, []string{"START->a", "a->c", "a->b", "b->c (back)", "c->b", "c->END"}},
		{"self loop", `a = step("a", max_visits = 3)
chain(START, a, END)
edge(a, a, on = "failure")
`, []string{"START->a", "a->END", "a->a on failure (back)"}},
		{"failure retry", `build, fix = step("build"), step("fix")
edge(START, build)
edge(build, END)
edge(build, fix, on = "failure")
edge(fix, build)
`, []string{"START->build", "build->END", "build->fix on failure", "fix->build (back)"}},
		// Steps START does not reach are walked in declaration order.
		{"unreachable cycle", `a, x, y = step("a"), step("x"), step("y")
chain(START, a, END)
edge(x, y)
edge(y, x)
`, []string{"START->a", "a->END", "x->y", "y->x (back)"}},
		{"router back", `a = step("a")
r = router("r", cases = [("a.again", a)], default = END)
chain(START, a, r)
`, []string{"START->a", "a->r", "r->a (back)", "r->END"}},
		{"loop body", `p, q = step("p"), step("q")
l = loop("l", body = [p, q], until = lambda it: True, max_iterations = 3)
edge(p, q)
edge(q, p, when = "q.again")
chain(START, l, END)
`, []string{"p->q", "q->p (back)", "START->l", "l->END"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := load(t, tc.src)
			if diff := cmp.Diff(tc.want, edges(g)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImplicitEdges(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"linear default", `a, b, c = step("a"), step("b"), step("c")`,
			[]string{"START->a (implicit)", "a->b (implicit)", "b->c (implicit)", "c->END (implicit)"}},
		{"linear default around a loop", `a = step("a")
l = loop("l", body = [step("x"), step("y")], until = lambda it: True, max_iterations = 2)
b = step("b")
`, []string{"START->a (implicit)", "a->l (implicit)", "l->b (implicit)", "b->END (implicit)", "x->y (implicit)"}},
		{"entry only", `a, b = step("a"), step("b")
edge(b, END)
edge(a, b)
`, []string{"b->END", "a->b", "START->a (implicit)"}},
		{"entry given", `a, b = step("a"), step("b")
chain(START, b, END)
`, []string{"START->b", "b->END"}},
		// A router's routes are edges: the flow is not linear by default.
		{"router only", `a = step("a")
r = router("r", cases = [("True", END)])
`, []string{"r->END", "START->a (implicit)"}},
		{"body with its own edges", `x, y, z = step("x"), step("y"), step("z")
m = map("m", over = "inputs.xs", body = [x, y, z])
edge(x, z)
edge(z, y)
chain(START, m, END)
`, []string{"x->z", "z->y", "START->m", "m->END"}},
		{"body chain", `x, y = step("x"), step("y")
m = map("m", over = "inputs.xs", body = [y, x])
chain(START, m, END)
`, []string{"START->m", "m->END", "y->x (implicit)"}},
		{"empty", ``, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := load(t, tc.src)
			if diff := cmp.Diff(tc.want, edges(g)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
			// In and Out agree with the edge list.
			for _, e := range g.Edges {
				if !contains(g.Nodes[e.From].Out, e.ID) || !contains(g.Nodes[e.To].In, e.ID) {
					t.Errorf("edge %d missing from In/Out", e.ID)
				}
			}
		})
	}
}

func contains(ids []graphir.EdgeID, id graphir.EdgeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Freeze copies: later additions to the builder (the REPL goes on
// recording) do not change a graph already frozen.
func TestFreezeIsASnapshot(t *testing.T) {
	b := graphir.NewBuilder("repl.star", ".")
	a := b.AddStep(&graphir.Node{Name: "a", Kind: graphir.KindNoop})
	g1 := b.Freeze()
	c := b.AddStep(&graphir.Node{Name: "c", Kind: graphir.KindNoop})
	b.AddEdge(&graphir.Edge{From: graphir.Start, To: c})
	b.AddEdge(&graphir.Edge{From: c, To: a})
	g2 := b.Freeze()
	if diff := cmp.Diff([]string{"a"}, g1.StepNames()); diff != "" {
		t.Errorf("first graph steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"START->a (implicit)", "a->END (implicit)"}, edges(g1)); diff != "" {
		t.Errorf("first graph edges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"START->c", "c->a"}, edges(g2)); diff != "" {
		t.Errorf("second graph edges (-want +got):\n%s", diff)
	}
	if len(b.Node(a).Out) != 0 {
		t.Error("Freeze changed the builder's nodes")
	}
	if g1.Name != "repl" || g1.Node("c") != nil || g2.Node("c") == nil {
		t.Error("names")
	}
}

func TestGraphAccessors(t *testing.T) {
	g := load(t, `flow(max_visits = 4)
a = step("a", max_visits = 2)
b = step("b")
a2 = step("a")
l = loop("l", body = [step("x")], until = lambda it: True, max_iterations = 2)
chain(START, a, b, l, END)
edge(a, l)
`)
	if n := g.Node("a"); n == nil || n.ID != a(g, 3) {
		t.Errorf("Node(a) is not the first a")
	}
	if g.VisitBound(g.Node("a")) != 2 || g.VisitBound(g.Node("b")) != 4 {
		t.Error("VisitBound")
	}
	// x is declared (inside the call's arguments) before l.
	if diff := cmp.Diff([]string{"a", "b", "a", "x", "l"}, g.StepNames()); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	var fwd []string
	for _, e := range g.ForwardIn(g.Node("l")) {
		fwd = append(fwd, g.Nodes[e.From].Name)
	}
	if diff := cmp.Diff([]string{"b", "a"}, fwd); diff != "" {
		t.Errorf("forward in (-want +got):\n%s", diff)
	}
	if top := g.Scope(graphir.None); len(top) != 4 {
		t.Errorf("top scope %v", top)
	}
	for _, n := range g.Steps() {
		if !n.IsStep() || n.Kind.IsSentinel() {
			t.Errorf("%s is not a step", n.Name)
		}
	}
	if g.Nodes[graphir.End].IsStep() || !g.Node("l").HasBody() || !graphir.KindTask.IsProcess() || graphir.KindFn.IsProcess() {
		t.Error("kinds")
	}
	if !graphir.OnAlways.Matches(false) || !graphir.OnFailure.Matches(false) || graphir.OnSuccess.Matches(false) {
		t.Error("On.Matches")
	}
}

func a(g *graphir.Graph, id graphir.NodeID) graphir.NodeID { return g.Nodes[id].ID }

// The renderings show what docs/cli.md promises: conditions on edges,
// failure edges, back-edges, routers and bodies.
func TestRenderings(t *testing.T) {
	g := load(t, `build, fix = step("build", run = ["make"], max_visits = 3), step("fix")
r = router("r", by = "build.stdout", routes = {"ok": END}, default = ABORT)
body = step("body")
l = loop("l", body = [body], until = lambda it: True, max_iterations = 2)
edge(START, build)
edge(build, fix, on = "failure")
edge(fix, build, when = "fix.ok")
edge(build, l)
edge(l, r)
`)
	dot := g.DOT()
	for _, want := range []string{
		`"build" -> "fix" [label="on failure", style=dashed, color=red];`,
		`"fix" -> "build" [label="fix.ok", color=blue, penwidth=2, constraint=false];`,
		`"r" [label="r\n(router)", shape=diamond];`,
		`"r" -> "END" [label="\"ok\""];`,
		`"r" -> "ABORT" [label="default"];`,
		`subgraph "cluster_l" {`,
		`label="loop l (max 2)";`,
		`"build" [label="build\n(task, max 3)"];`,
		`"ABORT" [shape=octagon, label="ABORT"];`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %s:\n%s", want, dot)
		}
	}
	mmd := g.Mermaid()
	for _, want := range []string{
		`s_build -.->|"on failure"| s_fix`,
		`s_fix ==>|"fix.ok"| s_build`,
		`s_r{"r · router"}`,
		`subgraph s_l_body["loop l (max 2)"]`,
		`s_r -->|"#quot;ok#quot;"| END`,
		`linkStyle 2 stroke:#d33`,
	} {
		if !strings.Contains(mmd, want) {
			t.Errorf("Mermaid lacks %s:\n%s", want, mmd)
		}
	}
	// Labels stay on one line and entity codes stay literal.
	g = load(t, `a = step("a")
b = step("b")
edge(START, a)
edge(a, b, when = """(a.n > 1 and
    a["#x;"])""")
`)
	if mmd := g.Mermaid(); !strings.Contains(mmd, `s_a -->|"(a.n #gt; 1 and     a[#quot;#35;x;#quot;])"| s_b`+"\n") {
		t.Errorf("Mermaid label:\n%s", mmd)
	}
	if dot := g.DOT(); !strings.Contains(dot, `"a" -> "b" [label="(a.n > 1 and\n    a[\"#x;\"])"];`) {
		t.Errorf("DOT label:\n%s", dot)
	}

	// A wrong flow still renders what is wrong: names that are not
	// identifiers, duplicates and sentinel names stay apart.
	g = load(t, `step("Bad Name \"q\" <x>")
step("dup")
step("dup")
step("END")
`)
	dot = g.DOT()
	for _, want := range []string{
		`"Bad Name \"q\" <x>" -> "dup";`,
		`"dup" -> "dup#5";`,
		`"dup#5" -> "END#6";`,
		`"END#6" -> "END";`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %s:\n%s", want, dot)
		}
	}
	want := `flowchart TD
  START((START))
  END((END))
  s3(("Bad Name #quot;q#quot; #lt;x#gt; · noop"))
  s_dup(("dup · noop"))
  s5(("dup · noop"))
  s6(("END · noop"))
  START --> s3
  s3 --> s_dup
  s_dup --> s5
  s5 --> s6
  s6 --> END
`
	if diff := cmp.Diff(want, g.Mermaid()); diff != "" {
		t.Errorf("Mermaid (-want +got):\n%s", diff)
	}
}

// TestGolden renders every example in JSON, DOT and Mermaid and compares
// with testdata/golden. UPDATE=1 rewrites the goldens.
func TestGolden(t *testing.T) {
	golden, err := filepath.Abs("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	// Load from the repository root so that the paths in the goldens are
	// "examples/x.star" on every machine.
	t.Chdir("..")
	all, _ := filepath.Glob("examples/*.star")
	more, _ := filepath.Glob("examples/*/*.star")
	var files []string
	for _, f := range append(all, more...) {
		if !strings.HasSuffix(f, "_test.star") { // flow tests, not flows
			files = append(files, f)
		}
	}
	if len(files) < 8 {
		t.Fatalf("found only %d examples", len(files))
	}
	update := os.Getenv("UPDATE") == "1"
	if update {
		if err := os.MkdirAll(golden, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range files {
		name := strings.TrimSuffix(strings.ReplaceAll(strings.TrimPrefix(file, "examples/"), "/", "_"), ".star")
		t.Run(name, func(t *testing.T) {
			g, err := lang.Load(file, lang.Options{})
			if err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			for ext, got := range map[string]string{"json": string(js) + "\n", "dot": g.DOT(), "mmd": g.Mermaid()} {
				path := filepath.Join(golden, name+"."+ext)
				if update {
					if err := os.WriteFile(path, []byte(got), 0o666); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with UPDATE=1 to create it)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("%s (-want +got; UPDATE=1 rewrites):\n%s", filepath.Base(path), diff)
				}
			}
		})
	}
}

// The JSON shape of docs/cli.md.
func TestJSONShape(t *testing.T) {
	g := load(t, `flow(name = "j", inputs = {"n": 1, "need": None}, output = "b", timeout = "90s")
a = step("a", run = ["echo", "{{ inputs.n }}"], retries = 2, backoff = "2s", timeout = "1m")
b = step("b", fn = lambda r: 1)
edge(START, a)
edge(a, b, when = "a.exit_code == 0")
edge(b, END)
`)
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	nodes := got["nodes"].([]any)
	edges := got["edges"].([]any)
	want := map[string]any{
		"name": "j", "file": "flow.star", "output": "b", "timeout": "1m30s",
		"inputs": map[string]any{"n": map[string]any{"default": 1.0, "type": "int"}, "need": map[string]any{"required": true, "type": "any"}},
		"nodes":  nodes, "edges": edges,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("graph (-want +got):\n%s", diff)
	}
	wantA := map[string]any{"id": "a", "kind": "task", "file": "flow.star", "line": 2.0, "col": 5.0,
		"run": []any{"echo", "{{ inputs.n }}"}, "retries": 2.0, "backoff": "2s", "timeout": "1m"}
	if diff := cmp.Diff(wantA, nodes[2]); diff != "" {
		t.Errorf("node a (-want +got):\n%s", diff)
	}
	wantE := map[string]any{"from": "a", "to": "b", "on": "success", "when": "a.exit_code == 0", "back": false}
	if diff := cmp.Diff(wantE, edges[1]); diff != "" {
		t.Errorf("edge (-want +got):\n%s", diff)
	}
	// ABORT is left out: nothing leads to it.
	if fmt.Sprint(nodes[0].(map[string]any)["id"], "-", nodes[1].(map[string]any)["id"]) != "START-END" || len(nodes) != 4 {
		t.Errorf("sentinels: %v", nodes)
	}
}

// A snapshot owns its nodes' per-kind parts: the REPL's builder goes on
// resolving until= names and retargeting routes in its own.
func TestFreezeSnapshotOwnsParts(t *testing.T) {
	b := graphir.NewBuilder("repl.star", ".")
	x := b.AddStep(&graphir.Node{Name: "x", Kind: graphir.KindNoop})
	l := b.AddStep(&graphir.Node{Name: "l", Kind: graphir.KindLoop, Loop: &graphir.Loop{UntilName: "done", MaxIterations: 2}})
	if err := b.SetBody(l, []graphir.NodeID{x}); err != nil {
		t.Fatal(err)
	}
	r := b.AddStep(&graphir.Node{Name: "r", Kind: graphir.KindRouter,
		Router: &graphir.Router{Cases: []graphir.Case{{Target: graphir.Target{Name: "l"}}}}})
	b.AddEdge(&graphir.Edge{From: graphir.Start, To: r})
	g1 := b.Freeze()
	b.Node(l).Loop.UntilName = "other"
	b.Node(r).Router.Cases[0].Target.Name = "x"
	if got := g1.Node("l").Loop.UntilName; got != "done" {
		t.Errorf("snapshot's until name changed with the builder's: %q", got)
	}
	if got := g1.Node("r").Router.Cases[0].Target; got.Name != "l" || got.ID != l {
		t.Errorf("snapshot's case target changed with the builder's: %+v", got)
	}
}

// Each per-kind part is there exactly for its kinds, in every example.
func TestPartsMatchKinds(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.star")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, file := range files {
		g, err := lang.Load(file, lang.Options{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		g.EachStep(func(n *graphir.Node) {
			model := n.Kind == graphir.KindLLM || n.Kind == graphir.KindAgent
			for _, c := range []struct {
				part      string
				has, want bool
			}{
				{"Subflow", n.Subflow != nil, n.Kind == graphir.KindSubflow},
				{"Router", n.Router != nil, n.Kind == graphir.KindRouter},
				{"Loop", n.Loop != nil, n.Kind == graphir.KindLoop},
				{"Map", n.Map != nil, n.Kind == graphir.KindMap},
				{"Call", n.Call != nil, model || (n.Kind == graphir.KindRouter && n.Call != nil)},
			} {
				if c.has != c.want {
					t.Errorf("%s: %s step %q: has %s part: %v", n.Pos, n.Kind, n.Name, c.part, c.has)
				}
			}
		})
	}
}

// What a drawing tells apart: approvals, noops, retries, timeouts, join
// kinds and the exit handler, hung from END; and the steps a checker
// marks, drawn red with their code.
func TestRenderingsDistinct(t *testing.T) {
	g := load(t, `flow(on_exit = "cleanup")
build = step("build", run = ["make"], retries = 2, timeout = "10m")
gate = step("gate", approve = "Ship?")
j = step("j", join = "or")
cleanup = step("cleanup", run = ["echo"])
edge(START, build)
edge(build, gate)
edge(build, j, on = "failure")
edge(gate, j)
edge(j, END)
`)
	marks := map[string]graphir.Mark{"gate": {Code: "some_code", Message: "what is wrong"}}
	dot := g.DOTMarked(marks)
	for _, want := range []string{
		`"build" [label="build\n(task, retries 2, timeout 10m)"];`,
		`"gate" [label="gate\n(approval)\n✗ some_code", shape=hexagon, color=red, fontcolor=red, penwidth=2, tooltip="what is wrong"];`,
		`"j" [label="j\n(noop, join or)", shape=circle, style=dashed`,
		`"cleanup" [label="cleanup\n(task, on exit)", style="rounded,dotted"];`,
		`"END" -> "cleanup" [style=dotted, label="on exit"];`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %s:\n%s", want, dot)
		}
	}
	if strings.Contains(g.DOT(), "✗") {
		t.Errorf("DOT without marks marks a step:\n%s", g.DOT())
	}
	mmd := g.MermaidMarked(marks)
	for _, want := range []string{
		`s_gate{{"gate · approval ✗ some_code"}}`,
		`s_j(("j · noop, join or"))`,
		`END -.->|"on exit"| s_cleanup`,
		`style s_gate stroke:#d33`,
	} {
		if !strings.Contains(mmd, want) {
			t.Errorf("Mermaid lacks %s:\n%s", want, mmd)
		}
	}
}

// TestNodeSize keeps a node within Go's 384-byte size class: a generated
// million-step flow holds a million of them, and the next class is 416
// bytes (32 MB more for such a flow, which `make bench-cli` loads within
// 1 GB). A field that pushes it over belongs in one of the parts held by
// pointer (Subflow, Call, Router, Loop, Map) or with the small fields at
// the top.
func TestNodeSize(t *testing.T) {
	if size := unsafe.Sizeof(graphir.Node{}); size > 384 {
		t.Errorf("a Node is %d bytes, over Go's 384-byte size class", size)
	}
}
