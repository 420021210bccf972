package runs

import (
	"testing"

	"github.com/skeinlang/skein/vm/store"
)

func TestGC(t *testing.T) {
	s, g, _ := setup(t, "f.star", `
flow(name = "f")
a = step("a", shell = "echo one")
chain(START, a, END)
`)
	for range 2 {
		r, err := s.Start(bind(t, g))
		if err != nil {
			t.Fatal(err)
		}
		run(t, r)
	}
	c, err := s.GC(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Runs != 1 || c.Before <= 0 || c.After <= 0 {
		t.Errorf("GC keeping 1 of 2 runs: %+v, want 1 run deleted and the sizes", c)
	}
	if list, err := s.List(store.Filter{}); err != nil || len(list) != 1 {
		t.Errorf("after GC: %d runs (%v), want 1", len(list), err)
	}
}
