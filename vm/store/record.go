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
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
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

// Source is one file a run loaded.
type Source struct {
	Path string
	Text []byte
}

// Hash is the hex SHA-256 of the text.
func (s Source) Hash() string {
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
// Inner, which does the work), and call Finish when the run ends.
type Recorder struct {
	Inner vm.EffectProducer

	s  *Store
	n  int64
	id string

	mu    sync.Mutex
	done  int64 // the completion order of the latest commit
	done0 int64 // ... when this process took the run over
	last  int64 // the id of the latest effect started
}

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
	tx, err := s.db.Begin()
	if err != nil {
		return nil, s.fail(err)
	}
	defer tx.Rollback()
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
	lo, _ := effectIDs(n)
	return &Recorder{s: s, n: n, id: nr.ID, last: lo, Inner: vm.Local{}}, nil
}

func addSource(tx *sql.Tx, run int64, ord int, src Source) error {
	h := src.Hash()
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
		src.Path, src.Hash(), rec.n).Scan(&ord, &dup); err != nil {
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

// Continue takes over a run that has not ended (interrupted or waiting)
// to continue it under its own id: it becomes running, owned by this
// process, with opts as its options.
func (s *Store) Continue(id string, opts RunOptions) (*Recorder, error) {
	optsJSON, _ := json.Marshal(opts)
	pid, start, host := owner()
	tx, err := s.db.Begin()
	if err != nil {
		return nil, s.fail(err)
	}
	defer tx.Rollback()
	var n int64
	var done sql.NullInt64
	if err := tx.QueryRow(`SELECT n FROM runs WHERE id = ?`, id).Scan(&n); err != nil {
		return nil, s.fail(err)
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
	return &Recorder{s: s, n: n, id: id, done: done.Int64, done0: done.Int64, last: last, Inner: vm.Local{}}, nil
}

// faultStep names a step whose completions are never committed: the
// process kills itself between the effect's end and the commit. Tests set
// it to prove that such a crash loses nothing but that one attempt.
var faultStep = os.Getenv("SKEIN_TEST_CRASH_BEFORE_COMMIT")

// Start implements [vm.EffectProducer]: it records that the attempt
// started, hands it to Inner, and commits the completion before passing
// it on. A store that cannot be written stops the run (store_error).
func (rec *Recorder) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	go func() {
		id, err := rec.started(req, req.Attempt)
		if err != nil {
			done(rec.storeStop(err))
			return
		}
		if req.Kind == graphir.KindWait {
			// A wait is due at a recorded time: a resumed run waits
			// only for what is left of it.
			due, err := rec.due(req)
			if err != nil {
				done(rec.storeStop(err))
				return
			}
			q := *req
			q.Wait = max(0, time.Until(due))
			req = &q
		}
		rec.Inner.Start(ctx, req, func(c *vm.EffectCompletion) {
			if faultStep != "" && req.Step == faultStep {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			if err := rec.commit(id, req, c); err != nil {
				c = rec.storeStop(err)
			}
			done(c)
		})
	}()
}

// started commits the start row of an attempt and returns its id.
func (rec *Recorder) started(req *vm.EffectRequest, attempt int) (int64, error) {
	rec.mu.Lock()
	rec.last++
	id := rec.last
	rec.mu.Unlock()
	rec.s.journal.Lock()
	_, err := rec.s.insEffect.Exec(id, rec.n, EffectPath(req), req.Step, req.Kind.String(), req.Visit, attempt, req.OnExit, nanos(time.Now()))
	rec.s.journal.Unlock()
	return id, err
}

func (rec *Recorder) storeStop(err error) *vm.EffectCompletion {
	return &vm.EffectCompletion{Stop: &graphir.Error{Code: "store_error",
		Msg: fmt.Sprintf("cannot record the run in %s: %v", rec.s.path, storeErr(err))}}
}

// commit records how an attempt ended.
func (rec *Recorder) commit(id int64, req *vm.EffectRequest, c *vm.EffectCompletion) error {
	status := "failed"
	switch {
	case c.OK:
		status = "succeeded"
	case c.Cancelled:
		status = "cancelled"
	case c.Park:
		status = Waiting
	}
	code, msg := c.Code, c.Error
	if c.Stop != nil {
		code, msg = c.Stop.Code, c.Stop.Msg
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
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var mdl, answer, ptok, ctok any
	if c.Model != "" || c.Answer != "" || c.Usage.Total() > 0 {
		mdl, answer, ptok, ctok = c.Model, c.Answer, c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	rec.s.journal.Lock()
	_, err := rec.s.endEffect.Exec(status, rec.done+1, code, msg, output, exit, stdout, stderr, c.Truncated, nanos(time.Now()), mdl, answer, ptok, ctok, id)
	rec.s.journal.Unlock()
	if err == nil {
		rec.done++
	}
	return err
}

func tail(s string) string {
	if len(s) > MaxStream {
		return s[len(s)-MaxStream:]
	}
	return s
}

// Finish records how the run ended, with its result object, and
// checkpoints the store.
func (rec *Recorder) Finish(res *vm.Result) error {
	b, err := res.AppendJSON(nil, "")
	if err != nil {
		return err
	}
	var code, step, msg any
	if res.Error != nil {
		code, step, msg = res.Error.Code, res.Error.Step, res.Error.Msg
	}
	var ended any = nanos(res.Started.Add(res.Duration))
	if res.Status == vm.Waiting {
		ended = nil // not over: it waits for a decision
	}
	if _, err := rec.s.db.Exec(`UPDATE runs SET status = ?, error_code = ?, error_step = ?, error_msg = ?, ended = ?, result = ?, owner_pid = NULL WHERE n = ?`,
		string(res.Status), code, step, msg, ended, string(b), rec.n); err != nil {
		return rec.s.fail(err)
	}
	if rec.done-rec.done0 >= checkpointAfter {
		rec.s.Checkpoint()
	}
	return nil
}

// checkpointAfter is how many completions a run records before its end
// folds the write-ahead log back into the database. A checkpoint costs a
// sync of the file, which would double the cost of a small run; the log of
// small runs is folded back by a later run's checkpoint or by SQLite's own
// (every 1,000 pages), and is as durable meanwhile.
const checkpointAfter = 64

// Park records the run as waiting for a decision: no process owns it.
func (rec *Recorder) Park() error {
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
// reused pid is not mistaken for it) and the host.
func owner() (int, string, string) {
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

// record journals a whole attempt at once: a replayed completion copied
// into a new run's record.
func (rec *Recorder) record(req *vm.EffectRequest, attempt int, c *vm.EffectCompletion) error {
	id, err := rec.started(req, attempt)
	if err != nil {
		return err
	}
	return rec.commit(id, req, c)
}
