package store

// This file writes: a run's record when it starts and ends, and the
// journal, the producer that commits each completion of an effect before
// passing it on to the run.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// Run statuses beyond vm's: a run that is going, one parked on an
// approval, and one whose process died (derived, never stored).
const (
	Running     = "running"
	Waiting     = "waiting"
	Interrupted = "interrupted"
)

// MaxStream bounds each of a task's stdout and stderr as stored (the
// tail; vm already keeps only the tail of vm.Options.MaxOutput).
const MaxStream = 1 << 20

// Source is one file a run loaded: the form lang/frontend reads them in.
type Source = graphir.Source

// sourceHash is the hex SHA-256 of a source's text, under which the text
// is stored once however many runs load it.
func sourceHash(s Source) string {
	h := sha256.Sum256(s.Text)
	return hex.EncodeToString(h[:])
}

// RunOptions are the options a run was started with, which a resume
// reuses (unless it is given others).
type RunOptions struct {
	Parallel int           `json:"parallel,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	// MaxLoadSteps is the load-time step budget the flow and its child
	// flows were loaded with (0: the default).
	MaxLoadSteps uint64 `json:"max_load_steps,omitempty"`
	// MaxTokens bounds the tokens of the run's model calls (0: the flow's
	// own bound, if any).
	MaxTokens int `json:"max_tokens,omitempty"`
	// Cassette is the absolute path of the file that answered (and
	// recorded) the run's model calls; ReplayOnly: only from it.
	Cassette   string `json:"cassette,omitempty"`
	ReplayOnly bool   `json:"replay_only,omitempty"`
	// Set are the outputs a what-if fork gives top-level steps instead of
	// running them (resume --set), as JSON by step name.
	Set map[string]json.RawMessage `json:"set,omitempty"`
	// By is who started the run, when a front end knows (skein serve:
	// its user); "" for the command line.
	By string `json:"by,omitempty"`
	// Model is --model: "stub", or "stub:" and the absolute path of its
	// rules, the offline model that answered every model call.
	Model string `json:"model,omitempty"`
}

// NewRun describes a run about to start.
type NewRun struct {
	ID          string
	Flow        string
	File        string
	Root        string
	Sources     []Source
	Inputs      *stdlib.Map
	Options     RunOptions
	ResumedFrom string
	Started     time.Time
}

// Recorder records one run: create it with [Store.Begin] or
// [Store.Continue], use it as the run's [vm.EffectProducer] (it wraps
// Inner, which does the work), route the run's events through
// [Recorder.Events], and call Finish when the run ends.
//
// Journal writes go out in batches. A batch is committed (made durable
// against a crash of the process) by one write(2) of a record to the run's
// side journal (side.go), and reaches SQLite later, with the batches
// committed meanwhile, in one transaction sqlDelay (10 ms) after the first
// of them, off the run's critical path; Finish and Park write what is left
// to SQLite and delete the side journal; a run whose process died has its
// side journal folded in by the next process that opens the store.
//
// A completion is handed to the run as soon as it is queued, so that the
// run can work out what comes next while it commits, but nothing the run
// does can be seen before the completion is committed: the effects it
// starts are started (their processes executed, their prompts shown) only
// once their start rows, queued after the completion, are committed in
// the same batch or a later one; the events it emits wait in Events;
// Finish commits what is queued with the run's end. A batch commits when
// the run can do nothing more until a completion arrives
// ([vm.EffectIdler]), or at the latest flushDelay (10 ms) after its first
// write. A crash before the commit loses the batch as a whole, and
// nothing of it was acted on.
type Recorder struct {
	Inner vm.EffectProducer

	s  *Store
	n  int64
	id string

	mu    sync.Mutex
	done  int64 // the completion order of the latest completion queued
	done0 int64 // ... when this process took the run over
	last  int64 // the id of the latest effect started

	batch   []write       // queued writes, in order
	then    []func(error) // what waits for them, told how the commit went
	timer   *time.Timer   // commits the batch flushDelay after its first write
	armed   bool
	handed  int64 // completions handed to the run
	durable int64 // ... of which committed
	failed  error // a commit failed: nothing is written any more
	held    []heldEvent
	telling bool // a goroutine passes held events on
	// clear says, for Events without taking mu, that nothing holds events
	// back: no held event, none being told, every completion handed to
	// the run committed. Stored holding mu whenever one of those changes
	// (see settle); a run of fn steps keeps it true and its events pass
	// straight on.
	clear atomic.Bool

	commitMu sync.Mutex // one batch at a time, in order

	side     *sideFile   // written holding commitMu
	sqlq     []write     // in the side journal, not yet in SQLite (mu)
	sqlqSize int         // its size in the side journal, in bytes (mu)
	sqlArmed bool        // sqlTimer will write sqlq to SQLite (mu)
	sqlTimer *time.Timer // ... sqlDelay after the first batch of it
	sqlMu    sync.Mutex  // one SQLite transaction at a time, in order
}

// write is one queued write: an effect's start row (ins), its end, or the
// run's (fin).
type write struct {
	ins, fin bool
	step     string
	args     []any
}

// heldEvent is an event emitted once the run had been handed completion
// number after, waiting for its commit.
type heldEvent struct {
	f     func(*vm.Event)
	ev    vm.Event
	after int64
}

// flushDelay bounds how long a journal write waits for the run to go
// idle (a run evaluating a long fn step): the run's events and its next
// effects wait for the commit. (A variable for tests.)
var flushDelay = 10 * time.Millisecond

// ID is the run's id.
func (rec *Recorder) ID() string { return rec.id }

// Store is the store the run is recorded in.
func (rec *Recorder) Store() *Store { return rec.s }

// Begin records a new run as running, owned by this process, with its
// sources and inputs, in one transaction: a store that cannot be written
// (read-only, disk full) fails here, before anything runs.
func (s *Store) Begin(nr *NewRun) (*Recorder, error) {
	inputs := "{}"
	if nr.Inputs != nil {
		b, err := toJSON(nr.Inputs)
		if err != nil {
			return nil, fmt.Errorf("inputs: %v", err)
		}
		inputs = string(b)
	}
	opts, _ := json.Marshal(nr.Options)
	pid, start, host := owner()
	side, err := s.openSide(nr.ID)
	if err != nil {
		return nil, s.fail(err)
	}
	tx, err := s.db.Begin()
	if err != nil {
		side.remove()
		return nil, s.fail(err)
	}
	defer tx.Rollback()
	committed := false
	defer func() {
		if !committed {
			side.remove()
		}
	}()
	var resumed any
	if nr.ResumedFrom != "" {
		resumed = nr.ResumedFrom
	}
	res, err := tx.Exec(`INSERT INTO runs (id, flow, file, root, inputs, options, status, started, resumed_from, owner_pid, owner_start, owner_host)
		VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)`,
		nr.ID, nr.Flow, nr.File, nr.Root, inputs, string(opts), nanos(nr.Started), resumed, pid, start, host)
	if err != nil {
		return nil, s.fail(err)
	}
	n, _ := res.LastInsertId()
	for i, src := range nr.Sources {
		if err := addSource(tx, n, i, src); err != nil {
			return nil, s.fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, s.fail(err)
	}
	committed = true
	lo, _ := effectIDs(n)
	rec := &Recorder{s: s, n: n, id: nr.ID, last: lo, Inner: vm.Local{}, side: side}
	rec.clear.Store(true)
	return rec, nil
}

func addSource(tx *sql.Tx, run int64, ord int, src Source) error {
	h := sourceHash(src)
	if _, err := tx.Exec(`INSERT OR IGNORE INTO blobs (hash, text) VALUES (?, ?)`, h, src.Text); err != nil {
		return err
	}
	_, err := tx.Exec(`INSERT INTO sources (run, ord, path, hash) VALUES (?, ?, ?, ?)`, run, ord, src.Path, h)
	return err
}

// AddSource records a file the run loaded after it started (a templated
// child flow). A file already recorded with the same text is skipped.
func (rec *Recorder) AddSource(src Source) error {
	tx, err := rec.s.db.Begin()
	if err != nil {
		return rec.s.fail(err)
	}
	defer tx.Rollback()
	var ord int
	var dup int
	if err := tx.QueryRow(`SELECT COALESCE(MAX(ord), -1) + 1, COUNT(CASE WHEN path = ? AND hash = ? THEN 1 END) FROM sources WHERE run = ?`,
		src.Path, sourceHash(src), rec.n).Scan(&ord, &dup); err != nil {
		return rec.s.fail(err)
	}
	if dup > 0 {
		return nil
	}
	if err := addSource(tx, rec.n, ord, src); err != nil {
		return rec.s.fail(err)
	}
	return rec.s.fail(tx.Commit())
}

// HeldError is returned by [Store.Continue] for a run another live
// process owns: it runs it, or continues it (one resume per run).
type HeldError struct {
	Run  string
	PID  int
	Host string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("run %s is held by process %d on %s", e.Run, e.PID, e.Host)
}

// Continue takes over a run that has not ended (interrupted or waiting)
// to continue it under its own id: it becomes running, owned by this
// process, with opts as its options. A run that another live process
// owns (it runs it, or has just taken it over) is not taken:
// [HeldError] says which process holds it.
func (s *Store) Continue(id string, opts RunOptions) (*Recorder, error) {
	optsJSON, _ := json.Marshal(opts)
	pid, start, host := owner()
	// What the run's dead process left in its side journal goes in
	// first: the run continues from there.
	if err := s.foldDead(id); err != nil {
		return nil, s.fail(err)
	}
	side, err := s.openSide(id)
	if err != nil {
		return nil, s.fail(err)
	}
	committed := false
	defer func() {
		if !committed {
			side.remove()
		}
	}()
	tx, err := s.db.Begin()
	if err != nil {
		return nil, s.fail(err)
	}
	defer tx.Rollback()
	var n int64
	var done sql.NullInt64
	var status, oStart, oHost string
	var oPID int
	// The transaction is immediate (the store's _txlock): of two
	// processes continuing the run at once, the second reads the owner
	// the first wrote, alive, and stops here.
	if err := tx.QueryRow(`SELECT n, status, COALESCE(owner_pid, 0), COALESCE(owner_start, ''), COALESCE(owner_host, '') FROM runs WHERE id = ?`, id).
		Scan(&n, &status, &oPID, &oStart, &oHost); err != nil {
		return nil, s.fail(err)
	}
	if status == Running && oPID > 0 && (oPID != pid || oStart != start || oHost != host) && isAlive(oPID, oStart, oHost) {
		return nil, &HeldError{Run: id, PID: oPID, Host: oHost}
	}
	lo, hi := effectIDs(n)
	last := lo
	if err := tx.QueryRow(`SELECT MAX(done), COALESCE(MAX(id), ?) FROM effects WHERE id > ? AND id < ?`, lo, lo, hi).Scan(&done, &last); err != nil {
		return nil, s.fail(err)
	}
	if _, err := tx.Exec(`UPDATE runs SET status = 'running', ended = NULL, options = ?, owner_pid = ?, owner_start = ?, owner_host = ? WHERE n = ?`,
		string(optsJSON), pid, start, host, n); err != nil {
		return nil, s.fail(err)
	}
	if err := tx.Commit(); err != nil {
		return nil, s.fail(err)
	}
	committed = true
	s.RemoveLive(id) // what the process that died left
	rec := &Recorder{s: s, n: n, id: id, done: done.Int64, done0: done.Int64, last: last, Inner: vm.Local{}, side: side}
	rec.clear.Store(true)
	return rec, nil
}

// Start implements [vm.EffectProducer]: it queues the start row of the
// attempt, hands the attempt to Inner once that row is committed, and
// queues the completion before passing it on. A store that cannot be
// written stops the run (store_error).
func (rec *Recorder) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	rendered := renderedJSON(req)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	id := rec.queueStart(req, req.Attempt, rendered)
	rec.then = append(rec.then, func(err error) {
		if err != nil {
			done(rec.storeStop(err))
			return
		}
		if req.Kind == graphir.KindWait {
			go func() {
				// A wait is due at a recorded time: a resumed run
				// waits only for what is left of it.
				due, err := rec.due(req)
				if err != nil {
					done(rec.storeStop(err))
					return
				}
				q := *req
				q.Wait = max(0, time.Until(due))
				rec.Inner.Start(ctx, &q, rec.ended(id, req, done))
			}()
			return
		}
		q, ended := rec.live(id, req, rec.ended(id, req, done))
		rec.Inner.Start(ctx, q, ended)
	})
}

// ended returns the done of attempt id's effect: it queues the completion
// and hands it on.
func (rec *Recorder) ended(id int64, req *vm.EffectRequest, done func(*vm.EffectCompletion)) func(*vm.EffectCompletion) {
	return func(c *vm.EffectCompletion) {
		if faultStep != "" && req.Step == faultStep {
			crash()
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.failed != nil {
			done(rec.storeStop(rec.failed))
			return
		}
		if err := rec.queueEnd(id, req, c); err != nil {
			done(rec.storeStop(err))
			return
		}
		rec.handed++
		rec.settle()
		// Handed on while rec.mu is held: the run's inbox gets the
		// completions in the order of their done numbers.
		done(c)
	}
}

// queueStart queues the start row of an attempt, with what it runs
// (renderedJSON's), and returns its id. It is called holding rec.mu.
func (rec *Recorder) queueStart(req *vm.EffectRequest, attempt int, rendered any) int64 {
	rec.last++
	id := rec.last
	rec.queue(write{ins: true, step: req.Step, args: []any{id, rec.n, EffectPath(req), req.Step, req.Kind.String(), req.Visit, attempt, req.OnExit, nanos(time.Now()), rendered}})
	return id
}

// renderedJSON is what req runs as its start row's rendered column has
// it: [vm.EffectRequest.Rendered] as JSON (its keys masked), or nil for
// nothing.
func renderedJSON(req *vm.EffectRequest) any {
	r := req.Rendered()
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	return string(b)
}

// queue adds w to the batch, making sure it commits within flushDelay. It
// is called holding rec.mu.
func (rec *Recorder) queue(w write) {
	rec.batch = append(rec.batch, w)
	if rec.armed || faultBatch != "" || faultSide != "" {
		// (With a fault hook set, only the run going idle commits: the
		// batch it kills is the one the run filled, whatever the
		// timing. With the timer, a completion could commit alone
		// while the run, slowed down, had not yet queued the start
		// rows it leads to.)
		return
	}
	rec.armed = true
	if rec.timer == nil {
		rec.timer = time.AfterFunc(flushDelay, rec.fire)
	} else {
		rec.timer.Reset(flushDelay)
	}
}

// fire is the timer's: it commits what is queued. The timer is not
// stopped when the run commits first (on going idle): stopping and
// arming it for every batch would cost more system calls than the
// batch's commit.
func (rec *Recorder) fire() {
	rec.mu.Lock()
	rec.armed = false
	rec.mu.Unlock()
	rec.flush()
}

// Idle implements [vm.EffectIdler]: the run waits for a completion, so
// what it queued commits now, and Inner is told, if it holds work back
// too (an approval held open until a decision comes).
func (rec *Recorder) Idle(flow []string) {
	rec.flush()
	if in, ok := rec.Inner.(vm.EffectIdler); ok {
		in.Idle(flow)
	}
}

// flush makes the queued writes durable (the side journal), then tells
// what waited for them. It returns the error it told them (that of the
// write, or of the one that failed before).
func (rec *Recorder) flush() error {
	return rec.flushTo(false, nil)
}

// flushTo is flush; with toSQL it writes everything to SQLite instead,
// in one transaction with final if that is not nil (the run's end row),
// and deletes the side journal: what Finish and Park do. With toSQL, it
// returns the error of the transaction.
func (rec *Recorder) flushTo(toSQL bool, final *write) error {
	rec.commitMu.Lock()
	defer rec.commitMu.Unlock()
	rec.mu.Lock()
	batch, then, upto, failed := rec.batch, rec.then, rec.handed, rec.failed
	rec.batch, rec.then = nil, nil
	rec.mu.Unlock()
	err := failed
	if err == nil && len(batch) > 0 && faultBatch != "" {
		for _, w := range batch {
			if w.ins && w.step == faultBatch {
				crash()
			}
		}
	}
	var sqlErr error
	switch {
	case toSQL:
		// A batch queued after a failure never reached the side
		// journal, and what waits for it is told the failure; what
		// did reach it goes in now, the whole of it or nothing.
		if err != nil {
			batch = nil
		}
		sqlErr = rec.commitSQL(batch, final)
		if sqlErr == nil {
			// SQLite has it all: the side journal goes, off the
			// run's way (deleting a file costs as much as the
			// commit of a few tasks); a crash first leaves it for a
			// fold that changes nothing.
			rec.side.removeLater(rec.s)
		}
		if err == nil {
			err = sqlErr
		}
	case len(batch) > 0 && err == nil:
		if err = rec.sideWrite(batch); err == nil && rec.behind() {
			// SQLite falls behind (tasks that fail at once and are
			// retried at once, each with megabytes of output): the
			// run waits for it, rather than queue without bound. A
			// failure stops the run at its next completion, as the
			// timer's does.
			rec.commitSQL(nil, nil)
		}
	}
	rec.mu.Lock()
	if err != nil {
		if rec.failed == nil {
			rec.failed = err
		}
	} else {
		rec.durable = upto
		rec.settle()
	}
	rec.mu.Unlock()
	for _, f := range then {
		f(err)
	}
	rec.tell()
	if toSQL {
		return sqlErr
	}
	return err
}

// sideWrite writes batch to the side journal, where it is durable, and
// queues it for SQLite. It is called holding rec.commitMu.
func (rec *Recorder) sideWrite(batch []write) error {
	sf := rec.side
	b, err := appendBatch(sf.buf[:0], batch)
	if sf.buf = b[:0]; cap(b) > maxSideBuf {
		sf.buf = nil // a batch of big outputs: not kept for the next
	}
	if err != nil {
		return err
	}
	if sf.f == nil {
		return errors.New("the run's record is closed")
	}
	err = sf.write(b)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err != nil {
		// A write cut short is a torn record, which ends the file for
		// a fold; nothing may follow it.
		return err
	}
	if faultSide != "" {
		for _, w := range batch {
			if !w.ins && w.step == faultSide {
				crash()
			}
		}
	}
	rec.sqlq = append(rec.sqlq, batch...)
	rec.sqlqSize += len(b)
	if !rec.sqlArmed && faultSide == "" {
		rec.sqlArmed = true
		if rec.sqlTimer == nil {
			rec.sqlTimer = time.AfterFunc(sqlDelay, rec.sqlFire)
		} else {
			rec.sqlTimer.Reset(sqlDelay)
		}
	}
	return nil
}

// maxSQLQueue bounds the bytes of journal writes the side journal holds
// and SQLite not yet: past it, the run's next flush writes them to SQLite
// before the run goes on. maxSideBuf bounds the buffer kept for encoding
// the next batch.
const (
	maxSQLQueue = 64 << 20
	maxSideBuf  = 1 << 20
)

// behind reports whether the writes queued for SQLite are past
// maxSQLQueue.
func (rec *Recorder) behind() bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.sqlqSize > maxSQLQueue
}

// sqlDelay is how long what reached the side journal waits to be written
// to SQLite, where other processes read it (skein show, logs --follow):
// writing several batches in one transaction costs less, and none of it
// is on the run's way. (A variable for tests.)
var sqlDelay = 10 * time.Millisecond

// sideTruncateAt is how large a side journal grows before it is emptied
// (back to its header) once SQLite holds all of it.
const sideTruncateAt = 64 << 10

// sqlFire is the SQLite timer's: it writes to SQLite what the side journal
// holds and SQLite does not, and empties the side journal when it is
// large and all in. A failure stops the run at its next completion (what
// it acted on is in the side journal, which a fold takes in later).
func (rec *Recorder) sqlFire() {
	rec.mu.Lock()
	rec.sqlArmed = false
	rec.mu.Unlock()
	if err := rec.commitSQL(nil, nil); err != nil {
		return
	}
	if sqlCommitted != nil {
		sqlCommitted()
	}
	rec.commitMu.Lock()
	defer rec.commitMu.Unlock()
	if !rec.sqlMu.TryLock() {
		// Another transaction (the next timer's) is writing batches
		// that have left sqlq but are not committed yet: SQLite does
		// not hold them, the side journal must keep them. That
		// transaction's timer empties it.
		return
	}
	defer rec.sqlMu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if sf := rec.side; sf.f != nil && len(rec.sqlq) == 0 && sf.off >= sideTruncateAt {
		// (Holding commitMu: no write goes to the file meanwhile;
		// holding sqlMu, no transaction is under way: an empty sqlq
		// means SQLite holds it all.)
		if err := sf.f.Truncate(sf.header); err == nil {
			sf.off = sf.header
		}
	}
}

// sqlCommitted and sqlTaken, when set, are called by sqlFire once its
// transaction is committed, and by commitSQL once it has taken the writes
// it commits (tests make two commits overlap with them).
var sqlCommitted, sqlTaken func()

// Sync writes to SQLite at once what the run's side journal holds and
// SQLite does not yet, so that readers of the store see all of it.
func (rec *Recorder) Sync() error {
	return rec.s.fail(rec.commitSQL(nil, nil))
}

// commitSQL writes to SQLite, in one transaction, what the side journal
// holds and SQLite does not, then extra and final.
func (rec *Recorder) commitSQL(extra []write, final *write) error {
	rec.sqlMu.Lock()
	defer rec.sqlMu.Unlock()
	rec.mu.Lock()
	all, size := rec.sqlq, rec.sqlqSize
	rec.sqlq, rec.sqlqSize = nil, 0
	rec.mu.Unlock()
	if sqlTaken != nil {
		sqlTaken()
	}
	n := len(all)
	all = append(all, extra...)
	if final != nil {
		all = append(all, *final)
	}
	if len(all) == 0 {
		return nil
	}
	err := rec.s.commitBatch(all)
	if err != nil {
		rec.mu.Lock()
		rec.sqlq = append(all[:n:n], rec.sqlq...) // still only in the side journal
		rec.sqlqSize += size
		if rec.failed == nil {
			rec.failed = err
		}
		rec.mu.Unlock()
	}
	return err
}

// commitBatch writes batch in one transaction, on the journal's
// connection.
func (s *Store) commitBatch(batch []write) error {
	batch = merge(batch)
	s.journal.Lock()
	defer s.journal.Unlock()
	stmt := func(w write) *sql.Stmt {
		switch {
		case w.ins && w.fin:
			return s.insWhole
		case w.ins:
			return s.insEffect
		case w.fin:
			return s.endRun
		}
		return s.endEffect
	}
	if len(batch) == 1 {
		_, err := stmt(batch[0]).Exec(batch[0].args...)
		return err
	}
	if _, err := s.begin.Exec(); err != nil {
		return err
	}
	for _, w := range batch {
		if _, err := stmt(w).Exec(w.args...); err != nil {
			s.rollback.Exec()
			return err
		}
	}
	if _, err := s.commit.Exec(); err != nil {
		s.rollback.Exec()
		return err
	}
	return nil
}

// merge returns batch with each start row whose end follows it in the
// batch replaced by one write of the whole row (ins and fin both set),
// and that end dropped: one insertion instead of an insertion and an
// update.
func merge(batch []write) []write {
	var at map[int64]int // start rows by effect id: their index in out
	out := batch[:0:0]
	for _, w := range batch {
		switch {
		case w.ins:
			if at == nil {
				at = map[int64]int{}
			}
			at[w.args[0].(int64)] = len(out)
		case !w.fin:
			id := w.args[len(w.args)-1].(int64)
			if i, ok := at[id]; ok {
				st := out[i].args
				// id, run, path, step, kind, visit, attempt, on_exit,
				// started, rendered, then the end's columns but its id.
				whole := make([]any, 0, insArgs+endArgs-1)
				whole = append(whole, st...)
				whole = append(whole, w.args[:len(w.args)-1]...)
				out[i] = write{ins: true, fin: true, step: w.step, args: whole}
				delete(at, id)
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

// Events returns f, the run's [vm.Options.OnEvent], holding back each
// event the run emits after it was handed a completion not yet committed,
// until that commit: nothing the run does upon a completion shows before
// the completion is in the record. Events held when a commit fails are
// never told. A held event is a copy (the run reuses ev).
func (rec *Recorder) Events(f func(*vm.Event)) func(*vm.Event) {
	if f == nil {
		return nil
	}
	return func(ev *vm.Event) {
		if rec.clear.Load() {
			// Nothing waits for a commit (a run of fn steps): no lock.
			// clear turns false, holding mu, before a completion is
			// handed to the run, so before any event that must wait.
			f(ev)
			return
		}
		rec.mu.Lock()
		if len(rec.held) == 0 && !rec.telling && rec.durable == rec.handed {
			rec.mu.Unlock()
			f(ev)
			return
		}
		rec.held = append(rec.held, heldEvent{f: f, ev: *ev, after: rec.handed})
		rec.clear.Store(false)
		rec.mu.Unlock()
		rec.tell()
	}
}

// settle updates clear from the state it sums up. It is called holding
// rec.mu.
func (rec *Recorder) settle() {
	rec.clear.Store(len(rec.held) == 0 && !rec.telling && rec.durable == rec.handed)
}

// tell passes on, in order, the held events whose completions are
// committed.
func (rec *Recorder) tell() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.telling {
		return // the goroutine telling them goes on with these
	}
	for {
		i := 0
		for i < len(rec.held) && rec.held[i].after <= rec.durable {
			i++
		}
		if i == 0 {
			return
		}
		out := slices.Clone(rec.held[:i])
		rec.held = slices.Delete(rec.held, 0, i)
		rec.telling = true
		rec.settle()
		rec.mu.Unlock()
		for i := range out {
			out[i].f(&out[i].ev)
		}
		rec.mu.Lock()
		rec.telling = false
		rec.settle()
	}
}

func (rec *Recorder) storeStop(err error) *vm.EffectCompletion {
	return &vm.EffectCompletion{Stop: &graphir.Error{Code: codes.StoreError,
		Msg: fmt.Sprintf("cannot record the run in %s: %v", rec.s.path, storeErr(err))}}
}

// queueEnd queues how attempt id ended, with the next completion order.
// It is called holding rec.mu.
func (rec *Recorder) queueEnd(id int64, req *vm.EffectRequest, c *vm.EffectCompletion) error {
	status := "failed"
	switch {
	case c.OK:
		status = "succeeded"
	case c.Cancelled:
		status = "cancelled"
	case c.Park:
		status = Waiting
	}
	// The journal's columns and the side journal's values are plain
	// strings.
	code, msg := string(c.Code), c.Error
	if c.Stop != nil {
		code, msg = string(c.Stop.Code), c.Stop.Msg
	}
	var output any
	task := req.Kind == graphir.KindTask || req.Kind == graphir.KindShell
	if !task && c.Output != nil && c.Output != starlark.None {
		b, err := toJSON(c.Output)
		if err != nil {
			return err
		}
		output = string(b)
	}
	var exit, stdout, stderr any
	if task {
		exit, stdout, stderr = c.ExitCode, tail(c.Stdout), tail(c.Stderr)
	}
	var mdl, answer, ptok, ctok, usage any
	if c.Model != "" || c.Answer != "" || c.Usage.Total() > 0 {
		mdl, answer, ptok, ctok = c.Model, c.Answer, c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	if u := c.Usage; u.CachedTokens != 0 || u.ReasoningTokens != 0 || u.Attempts != 0 || u.Cost != 0 {
		b, err := json.Marshal(u)
		if err != nil {
			return err
		}
		usage = string(b)
	}
	rec.done++
	rec.queue(write{step: req.Step, args: []any{status, rec.done, code, msg, output, exit, stdout, stderr, c.Truncated, nanos(time.Now()), mdl, answer, ptok, ctok, usage, id}})
	return nil
}

func tail(s string) string {
	if len(s) > MaxStream {
		return s[len(s)-MaxStream:]
	}
	return s
}

// Finish records how the run ended, with its result object, in one
// transaction with the journal writes still queued, and checkpoints the
// store. If those writes cannot be committed, the run did not end as res
// says: res becomes a run stopped by store_error.
func (rec *Recorder) Finish(res *vm.Result) error {
	defer rec.s.RemoveLive(rec.id)
	rec.mu.Lock()
	failed := rec.failed
	rec.mu.Unlock()
	if failed != nil {
		rec.storeFailed(res, failed)
	}
	fin, err := rec.endRow(res)
	if err != nil {
		return err
	}
	if rec.sqlTimer != nil {
		rec.sqlTimer.Stop()
	}
	if err := rec.flushTo(true, fin); err != nil {
		// Nothing of the transaction is in: record the run as stopped
		// (if the store takes even that).
		rec.storeFailed(res, err)
		if fin, err = rec.endRow(res); err != nil {
			return err
		}
		if err := rec.s.commitBatch([]write{*fin}); err != nil {
			// Nor does its result (its steps' outputs) fit, perhaps:
			// the status and the error without it.
			fin.args[5] = nil
			if err := rec.s.commitBatch([]write{*fin}); err != nil {
				return rec.s.fail(err)
			}
		}
		// What the side journal holds beyond SQLite stays in it, for a
		// fold once this process is gone.
		rec.side.close()
	}
	if rec.done-rec.done0 >= checkpointAfter {
		rec.s.Checkpoint()
	}
	return nil
}

// endRow is the write that records how the run ended.
func (rec *Recorder) endRow(res *vm.Result) (*write, error) {
	b, err := res.AppendJSON(nil, "")
	if err != nil {
		return nil, err
	}
	var code, step, msg any
	if res.Error != nil {
		code, step, msg = string(res.Error.Code), res.Error.Step, res.Error.Msg
	}
	var ended any = nanos(res.Started.Add(res.Duration))
	if res.Status == vm.Waiting {
		ended = nil // not over: it waits for a decision
	}
	// b is not written again: the text shares it rather than copy a
	// result that can hold outputs of tens of megabytes.
	return &write{fin: true, args: []any{string(res.Status), code, step, msg, ended, unsafe.String(unsafe.SliceData(b), len(b)), rec.n}}, nil
}

// storeFailed makes res a run stopped because its record could not be
// written, unless it already is one.
func (rec *Recorder) storeFailed(res *vm.Result, err error) {
	if res.Error != nil && res.Error.Code == codes.StoreError {
		return
	}
	res.Status = vm.Failed
	res.Error = rec.storeStop(err).Stop
}

// checkpointAfter is how many completions a run records before its end
// folds the write-ahead log back into the database. A checkpoint costs a
// sync of the file, which would double the cost of a small run; the log of
// small runs is folded back by a later run's checkpoint or by SQLite's own
// (every 1,000 pages), and is as durable meanwhile.
const checkpointAfter = 64

// Park records the run as waiting for a decision: no process owns it.
func (rec *Recorder) Park() error {
	defer rec.s.RemoveLive(rec.id)
	if err := rec.flushTo(true, nil); err != nil {
		return rec.s.fail(err)
	}
	_, err := rec.s.db.Exec(`UPDATE runs SET status = 'waiting', owner_pid = NULL WHERE n = ?`, rec.n)
	rec.s.Checkpoint()
	return rec.s.fail(err)
}

func (s *Store) fail(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("run store %s: %v", s.path, storeErr(err))
}

// EffectPath locates a request's step for the journal: the child-flow
// chain and scope, joined by "/" ("per_file[2]/lint/polish#3").
func EffectPath(req *vm.EffectRequest) string {
	switch {
	case len(req.Flow) == 0 && len(req.Scope) == 0:
		return ""
	case len(req.Scope) == 0:
		return strings.Join(req.Flow, "/")
	case len(req.Flow) == 0:
		return strings.Join(req.Scope, "/")
	}
	return strings.Join(req.Flow, "/") + "/" + strings.Join(req.Scope, "/")
}

func toJSON(v starlark.Value) ([]byte, error) {
	g, err := stdlib.ToGo(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(g)
}

// owner identifies this process: its pid, its start time (so that a
// reused pid is not mistaken for it) and the host. (A variable for tests,
// which play a second process.)
var owner = thisProcess

func thisProcess() (int, string, string) {
	pid := os.Getpid()
	host, _ := os.Hostname()
	return pid, procStart(pid), host
}

// procStart is the start time of process pid as the kernel tells it
// (Linux: field 22 of /proc/PID/stat), or "" where there is no /proc.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields resume after ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 overall
}

// alive reports whether the owner recorded for a running run still runs.
func alive(pid int, start, host string) bool {
	if h, _ := os.Hostname(); host != h {
		return true // another machine's: cannot tell, assume it runs
	}
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	if procState(pid) == "Z" {
		return false // dead, not yet reaped
	}
	if start != "" {
		return procStart(pid) == start
	}
	return true
}

// procState is the state letter of process pid ("R", "S", "Z" for a
// zombie...), or "" where there is no /proc.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 0 {
			return f[0]
		}
	}
	return ""
}

// due returns when the wait of req is due, recording it the first time the
// wait is asked for.
func (rec *Recorder) due(req *vm.EffectRequest) (time.Time, error) {
	path := EffectPath(req)
	if _, err := rec.s.db.Exec(`INSERT OR IGNORE INTO waits (run, path, step, visit, due) VALUES (?, ?, ?, ?, ?)`,
		rec.n, path, req.Step, req.Visit, nanos(time.Now().Add(req.Wait))); err != nil {
		return time.Time{}, err
	}
	var due int64
	err := rec.s.db.QueryRow(`SELECT due FROM waits WHERE run = ? AND path = ? AND step = ? AND visit = ?`, rec.n, path, req.Step, req.Visit).Scan(&due)
	return fromNanos(due), err
}

// Waits returns the due times of the run's waits, by "path/step#visit".
func (s *Store) Waits(id string) (map[string]time.Time, error) {
	rows, err := s.db.Query(`SELECT w.path, w.step, w.visit, w.due FROM waits w JOIN runs r ON r.n = w.run WHERE r.id = ?`, id)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var path, step string
		var visit int
		var due int64
		if err := rows.Scan(&path, &step, &visit, &due); err != nil {
			return nil, s.fail(err)
		}
		out[fmt.Sprintf("%s/%s#%d", path, step, visit)] = fromNanos(due)
	}
	return out, s.fail(rows.Err())
}

// record journals a whole attempt at once, committed before it returns: a
// replayed completion copied into a new run's record.
func (rec *Recorder) record(req *vm.EffectRequest, attempt int, c *vm.EffectCompletion) error {
	rec.mu.Lock()
	if rec.failed != nil {
		rec.mu.Unlock()
		return rec.failed
	}
	id := rec.queueStart(req, attempt, renderedJSON(req))
	err := rec.queueEnd(id, req, c)
	rec.mu.Unlock()
	if err != nil {
		return err
	}
	return rec.flush()
}
