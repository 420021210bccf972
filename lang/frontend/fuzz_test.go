package frontend

import (
	"testing"

	"github.com/skeinlang/skein/graphir"
)

// FuzzBind: whatever a command line or an inputs file gives, binding ends
// in bound inputs or a bad_input error, never a panic.
func FuzzBind(f *testing.F) {
	f.Add(`{"replicas": 3, "targets": []}`, "replicas", "3")
	f.Add(`{"replicas": "3"}`, "env", "qa")
	f.Add(`[1, 2]`, "verison", "1")
	f.Add(`{"a": 1, "a": 2}`, "targets", `{"x": [1, {"y": null}]}`)
	f.Add(`{"targets": 1e999}`, "replicas", "99999999999999999999999")
	g := LoadSource("release.star", []byte(release), Options{}).Graph
	if g == nil {
		f.Fatal("release.star does not load")
	}
	f.Fuzz(func(t *testing.T, file, name, text string) {
		var in Inputs
		if err := in.SetJSON([]byte(file)); err != nil {
			return
		}
		in.SetText(name, text)
		m, err := in.Bind(g)
		if err != nil {
			if ge := graphir.AsError(err); ge.Code != "bad_input" {
				t.Errorf("bind: %v: code %q, want bad_input", err, ge.Code)
			}
			return
		}
		if m == nil {
			t.Error("no error and no inputs")
		}
	})
}
