package runs

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

const cancelFlow = `
flow(name = "deploy", on_exit = "tidy")
build = step("build", shell = "echo build >> log")
deploy = step("deploy", approve = "Deploy?")
ship = step("ship", shell = "echo ship >> log")
chain(START, build, deploy, ship, END)
step("tidy", env = {"S": "{{ run.status }}", "M": "{{ run.error.message }}", "B": "{{ build.exit_code }}"},
	shell = "echo tidy $S $B: $M >> log")
`

// A parked run is cancelled: it ends cancelled with who and why, its
// exit handler runs seeing what its record has (build's output), and
// neither build nor ship runs again. A second cancel is refused.
func TestCancelWaiting(t *testing.T) {
	s, g, dir := setup(t, "deploy.star", cancelFlow)
	r := parked(t, s, g)
	c, err := s.Cancel(context.Background(), r.ID, CancelSpec{By: "alice", Reason: "release pulled"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Requested || c.Result == nil {
		t.Fatalf("got requested %v, result %v; want cancelled here", c.Requested, c.Result)
	}
	want := "the run was cancelled by alice: release pulled"
	if c.Run.Status != string(vm.Cancelled) || c.Run.ErrorCode != string(codes.Cancelled) || c.Run.ErrorMsg != want {
		t.Fatalf("record: %s %s %q; want cancelled with %q", c.Run.Status, c.Run.ErrorCode, c.Run.ErrorMsg, want)
	}
	if got, want := readLog(t, dir), "build\ntidy cancelled 0: "+want+"\n"; got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
	if _, err := s.Cancel(context.Background(), r.ID, CancelSpec{}); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("second cancel: %v; want ErrEnded", err)
	}
	// Its approval was left open: a decision on it is refused, and
	// none is recorded.
	_, err = s.Approve(context.Background(), r.ID, "deploy", Decision{Approved: true, By: "bob"})
	if !errors.Is(err, store.ErrEnded) || err.Error() != "run "+r.ID+` has ended (cancelled): its approval "deploy" can no longer be decided` {
		t.Fatalf("approve after cancel: %v; want ErrEnded", err)
	}
	all, err := s.Store.Approvals(r.ID)
	if err != nil || len(all) != 1 || !all[0].Decided.IsZero() {
		t.Fatalf("approvals %+v, %v; want one undecided", all, err)
	}
}

// A running run is cancelled from elsewhere (another Service on the same
// store, as another process would): the request is recorded, the run
// notices it, stops its task and runs its exit handler.
func TestCancelRunning(t *testing.T) {
	s, g, dir := setup(t, "slow.star", `
flow(name = "slow", on_exit = "tidy")
nap = step("nap", shell = "echo nap >> log; exec sleep 30")
step("tidy", env = {"M": "{{ run.error.message }}"}, shell = "echo tidy: $M >> log")
chain(START, nap, END)
`)
	old := CancelPoll
	CancelPoll = 10 * time.Millisecond
	t.Cleanup(func() { CancelPoll = old })
	r, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	r.OnEvent = func(ev *vm.Event) {
		if ev.Type == vm.StepStarted && ev.Step == "nap" {
			close(started)
		}
	}
	done := make(chan *vm.Result)
	go func() { done <- run(t, r) }()
	<-started
	// The step has started; its shell may not have written yet, and a
	// cancel now would stop it before it does: wait for its line.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, "log")); strings.Contains(string(b), "nap") {
			break
		}
	}
	other := &Service{Store: s.Store}
	c, err := other.Cancel(context.Background(), "last", CancelSpec{By: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Requested {
		t.Fatalf("got %+v; want a request", c)
	}
	res := <-done
	want := "the run was cancelled by bob"
	if res.Status != vm.Cancelled || res.Error == nil || res.Error.Msg != want {
		t.Fatalf("got %s %v; want cancelled: %s", res.Status, res.Error, want)
	}
	rec, err := s.Record(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Status != string(vm.Cancelled) || rec.Run.ErrorMsg != want {
		t.Fatalf("record: %s %q", rec.Run.Status, rec.Run.ErrorMsg)
	}
	if got := readLog(t, dir); got != "nap\ntidy: "+want+"\n" {
		t.Fatalf("log:\n%s", got)
	}
}

// An interrupted run (its process died) is cancelled here, its exit
// handler run.
func TestCancelInterrupted(t *testing.T) {
	s, g, dir := setup(t, "deploy.star", cancelFlow)
	r := parked(t, s, g)
	// What a process that died while the run waited for its approval
	// would have left: running, owned by a process that is gone.
	db, err := sql.Open("sqlite", s.Store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE runs SET status = 'running', owner_pid = ?, owner_start = '' WHERE id = ?`, 1<<30, r.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Store.Get(r.ID); err != nil || got.Status != store.Interrupted {
		t.Fatalf("got %v, %v; want an interrupted run", got, err)
	}
	c, err := s.Cancel(context.Background(), r.ID, CancelSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readLog(t, dir), "build\ntidy cancelled 0: the run was cancelled\n"; got != want || c.Result.Status != vm.Cancelled {
		t.Fatalf("log:\n%s\nwant:\n%s\nstatus %s", got, want, c.Result.Status)
	}
}

// A cancel asked of a parked run that is resumed before it is cancelled
// (here: the request recorded, then the run resumed with its approval
// decided) takes effect once the run has replayed its record: the exit
// handler sees build's recorded output (build is not run again), and the
// run is cancelled at the approval, the first effect its journal does not
// answer (the decision is not taken: ship never runs).
func TestCancelResumedMeanwhile(t *testing.T) {
	s, g, dir := setup(t, "deploy.star", cancelFlow)
	r := parked(t, s, g)
	if _, err := s.Approve(context.Background(), r.ID, "deploy", Decision{Approved: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.RequestCancel(r.ID, store.CancelRequest{By: "ops", Reason: "stop", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Store.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := s.Resume(&ResumeSpec{Run: rec, Options: rec.Options})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, again)
	want := "the run was cancelled by ops: stop"
	if res.Status != vm.Cancelled || res.Error == nil || res.Error.Msg != want {
		t.Fatalf("got %s %v; want cancelled: %s", res.Status, res.Error, want)
	}
	if st := res.Step("build").Status; st != vm.StepSucceeded {
		t.Errorf("build %s; want succeeded, as recorded", st)
	}
	if st := res.Step("deploy").Status; st != vm.StepCancelled {
		t.Errorf("deploy %s; want cancelled", st)
	}
	if st := res.Step("ship").Status; st != vm.StepNotRun {
		t.Errorf("ship %s; want not_run", st)
	}
	if got, want := readLog(t, dir), "build\ntidy cancelled 0: "+want+"\n"; got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
}
