package store

// This file is cancel requests: skein cancel records one on a run that has
// not ended, and the process that owns the run (it polls) cancels it.

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// CancelRequest is a request to cancel a run: who asked and why.
type CancelRequest struct {
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// ErrEnded is returned (wrapped) by [Store.RequestCancel] for a run that
// has ended: there is nothing left to cancel.
var ErrEnded = errors.New("has ended")

// ErrCancelling is returned (wrapped) by [Store.Decide] for a run someone
// has asked to cancel: its approvals are not decided any more.
var ErrCancelling = errors.New("is being cancelled")

// by says who asked and when, for messages: " (asked by bob at 10:02:03)".
func (c *CancelRequest) by() string {
	who := ""
	if c.By != "" {
		who = "by " + c.By + " "
	}
	if c.At.IsZero() {
		return ""
	}
	return fmt.Sprintf(" (asked %sat %s)", who, c.At.Local().Format("2006-01-02 15:04:05"))
}

// RequestCancel records c on the run with id, which must not have ended.
// A second request replaces the first while the run has not ended.
func (s *Store) RequestCancel(id string, c CancelRequest) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	res, err := s.db.Exec(`UPDATE runs SET cancel = ? WHERE id = ? AND status IN ('running', 'waiting')`, string(b), id)
	if err != nil {
		return s.fail(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var status string
		if err := s.db.QueryRow(`SELECT status FROM runs WHERE id = ?`, id).Scan(&status); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w %q in %s", ErrNoRun, id, s.path)
		} else if err != nil {
			return s.fail(err)
		}
		return fmt.Errorf("run %s %w (%s)", id, ErrEnded, status)
	}
	return nil
}

// CancelRequested returns the request to cancel the run with id, or nil
// when nobody asked.
func (s *Store) CancelRequested(id string) (*CancelRequest, error) {
	var c sql.NullString
	if err := s.db.QueryRow(`SELECT cancel FROM runs WHERE id = ?`, id).Scan(&c); err != nil {
		return nil, s.fail(err)
	}
	if !c.Valid || c.String == "" {
		return nil, nil
	}
	req := &CancelRequest{}
	if err := json.Unmarshal([]byte(c.String), req); err != nil {
		return nil, fmt.Errorf("run store %s: run %s: its cancel request is not valid JSON: %v", s.path, id, err)
	}
	return req, nil
}

// EndCancelled records the run with id, which must be waiting or
// interrupted, as cancelled with msg, without a result: for a run whose
// flow can no longer be loaded to run its exit handler.
func (s *Store) EndCancelled(id, msg string) error {
	r, err := s.Get(id)
	if err != nil {
		return err
	}
	if r.Status == Running {
		return fmt.Errorf("run %s is still running", id)
	}
	res, err := s.db.Exec(`UPDATE runs SET status = 'cancelled', error_code = 'cancelled', error_step = NULL, error_msg = ?, ended = ?, owner_pid = NULL
		WHERE id = ? AND status IN ('running', 'waiting')`, msg, nanos(time.Now()), id)
	if err != nil {
		return s.fail(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("run %s %w", id, ErrEnded)
	}
	return nil
}
