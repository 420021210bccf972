package store

// This file reads: runs, their sources and their journals; run references
// (ids, prefixes, "last"); and garbage collection.

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// Run is a run's record.
type Run struct {
	ID          string
	Flow        string
	File        string
	Root        string
	Status      string // vm's statuses, Running, Waiting or Interrupted
	ErrorCode   string
	ErrorStep   string
	ErrorMsg    string
	Started     time.Time
	Ended       time.Time // zero while it has not ended
	ResumedFrom string
	Options     RunOptions
	// OwnerPID and OwnerHost name the process that runs a Running run
	// (or last ran an Interrupted one).
	OwnerPID  int
	OwnerHost string
	// Only from Get.
	Inputs json.RawMessage
	Result json.RawMessage // the result object; nil until the run ends

	n int64
}

// Ended reports whether the run has ended (succeeded, failed or
// cancelled): such a run is never changed again.
func (r *Run) HasEnded() bool {
	switch r.Status {
	case Running, Waiting, Interrupted:
		return false
	}
	return true
}

// Filter selects runs for [Store.Runs].
type Filter struct {
	Flow   string
	Status string
	// Text, when set, keeps the runs whose id, flow, file or error
	// message holds it, ignoring case (ASCII letters).
	Text string
	// Before, when set, keeps the runs whose id sorts before it: the
	// next page after a page whose last run is Before.
	Before string
	Limit  int // 0 for all
}

const runColumns = `n, id, flow, file, root, status, COALESCE(error_code, ''), COALESCE(error_step, ''), COALESCE(error_msg, ''),
	started, COALESCE(ended, 0), COALESCE(resumed_from, ''), options, COALESCE(owner_pid, 0), COALESCE(owner_start, ''), COALESCE(owner_host, '')`

type scanner interface{ Scan(...any) error }

func scanRun(sc scanner, extra ...any) (*Run, error) {
	r := &Run{}
	var started, ended int64
	var pid int
	var start, host, opts string
	dest := append([]any{&r.n, &r.ID, &r.Flow, &r.File, &r.Root, &r.Status, &r.ErrorCode, &r.ErrorStep, &r.ErrorMsg,
		&started, &ended, &r.ResumedFrom, &opts, &pid, &start, &host}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	r.Started = fromNanos(started)
	if ended != 0 {
		r.Ended = fromNanos(ended)
	}
	json.Unmarshal([]byte(opts), &r.Options)
	r.OwnerPID, r.OwnerHost = pid, host
	if r.Status == Running && !alive(pid, start, host) {
		r.Status = Interrupted
	}
	return r, nil
}

// Runs lists runs, newest first.
func (s *Store) Runs(f Filter) ([]*Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs`
	var where []string
	var args []any
	if f.Flow != "" {
		where = append(where, "flow = ?")
		args = append(args, f.Flow)
	}
	status := f.Status
	if status == Interrupted {
		status = Running // told apart below
	}
	if status != "" {
		where = append(where, "status = ?")
		args = append(args, status)
	}
	if f.Text != "" {
		where = append(where, "(instr(lower(id), ?) OR instr(lower(flow), ?) OR instr(lower(file), ?) OR instr(lower(COALESCE(error_msg, '')), ?))")
		t := strings.ToLower(f.Text)
		args = append(args, t, t, t, t)
	}
	if f.Before != "" {
		where = append(where, "id < ?")
		args = append(args, f.Before)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC"
	if f.Limit > 0 && f.Status != Interrupted && f.Status != Running {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.Query(q, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.fail(err)
		}
		if f.Status != "" && r.Status != f.Status {
			continue
		}
		out = append(out, r)
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, s.fail(rows.Err())
}

// ErrNoRun is returned (wrapped) when a reference names no run.
var ErrNoRun = errors.New("no such run")

// Resolve turns a run reference (an id, a unique prefix of one, or
// "last") into the run's id.
func (s *Store) Resolve(ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("want a run id, a prefix of one, or last")
	}
	if ref == "last" {
		var id string
		err := s.db.QueryRow(`SELECT id FROM runs ORDER BY id DESC LIMIT 1`).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("%w: the store %s has no runs yet", ErrNoRun, s.path)
		}
		return id, s.fail(err)
	}
	rows, err := s.db.Query(`SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT 3`, ref, ref+"\xff")
	if err != nil {
		return "", s.fail(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		rows.Scan(&id)
		ids = append(ids, id)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w %q in %s (skein runs lists them)", ErrNoRun, ref, s.path)
	case 1:
		return ids[0], nil
	}
	for _, id := range ids {
		if id == ref {
			return id, nil
		}
	}
	more := ""
	if len(ids) > 2 {
		more = ", ..."
	}
	return "", fmt.Errorf("run %q is ambiguous: it starts %s, %s%s", ref, ids[0], ids[1], more)
}

// Get returns the record of the run ref names (see [Store.Resolve]).
func (s *Store) Get(ref string) (*Run, error) {
	// A whole id (what a caller that read it once has) is read at once;
	// Resolve would find it first among the ids it starts too.
	var inputs string
	var result sql.NullString
	r, err := scanRun(s.db.QueryRow(`SELECT `+runColumns+`, inputs, result FROM runs WHERE id = ?`, ref), &inputs, &result)
	if errors.Is(err, sql.ErrNoRows) {
		var id string
		if id, err = s.Resolve(ref); err != nil {
			return nil, err
		}
		r, err = scanRun(s.db.QueryRow(`SELECT `+runColumns+`, inputs, result FROM runs WHERE id = ?`, id), &inputs, &result)
	}
	if err != nil {
		return nil, s.fail(err)
	}
	r.Inputs = json.RawMessage(inputs)
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	return r, nil
}

// Sources returns the files the run loaded, the flow first.
func (s *Store) Sources(id string) ([]Source, error) {
	rows, err := s.db.Query(`SELECT s.path, b.text FROM sources s JOIN blobs b ON b.hash = s.hash JOIN runs r ON r.n = s.run
		WHERE r.id = ? ORDER BY s.ord`, id)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		var src Source
		if err := rows.Scan(&src.Path, &src.Text); err != nil {
			return nil, s.fail(err)
		}
		out = append(out, src)
	}
	return out, s.fail(rows.Err())
}

// Effect is one attempt of an effect as the journal has it.
type Effect struct {
	ID        int64
	Path      string // child-flow chain and scope, "/"-joined; "" at the top level
	Step      string
	Kind      string
	Visit     int
	Attempt   int
	Status    string // running (no completion recorded), succeeded, failed, cancelled
	Done      int64  // completion order within the run; 0 while running
	Code      string
	Error     string
	Output    json.RawMessage // effects other than tasks; nil for none
	ExitCode  int
	Stdout    string
	Stderr    string
	Truncated bool
	OnExit    bool // an effect of the flow's exit handler
	// Rendered is what the attempt ran: a task's argv after its
	// templates, a model call's messages, a child flow's inputs (keys
	// masked); nil for an
	// effect with nothing rendered, and for attempts recorded before
	// skein kept it.
	Rendered *vm.Rendered
	// Model calls.
	Model            string
	Answer           string
	PromptTokens     int
	CompletionTokens int
	// Usage is the call's whole usage: the tokens above, and the cached
	// and reasoning tokens, HTTP attempts and cost where recorded (not
	// for calls recorded before skein kept them).
	Usage   model.Usage
	Started time.Time
	Ended   time.Time
}

// Effects returns the journal of the run with id, in the order the
// attempts started, from the attempt after afterID (0 for all).
func (s *Store) Effects(id string, afterID int64) ([]*Effect, error) {
	var n int64
	if err := s.db.QueryRow(`SELECT n FROM runs WHERE id = ?`, id).Scan(&n); errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, s.fail(err)
	}
	return s.effects(n, afterID)
}

// RunEffects is [Store.Effects] of a run already read (with [Store.Get]
// or [Store.Runs]), without reading it again.
func (s *Store) RunEffects(r *Run, afterID int64) ([]*Effect, error) {
	return s.effects(r.n, afterID)
}

func (s *Store) effects(n, afterID int64) ([]*Effect, error) {
	lo, hi := effectIDs(n)
	rows, err := s.db.Query(`SELECT e.id, e.path, e.step, e.kind, e.visit, e.attempt, e.status, COALESCE(e.done, 0), COALESCE(e.code, ''),
		COALESCE(e.error, ''), e.output, COALESCE(e.exit_code, 0), COALESCE(e.stdout, ''), COALESCE(e.stderr, ''), COALESCE(e.truncated, 0),
		e.on_exit, e.started, COALESCE(e.ended, 0), COALESCE(e.model, ''), COALESCE(e.answer, ''),
		COALESCE(e.prompt_tokens, 0), COALESCE(e.completion_tokens, 0), e.rendered, e.usage
		FROM effects e WHERE e.id > ? AND e.id < ? ORDER BY e.id`, max(lo, afterID), hi)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []*Effect
	for rows.Next() {
		e := &Effect{}
		var output, rendered, usage sql.NullString
		var started, ended int64
		if err := rows.Scan(&e.ID, &e.Path, &e.Step, &e.Kind, &e.Visit, &e.Attempt, &e.Status, &e.Done, &e.Code, &e.Error,
			&output, &e.ExitCode, &e.Stdout, &e.Stderr, &e.Truncated, &e.OnExit, &started, &ended,
			&e.Model, &e.Answer, &e.PromptTokens, &e.CompletionTokens, &rendered, &usage); err != nil {
			return nil, s.fail(err)
		}
		if usage.Valid {
			json.Unmarshal([]byte(usage.String), &e.Usage) // (written by record: a damaged one counts nothing more)
		}
		e.Usage.PromptTokens, e.Usage.CompletionTokens = e.PromptTokens, e.CompletionTokens
		if rendered.Valid {
			var r vm.Rendered
			if json.Unmarshal([]byte(rendered.String), &r) == nil {
				e.Rendered = &r
			}
		}
		if output.Valid {
			e.Output = json.RawMessage(output.String)
		}
		e.Started = fromNanos(started)
		if ended != 0 {
			e.Ended = fromNanos(ended)
		}
		out = append(out, e)
	}
	return out, s.fail(rows.Err())
}

// GC deletes the ended runs that are both beyond the newest keep (keep < 0:
// no such limit) and ended longer than olderThan ago (0: no such limit),
// then compacts the file. With olderThan, it also deletes the runs left
// waiting or interrupted (their process gone) that started, or last
// parked, longer than olderThan ago: nobody came back for them. A run
// still going is never deleted. It returns how many runs it deleted. It
// removes the live output that runs no longer running left beside the
// store.
func (s *Store) GC(keep int, olderThan time.Duration) (int, error) {
	return s.gc("", keep, olderThan)
}

// GCFile deletes the ended runs of the flow file (as recorded) that
// ended longer than olderThan ago, as [Store.GC] does (without the runs
// left waiting or interrupted), and compacts the file.
func (s *Store) GCFile(file string, olderThan time.Duration) (int, error) {
	if olderThan <= 0 {
		return 0, nil
	}
	return s.gc(file, -1, olderThan)
}

// gc is GC, for the runs of file only when it is not "".
func (s *Store) gc(file string, keep int, olderThan time.Duration) (int, error) {
	s.sweepLive()
	var conds []string
	var args []any
	if file != "" {
		conds = append(conds, `file = ?`)
		args = append(args, file)
	}
	ended := `status NOT IN ('running', 'waiting')`
	if keep >= 0 {
		conds = append(conds, `n NOT IN (SELECT n FROM runs WHERE `+ended+` ORDER BY id DESC LIMIT ?)`)
		args = append(args, keep)
	}
	if olderThan > 0 {
		conds = append(conds, `COALESCE(ended, started) < ?`)
		args = append(args, nanos(time.Now().Add(-olderThan)))
	}
	if len(conds) == 0 {
		return 0, nil
	}
	tx, err := s.db.Begin()
	if err != nil {
		return 0, s.fail(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query(`SELECT n FROM runs WHERE `+ended+` AND (`+strings.Join(conds, " AND ")+`)`, args...)
	if err != nil {
		return 0, s.fail(err)
	}
	var doomed []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return 0, s.fail(err)
		}
		doomed = append(doomed, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, s.fail(err)
	}
	if olderThan > 0 && file == "" {
		stale, err := staleRuns(tx, time.Now().Add(-olderThan))
		if err != nil {
			return 0, s.fail(err)
		}
		doomed = append(doomed, stale...)
	}
	for _, n := range doomed {
		// A run's effects are one range of ids; its sources, approvals
		// and waits go with it (ON DELETE CASCADE).
		lo, hi := effectIDs(n)
		if _, err := tx.Exec(`DELETE FROM effects WHERE id > ? AND id < ?`, lo, hi); err != nil {
			return 0, s.fail(err)
		}
		if _, err := tx.Exec(`DELETE FROM runs WHERE n = ?`, n); err != nil {
			return 0, s.fail(err)
		}
	}
	deleted := len(doomed)
	if _, err := tx.Exec(`DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM sources)`); err != nil {
		return 0, s.fail(err)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.fail(err)
	}
	if _, err := s.db.Exec(`VACUUM`); err != nil {
		return int(deleted), s.fail(err)
	}
	s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	return int(deleted), nil
}

// staleRuns returns the runs that were left waiting, or interrupted (their
// process is gone), since before cutoff: when they parked or started.
func staleRuns(tx *sql.Tx, cutoff time.Time) ([]int64, error) {
	rows, err := tx.Query(`SELECT n, status, COALESCE(owner_pid, 0), COALESCE(owner_start, ''), COALESCE(owner_host, '')
		FROM runs WHERE status IN ('running', 'waiting') AND COALESCE(ended, started) < ?`, nanos(cutoff))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		var pid int
		var status, start, host string
		if err := rows.Scan(&n, &status, &pid, &start, &host); err != nil {
			return nil, err
		}
		if status == Waiting || !alive(pid, start, host) {
			out = append(out, n)
		}
	}
	return out, rows.Err()
}
