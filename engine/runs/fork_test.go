package runs

import (
	"encoding/json"
	"testing"

	"github.com/skeinlang/skein/vm"
)

const forkFlow = `
flow(name = "fork", output = "c")
a = step("a", shell = "echo a >> log; echo a")
b = step("b", fn = lambda r: r.a.stdout.strip() + "!")
l = loop("l", body = [step("n", shell = "echo n >> log")], until = lambda it: True, max_iterations = 2)
c = step("c", env = {"B": "{{ b }}"}, shell = "echo c $B >> log; echo $B")
chain(START, a, b, l, c, END)
`

// resume --from a fn step or a loop: what runs before it is answered from
// the record, it and what runs after it run again.
func TestResumeFromAnyKind(t *testing.T) {
	s, g, dir := setup(t, "fork.star", forkFlow)
	r, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, r); res.Status != vm.Succeeded {
		t.Fatalf("got %s: %v", res.Status, res.Error)
	}
	for _, from := range []string{"b", "l"} {
		rec, err := s.Store.Get(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		again, _, err := s.Resume(&ResumeSpec{Run: rec, From: from, Options: rec.Options})
		if err != nil {
			t.Fatal(err)
		}
		if res := run(t, again); res.Status != vm.Succeeded || again.ResumedFrom != r.ID {
			t.Fatalf("--from %s: got %s (%v), resumed from %q", from, res.Status, res.Error, again.ResumedFrom)
		}
	}
	if got, want := readLog(t, dir), "a\nn\nc a!\nn\nc a!\nn\nc a!\n"; got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
}

// resume --set forks a run: a new run in which the step has the given
// output and what runs after it runs again with it; the original is
// left as it was, and a resume of the fork keeps the value.
func TestResumeSet(t *testing.T) {
	s, g, dir := setup(t, "fork.star", forkFlow)
	r, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)
	rec, err := s.Store.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	fork, _, err := s.Resume(&ResumeSpec{Run: rec, Set: map[string]json.RawMessage{"b": json.RawMessage(`"what if"`)}, Options: rec.Options})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, fork)
	if res.Status != vm.Succeeded || fork.ID == r.ID || fork.ResumedFrom != r.ID {
		t.Fatalf("got %s (%v), run %s resumed from %q", res.Status, res.Error, fork.ID, fork.ResumedFrom)
	}
	if got := res.Step("b").Output.String(); got != `"what if"` {
		t.Fatalf("b's output %s", got)
	}
	if got, want := readLog(t, dir), "a\nn\nc a!\nn\nc what if\n"; got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
	orig, err := s.Store.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(orig.Result) != string(rec.Result) {
		t.Fatal("the original run's record changed")
	}
	forked, err := s.Store.Get(fork.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(forked.Options.Set["b"]) != `"what if"` {
		t.Fatalf("the fork's options: %+v", forked.Options)
	}
	// Refused: a step the flow does not have, a router.
	if _, _, err := s.Resume(&ResumeSpec{Run: rec, Set: map[string]json.RawMessage{"bb": json.RawMessage(`1`)}}); err == nil {
		t.Fatal("--set of no step: no error")
	}
}
