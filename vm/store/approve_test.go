package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// A decision is recorded once; one after the approval's recorded
// deadline, or after a run recorded it timed out, is refused.
func TestDecideOnceAndNotLate(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	ask := func(step string, timeout time.Duration) *Approval {
		t.Helper()
		a, err := rec.Ask(&vm.EffectRequest{Step: step, Kind: graphir.KindApproval, Visit: 1, Message: "Go?", Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := ask("a", time.Hour)
	if !a.Pending(time.Now()) || a.Pending(a.Requested.Add(time.Hour)) {
		t.Errorf("pending before/after the deadline: %v, %v", a.Pending(time.Now()), a.Pending(a.Requested.Add(time.Hour)))
	}
	if err := s.Decide("r1", a, true, "bob", "ok", ""); err != nil {
		t.Fatal(err)
	}
	err := s.Decide("r1", a, false, "eve", "", "")
	if !errors.Is(err, ErrDecided) || !strings.Contains(err.Error(), `"a" of run r1 was approved by bob at `) {
		t.Errorf("second decision: %v", err)
	}
	// Expiring a decided approval keeps the decision.
	if got, err := s.Expire("r1", a, time.Now()); err != nil || got.Decided.IsZero() || !got.Expired.IsZero() || got.By != "bob" {
		t.Errorf("expire after the decision: %+v, %v", got, err)
	}

	// Past its recorded deadline (no run recorded it yet): refused.
	b := ask("b", time.Nanosecond)
	time.Sleep(time.Millisecond)
	err = s.Decide("r1", b, true, "bob", "", "")
	if !errors.Is(err, ErrTimedOut) || !strings.Contains(err.Error(), `approval "b" of run r1 timed out at `) {
		t.Errorf("late decision: %v", err)
	}
	// Recorded as timed out by the run: refused, and it stays so.
	c := ask("c", time.Hour)
	got, err := s.Expire("r1", c, c.Requested.Add(time.Hour))
	if err != nil || got.Expired.IsZero() || !got.Decided.IsZero() || got.Pending(time.Now()) {
		t.Fatalf("expired: %+v, %v", got, err)
	}
	if err := s.Decide("r1", c, true, "bob", "", ""); !errors.Is(err, ErrTimedOut) {
		t.Errorf("decision after the run timed it out: %v", err)
	}
	if again, err := rec.Ask(&vm.EffectRequest{Step: "c", Kind: graphir.KindApproval, Visit: 1, Timeout: time.Hour}); err != nil || !again.Expired.Equal(got.Expired) {
		t.Errorf("asked again: %+v, %v", again, err)
	}
	// No timeout: any time.
	if err := s.Decide("r1", ask("d", 0), false, "ops", "no", ""); err != nil {
		t.Errorf("no timeout: %v", err)
	}
}

// A decision for a run someone asked to cancel, or that has ended, is
// refused: nothing would take it.
func TestDecideNotOnEndingRun(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	a, err := rec.Ask(&vm.EffectRequest{Step: "a", Kind: graphir.KindApproval, Visit: 1, Message: "Go?"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestCancel("r1", CancelRequest{By: "ann", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	err = s.Decide("r1", a, true, "bob", "", "")
	if !errors.Is(err, ErrCancelling) || !strings.Contains(err.Error(), `run r1 is being cancelled (asked by ann at `) {
		t.Errorf("decision while cancelling: %v", err)
	}
	if err := rec.Finish(&vm.Result{Status: vm.Cancelled}); err != nil {
		t.Fatal(err)
	}
	err = s.Decide("r1", a, true, "bob", "", "")
	if !errors.Is(err, ErrEnded) || !strings.Contains(err.Error(), `run r1 has ended (cancelled): its approval "a" can no longer be decided`) {
		t.Errorf("decision after the end: %v", err)
	}
	got, err := s.Approvals("r1")
	if err != nil || len(got) != 1 || !got[0].Decided.IsZero() {
		t.Errorf("approvals %+v, %v; want one undecided", got, err)
	}
}

// A decision racing the run timing the approval out: exactly one of them
// is recorded, and both sides read the same outcome.
func TestDecideRacesExpire(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	for i := range 20 {
		req := &vm.EffectRequest{Step: "g", Kind: graphir.KindApproval, Visit: i + 1, Timeout: time.Hour}
		a, err := rec.Ask(req)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var derr error
		var got *Approval
		wg.Add(2)
		go func() { defer wg.Done(); derr = s.Decide("r1", a, true, "bob", "", "") }()
		go func() { defer wg.Done(); got, err = s.Expire("r1", a, a.Requested.Add(time.Hour)) }()
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		final, err := rec.Ask(req)
		if err != nil {
			t.Fatal(err)
		}
		decided, expired := !final.Decided.IsZero(), !final.Expired.IsZero()
		if decided == expired {
			t.Fatalf("visit %d: decided %v and expired %v", i+1, decided, expired)
		}
		if (derr == nil) != decided || (!got.Decided.IsZero()) != decided {
			t.Fatalf("visit %d: decide said %v, expire saw %+v, the store has %+v", i+1, derr, got, final)
		}
	}
}

// idleCounter is a producer that counts the Idle calls passed on to it.
type idleCounter struct {
	vm.EffectProducer
	idles int
}

func (c *idleCounter) Idle([]string) { c.idles++ }

// A resumed run going idle while the replay still holds a completion (one
// recorded after a completion the run has not asked for yet) is not idle:
// the replay hands the held one over and does not pass the Idle on, so
// that an approval held open below it does not park while the replay is
// still handing over what the run goes on with.
func TestReplayIdleNotPassedWhileHanding(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	for _, step := range []string{"x", "y"} {
		if err := rec.record(&vm.EffectRequest{Step: step, Kind: graphir.KindTask, Visit: 1, Attempt: 1}, 1, &vm.EffectCompletion{OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Sync(); err != nil { // (the record reaches SQLite)
		t.Fatal(err)
	}
	p, err := s.Replay("r1", "")
	if err != nil {
		t.Fatal(err)
	}
	inner := &idleCounter{}
	p.Inner = inner
	got := make(chan string, 2)
	start := func(step string) {
		p.Start(context.Background(), &vm.EffectRequest{Step: step, Kind: graphir.KindTask, Visit: 1, Attempt: 1},
			func(*vm.EffectCompletion) { got <- step })
	}
	start("y") // held: x was recorded first
	if len(got) != 0 {
		t.Fatal("y handed over before x")
	}
	p.Idle(nil)
	if len(got) != 1 || <-got != "y" {
		t.Fatal("the run's Idle did not hand y over")
	}
	if inner.idles != 0 {
		t.Errorf("Idle passed on while the replay handed y over")
	}
	start("x")
	p.Idle(nil)
	if len(got) != 1 || inner.idles != 1 {
		t.Errorf("x handed over: %d; Idle passed on %d times once nothing was held, want 1", len(got), inner.idles)
	}
}

// Undecided lists the approvals still to decide across runs, with their
// runs' ids, and not those decided, timed out or of runs that ended.
func TestUndecided(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	ask := func(rec *Recorder, step string) *Approval {
		t.Helper()
		a, err := rec.Ask(&vm.EffectRequest{Step: step, Kind: graphir.KindApproval, Visit: 1, Message: step + "?"})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ask(rec, "a")
	b := ask(rec, "b")
	c := ask(rec, "c")
	if err := s.Decide("r1", b, true, "bob", "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expire("r1", c, time.Now()); err != nil {
		t.Fatal(err)
	}
	rec2, err := s.Begin(&NewRun{ID: "r2", Flow: "f", File: "f.star", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ask(rec2, "d")
	rec3, err := s.Begin(&NewRun{ID: "r3", Flow: "f", File: "f.star", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ask(rec3, "e")
	if err := rec3.Finish(&vm.Result{RunID: "r3", Status: vm.Failed, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	aps, ids, err := s.Undecided()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, a := range aps {
		got = append(got, ids[i]+" "+a.Step+" "+a.Message)
	}
	if want := "r1 a a?, r2 d d?"; strings.Join(got, ", ") != want {
		t.Errorf("undecided: %s, want %s", strings.Join(got, ", "), want)
	}
}

// ApprovalsOf reads the approvals of several runs at once, each run's
// under its id, in the order they were asked; a run without any, or not
// asked for, has none.
func TestApprovalsOf(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	ask := func(rec *Recorder, step string) {
		t.Helper()
		if _, err := rec.Ask(&vm.EffectRequest{Step: step, Kind: graphir.KindApproval, Visit: 1, Message: step + "?"}); err != nil {
			t.Fatal(err)
		}
	}
	ask(rec, "a")
	ask(rec, "b")
	for _, id := range []string{"r2", "r3", "r4"} {
		r, err := s.Begin(&NewRun{ID: id, Flow: "f", File: "f.star", Started: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if id != "r3" {
			ask(r, "x"+id)
		}
	}
	if m, err := s.ApprovalsOf(nil); err != nil || len(m) != 0 {
		t.Errorf("ApprovalsOf(nil) = %v, %v", m, err)
	}
	m, err := s.ApprovalsOf([]string{"r1", "r2", "r3", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range []string{"r1", "r2", "r3", "r4", "nope"} {
		for _, a := range m[id] {
			got = append(got, id+" "+a.Step)
		}
	}
	if want := "r1 a, r1 b, r2 xr2"; strings.Join(got, ", ") != want {
		t.Errorf("ApprovalsOf: %s, want %s", strings.Join(got, ", "), want)
	}
}

// DataVersion changes when anything commits to the store, this
// process's journal or another store's connection, and not otherwise.
func TestDataVersion(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	v0, err := s.DataVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.DataVersion(); err != nil || v != v0 {
		t.Fatalf("DataVersion with no change: %d, %v; want %d", v, err, v0)
	}
	if err := rec.record(&vm.EffectRequest{Step: "t", Kind: graphir.KindTask, Visit: 1, Attempt: 1}, 1, &vm.EffectCompletion{OK: true}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sync(); err != nil {
		t.Fatal(err)
	}
	v1, err := s.DataVersion()
	if err != nil || v1 == v0 {
		t.Fatalf("DataVersion after the journal's commit: %d, %v; want a change from %d", v1, err, v0)
	}
	other, err := Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.RequestCancel("r1", CancelRequest{By: "x"}); err != nil {
		t.Fatal(err)
	}
	if v2, err := s.DataVersion(); err != nil || v2 == v1 {
		t.Fatalf("DataVersion after another store's commit: %d, %v; want a change from %d", v2, err, v1)
	}
}
