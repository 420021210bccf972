package vm_test

import (
	"sync"
	"testing"

	"github.com/skeinlang/skein/vm"
)

// startsAfterFinishes runs src with events and returns, for each step
// start that directly follows a step finish, whether the two carry the
// same time; it fails t if a start is earlier than the finish before it.
func startsAfterFinishes(t *testing.T, src string) (same, all int) {
	t.Helper()
	var mu sync.Mutex
	var evs []vm.Event
	res := run(t, src, nil, vm.Options{Parallel: 1, OnEvent: func(ev *vm.Event) {
		mu.Lock()
		evs = append(evs, *ev)
		mu.Unlock()
	}})
	check(t, res, want{status: vm.Succeeded})
	for i := 1; i < len(evs); i++ {
		prev, ev := evs[i-1], evs[i]
		if prev.Type != vm.StepFinished || ev.Type != vm.StepStarted {
			continue
		}
		all++
		if ev.Time.Before(prev.Time) {
			t.Errorf("%s started at %v, before %s finished at %v", ev.Step, ev.Time, prev.Step, prev.Time)
		}
		if ev.Time.Equal(prev.Time) {
			same++
		}
	}
	return same, all
}

// A step the driver enters right after another finished, with nothing
// run in between (conditions on the fast path), starts at the instant
// the other finished: one clock read for the transition.
func TestStartReusesFinishTime(t *testing.T) {
	same, all := startsAfterFinishes(t, `flow(inputs = {"n": 5}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"))
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`)
	if all != 9 || same != all {
		t.Errorf("%d of %d starts at the time of the finish before, want 9 of 9", same, all)
	}
}

// A condition evaluated by the interpreter runs between the finish and
// the next start: that start reads the clock again, never earlier.
func TestStartAfterInterpretedCondition(t *testing.T) {
	_, all := startsAfterFinishes(t, `flow(inputs = {"n": 5}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"))
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = lambda r: r.critique < r.inputs.n)
edge(critique, END, when = lambda r: r.critique >= r.inputs.n)
`)
	if all != 9 {
		t.Errorf("%d starts after a finish, want 9", all)
	}
}
