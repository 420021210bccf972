package store

// This file is skein serve's queue: the runs waiting to start (a
// trigger's firing, a webhook's delivery, a start asked for), in order,
// each with the run it became; and the marks that record each clock
// trigger's last firing, so that no firing is made twice.

import (
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// The states of a queue item.
const (
	QueueQueued   = "queued"   // waiting for its turn
	QueueRunning  = "running"  // its run started (Run names it)
	QueueDone     = "done"     // its run ended, or parked waiting for a decision
	QueueSkipped  = "skipped"  // a firing dropped: a run of its flow was queued or running (overlap = "skip")
	QueueReplaced = "replaced" // cancelled by a later firing (overlap = "replace")
	QueueFailed   = "failed"   // its run could not start (Error says why)
)

// QueueItem is one entry of the queue.
type QueueItem struct {
	N        int64
	File     string          // the flow file, absolute
	Root     string          // its flow root, absolute
	Name     string          // the flow's name
	Inputs   json.RawMessage // a JSON object
	Trigger  string          // what queued it: "api", "cron 0 3 * * *", "webhook push", ...
	Conc     int             // the runs of the flow (per Key) allowed at once; 0: no bound
	Key      string          // the concurrency key's value, as JSON ("" for none)
	Fired    time.Time       // a clock trigger's firing time
	Delivery string          // a webhook delivery's id, or an emitted item's
	Depth    int             // how deep an emitted item lies below one queued from outside (0)
	Parent   string          // the run that emitted it
	State    string
	Run      string
	Error    string
	Enqueued time.Time
	Started  time.Time
	Ended    time.Time
	// Traceparent and Tracestate are the W3C trace context of the
	// request that queued it (a webhook's caller, a POST /api/runs),
	// which its run continues, after a restart too; "" for none.
	Traceparent, Tracestate string
}

// ErrDuplicate is returned by [Store.Enqueue] for a delivery id its
// trigger has queued before.
var ErrDuplicate = errors.New("delivered before")

const queueColumns = `n, flow, root, name, inputs, trigger, conc, key, COALESCE(fired, 0), COALESCE(delivery, ''), state,
	COALESCE(run, ''), COALESCE(error, ''), enqueued, COALESCE(started, 0), COALESCE(ended, 0), depth, COALESCE(parent, ''),
	COALESCE(traceparent, ''), COALESCE(tracestate, '')`

func scanQueue(rows interface{ Scan(...any) error }) (*QueueItem, error) {
	var it QueueItem
	var inputs string
	var fired, enq, started, ended int64
	if err := rows.Scan(&it.N, &it.File, &it.Root, &it.Name, &inputs, &it.Trigger, &it.Conc, &it.Key, &fired, &it.Delivery,
		&it.State, &it.Run, &it.Error, &enq, &started, &ended, &it.Depth, &it.Parent,
		&it.Traceparent, &it.Tracestate); err != nil {
		return nil, err
	}
	it.Inputs = json.RawMessage(inputs)
	it.Fired, it.Enqueued, it.Started, it.Ended = optTime(fired), fromNanos(enq), optTime(started), optTime(ended)
	return &it, nil
}

func optTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return fromNanos(n)
}

func optNanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return nanos(t)
}

func optText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// insertItem adds it to the queue in tx, setting its N.
func insertItem(tx *sql.Tx, it *QueueItem) error {
	if it.State == "" {
		it.State = QueueQueued
	}
	if len(it.Inputs) == 0 {
		it.Inputs = json.RawMessage("{}")
	}
	res, err := tx.Exec(`INSERT INTO queue (flow, root, name, inputs, trigger, conc, key, fired, delivery, state, error, enqueued, ended, depth, parent, run, started, traceparent, tracestate)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		it.File, it.Root, it.Name, string(it.Inputs), it.Trigger, it.Conc, it.Key, optNanos(it.Fired), optText(it.Delivery),
		it.State, optText(it.Error), nanos(it.Enqueued), optNanos(it.Ended), it.Depth, optText(it.Parent), optText(it.Run), optNanos(it.Started),
		optText(it.Traceparent), optText(it.Tracestate))
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE constraint failed") {
			return ErrDuplicate
		}
		return err
	}
	it.N, err = res.LastInsertId()
	return err
}

// Enqueue adds it to the end of the queue and sets its N. A webhook
// delivery whose id its trigger queued before is not added again:
// [ErrDuplicate].
func (s *Store) Enqueue(it *QueueItem) error {
	tx, err := s.db.Begin()
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	if err := insertItem(tx, it); err != nil {
		if errors.Is(err, ErrDuplicate) {
			return err
		}
		return s.fail(err)
	}
	return s.fail(tx.Commit())
}

// Mark returns the time of the last firing recorded for a clock
// trigger of the flow file, and whether there is one.
func (s *Store) Mark(file, trigger string) (time.Time, bool, error) {
	var at int64
	err := s.db.QueryRow(`SELECT at FROM trigger_marks WHERE flow = ? AND trigger = ?`, file, trigger).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, s.fail(err)
	}
	return fromNanos(at), true, nil
}

// Fire records a firing of a clock trigger of the flow file at time at,
// and with it adds it (when not nil) to the queue, in one transaction:
// a firing at or before the trigger's mark was made already, and Fire
// then does nothing and returns false. A nil it only moves the mark
// (firings missed and not caught up, or a trigger seen the first time).
func (s *Store) Fire(file, trigger string, at time.Time, it *QueueItem) (bool, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return false, s.fail(err)
	}
	defer tx.Rollback()
	var mark int64
	err = tx.QueryRow(`SELECT at FROM trigger_marks WHERE flow = ? AND trigger = ?`, file, trigger).Scan(&mark)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, s.fail(err)
	case mark >= nanos(at):
		return false, nil
	}
	if _, err := tx.Exec(`INSERT INTO trigger_marks (flow, trigger, at) VALUES (?, ?, ?)
		ON CONFLICT (flow, trigger) DO UPDATE SET at = excluded.at`, file, trigger, nanos(at)); err != nil {
		return false, s.fail(err)
	}
	if it != nil {
		if err := insertItem(tx, it); err != nil {
			return false, s.fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, s.fail(err)
	}
	return true, nil
}

// Pending returns the items queued or running, in queue order.
func (s *Store) Pending() ([]*QueueItem, error) {
	return s.queueRows(`SELECT ` + queueColumns + ` FROM queue WHERE state IN ('queued', 'running') ORDER BY n`)
}

// Queue returns the newest items of the queue, newest first, at most
// limit (0: all).
func (s *Store) Queue(limit int) ([]*QueueItem, error) {
	q := `SELECT ` + queueColumns + ` FROM queue ORDER BY n DESC`
	if limit > 0 {
		return s.queueRows(q+` LIMIT ?`, limit)
	}
	return s.queueRows(q)
}

// Item returns queue item n.
func (s *Store) Item(n int64) (*QueueItem, error) {
	it, err := scanQueue(s.db.QueryRow(`SELECT `+queueColumns+` FROM queue WHERE n = ?`, n))
	return it, s.fail(err)
}

// QueueOf returns the item that started run id, or nil.
func (s *Store) QueueOf(id string) (*QueueItem, error) {
	it, err := scanQueue(s.db.QueryRow(`SELECT `+queueColumns+` FROM queue WHERE run = ? ORDER BY n DESC LIMIT 1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return it, s.fail(err)
}

// Children returns the items run id emitted (the hopper), in queue
// order.
func (s *Store) Children(id string) ([]*QueueItem, error) {
	return s.queueRows(`SELECT `+queueColumns+` FROM queue WHERE parent = ? ORDER BY n`, id)
}

// QueueOfRuns returns the item that started each of the runs ids that a
// queue item started (the newest, for a run resumed in place).
func (s *Store) QueueOfRuns(ids []string) (map[string]*QueueItem, error) {
	out := map[string]*QueueItem{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	items, err := s.queueRows(`SELECT `+queueColumns+` FROM queue WHERE run IN (?`+strings.Repeat(`, ?`, len(ids)-1)+`) ORDER BY n`, args...)
	for _, it := range items {
		out[it.Run] = it
	}
	return out, err
}

func (s *Store) queueRows(q string, args ...any) ([]*QueueItem, error) {
	rows, err := s.db.Query(q, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []*QueueItem
	for rows.Next() {
		it, err := scanQueue(rows)
		if err != nil {
			return nil, s.fail(err)
		}
		out = append(out, it)
	}
	return out, s.fail(rows.Err())
}

// Claim takes queued item n to start it: it is running from now on
// (with no run yet). It returns false when the item is no longer queued.
func (s *Store) Claim(n int64, now time.Time) (bool, error) {
	res, err := s.db.Exec(`UPDATE queue SET state = 'running', started = ? WHERE n = ? AND state = 'queued'`, nanos(now), n)
	if err != nil {
		return false, s.fail(err)
	}
	k, err := res.RowsAffected()
	return k == 1, s.fail(err)
}

// Started records the run that item n became.
func (s *Store) Started(n int64, run string) error {
	_, err := s.db.Exec(`UPDATE queue SET run = ? WHERE n = ?`, run, n)
	return s.fail(err)
}

// Requeue puts running item n back in the queue (its start was cut off
// before it had a run).
func (s *Store) Requeue(n int64) error {
	_, err := s.db.Exec(`UPDATE queue SET state = 'queued', started = NULL WHERE n = ? AND state = 'running' AND run IS NULL`, n)
	return s.fail(err)
}

// EndItem ends item n, queued or running, in state (QueueDone,
// QueueReplaced or QueueFailed), with an error message for a failure.
func (s *Store) EndItem(n int64, state, msg string, now time.Time) error {
	_, err := s.db.Exec(`UPDATE queue SET state = ?, error = ?, ended = ? WHERE n = ? AND state IN ('queued', 'running')`,
		state, optText(msg), nanos(now), n)
	return s.fail(err)
}

// PruneQueue deletes the items that ended before before (done, skipped,
// replaced, failed), and returns how many.
func (s *Store) PruneQueue(before time.Time) (int, error) {
	res, err := s.db.Exec(`DELETE FROM queue WHERE state NOT IN ('queued', 'running') AND ended < ?`, nanos(before))
	if err != nil {
		return 0, s.fail(err)
	}
	n, err := res.RowsAffected()
	return int(n), s.fail(err)
}

// RunCounts returns how many runs the store holds by recorded status
// (a run whose process died is still "running" here), and how many queue
// items are queued and running, by flow name and state.
func (s *Store) RunCounts() (runs map[string]int, queue map[[2]string]int, err error) {
	runs, queue = map[string]int{}, map[[2]string]int{}
	rows, err := s.db.Query(`SELECT status, COUNT(*) FROM runs GROUP BY status`)
	if err != nil {
		return nil, nil, s.fail(err)
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return nil, nil, s.fail(err)
		}
		runs[st] = n
	}
	rows.Close()
	rows, err = s.db.Query(`SELECT name, state, COUNT(*) FROM queue WHERE state IN ('queued', 'running') GROUP BY name, state`)
	if err != nil {
		return nil, nil, s.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, st string
		var n int
		if err := rows.Scan(&name, &st, &n); err != nil {
			return nil, nil, s.fail(err)
		}
		queue[[2]string{name, st}] = n
	}
	return runs, queue, s.fail(rows.Err())
}
