package check_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

// genFlow turns fuzz bytes into a small flow: up to 8 steps of every kind
// with random bounds and joins, random edges (conditional, failure, always,
// to END and ABORT), and now and then a router, a loop or a map holding
// some of the steps. Running out of bytes reads zeros.
func genFlow(data []byte) string {
	next := func(n int) int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b % n
	}
	var b strings.Builder
	n := 2 + next(7)
	if next(8) == 0 {
		fmt.Fprintf(&b, "flow(max_visits = %d)\n", 1+next(3))
	}
	name := func(i int) string { return fmt.Sprintf("s%d", i) }
	anyStep := func() string {
		if next(10) == 0 {
			return "zz"
		}
		return name(next(n))
	}
	for i := 0; i < n; i++ {
		var args []string
		switch next(5) {
		case 1:
			args = append(args, fmt.Sprintf(`run = ["echo", "{{ %s.stdout }}"]`, anyStep()))
		case 2:
			args = append(args, "fn = lambda r: 1")
		case 3:
			args = append(args, `shell = "true"`)
		case 4:
			args = append(args, `run = ["true"]`)
		}
		if next(3) == 0 {
			args = append(args, fmt.Sprintf("max_visits = %d", 1+next(3)))
		}
		switch next(6) {
		case 0:
			args = append(args, `join = "or"`)
		case 1:
			args = append(args, `join = "and"`)
		}
		fmt.Fprintf(&b, "%s = step(%q", name(i), name(i))
		for _, a := range args {
			b.WriteString(", " + a)
		}
		b.WriteString(")\n")
	}
	src := func() string {
		if k := next(n + 1); k < n {
			return name(k)
		}
		return "START"
	}
	dst := func() string {
		switch k := next(n + 2); k {
		case n:
			return "END"
		case n + 1:
			return "ABORT"
		default:
			return name(k)
		}
	}
	edges := next(13)
	for i := 0; i < edges; i++ {
		from, to := src(), dst()
		fmt.Fprintf(&b, "edge(%s, %s", from, to)
		if from != "START" {
			switch next(4) {
			case 0:
				b.WriteString(`, on = "failure"`)
			case 1:
				b.WriteString(`, on = "always"`)
			}
		}
		if next(3) == 0 {
			fmt.Fprintf(&b, `, when = "%s.ok"`, anyStep())
		}
		b.WriteString(")\n")
	}
	if next(4) == 0 {
		fmt.Fprintf(&b, "rt = router(\"rt\", cases = [(\"%s == 1\", %s)]", anyStep(), dst())
		if next(2) == 0 {
			fmt.Fprintf(&b, ", default = %s", dst())
		}
		b.WriteString(")\n")
		fmt.Fprintf(&b, "edge(%s, rt)\n", src())
	}
	if k := next(6); k < 2 && n > 2 {
		// A loop or map over the last one or two steps.
		body := name(n - 1)
		if next(2) == 0 {
			body = name(n-2) + ", " + name(n-1)
		}
		if k == 0 {
			fmt.Fprintf(&b, "l = loop(\"l\", body = [%s], until = lambda it: True, max_iterations = 2)\n", body)
		} else {
			fmt.Fprintf(&b, "l = map(\"l\", over = \"[1]\", body = [%s])\n", body)
		}
		fmt.Fprintf(&b, "edge(%s, l)\nedge(l, %s)\n", src(), dst())
	}
	return b.String()
}

// FuzzCheck checks random flows: the checker never panics, and its
// loop_unbounded diagnostics agree with a brute-force search for cycles
// without a visit bound.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 0, 1, 1, 0, 2, 2, 0, 1, 2, 0, 5, 1, 2, 0, 3, 1, 0, 9})
	f.Add([]byte("draft critique revise loop"))
	f.Add([]byte{6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0, 0, 1})
	f.Add([]byte{7, 1, 1, 2, 1, 2, 0, 3, 2, 5, 4, 1, 12, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		src := genFlow(data)
		g, err := lang.LoadSource("fuzz/flow.star", []byte(src), lang.Options{MaxSteps: 100_000,
			ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist }})
		if err != nil {
			return // builtins refuse some shapes (a step in two bodies, ...)
		}
		ds := check.Graph(g)
		agreeOnCycles(t, src, g, ds)
	})
}

// agreeOnCycles compares the loop_unbounded diagnostics with the cycles a
// brute-force search finds among steps without a visit bound, scope by
// scope: each diagnostic must show a real cycle of such steps, and each
// group of them that holds a cycle must be reported exactly once.
func agreeOnCycles(t *testing.T, src string, g *graphir.Graph, ds []check.Diagnostic) {
	t.Helper()
	n := len(g.Nodes)
	bounded := func(id graphir.NodeID) bool { return g.VisitBound(g.Nodes[id]) > 0 }
	// reach[u][v]: a path of at least one edge from u to v through steps
	// of one scope without a bound.
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
	}
	edge := func(u, v graphir.NodeID) bool {
		for _, eid := range g.Nodes[u].Out {
			if g.Edges[eid].To == v {
				return true
			}
		}
		return false
	}
	free := func(id graphir.NodeID) bool { return g.Nodes[id].IsStep() && !bounded(id) }
	for _, e := range g.Edges {
		if free(e.From) && free(e.To) && g.Nodes[e.From].Parent == g.Nodes[e.To].Parent {
			reach[e.From][e.To] = true
		}
	}
	for k := 0; k < n; k++ {
		for i := 0; i < n; i++ {
			if !reach[i][k] {
				continue
			}
			for j := 0; j < n; j++ {
				if reach[k][j] {
					reach[i][j] = true
				}
			}
		}
	}
	// Groups of mutually reachable steps that hold a cycle, by their
	// smallest member.
	group := make([]int, n)
	want := map[int]bool{}
	for i := 0; i < n; i++ {
		group[i] = -1
		if !reach[i][i] {
			continue
		}
		for j := 0; j <= i; j++ {
			if reach[i][j] && reach[j][i] {
				group[i] = j
				break
			}
		}
		want[group[i]] = true
	}

	got := map[int]bool{}
	for _, d := range ds {
		if d.Code != "loop_unbounded" {
			continue
		}
		inner, ok := strings.CutPrefix(d.Message, "cycle ")
		if ok {
			inner, ok = strings.CutSuffix(inner, " has no visit bound")
		}
		if !ok {
			t.Fatalf("unexpected message %q\n%s", d.Message, src)
		}
		names := strings.Split(inner, " -> ")
		if len(names) < 2 || names[0] != names[len(names)-1] {
			t.Fatalf("not a cycle: %q\n%s", d.Message, src)
		}
		var ids []graphir.NodeID
		for _, name := range names {
			nd := g.Node(name)
			if nd == nil || !free(nd.ID) {
				t.Fatalf("%q: %s is not a step without a bound\n%s", d.Message, name, src)
			}
			ids = append(ids, nd.ID)
		}
		for i := 1; i < len(ids); i++ {
			if !edge(ids[i-1], ids[i]) || g.Nodes[ids[i-1]].Parent != g.Nodes[ids[i]].Parent {
				t.Fatalf("%q: no edge %s -> %s in one scope\n%s", d.Message, names[i-1], names[i], src)
			}
		}
		gr := group[ids[0]]
		if gr < 0 || got[gr] {
			t.Fatalf("%q reports a cycle already reported or not found by brute force\n%s", d.Message, src)
		}
		got[gr] = true
	}
	for gr := range want {
		if !got[gr] {
			t.Fatalf("brute force finds an unbounded cycle through %s, the checker reports none\n%s", g.Nodes[gr].Name, src)
		}
	}
}
