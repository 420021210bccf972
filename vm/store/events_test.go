package store

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// A run is handed a completion before it is committed, so that it can work
// out what comes next meanwhile; the events it emits after that wait for the
// commit, and the effects it asks for start only once their start rows,
// committed with the completion, are in. (Committed: in the side journal;
// SQLite has them later.)
func TestEventsWaitForCommit(t *testing.T) {
	// Only Idle commits here, however slowly the test runs.
	defer func(d time.Duration) { flushDelay = d }(flushDelay)
	flushDelay = time.Hour
	s, rec := beginRun(t)
	defer s.Close()
	var started []string
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		started = append(started, req.Step)
		return &vm.EffectCompletion{OK: true, Stdout: req.Step}
	})
	// recorded returns the steps whose completions are durable: in
	// SQLite or in the run's side journal (where a fold takes them from
	// after a crash).
	recorded := func() []string {
		return durableSteps(t, s, rec)
	}
	var told []string
	emit := rec.Events(func(ev *vm.Event) {
		// When an event is told, the completion it follows is in.
		if got := recorded(); len(got) == 0 || got[len(got)-1] != ev.Step {
			t.Errorf("event for %s told with the store holding %q", ev.Step, got)
		}
		told = append(told, ev.Step)
	})
	req := func(step string) *vm.EffectRequest {
		return &vm.EffectRequest{Kind: graphir.KindTask, Step: step, Visit: 1, Attempt: 1}
	}
	ch := make(chan *vm.EffectCompletion, 2)
	done := func(c *vm.EffectCompletion) { ch <- c }

	rec.Start(context.Background(), req("a"), done)
	if len(started) != 0 {
		t.Fatalf("a started before its start row was committed")
	}
	rec.Idle(nil) // the start row commits; a runs and completes
	if c := <-ch; !c.OK {
		t.Fatalf("a: %+v", c)
	}
	// The run acts on a's completion: it emits a's event and asks for b.
	// The run reuses its event for the next one: the recorder holds a copy.
	ev := vm.Event{Type: vm.StepFinished, Step: "a"}
	emit(&ev)
	ev.Step = "reused"
	rec.Start(context.Background(), req("b"), done)
	if len(told) != 0 || len(started) != 1 || len(recorded()) != 0 {
		t.Fatalf("before the commit: told %q, started %q, recorded %q; want nothing told, only a started, nothing recorded", told, started, recorded())
	}
	rec.Idle(nil) // a's completion and b's start row commit together
	if len(told) != 1 || len(started) != 2 {
		t.Fatalf("after the commit: told %q, started %q; want a told and b started", told, started)
	}
	<-ch
	ev = vm.Event{Type: vm.StepFinished, Step: "b"}
	emit(&ev)
	if err := rec.Finish(&vm.Result{Status: vm.Succeeded, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; len(told) != 2 || told[1] != "b" {
		t.Errorf("told %q, want %q", told, want)
	}
}

// A run that never goes idle (busy in a long fn step, or behind a producer
// that does not pass Idle on) still gets its effects started and its
// completions committed: a batch commits at the latest flushDelay after its
// first write.
func TestBatchCommitsWithoutIdle(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		return &vm.EffectCompletion{OK: true}
	})
	ch := make(chan *vm.EffectCompletion, 1)
	rec.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: "a", Visit: 1, Attempt: 1},
		func(c *vm.EffectCompletion) { ch <- c })
	select {
	case c := <-ch:
		if !c.OK {
			t.Fatalf("a: %+v", c)
		}
	case <-time.After(time.Minute):
		t.Fatal("a never started without Idle")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		effects, err := s.Effects("r1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(effects) == 1 && effects[0].Status == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's completion never committed without Idle: %+v", effects)
		}
	}
}

// A resumed run's producer is a Replay wrapping the Recorder: the run going
// idle reaches the Recorder through it, and commits.
func TestReplayPassesIdleOn(t *testing.T) {
	defer func(d time.Duration) { flushDelay = d }(flushDelay)
	flushDelay = time.Hour
	s, rec := beginRun(t)
	defer s.Close()
	var started []string
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		started = append(started, req.Step)
		return &vm.EffectCompletion{OK: true}
	})
	p, err := s.Replay("r1", "")
	if err != nil {
		t.Fatal(err)
	}
	p.Inner = rec
	ch := make(chan *vm.EffectCompletion, 1)
	p.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: "a", Visit: 1, Attempt: 1},
		func(c *vm.EffectCompletion) { ch <- c })
	if len(started) != 0 {
		t.Fatal("a started before its start row was committed")
	}
	p.Idle(nil)
	if len(started) != 1 {
		t.Fatalf("started %q after Idle, want a", started)
	}
	<-ch
}

// beginRun opens a store in a fresh directory and begins run r1 in it; the
// caller closes the store.
func beginRun(t *testing.T) (*Store, *Recorder) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Begin(&NewRun{ID: "r1", Flow: "f", File: "f.star", Started: time.Now()})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s, rec
}

// durableSteps returns the steps of rec's run whose completions succeeded
// and are durable (in SQLite or in the run's side journal), in the order
// they completed.
func durableSteps(t *testing.T, s *Store, rec *Recorder) []string {
	t.Helper()
	effects, err := s.Effects(rec.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[int64]string{}
	done := map[int64]int64{}
	for _, e := range effects {
		steps[e.ID] = e.Step
		if e.Status == "succeeded" {
			done[e.ID] = e.Done
		}
	}
	b, err := os.ReadFile(rec.side.path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if _, writes, ok := decodeSide(b); ok {
		for _, w := range writes {
			if w.ins {
				steps[w.args[0].(int64)] = w.args[3].(string)
			} else if w.args[0] == "succeeded" {
				done[w.args[endArgs-1].(int64)] = w.args[1].(int64)
			}
		}
	}
	var ids []int64
	for id := range done {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(done[a], done[b]) })
	var out []string
	for _, id := range ids {
		out = append(out, steps[id])
	}
	return out
}
