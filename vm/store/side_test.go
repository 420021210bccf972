package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// sideBatches are two batches as the Recorder writes them: a start row,
// then its end with the next start row.
var sideBatches = [][]write{
	{{ins: true, args: []any{int64(1<<32 + 1), int64(1), "", "a", "task", 1, 1, false, int64(1700000000000000000), `{"argv":["echo","hi"]}`}}},
	{
		{args: []any{"succeeded", int64(1), "", "", nil, 0, "out\x00\xff", "", false, int64(1700000000000000001), "m", "yes", 7, 2, `{"prompt_tokens":7,"completion_tokens":2,"cost":0.5}`, int64(1<<32 + 1)}},
		{ins: true, args: []any{int64(1<<32 + 2), int64(1), "per[2]/x", "b", "llm", 3, 2, true, int64(-5), nil}},
	},
}

func sideBytes(t testing.TB) []byte {
	b := appendHeader(nil, sideHeader{run: "r1", host: "h", pid: 42, start: "123"})
	for _, batch := range sideBatches {
		var err error
		if b, err = appendBatch(b, batch); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// decoded is what decodeSide gives back for the first n batches: the same
// writes, ints as int64.
func decoded(n int) []write {
	var out []write
	for _, batch := range sideBatches[:n] {
		for _, w := range batch {
			args := make([]any, len(w.args))
			for i, a := range w.args {
				if v, ok := a.(int); ok {
					a = int64(v)
				}
				args[i] = a
			}
			out = append(out, write{ins: w.ins, args: args})
		}
	}
	return out
}

var writeCmp = cmp.AllowUnexported(write{}, sideHeader{})

func TestSideRoundTrip(t *testing.T) {
	h, writes, ok := decodeSide(sideBytes(t))
	if !ok {
		t.Fatal("no header")
	}
	if diff := cmp.Diff(sideHeader{run: "r1", host: "h", pid: 42, start: "123"}, h, writeCmp); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(decoded(2), writes, writeCmp); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// A file cut anywhere (a write that never returned) gives back the whole
// records before the cut and nothing of the torn one; a record whose bytes
// changed ends the file there.
func TestSideTorn(t *testing.T) {
	b := sideBytes(t)
	header := len(appendHeader(nil, sideHeader{run: "r1", host: "h", pid: 42, start: "123"}))
	first, _ := appendBatch(nil, sideBatches[0])
	for cut := 0; cut < len(b); cut++ {
		_, writes, ok := decodeSide(b[:cut])
		want := 0
		switch {
		case cut < header:
			if ok {
				t.Errorf("cut at %d: a torn header read as whole", cut)
			}
			continue
		case cut >= header+len(first):
			want = 1
		}
		if diff := cmp.Diff(decoded(want), writes, writeCmp); diff != "" {
			t.Errorf("cut at %d (-want +got):\n%s", cut, diff)
		}
	}
	for i := header + len(first); i < len(b); i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		_, writes, _ := decodeSide(c)
		if diff := cmp.Diff(decoded(1), writes, writeCmp); diff != "" {
			t.Errorf("byte %d changed (-want +got):\n%s", i, diff)
		}
	}
}

// FuzzSideJournal: decoding any bytes never panics, gives back only
// well-formed writes, and those encode and decode to themselves.
func FuzzSideJournal(f *testing.F) {
	f.Add(sideBytes(f))
	f.Add(appendHeader(nil, sideHeader{run: "r", pid: 1}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, writes, ok := decodeSide(b)
		if !ok {
			if len(writes) != 0 {
				t.Fatalf("writes without a header: %d", len(writes))
			}
			return
		}
		for _, w := range writes {
			if n := len(w.args); (w.ins && n != insArgs) || (!w.ins && n != endArgs) || w.fin || !wellTyped(w) {
				t.Fatalf("malformed write %+v", w)
			}
		}
		again := appendHeader(nil, h)
		if len(writes) > 0 {
			var err error
			if again, err = appendBatch(again, writes); err != nil {
				t.Fatal(err)
			}
		}
		h2, writes2, ok := decodeSide(again)
		if !ok || !cmp.Equal(h, h2, writeCmp) || !cmp.Equal(writes, writes2, writeCmp, cmp.Comparer(func(a, b []any) bool {
			return cmp.Equal(a, b)
		})) {
			t.Fatalf("round trip: %+v %+v -> %+v %+v", h, writes, h2, writes2)
		}
	})
}

// deadRun records effects a and b of run r1 into its side journal only
// (SQLite's batch never comes), and returns the store, the side journal's
// bytes and how the effects read once folded. Its process counts as dead
// for the fold.
func deadRun(t *testing.T) (*Store, string, []byte) {
	t.Helper()
	defer func(d time.Duration) { sqlDelay = d }(sqlDelay)
	sqlDelay = time.Hour
	isAlive = func(int, string, string) bool { return false }
	t.Cleanup(func() { isAlive = alive })
	s, rec := beginRun(t)
	t.Cleanup(func() { s.Close() })
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		return &vm.EffectCompletion{OK: true, Stdout: "out of " + req.Step, ExitCode: 0}
	})
	for _, step := range []string{"a", "b"} {
		ch := make(chan *vm.EffectCompletion, 1)
		rec.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: step, Visit: 1, Attempt: 1, Argv: []string{"echo", step}},
			func(c *vm.EffectCompletion) { ch <- c })
		rec.Idle(nil)
		<-ch
	}
	rec.Idle(nil) // b's completion reaches the side journal
	if effects, _ := s.Effects("r1", 0); len(effects) != 0 {
		t.Fatalf("SQLite has %d effects before the fold, want none", len(effects))
	}
	b, err := os.ReadFile(rec.side.path)
	if err != nil {
		t.Fatal(err)
	}
	return s, rec.side.path, b
}

func effectsOf(t *testing.T, s *Store, id string) []*Effect {
	t.Helper()
	effects, err := s.Effects(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return effects
}

// A dead run's side journal folds into SQLite, whole; folding it again
// (a fold that crashed before deleting the file) gives the same rows.
func TestFoldTwice(t *testing.T) {
	s, path, b := deadRun(t)
	if err := s.foldDead(""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("side journal left after the fold: %v", err)
	}
	once := effectsOf(t, s, "r1")
	if len(once) != 2 || once[0].Status != "succeeded" || once[1].Status != "succeeded" || once[1].Stdout != "out of b" || once[1].Done != 2 {
		t.Fatalf("folded effects: %+v %+v", once[0], once[len(once)-1])
	}
	if r := once[1].Rendered; r == nil || !slices.Equal(r.Argv, []string{"echo", "b"}) {
		t.Errorf("folded rendered argv: %+v, want echo b", r)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.foldDead("r1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(once, effectsOf(t, s, "r1")); diff != "" {
		t.Errorf("folded twice (-once +twice):\n%s", diff)
	}
}

// A side journal of version 1 (start rows without what the attempt
// rendered), left by a skein that died before an upgrade, still folds
// in: its attempts have nothing rendered.
func TestFoldVersion1(t *testing.T) {
	s, got := foldOld(t, sideMagic1, func(lo, run int64) []write {
		return []write{
			{ins: true, args: []any{lo + 1, run, "", "a", "task", 1, 1, false, int64(1)}},
			{args: []any{"succeeded", int64(1), "", "", nil, 0, "out", "", false, int64(2), nil, nil, nil, nil, lo + 1}},
			{ins: true, args: []any{lo + 2, run, "", "b", "task", 1, 1, false, int64(3)}},
		}
	})
	defer s.Close()
	if len(got) != 2 || got[0].Step != "a" || got[0].Status != "succeeded" || got[0].Stdout != "out" || got[1].Status != Running ||
		got[0].Rendered != nil || got[1].Rendered != nil {
		t.Fatalf("folded version 1: %+v", got)
	}
}

// A side journal of version 2 (ends without the usage column), left by a
// skein that died before an upgrade, still folds in: its model calls have
// their prompt and completion tokens, and no more.
func TestFoldVersion2(t *testing.T) {
	s, got := foldOld(t, sideMagic2, func(lo, run int64) []write {
		return []write{
			{ins: true, args: []any{lo + 1, run, "", "ask", "llm", 1, 1, false, int64(1), nil}},
			{args: []any{"succeeded", int64(1), "", "", `"yes"`, nil, nil, nil, false, int64(2), "m1", "yes", 7, 2, lo + 1}},
		}
	})
	defer s.Close()
	if len(got) != 1 || got[0].Status != "succeeded" || got[0].Model != "m1" || got[0].Usage != (model.Usage{PromptTokens: 7, CompletionTokens: 2}) {
		t.Fatalf("folded version 2: %+v", got)
	}
}

// foldOld writes a side journal of an older version (magic) for run r1
// of a process that died (pid 7), the writes given the first effect id
// and the run's row, folds it in and returns the store and r1's effects.
func foldOld(t *testing.T, magic string, writes func(lo, run int64) []write) (*Store, []*Effect) {
	t.Helper()
	s, rec := beginRun(t)
	isAlive = func(pid int, _, _ string) bool { return pid != 7 }
	defer func() { isAlive = alive }()
	b, _ := frame(nil, func(b []byte) ([]byte, error) {
		b = append(b, magic...)
		b = appendString(b, "r1")
		b = appendString(b, "h")
		b = binary.AppendVarint(b, 7)
		return appendString(b, "1"), nil
	})
	lo, _ := effectIDs(rec.n)
	b, err := appendBatch(b, writes(lo, rec.n))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.sideDir(), "r1.7.1"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.foldDead("r1"); err != nil {
		t.Fatal(err)
	}
	return s, effectsOf(t, s, "r1")
}

// Two stores (connections) folding the same side journal at once: both
// succeed, and the rows are those of one fold.
func TestFoldTwoAtOnce(t *testing.T) {
	s, path, b := deadRun(t)
	other, err := Open(s.path) // (its own fold at open may win the race)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	want := effectsOf(t, other, "r1")
	for round := 0; round < 5; round++ {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, st := range []*Store{s, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = st.foldDead("")
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v, %v", round, errs[0], errs[1])
		}
		if diff := cmp.Diff(want, effectsOf(t, s, "r1")); diff != "" {
			t.Fatalf("round %d (-want +got):\n%s", round, diff)
		}
	}
	if len(want) != 2 {
		t.Errorf("effects: %d, want 2", len(want))
	}
}

// A side journal whose run is gone (deleted) or whose owner still runs is
// left alone by the rows; the first is deleted, the second kept.
func TestFoldDeletedAndLive(t *testing.T) {
	s, path, b := deadRun(t)
	gone := filepath.Join(s.sideDir(), "r9.1.1")
	h, writes, _ := decodeSide(b)
	h.run = "r9"
	nb := appendHeader(nil, h)
	nb, _ = appendBatch(nb, writes)
	if err := os.WriteFile(gone, nb, 0o644); err != nil {
		t.Fatal(err)
	}
	isAlive = func(pid int, _, _ string) bool { return true }
	if err := s.foldDead(""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("a live run's side journal: %v, want it kept", err)
	}
	isAlive = func(int, string, string) bool { return false }
	if err := s.foldDead(""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("side journal of a deleted run: %v, want it deleted", err)
	}
	if n := len(effectsOf(t, s, "r1")); n != 2 {
		t.Errorf("r1 has %d effects, want 2", n)
	}
}

// Once SQLite holds everything in a large side journal, the journal is
// emptied back to its header.
func TestSideTruncated(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	big := strings.Repeat("x", sideTruncateAt)
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		return &vm.EffectCompletion{OK: true, Stdout: big}
	})
	ch := make(chan *vm.EffectCompletion, 1)
	rec.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: "a", Visit: 1, Attempt: 1},
		func(c *vm.EffectCompletion) { ch <- c })
	rec.Idle(nil)
	<-ch
	rec.Idle(nil)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		fi, err := os.Stat(rec.side.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == rec.side.header {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("side journal still %d bytes, want %d", fi.Size(), rec.side.header)
		}
	}
	if e := effectsOf(t, s, "r1"); len(e) != 1 || e[0].Stdout != big {
		t.Fatalf("effects: %d", len(e))
	}
	if err := rec.Finish(&vm.Result{Status: vm.Succeeded, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.waitRemoved() // (Finish deletes it on a goroutine of its own)
	if _, err := os.Stat(rec.side.path); !os.IsNotExist(err) {
		t.Errorf("side journal after Finish: %v, want it deleted", err)
	}
}

// A process that folds side journals while a run's side journal is being
// made (the file there, its header not yet written) leaves it alone: it
// must not take the empty file for a dead run's and delete it, or the
// run's completions would go on into a deleted file and be lost with the
// run's process.
func TestFoldWhileSideOpens(t *testing.T) {
	defer func(d time.Duration) { sqlDelay = d }(sqlDelay)
	sqlDelay = time.Hour
	s, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var foldErr error
	sideOpening = func() { foldErr = other.foldDead("") }
	rec, err := s.Begin(&NewRun{ID: "r1", Flow: "f", File: "f.star", Started: time.Now()})
	sideOpening = nil
	if err != nil {
		t.Fatal(err)
	}
	if foldErr != nil {
		t.Fatal(foldErr)
	}
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		return &vm.EffectCompletion{OK: true, Stdout: "out of " + req.Step}
	})
	ch := make(chan *vm.EffectCompletion, 1)
	rec.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: "a", Visit: 1, Attempt: 1},
		func(c *vm.EffectCompletion) { ch <- c })
	rec.Idle(nil)
	<-ch
	rec.Idle(nil) // a's completion reaches the side journal
	isAlive = func(int, string, string) bool { return false }
	defer func() { isAlive = alive }()
	if err := other.foldDead(""); err != nil {
		t.Fatal(err)
	}
	if e := effectsOf(t, other, "r1"); len(e) != 1 || e[0].Status != "succeeded" || e[0].Stdout != "out of a" {
		t.Fatalf("folded effects: %d, want a succeeded", len(e))
	}
}

// A side journal in a format this skein does not know (a newer skein's)
// is neither folded nor deleted: its run's completions are in it. Opening
// the store goes on; continuing or replaying its run is refused.
func TestFoldOtherVersion(t *testing.T) {
	s, rec := beginRun(t)
	defer s.Close()
	path := filepath.Join(s.sideDir(), "r1.1.1")
	b, _ := frame(nil, func(b []byte) ([]byte, error) { return append(b, "skein-side-journal 9\nwhatever"...), nil })
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	isAlive = func(pid int, _, _ string) bool { return pid != 1 }
	defer func() { isAlive = alive }()
	err := s.foldDead("r1")
	if err == nil || !strings.Contains(err.Error(), "another version of skein") {
		t.Errorf("fold: %v, want an error naming another version of skein", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("side journal of another version: %v, want it kept", err)
	}
	if _, err := s.Replay("r1", ""); err == nil {
		t.Error("Replay: no error, want the fold's")
	}
	rec.Finish(&vm.Result{Status: vm.Failed, Started: time.Now()})
	if _, err := s.Continue("r1", RunOptions{}); err == nil {
		t.Error("Continue: no error, want the fold's")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("side journal of another version: %v, want it kept", err)
	}
}

// A side journal that cannot be read is not taken for one folded meanwhile:
// continuing its run is refused (it would run again what it holds).
func TestFoldUnreadable(t *testing.T) {
	s, _ := beginRun(t)
	defer s.Close()
	if err := os.Mkdir(filepath.Join(s.sideDir(), "r1.1.1"), 0o755); err != nil {
		t.Fatal(err)
	}
	isAlive = func(pid int, _, _ string) bool { return pid != 1 }
	defer func() { isAlive = alive }()
	if err := s.foldDead("r1"); err == nil || !strings.Contains(err.Error(), "r1.1.1") {
		t.Errorf("fold: %v, want an error naming the side journal", err)
	}
}

// A link left where a run's side journal goes does not make the run write
// through it: the file it points to stays as it was, and the side
// journal is a file of its own in the store's side directory.
func TestSideNotThroughLink(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	pid, start, _ := owner()
	if err := os.MkdirAll(s.sideDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, s.sidePath("r1", pid, start)); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Begin(&NewRun{ID: "r1", Flow: "f", File: "f.star", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Finish(&vm.Result{Status: vm.Succeeded, Started: time.Now()})
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("the link's target holds %q, want it untouched", b)
	}
	if fi, err := os.Lstat(rec.side.path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("side journal: %v, %v, want a regular file", fi, err)
	}
}

// A side journal being made (see sideTemp) is deleted once its process is
// gone, and kept while it runs.
func TestSideTempSwept(t *testing.T) {
	s, _ := beginRun(t)
	defer s.Close()
	pid, start, host := owner()
	live := sideTemp(s.sidePath("r2", pid, start), host)
	dead := sideTemp(s.sidePath("r3.x", 7, "99"), host)
	for _, p := range []string{live, dead} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	isAlive = func(p int, _, _ string) bool { return p == pid }
	defer func() { isAlive = alive }()
	if err := s.foldDead(""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's side journal being made: %v, want it kept", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead process's side journal being made: %v, want it deleted", err)
	}
}

// The side journal is emptied only when SQLite holds all of it: not while
// another SQLite transaction (the next timer's) is writing batches that
// have left the queue but are not committed yet. Here the first timer's
// transaction commits a's large completion while b is recorded, and the
// second timer's takes b and is held before its commit: a kill -9 then
// must still find b in the side journal.
func TestSideNotTruncatedUnderCommit(t *testing.T) {
	defer func(d time.Duration) { sqlDelay = d }(sqlDelay)
	sqlDelay = time.Hour // (the test fires the timers)
	s, rec := beginRun(t)
	defer s.Close()
	big := strings.Repeat("x", sideTruncateAt)
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		return &vm.EffectCompletion{OK: true, Stdout: big}
	})
	ch := make(chan *vm.EffectCompletion, 1)
	rec.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: "a", Visit: 1, Attempt: 1},
		func(c *vm.EffectCompletion) { ch <- c })
	rec.Idle(nil)
	<-ch
	rec.Idle(nil) // a's completion is in the side journal, not in SQLite

	taken, release, second := make(chan struct{}), make(chan struct{}), make(chan struct{})
	sqlCommitted = func() {
		sqlCommitted = nil
		// b is recorded, and the next timer's transaction takes it.
		if err := rec.record(&vm.EffectRequest{Kind: graphir.KindTask, Step: "b", Visit: 1}, 1, &vm.EffectCompletion{OK: true}); err != nil {
			t.Error(err)
		}
		sqlTaken = func() {
			sqlTaken = nil
			close(taken)
			<-release
		}
		go func() {
			defer close(second)
			rec.sqlFire()
		}()
		<-taken
	}
	defer func() { sqlCommitted, sqlTaken = nil, nil }()
	rec.sqlFire()
	// What a kill -9 now leaves: the side journal, and SQLite.
	b, err := os.ReadFile(rec.side.path)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	<-second
	_, writes, _ := decodeSide(b)
	var steps []string
	for _, w := range writes {
		if w.ins {
			steps = append(steps, w.args[3].(string))
		}
	}
	if !slices.Contains(steps, "b") {
		t.Errorf("side journal holds the start rows of %v while b's commit to SQLite is still going, want b's among them", steps)
	}
	if err := rec.Finish(&vm.Result{Status: vm.Succeeded, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// A store opened through a link and through its real path has one side
// directory, beside the real file (where SQLite keeps its write-ahead log
// too): what a run opened through the link left in its side journal is
// folded by a process that opens the store by its real path.
func TestSideThroughStoreLink(t *testing.T) {
	defer func(d time.Duration) { sqlDelay = d }(sqlDelay)
	sqlDelay = time.Hour
	dir := t.TempDir()
	real := filepath.Join(dir, "real", FileName)
	first, err := Open(real)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Begin(&NewRun{ID: "r1", Flow: "f", File: "f.star", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.record(&vm.EffectRequest{Kind: graphir.KindTask, Step: "a", Visit: 1}, 1, &vm.EffectCompletion{OK: true}); err != nil {
		t.Fatal(err)
	}
	isAlive = func(int, string, string) bool { return false }
	defer func() { isAlive = alive }()
	other, err := Open(real)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if e := effectsOf(t, other, "r1"); len(e) != 1 || e[0].Status != "succeeded" {
		t.Fatalf("effects through the real path: %d, want a succeeded (folded)", len(e))
	}
}

// What skein never makes in the side folder, a FIFO or a link to
// /dev/zero named as a side journal, is not read: opening the store
// neither hangs nor exhausts memory, and continuing the run is refused
// with an error naming it, as for a side journal that cannot be read
// (issue 26). A side journal past its bound is not read either.
func TestSideNotRegular(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		{"link", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file"},
		{"big", func(p string) error { return os.WriteFile(p, []byte("0123456789"), 0o644) }, "past the bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rec := beginRun(t)
			rec.Sync()
			s.Close()
			path := filepath.Join(s.sideDir(), "r1.1.1")
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			isAlive = func(int, string, string) bool { return false }
			defer func() { isAlive = alive }()
			defer func(n int64) { sideMaxRead = n }(sideMaxRead)
			sideMaxRead = 9
			s, err := Open(s.path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Continue("r1", RunOptions{})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Continue: %v, want an error naming %s: %s", err, path, tc.want)
			}
		})
	}
}

// queued returns the bytes of output the journal holds for SQLite.
func queued(rec *Recorder) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, w := range rec.sqlq {
		for _, a := range w.args {
			if s, ok := a.(string); ok {
				n += len(s)
			}
		}
	}
	return n
}

// Completions that come faster than SQLite takes them (tasks with
// megabytes of output, failing and retried at once) are not queued for it
// without bound: past 64 MiB the run's flush writes them to SQLite, and
// the buffer a big batch was encoded in is not kept. Here SQLite's timer
// never fires: before, 40 completions of 2 MiB queued 80 MiB.
func TestSideQueueBounded(t *testing.T) {
	defer func(d time.Duration) { sqlDelay = d }(sqlDelay)
	sqlDelay = time.Hour
	s, rec := beginRun(t)
	defer s.Close()
	out := strings.Repeat("o", MaxStream)
	most := 0
	for i := range 40 {
		req := &vm.EffectRequest{Kind: graphir.KindTask, Step: "s", Visit: 1, Attempt: i + 1}
		if err := rec.record(req, i+1, &vm.EffectCompletion{ExitCode: 1, Stdout: out, Stderr: out}); err != nil {
			t.Fatal(err)
		}
		most = max(most, queued(rec))
	}
	if most > 70<<20 {
		t.Errorf("the journal held %d MiB of output for SQLite, want at most 64 MiB and a batch", most>>20)
	}
	if c := cap(rec.side.buf); c > 1<<20 {
		t.Errorf("the side journal keeps a %d-byte buffer after a big batch, want at most 1 MiB", c)
	}
	if err := rec.Finish(&vm.Result{Status: vm.Failed, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM effects WHERE length(stdout) = ?`, MaxStream).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 40 {
		t.Errorf("%d attempts recorded with their output, want 40", n)
	}
}
