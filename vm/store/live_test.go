package store

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// startLive starts the live output of attempt id of a shell step of run
// "r1", as the recorder does, and returns the request's tee and the done
// that ends it.
func startLive(t *testing.T, s *Store, id int64) (*vm.Tee, func()) {
	t.Helper()
	rec := &Recorder{s: s, id: "r1"}
	ended := false
	q, done := rec.live(id, &vm.EffectRequest{Kind: graphir.KindShell}, func(*vm.EffectCompletion) { ended = true })
	if q.Tee == nil {
		t.Fatal("a shell step's request has no tee")
	}
	return q.Tee, func() {
		done(&vm.EffectCompletion{})
		if !ended {
			t.Fatal("the live done did not pass the completion on")
		}
	}
}

// put writes s to w, a live stream, and makes its file if not yet made
// (what its timer does liveDelay after the first write).
func put(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
	w.(*liveStream).start()
}

// A follower gets a task's output as it is written, and once the task has
// ended the rest of it, from the live file and then the record, with no
// byte twice and none missing, also when the task printed more than the
// live file and the record keep.
func TestLiveTail(t *testing.T) {
	defer func(n int64, d time.Duration) { liveMax, liveDelay = n, d }(liveMax, liveDelay)
	liveMax, liveDelay = 8, time.Hour // put makes the files, as the timer would
	s := openInternal(t)

	t.Run("within bounds", func(t *testing.T) {
		tee, end := startLive(t, s, 1)
		tail := s.TailLive("r1", 1)
		if out, errOut := tail.Next(); len(out)+len(errOut) != 0 {
			t.Fatalf("before any output: %q %q", out, errOut)
		}
		put(t, tee.Stdout, "abc")
		out, errOut := tail.Next()
		if string(out) != "abc" || len(errOut) != 0 {
			t.Fatalf("Next = %q, %q; want abc and nothing", out, errOut)
		}
		put(t, tee.Stdout, "de")
		put(t, tee.Stderr, "X")
		if out, errOut := tail.Next(); string(out) != "de" || string(errOut) != "X" {
			t.Fatalf("Next = %q, %q; want de and X", out, errOut)
		}
		put(t, tee.Stdout, "fg")
		end()
		if _, err := os.Stat(s.liveFile("r1", 1, false)); !os.IsNotExist(err) {
			t.Errorf("the live file is still there once the task ended: %v", err)
		}
		got := tail.Rest(&Effect{Stdout: "abcdefg", Stderr: "X"})
		want := [2]LiveRest{{Live: []byte("fg")}, {}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Rest (-want +got):\n%s", d)
		}
	})

	t.Run("cut between", func(t *testing.T) {
		tee, end := startLive(t, s, 2)
		tail := s.TailLive("r1", 2)
		put(t, tee.Stdout, "0123456789")
		if out, _ := tail.Next(); string(out) != "01234567" {
			t.Fatalf("Next = %q, want the live file's 8 bytes", out)
		}
		put(t, tee.Stdout, "abcdefghij")
		end()
		// The record keeps the last 6 of the 20: 6 in between are lost.
		got := tail.Rest(&Effect{Stdout: "efghij", Truncated: true})
		want := [2]LiveRest{{Cut: 6, Record: "efghij"}, {}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Rest (-want +got):\n%s", d)
		}
	})

	t.Run("overlap", func(t *testing.T) {
		tee, end := startLive(t, s, 3)
		tail := s.TailLive("r1", 3)
		put(t, tee.Stdout, "012")
		printed, _ := tail.Next()
		put(t, tee.Stdout, "3456789ab")
		end()
		// The record's last 6 of 12 overlap the live file's first 8.
		got := tail.Rest(&Effect{Stdout: "6789ab", Truncated: true})
		if got[0].Cut != 0 {
			t.Errorf("cut %d, want none", got[0].Cut)
		}
		if all := string(printed) + string(got[0].Live) + got[0].Record; all != "0123456789ab" {
			t.Errorf("printed %q, want each byte once", all)
		}
	})

	t.Run("ended before it was opened", func(t *testing.T) {
		tee, end := startLive(t, s, 4)
		put(t, tee.Stdout, "hello")
		end()
		tail := s.TailLive("r1", 4)
		if out, _ := tail.Next(); len(out) != 0 {
			t.Fatalf("Next = %q after the file was removed", out)
		}
		got := tail.Rest(&Effect{Stdout: "hello"})
		if d := cmp.Diff([2]LiveRest{{Record: "hello"}, {}}, got); d != "" {
			t.Errorf("Rest (-want +got):\n%s", d)
		}
	})

	t.Run("short task", func(t *testing.T) {
		tee, end := startLive(t, s, 6)
		tee.Stdout.Write([]byte("quick"))
		end()
		if _, err := os.Stat(s.liveFile("r1", 6, false)); !os.IsNotExist(err) {
			t.Errorf("a task that ended before liveDelay made a live file: %v", err)
		}
		tail := s.TailLive("r1", 6)
		if d := cmp.Diff([2]LiveRest{{Record: "quick"}, {}}, tail.Rest(&Effect{Stdout: "quick"})); d != "" {
			t.Errorf("Rest (-want +got):\n%s", d)
		}
	})

	t.Run("not a task", func(t *testing.T) {
		rec := &Recorder{s: s, id: "r1"}
		req := &vm.EffectRequest{Kind: graphir.KindWait}
		if q, _ := rec.live(5, req, func(*vm.EffectCompletion) {}); q != req || q.Tee != nil {
			t.Error("a wait's request was changed")
		}
	})
}

func TestRestOf(t *testing.T) {
	for _, c := range []struct {
		stored         string
		truncated      bool
		printed, total int64
		wantRest       string
		wantCut        int64
	}{
		{"abcdef", false, 0, -1, "abcdef", 0},
		{"abcdef", false, 4, -1, "ef", 0},
		{"abcdef", false, 6, 6, "", 0},
		{"cdef", true, 0, -1, "cdef", 0},
		{"cdef", true, 3, 6, "def", 0},
		{"cdef", true, 6, 6, "", 0},
		{"ijkl", true, 4, 12, "ijkl", 4},
		{"ijkl", true, 4, -1, "ijkl", -1}, // the live file broke: how much is lost is not known
	} {
		rest, cut := restOf(c.stored, c.truncated, c.printed, c.total)
		if rest != c.wantRest || cut != c.wantCut {
			t.Errorf("restOf(%q, %v, %d, %d) = %q, %d; want %q, %d", c.stored, c.truncated, c.printed, c.total, rest, cut, c.wantRest, c.wantCut)
		}
	}
}

// gc removes the live output of runs that are not running (a process that
// died left it), and resuming an interrupted run removes its own.
func TestLiveCleanup(t *testing.T) {
	s := openInternal(t)
	stale := filepath.Join(s.LiveDir(), "20261201T000000.000Z-deadbeef")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "1.out"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(100, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.LiveDir()); !os.IsNotExist(err) {
		t.Errorf("gc left %s: %v", s.LiveDir(), err)
	}

	rec, err := s.Begin(&NewRun{ID: "20261201T000001.000Z-0000beef", Flow: "f", File: "f.star", Root: "/", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	own := s.liveRunDir(rec.ID())
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); err != nil {
		t.Errorf("gc removed the live output of a running run: %v", err)
	}
	if _, err := s.Continue(rec.ID(), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("continuing the run left what its process had written: %v", err)
	}
}

func openInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), ".skein", FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkLiveTask is what live output adds to a task that prints a line
// on stdout and runs long enough for its file to be made, written and
// removed.
func BenchmarkLiveTask(b *testing.B) {
	defer func(d time.Duration) { liveDelay = d }(liveDelay)
	liveDelay = time.Hour // start makes the file, as the timer would
	s, err := Open(filepath.Join(b.TempDir(), ".skein", FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rec := &Recorder{s: s, id: "r1"}
	line := []byte("compiling main.go\n")
	req := &vm.EffectRequest{Kind: graphir.KindShell}
	b.ReportAllocs()
	for i := range b.N {
		q, done := rec.live(int64(i), req, func(*vm.EffectCompletion) {})
		q.Tee.Stdout.Write(line)
		q.Tee.Stdout.(*liveStream).start()
		done(nil)
	}
}

// BenchmarkLiveShortTask is what it adds to a task that prints a line and
// ends before its file is made: the loops of short tasks.
func BenchmarkLiveShortTask(b *testing.B) {
	rec := &Recorder{s: &Store{path: filepath.Join(b.TempDir(), FileName)}, id: "r1"}
	line := []byte("compiling main.go\n")
	req := &vm.EffectRequest{Kind: graphir.KindShell}
	b.ReportAllocs()
	for i := range b.N {
		q, done := rec.live(int64(i), req, func(*vm.EffectCompletion) {})
		q.Tee.Stdout.Write(line)
		done(nil)
	}
}

// BenchmarkLiveTaskSilent is what it adds to a task that prints nothing.
func BenchmarkLiveTaskSilent(b *testing.B) {
	rec := &Recorder{s: &Store{path: filepath.Join(b.TempDir(), FileName)}, id: "r1"}
	req := &vm.EffectRequest{Kind: graphir.KindShell}
	b.ReportAllocs()
	for i := range b.N {
		_, done := rec.live(int64(i), req, func(*vm.EffectCompletion) {})
		done(nil)
	}
}

// A store opened through a link keeps its live output beside the real
// file, where a follower that opened it by its real path looks.
func TestLiveDirThroughStoreLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", FileName)
	byReal, err := Open(real)
	if err != nil {
		t.Fatal(err)
	}
	defer byReal.Close()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	byLink, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	defer byLink.Close()
	if byLink.LiveDir() != byReal.LiveDir() {
		t.Errorf("live output through the link in %s, by the real path in %s", byLink.LiveDir(), byReal.LiveDir())
	}
}
