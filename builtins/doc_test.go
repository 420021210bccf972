package builtins

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/stdlib"
)

// TestDocsCoverEveryBuiltin keeps the doc table true: every predeclared
// builtin of Skein's own (not a Starlark builtin it only bounds) has a doc,
// and every parameter a builtin unpacks is documented, in order.
func TestDocsCoverEveryBuiltin(t *testing.T) {
	for name, v := range Predeclared() {
		if _, ok := v.(*starlark.Builtin); !ok {
			continue
		}
		d := DocOf(name)
		if _, universal := starlark.Universe[name]; universal && d == nil {
			continue // a Starlark builtin Skein only bounds (str, print, ...)
		}
		if stdlib.IsCheckedOp(name) {
			continue // what the loader rewrites x * n into, never written
		}
		if d == nil {
			t.Errorf("builtin %s has no entry in the doc table (builtins/doc.go)", name)
			continue
		}
		if d.Summary == "" {
			t.Errorf("%s: no summary", name)
		}
		params, ok := builtinParams[name]
		if !ok {
			if len(d.Params) > 0 {
				t.Errorf("%s: documented parameters but builtinParams has no list for it", name)
			}
			continue
		}
		var names []string
		for _, p := range d.Params {
			names = append(names, p.Name)
			if p.Doc == "" {
				t.Errorf("%s(%s): no doc", name, p.Name)
			}
		}
		var want []string
		for _, p := range params {
			want = append(want, strings.TrimSuffix(p, "?"))
		}
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("%s: documented parameters %v, the builtin takes %v (update builtins/doc.go)", name, names, want)
		}
	}
	if DocOf("nope") != nil {
		t.Error("DocOf(nope) is not nil")
	}
}

func TestSignature(t *testing.T) {
	for name, want := range map[string]string{
		"edge":  `edge(src, dst, *, when=None, on="success")`,
		"chain": `chain(*steps)`,
	} {
		if got := DocOf(name).Signature(); got != want {
			t.Errorf("%s: got %s, want %s", name, got, want)
		}
	}
	if p := DocOf("step").Param("retries"); p == nil || p.Default != "0" {
		t.Errorf("step retries: %+v", p)
	}
}
