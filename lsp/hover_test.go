package lsp

import (
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
)

// TestInputHover: a required input with choices says so, and its help
// follows on its own paragraph.
func TestInputHover(t *testing.T) {
	in := &graphir.Input{Name: "env", Required: true, Type: "string", Help: "where to deploy",
		Choices: []starlark.Value{starlark.String("dev"), starlark.String("prod")}}
	want := "**input `env`** (string), required; one of \"dev\", \"prod\"\n\nwhere to deploy"
	if got := inputHover(in); got != want {
		t.Errorf("inputHover = %q, want %q", got, want)
	}
}
