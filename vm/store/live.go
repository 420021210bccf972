package store

// This file is live output: while a run goes, the skein that runs it tees
// each task attempt's stdout and stderr, as the task prints them, into
// files beside the store, so that skein logs --follow on the same machine
// shows them as they come rather than when the task has ended.
//
// Layout: <store>-live/<run id>/<effect id>.out and .err (runs.db-live
// beside runs.db). A file is made liveDelay after its stream first
// prints (a short task makes none), holds at most liveMax bytes of it
// (the first ones), and is removed once the task has ended, before its
// completion is committed: a follower that opened
// it reads on through its descriptor, one that did not reads the record.
// A stream that printed more than liveMax bytes has, after its liveMax
// bytes, the decimal count of all it printed, written when the task ended.
// Nothing else reads these files, with one exception: an attempt cut short
// by its process dying has no completion, and its live files are all
// that is left of what it printed; before they are removed (a resume, gc)
// keepLive copies them into the attempt's record, for skein logs.

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// liveMax bounds each live file's content, as MaxStream bounds what the
// record keeps of a stream. (A variable for tests.)
var liveMax int64 = MaxStream

// LiveDir is the directory of the store's live output: beside the
// database's real file, as the side journals' (sideDir), so that a store
// opened through a link and one opened by its real path share it.
func (s *Store) LiveDir() string { return s.real + "-live" }

func (s *Store) liveRunDir(runID string) string { return filepath.Join(s.LiveDir(), runID) }

func (s *Store) liveFile(runID string, effect int64, stderr bool) string {
	ext := ".out"
	if stderr {
		ext = ".err"
	}
	return filepath.Join(s.liveRunDir(runID), strconv.FormatInt(effect, 10)+ext)
}

// RemoveLive removes the live output of run id: what a process that died
// left behind, or what is left when the run ends.
func (s *Store) RemoveLive(id string) {
	s.keepLive(id)
	os.RemoveAll(s.liveRunDir(id))
	os.Remove(s.LiveDir()) // once empty
}

// sweepLive removes the live output of every run that is not running in
// a live process (gc).
func (s *Store) sweepLive() {
	ents, err := os.ReadDir(s.LiveDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		if r, err := s.Get(e.Name()); err != nil || r.ID != e.Name() || r.Status != Running {
			if err == nil && r.ID == e.Name() {
				// The dead process's side journal goes in first, with the
				// start rows the live files belong to.
				s.foldDead(r.ID)
				s.keepLive(r.ID)
			}
			os.RemoveAll(filepath.Join(s.LiveDir(), e.Name()))
		}
	}
	os.Remove(s.LiveDir())
}

// keepLive copies the live output of the attempts of run id that have no
// completion (their process died) into their records, which then say what
// they printed before they were cut short: the first liveMax bytes of each
// stream, marked truncated when there were that many. An attempt that
// completed keeps its record as it is.
func (s *Store) keepLive(id string) {
	ents, err := os.ReadDir(s.liveRunDir(id))
	if err != nil {
		return
	}
	for _, e := range ents {
		name, isOut := strings.CutSuffix(e.Name(), ".out")
		if !isOut {
			name, _ = strings.CutSuffix(name, ".err")
		}
		effect, err := strconv.ParseInt(name, 10, 64)
		if err != nil || (!isOut && slices.ContainsFunc(ents, func(o os.DirEntry) bool { return o.Name() == name+".out" })) {
			continue // not ours, or done with its .out
		}
		t := s.TailLive(id, effect)
		stdout, stderr := t.Next()
		t.Close()
		truncated := int64(len(stdout)) >= liveMax || int64(len(stderr)) >= liveMax
		// Only a row still running, with nothing recorded of its streams.
		s.db.Exec(`UPDATE effects SET stdout = ?, stderr = ?, truncated = ? WHERE id = ? AND status = 'running'
			AND COALESCE(length(stdout), 0) = 0 AND COALESCE(length(stderr), 0) = 0
			AND run = (SELECT n FROM runs WHERE id = ?)`, stdout, stderr, truncated, effect, id)
	}
}

// liveDelay is how long a task runs before its output goes to live files:
// what it prints before waits in memory, so that the many short tasks of
// a loop cost no file at all. (A variable for tests.)
var liveDelay = 100 * time.Millisecond

// liveTask tees one task attempt into its live files.
type liveTask struct {
	out, err liveStream
}

// live returns the request Inner is given for attempt id of req: for a
// task or shell, a copy whose output is teed into live files, with the
// done that closes them before passing the completion on. Other effects
// pass through.
func (rec *Recorder) live(id int64, req *vm.EffectRequest, done func(*vm.EffectCompletion)) (*vm.EffectRequest, func(*vm.EffectCompletion)) {
	if req.Kind != graphir.KindTask && req.Kind != graphir.KindShell {
		return req, done
	}
	lt := &liveTask{out: liveStream{rec: rec, id: id}, err: liveStream{rec: rec, id: id, stderr: true}}
	q := *req
	q.Tee = &vm.Tee{Stdout: &lt.out, Stderr: &lt.err}
	return &q, func(c *vm.EffectCompletion) {
		lt.out.close()
		lt.err.close()
		done(c)
	}
}

// liveStream is one stream's live file. Its writes come from one
// goroutine, its timer's from another, and close after the last write.
type liveStream struct {
	rec    *Recorder
	id     int64
	stderr bool

	mu      sync.Mutex
	f       *os.File
	pending []byte      // printed before the file was made
	timer   *time.Timer // makes the file liveDelay after the first write
	n       int64       // bytes the task printed
	done    bool        // closed
	broken  bool        // the file could not be made or written: no more tries
}

func (w *liveStream) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n0 := w.n
	w.n += int64(len(p))
	if w.broken || w.done || n0 >= liveMax {
		return len(p), nil
	}
	b := p
	if n0+int64(len(b)) > liveMax {
		b = b[:liveMax-n0]
	}
	if w.f == nil {
		w.pending = append(w.pending, b...)
		if w.timer == nil {
			w.timer = time.AfterFunc(liveDelay, w.start)
		}
		return len(p), nil
	}
	w.put(b)
	return len(p), nil
}

// start makes the file, with what was printed until now.
func (w *liveStream) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.broken || w.f != nil {
		return
	}
	path := w.rec.s.liveFile(w.rec.id, w.id, w.stderr)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		// The run's first task to print makes the directory.
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		}
	}
	if err != nil {
		w.broken, w.pending = true, nil
		return
	}
	w.f = f
	w.put(w.pending)
	w.pending = nil
}

// put writes b to the file. It is called holding w.mu.
func (w *liveStream) put(b []byte) {
	if _, err := w.f.Write(b); err != nil {
		// A follower must not take a part for the whole: it finds
		// the file emptied, and reads the record.
		w.broken = true
		w.f.Truncate(0)
	}
}

// close ends the stream: it writes how much the task printed after a cut
// file's content, and removes the file.
func (w *liveStream) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done, w.pending = true, nil
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.f == nil {
		return
	}
	if !w.broken && w.n > liveMax {
		w.f.WriteString(strconv.FormatInt(w.n, 10))
	}
	w.f.Close()
	os.Remove(w.f.Name())
}

// LiveTail follows the live output of one task attempt: see
// [Store.TailLive].
type LiveTail struct {
	paths   [2]string
	f       [2]*os.File
	printed [2]int64 // content bytes handed out, of stdout and stderr
}

// TailLive follows the live output of attempt effect of run id, which
// the store has as running. Close it when done.
func (s *Store) TailLive(id string, effect int64) *LiveTail {
	return &LiveTail{paths: [2]string{s.liveFile(id, effect, false), s.liveFile(id, effect, true)}}
}

// Next returns what the attempt printed since the last call, on stdout and
// on stderr. What it printed on stdout before something it printed on
// stderr comes out no later: stderr's size is taken before stdout is read.
func (t *LiveTail) Next() (stdout, stderr []byte) {
	t.open()
	upto := t.size(1)
	return t.read(0, t.size(0)), t.read(1, upto)
}

func (t *LiveTail) open() {
	for i, p := range t.paths {
		if t.f[i] == nil {
			if f, _, err := openRegular(p); err == nil { // (a FIFO put there would hang)
				t.f[i] = f
			}
		}
	}
}

// fileSize is file i's size, or -1 when it is not open.
func (t *LiveTail) fileSize(i int) int64 {
	if t.f[i] == nil {
		return -1
	}
	fi, err := t.f[i].Stat()
	if err != nil {
		return -1
	}
	return fi.Size()
}

// size is how much of the stream file i holds now.
func (t *LiveTail) size(i int) int64 { return min(t.fileSize(i), liveMax) }

// read returns file i's content from what was handed out up to upto.
func (t *LiveTail) read(i int, upto int64) []byte {
	if t.f[i] == nil || upto <= t.printed[i] {
		return nil
	}
	b := make([]byte, upto-t.printed[i])
	n, err := t.f[i].ReadAt(b, t.printed[i])
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	t.printed[i] += int64(n)
	return b[:n]
}

// LiveRest is the rest of one stream of an attempt that has ended, beyond
// what [LiveTail.Next] handed out: Live, the live file's last bytes, then
// Record, what the record has beyond them. Cut is how many bytes the task
// printed in between that neither kept (it printed more than both keep),
// -1 when some may be missing but how many is not known.
type LiveRest struct {
	Live   []byte
	Cut    int64
	Record string
}

// Rest returns the rest of stdout and of stderr of the attempt once its
// completion e is in the record, and closes the files.
func (t *LiveTail) Rest(e *Effect) [2]LiveRest {
	t.open()
	var out [2]LiveRest
	for i, stored := range []string{e.Stdout, e.Stderr} {
		r := &out[i]
		r.Live = t.read(i, t.size(i))
		printed := t.printed[i]
		total := int64(-1) // how much the task printed, when known
		switch size := t.fileSize(i); {
		case size > liveMax:
			b := make([]byte, size-liveMax)
			if n, _ := t.f[i].ReadAt(b, liveMax); n == len(b) {
				if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
					total = v
				}
			}
		case size > 0 && size == printed:
			total = size // all of it (an emptied file is shorter)
		}
		r.Record, r.Cut = restOf(stored, e.Truncated, printed, total)
	}
	t.Close()
	return out
}

// restOf is what of stored, the record's tail of a stream, follows its
// first printed bytes, and how many bytes in between are in neither
// (-1: not known). total is how much the task printed (-1: not known).
func restOf(stored string, truncated bool, printed, total int64) (string, int64) {
	switch {
	case !truncated:
		// The record has the whole stream.
		return stored[min(printed, int64(len(stored))):], 0
	case printed == 0:
		return stored, 0 // as the record has it
	case total < 0:
		return stored, -1
	}
	start := total - int64(len(stored)) // where stored begins in the stream
	switch {
	case printed >= total:
		return "", 0
	case printed >= start:
		return stored[printed-start:], 0
	}
	return stored, start - printed
}

// Close closes the files.
func (t *LiveTail) Close() {
	for i, f := range t.f {
		if f != nil {
			f.Close()
			t.f[i] = nil
		}
	}
}
