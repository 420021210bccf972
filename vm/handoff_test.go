package vm_test

import (
	"slices"
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

// The driver reuses one event for its step events: each says only what
// its own step did, nothing of the event before it (a failure's error,
// code and trace, an output, a duration).
func TestStepEventsStartClean(t *testing.T) {
	var evs []vm.Event
	var mu sync.Mutex
	run(t, `a = step("a", fn = lambda r: fail("boom"))
b = step("b", fn = lambda r: 1)
c = step("c", fn = lambda r: 2)
edge(START, a)
edge(a, b, on = "failure")
edge(b, c, when = "b > 5")
edge(b, END, when = "b <= 5")
`, nil, vm.Options{Parallel: 1, OnEvent: func(ev *vm.Event) {
		mu.Lock()
		evs = append(evs, *ev)
		mu.Unlock()
	}})
	var got []string
	for _, ev := range evs {
		switch ev.Type {
		case vm.StepStarted, vm.StepPruned, vm.StepFinished:
		default:
			continue
		}
		got = append(got, string(ev.Type)+" "+ev.Step)
		clean := ev.Type != vm.StepFinished || ev.Step != "a"
		if clean && (ev.Code != "" || ev.Error != "" || ev.Trace != nil) {
			t.Errorf("%s %s: code %q, error %q, trace %q; want none", ev.Type, ev.Step, ev.Code, ev.Error, ev.Trace)
		}
		if ev.Type != vm.StepFinished && (ev.Status != "" || ev.Output != nil || ev.Duration != 0 || ev.Replayed) {
			t.Errorf("%s %s: status %q, output %v, duration %v, replayed %v; want none", ev.Type, ev.Step, ev.Status, ev.Output, ev.Duration, ev.Replayed)
		}
		if ev.Type == vm.StepPruned && ev.Visit != 0 {
			t.Errorf("step_skipped %s: visit %d, want 0", ev.Step, ev.Visit)
		}
		if ev.Type == vm.StepFinished && ev.Step == "a" && (ev.Code == "" || ev.Error == "") {
			t.Errorf("step_finished a: code %q, error %q; want the failure", ev.Code, ev.Error)
		}
	}
	want := []string{"step_started a", "step_finished a", "step_started b", "step_finished b", "step_skipped c"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
