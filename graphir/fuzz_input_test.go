package graphir_test

import (
	"testing"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
)

// FuzzInputValue: any --input text, for an input of any type, parses to
// flow data or is an error naming the input; never a crash.
func FuzzInputValue(f *testing.F) {
	for _, s := range []string{"42", "-1.5e3", "true", `["a", 1]`, `{"k": {"j": null}}`, "plain text", "  7 ", "1e999", "NaN", "[" + "[" + "]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, typ := range graphir.InputTypes {
			in := &graphir.Input{Name: "x", Type: typ}
			v, err := in.Parse(text)
			if err != nil {
				continue
			}
			if _, err := stdlib.Data(v); err != nil {
				t.Fatalf("type %s: %q parsed to %s, which is not flow data: %v", typ, text, v, err)
			}
		}
	})
}
