package vm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
)

// Which conditions take the fast path: a comparison of names, attributes
// of names and literals, or such a name or attribute alone or negated;
// nothing else.
func TestFastForms(t *testing.T) {
	c := graphir.NewCompiler()
	for src, want := range map[string]bool{
		`critique < inputs.n`:       true,
		`(a.verdict == "ok")`:       true,
		`loop.iteration >= 3`:       true,
		`a != None`:                 true,
		`a == True`:                 true,
		`a.score > 0.5`:             true,
		`3 <= a`:                    true,
		`a < 100000000000000000000`: true,
		`a.b.c < 3`:                 false, // two attributes
		`len(a) < 3`:                false,
		`a < 3 and b > 2`:           false,
		`a in ["x"]`:                false,
		`a + 1 < 3`:                 false,
		`a`:                         true,
		`not a`:                     true,
		`not a.ok`:                  true,
		`(not (a.ok))`:              true,
		`not a < 3`:                 false, // a comparison negated
		`not not a`:                 false,
		`True`:                      false,
		`not False`:                 false,
		`json`:                      false,
		`not a.b.c`:                 false,
		`a < -1`:                    false, // a unary minus
		`a["k"] == 1`:               false,
		`visits("a") < 3`:           false,
		`a < b"x"`:                  false,
		`json.encode(a) == "1"`:     false,
		`a.ok == inputs.flag`:       true,
		`inputs.n == inputs.m`:      true,
		`x < `:                      false, // a syntax error
		`critique < inputs.n < 3`:   false,
		`"a" < "b"`:                 true,
		`a.ok == json`:              false, // a module, not a name of the view
	} {
		x := c.Expr(src, graphir.Pos{}, false)
		if got := vm.HasFastForm(x); got != want {
			t.Errorf("%s: fast form %v, want %v", src, got, want)
		}
	}
}

// A condition gives the same run on the fast path as in the interpreter:
// the same branches, the same output, the same error where it fails.
func TestFastCondsAgreeWithTheInterpreter(t *testing.T) {
	cases := []struct {
		name, conds string
		inputs      map[string]starlark.Value
	}{
		{"int", `"a < inputs.n"`, map[string]starlark.Value{"n": starlark.MakeInt(3)}},
		{"int false", `"a >= inputs.n"`, map[string]starlark.Value{"n": starlark.MakeInt(3)}},
		{"string", `"b.verdict == \"ok\""`, nil},
		{"string ordered", `"b.verdict < \"ol\""`, nil},
		{"float", `"b.score > 0.25"`, nil},
		{"int and float", `"a <= b.score"`, nil},
		{"big int", `"a < 100000000000000000000"`, nil},
		{"bool", `"b.flag == True"`, nil},
		{"none", `"b.nothing != None"`, nil},
		{"int < string", `"a < b.verdict"`, nil},                                                        // a type error, from the interpreter
		{"no such attribute", `"b.missing == 1"`, nil},                                                  // an error with a did-you-mean
		{"attribute of an int", `"a.x == 1"`, nil},                                                      // int has no attributes
		{"list compared", `"b.items == inputs.n"`, map[string]starlark.Value{"n": starlark.MakeInt(1)}}, // not a scalar
		{"step not run", `"skipped == 1"`, nil},                                                         // dependency_unmet
		{"unknown input", `"inputs.nope == 1"`, nil},
		{"visits", `"visits == 1"`, nil},
		{"bool alone", `"b.flag"`, nil},
		{"bool negated", `"not b.flag"`, nil},
		{"float alone", `"b.score"`, nil},          // not a bool: the interpreter's error
		{"string negated", `"not b.verdict"`, nil}, // not a bool: the interpreter's False
		{"step alone", `"a"`, nil},
		{"missing alone", `"not b.missing"`, nil},
		{"not run alone", `"skipped"`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`
flow(inputs = {"n": 2})
a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: {"verdict": "ok", "score": 0.5, "flag": True, "nothing": None, "items": [1]})
skipped = step("skipped", fn = lambda r: 1)
yes = step("yes", fn = lambda r: "yes")
no = step("no", fn = lambda r: "no")
chain(START, a, b)
edge(b, yes, when = %[1]s)
edge(b, no, when = "not (" + %[1]s + ")")
edge(START, skipped, when = "False")
edge(yes, END)
edge(no, END)
edge(skipped, END)
`, tc.conds)
			g, err := lang.LoadSource(t.TempDir()+"/flow.star", []byte(src), lang.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := vm.Prepare(g)
			run := func(fast bool) string {
				defer vm.SetFastConds(fast)()
				in, err := vm.BindInputs(g, tc.inputs)
				if err != nil {
					t.Fatal(err)
				}
				res := p.Run(context.Background(), in, vm.Options{Parallel: 1})
				out := fmt.Sprintf("status %s, path %v", res.Status, res.Path)
				if res.Error != nil {
					out += fmt.Sprintf(", error %s: %s at %s", res.Error.Code, res.Error.Msg, res.Error.Pos)
				}
				for _, s := range res.Steps {
					if s.Output != nil {
						out += fmt.Sprintf(", %s=%s", s.Name, s.Output)
					}
				}
				return out
			}
			slow, fast := run(false), run(true)
			if diff := cmp.Diff(slow, fast); diff != "" {
				t.Errorf("fast path differs from the interpreter (-interpreter +fast):\n%s", diff)
			}
			t.Log(fast)
		})
	}
}
