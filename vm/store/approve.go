package store

// This file records approvals: when each was first asked (its timeout
// runs from then, across parks), and the one decision it gets.

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// Approval is an approval step's record in one run.
type Approval struct {
	Path      string // child-flow chain and scope, as in [Effect]
	Step      string
	Visit     int
	Message   string
	Requested time.Time
	// Timeout bounds the wait from Requested (0: none); negative when not
	// known (an approval recorded by an older skein).
	Timeout time.Duration
	// The decision; Decided is zero while there is none.
	Decided  time.Time
	Approved bool
	By       string
	Reason   string
	// Expired is when the approval timed out (its deadline), once a run
	// recorded that it saw no decision by then ([Store.Expire]); zero
	// otherwise. An approval has a decision or expires, never both.
	Expired time.Time
	// Fields are the fields the step declares, as graphir.FieldsJSON
	// writes them ("" for none); Values the values given with the
	// decision, a JSON object of every field ("" for none).
	Fields string
	Values string

	run string // the run's id
}

// Pending reports whether the approval still waits for a decision: none
// recorded, and not timed out (by the clock or as recorded).
func (a *Approval) Pending(now time.Time) bool {
	if !a.Decided.IsZero() || !a.Expired.IsZero() {
		return false
	}
	d := a.Deadline()
	return d.IsZero() || now.Before(d)
}

// Ask records that req's approval was asked, unless it was asked before,
// and returns its record: when it was first asked and any decision.
func (rec *Recorder) Ask(req *vm.EffectRequest) (*Approval, error) {
	path := EffectPath(req)
	if _, err := rec.s.db.Exec(`INSERT OR IGNORE INTO approvals (run, path, step, visit, message, requested, timeout, fields) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.n, path, req.Step, req.Visit, req.Message, nanos(time.Now()), int64(max(req.Timeout, 0)), graphir.FieldsJSON(req.Fields())); err != nil {
		return nil, rec.s.fail(err)
	}
	rows, err := rec.s.approvals(`a.run = ? AND a.path = ? AND a.step = ? AND a.visit = ?`, rec.n, path, req.Step, req.Visit)
	if err != nil || len(rows) == 0 {
		return nil, rec.s.fail(err)
	}
	return rows[0], nil
}

// Approvals returns the approvals of the run with id, in the order they
// were asked.
func (s *Store) Approvals(id string) ([]*Approval, error) {
	return s.approvals(`a.run = (SELECT n FROM runs WHERE id = ?)`, id)
}

// ApprovalsOf returns the approvals of the runs with ids (a page of a
// list), by run id, each run's in the order they were asked: one query
// for them all.
func (s *Store) ApprovalsOf(ids []string) (map[string][]*Approval, error) {
	out := map[string][]*Approval{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	list, err := s.approvals(`r.id IN (?`+strings.Repeat(`, ?`, len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	for _, a := range list {
		out[a.run] = append(out[a.run], a)
	}
	return out, nil
}

// Undecided returns the approvals of every run still to be decided (no
// decision, not recorded as timed out), with the id of each one's run,
// in the order they were asked. The runs may have ended since (a run that
// ended while one of its approvals was held open): the caller looks at
// their status.
func (s *Store) Undecided() (approvals []*Approval, runIDs []string, err error) {
	out, err := s.approvals(`a.decided IS NULL AND a.expired IS NULL AND r.status IN ('running', 'waiting')`)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range out {
		runIDs = append(runIDs, a.run)
	}
	return out, runIDs, nil
}

func (s *Store) approvals(where string, args ...any) ([]*Approval, error) {
	rows, err := s.db.Query(`SELECT r.id, a.path, a.step, a.visit, a.message, a.requested, COALESCE(a.timeout, -1), COALESCE(a.decided, 0), COALESCE(a.approved, 0),
		COALESCE(a.by, ''), COALESCE(a.reason, ''), COALESCE(a.expired, 0), COALESCE(a.fields, ''), COALESCE(a.vals, '')
		FROM approvals a JOIN runs r ON r.n = a.run WHERE `+where+` ORDER BY a.requested`, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []*Approval
	for rows.Next() {
		a := &Approval{}
		var requested, timeout, decided, expired int64
		if err := rows.Scan(&a.run, &a.Path, &a.Step, &a.Visit, &a.Message, &requested, &timeout, &decided, &a.Approved, &a.By, &a.Reason, &expired, &a.Fields, &a.Values); err != nil {
			return nil, s.fail(err)
		}
		a.Requested = fromNanos(requested)
		a.Timeout = time.Duration(timeout)
		if decided != 0 {
			a.Decided = fromNanos(decided)
		}
		if expired != 0 {
			a.Expired = fromNanos(expired)
		}
		out = append(out, a)
	}
	return out, s.fail(rows.Err())
}

// Deadline is when the approval times out; zero for none (or not known).
func (a *Approval) Deadline() time.Time {
	if a.Timeout <= 0 {
		return time.Time{}
	}
	return a.Requested.Add(a.Timeout)
}

// ErrDecided is returned (wrapped) for a second decision on one approval.
var ErrDecided = errors.New("already decided")

// ErrTimedOut is returned (wrapped) for a decision that comes after the
// approval's deadline: "approval "deploy" of run ID timed out at ...".
var ErrTimedOut = errors.New("timed out")

// Decide records the decision on approval a of the run with id, with
// values (a JSON object of the step's fields, "" for none), once: a
// second decision fails with ErrDecided, saying what was decided, by whom
// and when, and one after the approval's recorded deadline (or after a
// run recorded it timed out) fails with ErrTimedOut. The check and the
// write are one statement, so a decision and the run timing the approval
// out ([Store.Expire]) cannot both be recorded. A decision for a run that
// has ended (cancelled with the approval open, say), or that someone has
// asked to cancel, fails with ErrEnded or ErrCancelling: nothing would
// ever take it (an approval decided already, or timed out, says that
// first).
func (s *Store) Decide(id string, a *Approval, approved bool, by, reason, values string) error {
	now := nanos(time.Now())
	var vals any
	if values != "" {
		vals = values
	}
	res, err := s.db.Exec(`UPDATE approvals SET decided = ?, approved = ?, by = ?, reason = ?, vals = ?
		WHERE run = (SELECT n FROM runs WHERE id = ? AND status IN ('running', 'waiting') AND COALESCE(cancel, '') = '')
		AND path = ? AND step = ? AND visit = ?
		AND decided IS NULL AND expired IS NULL AND (COALESCE(timeout, 0) = 0 OR requested + timeout > ?)`,
		now, approved, by, reason, vals, id, a.Path, a.Step, a.Visit, now)
	if err != nil {
		return s.fail(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.fail(err)
	} else if n == 1 {
		return nil
	}
	// Refused: say why, what became of the approval first.
	rows, err := s.approvals(`a.run = (SELECT n FROM runs WHERE id = ?) AND a.path = ? AND a.step = ? AND a.visit = ?`, id, a.Path, a.Step, a.Visit)
	if err != nil {
		return err
	}
	was := &Approval{}
	if len(rows) > 0 {
		was = rows[0]
	}
	if !was.Decided.IsZero() {
		what := "rejected"
		if was.Approved {
			what = "approved"
		}
		why := ""
		if was.Reason != "" {
			why = fmt.Sprintf(" (%s)", was.Reason)
		}
		return fmt.Errorf("%w: %q of run %s was %s by %s at %s%s", ErrDecided, a.Step, id, what, was.By,
			was.Decided.Local().Format("2006-01-02 15:04:05"), why)
	}
	if len(rows) == 0 || was.Expired.IsZero() {
		// Open, or past its deadline with nobody there to time it out:
		// a run that has ended or is being cancelled takes no decision.
		var status string
		var cancel sql.NullString
		if err := s.db.QueryRow(`SELECT status, cancel FROM runs WHERE id = ?`, id).Scan(&status, &cancel); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w %q in %s", ErrNoRun, id, s.path)
		} else if err != nil {
			return s.fail(err)
		}
		if status != Running && status != Waiting {
			return fmt.Errorf("run %s %w (%s): its approval %q can no longer be decided", id, ErrEnded, status, a.Step)
		}
		if cancel.Valid && cancel.String != "" {
			var c CancelRequest
			json.Unmarshal([]byte(cancel.String), &c)
			return fmt.Errorf("run %s %w%s: its approval %q can no longer be decided", id, ErrCancelling, c.by(), a.Step)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("run %s has no approval %q (visit %d) recorded", id, a.Step, a.Visit)
	}
	at := was.Expired
	if at.IsZero() {
		at = was.Deadline()
	}
	return fmt.Errorf("approval %q of run %s %w at %s (its timeout of %s counts from when it was asked)",
		a.Step, id, ErrTimedOut, at.Local().Format("2006-01-02 15:04:05"), graphir.FormatDuration(was.Timeout))
}

// Expire records that approval a of the run with id timed out at
// deadline, unless a decision was recorded first, and returns the
// approval as recorded: with the decision that came first, or Expired
// set. Its caller has seen the deadline pass.
func (s *Store) Expire(id string, a *Approval, deadline time.Time) (*Approval, error) {
	where := `a.run = (SELECT n FROM runs WHERE id = ?) AND a.path = ? AND a.step = ? AND a.visit = ?`
	if _, err := s.db.Exec(`UPDATE approvals AS a SET expired = ? WHERE `+where+` AND decided IS NULL AND expired IS NULL`,
		nanos(deadline), id, a.Path, a.Step, a.Visit); err != nil {
		return nil, s.fail(err)
	}
	rows, err := s.approvals(where, id, a.Path, a.Step, a.Visit)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("run %s has no approval %q (visit %d) recorded", id, a.Step, a.Visit)
	}
	return rows[0], nil
}
