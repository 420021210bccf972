package graphir_test

import (
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/skeinlang/skein/graphir"
)

// TestRevealExpr: reveal(x) in an expression is x, is not a name of the
// run view, and marks the names read inside it.
func TestRevealExpr(t *testing.T) {
	c := graphir.NewCompiler()
	x := c.Expr(`reveal(inputs.token)[:2] + inputs.user`, graphir.Pos{File: "f.star", Line: 1, Col: 1}, true)
	if x.Err != nil {
		t.Fatal(x.Err)
	}
	if len(x.Refs) != 2 || !x.Refs[0].Revealed || x.Refs[1].Revealed || x.Refs[0].Attr != "token" {
		t.Fatalf("refs %+v", x.Refs)
	}
	inputs := starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"token": starlark.String("s3cret"), "user": starlark.String("ann"),
	})
	view := starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{"inputs": inputs})
	v, err := starlark.Call(&starlark.Thread{}, x.Func, starlark.Tuple{view}, nil)
	if err != nil || v != starlark.String("s3ann") {
		t.Errorf("got %v, %v", v, err)
	}
}

// TestSecretTemplate: a secret() template is not literal, names its
// source, and never holds a value.
func TestSecretTemplate(t *testing.T) {
	s := &graphir.Secret{Name: "k", File: "keys/k", Pos: graphir.Pos{File: "f.star", Line: 2, Col: 3}}
	tm := graphir.SecretTemplate(s, true)
	if tm.IsLiteral() || tm.Src != `reveal(secret("k", file = "keys/k"))` || tm.Pos != s.Pos {
		t.Errorf("template %+v", tm)
	}
	if got := tm.Secrets(); len(got) != 1 || got[0] != s || !tm.Parts[0].Reveal {
		t.Errorf("secrets %v", got)
	}
	if s.Key() != "file:keys/k" || (&graphir.Secret{Name: "K"}).Key() != "env:K" {
		t.Errorf("keys %q", s.Key())
	}
}
