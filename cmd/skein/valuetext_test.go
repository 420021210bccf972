package main

import (
	"runtime"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

func TestValueTextBounded(t *testing.T) {
	// The output line shows 300 runes of an output of any length: only
	// those are decoded (four bytes a rune of 8 MB was 32 MB).
	big := starlark.String(strings.Repeat("\x01", 8<<20) + "\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := valueText(big, 300)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Errorf("valueText of an 8 MiB string allocated %d bytes, want at most 64 KiB", alloc)
	}
	if want := strings.Repeat("\x01", 299) + "…"; s != want {
		t.Errorf("valueText = %q, want 299 runes and an ellipsis", s)
	}
	for _, c := range []struct {
		v    starlark.Value
		want string
	}{
		{starlark.String("short\n\n"), "short"},
		{starlark.String(strings.Repeat("é", 400)), strings.Repeat("é", 299) + "…"},
		{starlark.String(strings.Repeat("é", 300)), strings.Repeat("é", 300)},
		{starlark.String("a" + strings.Repeat("\n", 5000) + "b"), "a" + strings.Repeat("\n", 298) + "…"},
		{starlark.NewList([]starlark.Value{starlark.MakeInt(1), starlark.String("<")}), `[1,"\u003c"]`},
	} {
		if got := valueText(c.v, 300); got != c.want {
			t.Errorf("valueText(%.40s) = %.60q, want %.60q", c.v, got, c.want)
		}
	}
}
