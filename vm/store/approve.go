package store

// This file records approvals: when each was first asked (its timeout
// runs from then, across parks), and the one decision it gets.

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

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
}

// Ask records that req's approval was asked, unless it was asked before,
// and returns its record: when it was first asked and any decision.
func (rec *Recorder) Ask(req *vm.EffectRequest) (*Approval, error) {
	path := EffectPath(req)
	if _, err := rec.s.db.Exec(`INSERT OR IGNORE INTO approvals (run, path, step, visit, message, requested, timeout) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		rec.n, path, req.Step, req.Visit, req.Message, nanos(time.Now()), int64(max(req.Timeout, 0))); err != nil {
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

func (s *Store) approvals(where string, args ...any) ([]*Approval, error) {
	rows, err := s.db.Query(`SELECT a.path, a.step, a.visit, a.message, a.requested, COALESCE(a.timeout, -1), COALESCE(a.decided, 0), COALESCE(a.approved, 0),
		COALESCE(a.by, ''), COALESCE(a.reason, '') FROM approvals a WHERE `+where+` ORDER BY a.requested`, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []*Approval
	for rows.Next() {
		a := &Approval{}
		var requested, timeout, decided int64
		if err := rows.Scan(&a.Path, &a.Step, &a.Visit, &a.Message, &requested, &timeout, &decided, &a.Approved, &a.By, &a.Reason); err != nil {
			return nil, s.fail(err)
		}
		a.Requested = fromNanos(requested)
		a.Timeout = time.Duration(timeout)
		if decided != 0 {
			a.Decided = fromNanos(decided)
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

// Decide records the decision on approval a of the run with id, once: a
// second decision fails with ErrDecided, saying what was decided, by whom
// and when.
func (s *Store) Decide(id string, a *Approval, approved bool, by, reason string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	var decided sql.NullInt64
	var was sql.NullBool
	var wasBy, wasReason sql.NullString
	err = tx.QueryRow(`SELECT decided, approved, by, reason FROM approvals WHERE run = (SELECT n FROM runs WHERE id = ?) AND path = ? AND step = ? AND visit = ?`,
		id, a.Path, a.Step, a.Visit).Scan(&decided, &was, &wasBy, &wasReason)
	if err != nil {
		return s.fail(err)
	}
	if decided.Valid {
		what := "rejected"
		if was.Bool {
			what = "approved"
		}
		why := ""
		if wasReason.String != "" {
			why = fmt.Sprintf(" (%s)", wasReason.String)
		}
		return fmt.Errorf("%w: %q of run %s was %s by %s at %s%s", ErrDecided, a.Step, id, what, wasBy.String,
			fromNanos(decided.Int64).Local().Format("2006-01-02 15:04:05"), why)
	}
	if _, err := tx.Exec(`UPDATE approvals SET decided = ?, approved = ?, by = ?, reason = ? WHERE run = (SELECT n FROM runs WHERE id = ?) AND path = ? AND step = ? AND visit = ?`,
		nanos(time.Now()), approved, by, reason, id, a.Path, a.Step, a.Visit); err != nil {
		return s.fail(err)
	}
	return s.fail(tx.Commit())
}
