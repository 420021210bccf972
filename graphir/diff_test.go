package graphir_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

func loadDiffFlow(t *testing.T, src string) *graphir.Graph {
	t.Helper()
	g, err := lang.LoadSource("flows/build.star", []byte(src), lang.Options{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return g
}

func TestDiff(t *testing.T) {
	base := `
flow(name = "build", inputs = {"target": "all"})
fetch = step("fetch", run = ["git", "pull"])
build = step("build", run = ["make", "{{ inputs.target }}"])
test = step("test", run = ["make", "test"], retries = 1)
chain(START, fetch, build, test, END)
edge(build, ABORT, on = "failure")
`
	cases := []struct {
		name, src, want string
	}{
		{"unchanged", base, ""},
		{"moved lines and comments", `
# the same flow, written differently
flow(name = "build", inputs = {"target": "all"})

test = step("test", run = ["make", "test"], retries = 1)
build = step("build", run = ["make", "{{ inputs.target }}"])
fetch = step("fetch", run = ["git", "pull"])
chain(START, fetch, build, test, END)
edge(build, ABORT, on = "failure")
`, ""},
		{"step added", `
flow(name = "build", inputs = {"target": "all"})
fetch = step("fetch", run = ["git", "pull"])
build = step("build", run = ["make", "{{ inputs.target }}"])
lint = step("lint", run = ["make", "lint"])
test = step("test", run = ["make", "test"], retries = 1)
chain(START, fetch, build, lint, test, END)
edge(build, ABORT, on = "failure")
`, `  + step "lint" (task) at flows/build.star:5:8
  - edge build -> test
  + edge build -> lint
  + edge lint -> test
`},
		{"step removed and changed", `
flow(name = "build", inputs = {"target": "all", "jobs": 4})
build = step("build", run = ["make", "-j", "{{ inputs.jobs }}"])
test = step("test", shell = "make test", retries = 2)
chain(START, build, test, END)
edge(build, ABORT, on = "always", when = "build.exit_code > 1")
`, `  ~ flow: inputs {"target":{"type":"string","default":"all"}} → {"jobs":{"type":"int","default":4},"target":{"type":"string","default":"all"}}
  - step "fetch" (task)
  ~ step "build": run ["make","{{ inputs.target }}"] → ["make","-j","{{ inputs.jobs }}"]
  ~ step "test": kind "task" → "shell"; run ["make","test"] → (none); shell (none) → "make test"; retries 1 → 2
  - edge START -> fetch
  - edge fetch -> build
  + edge START -> build
  ~ edge build -> ABORT: on "failure" → "always"; when (none) → "build.exit_code > 1"
`},
	}
	old := loadDiffFlow(t, base)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := graphir.Diff(old, loadDiffFlow(t, c.src))
			if diff := cmp.Diff(c.want, d.String()); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
			if d.Empty() != (c.want == "") {
				t.Errorf("Empty() = %v", d.Empty())
			}
		})
	}
}

func TestDiffImplicitAndRouters(t *testing.T) {
	old := loadDiffFlow(t, `
a = step("a")
b = step("b")
`)
	linear := loadDiffFlow(t, `
a = step("a")
b = step("b")
c = step("c")
`)
	want := `  + step "c" (noop) at flows/build.star:4:5
  - edge b -> END (implicit)
  + edge b -> c (implicit)
  + edge c -> END (implicit)
`
	if diff := cmp.Diff(want, graphir.Diff(old, linear).String()); diff != "" {
		t.Errorf("implicit edges (-want +got):\n%s", diff)
	}

	r1 := loadDiffFlow(t, `
fix = step("fix")
ship = step("ship")
r = router("r", by = "'a'", routes = {"broken": fix}, default = ship)
chain(START, r)
chain(fix, END)
chain(ship, END)
`)
	r2 := loadDiffFlow(t, `
fix = step("fix")
ship = step("ship")
r = router("r", by = "'a'", routes = {"broken": fix, "ok": ship}, default = fix)
chain(START, r)
chain(fix, END)
chain(ship, END)
`)
	got := graphir.Diff(r1, r2).String()
	for _, want := range []string{
		`~ step "r": routes {"broken":"fix"} → {"broken":"fix","ok":"ship"}; default "ship" → "fix"`,
		"- edge r -> ship [default]",
		"+ edge r -> ship [ok]",
		"+ edge r -> fix [default]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("router diff lacks %q:\n%s", want, got)
		}
	}
}

func TestDiffLoopBody(t *testing.T) {
	old := loadDiffFlow(t, `
a = step("a")
b = step("b")
l = loop("l", body = [a], until = "done", max_iterations = 3)
def done(it):
    return True
`)
	new := loadDiffFlow(t, `
a = step("a")
b = step("b")
l = loop("l", body = [a, b], until = "done", max_iterations = 5)
def done(it):
    return True
`)
	got := graphir.Diff(old, new).String()
	for _, want := range []string{
		`~ step "b": parent (none) → "l"`,
		`~ step "l": body ["a"] → ["a","b"]; max_iterations 3 → 5`,
		"+ edge a -> b (implicit)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("loop diff lacks %q:\n%s", want, got)
		}
	}
}
