// Package store is the run store: a SQLite database that records every run
// (its sources, inputs, status and final result) and every completion of an
// effect (task, shell, model call, child flow, approval, wait), each
// committed before the run acts on it, so that runs can be looked at after
// they end and resumed after they fail or crash.
//
// It is pure Go (modernc.org/sqlite through database/sql) and safe for
// several processes at once: WAL mode, a busy timeout, immediate write
// transactions, synchronous=NORMAL (a commit survives a crash of the
// process; a power cut may lose the last ones, never corrupt the file),
// and a checkpoint when a run ends.
//
// fn steps, conditions, routers and until functions are never recorded:
// they are deterministic and are computed again on resume, so a loop of fn
// steps adds nothing to the store.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// FileName is the store's file inside a .skein directory.
const FileName = "runs.db"

// Store is an open run store.
type Store struct {
	db   *sql.DB
	path string
	real string // path, its links resolved (see sideDir)

	// The journal's writes go through one connection of their own, with
	// every statement prepared on it once, BEGIN IMMEDIATE and COMMIT
	// too: a batch of two writes through it costs two thirds of the CPU
	// time of database/sql's transactions (which prepare BEGIN and COMMIT
	// each time), and a single write is one statement in autocommit.
	jconn                        *sql.Conn
	begin, commit, rollback      *sql.Stmt
	insEffect, endEffect, endRun *sql.Stmt
	insWhole                     *sql.Stmt
	// removing counts the side journals being deleted (removeLater);
	// waitRemoved waits for none to be. (A WaitGroup would do, but its
	// Add may not race with its Wait, and the runs of one process start
	// and end at the same time.)
	removing counter

	// version is a connection of its own that never writes, on which
	// DataVersion asks SQLite whether anything changed (opened on first
	// use; versionMu guards it).
	version   *sql.Conn
	versionMu sync.Mutex

	// journal serializes this process's journal writes. Without it, tasks
	// finishing together commit on as many connections, and all but one
	// find SQLite's write lock taken and sleep in its busy handler (a
	// millisecond at first, then longer) where a queue here costs nothing.
	journal sync.Mutex
}

// Open opens the store at path, creating it (and its directory) if need
// be, and brings its schema up to date. Two processes opening a new store
// at once are safe: the migrations run once, under the database's write
// lock.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("run store %s: %v", path, unwrapPath(err))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("run store %s: %w", path, &NotStoreError{Dir: path})
	}
	dsn := "file:" + path + "?_txlock=immediate" +
		"&_pragma=busy_timeout(10000)" +
		"&_pragma=synchronous(NORMAL)" +
		"&_pragma=journal_size_limit(67108864)" +
		"&_pragma=foreign_keys(1)" +
		fmt.Sprintf("&_pragma=page_size(%d)", pageSize)
	if n, err := strconv.ParseUint(testMaxPages, 10, 32); err == nil {
		dsn += fmt.Sprintf("&_pragma=max_page_count(%d)", n)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("run store %s: %v", path, err)
	}
	s := &Store{db: db, path: path}
	// Switching a new database to WAL takes a lock SQLite does not wait
	// for (its busy timeout does not apply), so several processes opening
	// a new store at once retry it; the mode then stays with the file.
	err = retryBusy(func() error {
		// A file system without WAL support keeps its mode: the store
		// still works, one writer at a time.
		var mode string
		return db.QueryRow(`PRAGMA journal_mode=WAL`).Scan(&mode)
	})
	if err == nil {
		err = retryBusy(s.migrate)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("run store %s: %w", path, storeErr(err))
	}
	if err := s.prepareJournal(); err != nil {
		db.Close()
		return nil, fmt.Errorf("run store %s: %w", path, storeErr(err))
	}
	s.real = path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		s.real = real
	}
	// Runs whose processes died may have left completions in their side
	// journals: fold them in before anything reads the store. One that
	// cannot be folded now (a full disk) stays for a later try.
	s.foldDead("")
	return s, nil
}

// OpenReadOnly opens the existing store at path to read it only, as a
// store that cannot be written (a read-only directory, a copy on a
// read-only mount) can be: without its write-ahead log beside it, the
// file is all there is, and it is read as it is (SQLite's immutable
// mode: nothing is written, not even the shared-memory index WAL mode
// otherwise makes). Writing fails. Side journals are not folded.
func OpenReadOnly(path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("run store %s: %v", path, unwrapPath(err))
	}
	dsn := "file:" + path + "?mode=ro&_pragma=busy_timeout(10000)"
	if _, err := os.Lstat(path + "-wal"); err != nil {
		dsn += "&immutable=1"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("run store %s: %v", path, err)
	}
	s := &Store{db: db, path: path, real: path}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("run store %s: %w", path, storeErr(err))
	}
	if err := s.prepareJournal(); err != nil {
		db.Close()
		return nil, fmt.Errorf("run store %s: %w", path, storeErr(err))
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		s.real = real
	}
	return s, nil
}

// pageSize is the page size of a store this package creates (an existing
// store keeps its own). A run's result is one row, which for a run of
// 100,000 steps is some 9 MB of JSON: SQLite writes it a page at a time,
// twice (to the write-ahead log, then at the checkpoint, reading it back
// from the log), with two system calls for each page it logs. At SQLite's
// default 4 KiB that is some 9,000 system calls when the run ends, which
// cost more than the writing itself; at 16 KiB a quarter of them. The
// rows of the journal are small, and a larger page only means more bytes
// in each of its batches, which are written off the run's way.
const pageSize = 16 << 10

// testMaxPages, when set, bounds the database to that many pages on every
// connection (SQLite's max_page_count): a write past it fails as a full
// disk does (SQLITE_FULL). Tests set it to prove that a store filling up
// mid-run stops the run cleanly.
var testMaxPages = os.Getenv("SKEIN_TEST_STORE_MAX_PAGES")

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// prepareJournal takes the journal's connection and prepares its
// statements on it.
func (s *Store) prepareJournal() error {
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	s.jconn = conn
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{
		{&s.begin, `BEGIN IMMEDIATE`},
		{&s.commit, `COMMIT`},
		{&s.rollback, `ROLLBACK`},
		{&s.insEffect, `INSERT INTO effects (id, run, path, step, kind, visit, attempt, on_exit, status, started, rendered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)`},
		{&s.endEffect, `UPDATE effects SET status = ?, done = ?, code = ?, error = ?, output = ?, exit_code = ?, stdout = ?, stderr = ?, truncated = ?, ended = ?, model = ?, answer = ?, prompt_tokens = ?, completion_tokens = ?, usage = ? WHERE id = ?`},
		{&s.insWhole, insWholeSQL},
		{&s.endRun, `UPDATE runs SET status = ?, error_code = ?, error_step = ?, error_msg = ?, ended = ?, result = ?, owner_pid = NULL WHERE n = ?`},
	} {
		if *p.st, err = conn.PrepareContext(ctx, p.q); err != nil {
			return err
		}
	}
	return nil
}

// insWholeSQL writes an effect's whole row at once: its start row's
// columns, then its end's (see merge).
const insWholeSQL = `INSERT OR REPLACE INTO effects (id, run, path, step, kind, visit, attempt, on_exit, started, rendered,
	status, done, code, error, output, exit_code, stdout, stderr, truncated, ended, model, answer, prompt_tokens, completion_tokens, usage)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// DataVersion is a number that changes whenever a change to the store is
// committed, by any process, this one included: a reader that polls the
// store (a run's event stream) reads it again only when it changed.
// (SQLite's data_version, asked on a connection that never writes, so
// that every commit is another connection's.)
func (s *Store) DataVersion() (int64, error) {
	s.versionMu.Lock()
	defer s.versionMu.Unlock()
	ctx := context.Background()
	if s.version == nil {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return 0, s.fail(err)
		}
		s.version = conn
	}
	var v int64
	err := s.version.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	return v, s.fail(err)
}

// Close closes the store.
func (s *Store) Close() error {
	s.waitRemoved()
	s.versionMu.Lock()
	if s.version != nil {
		s.version.Close()
	}
	s.versionMu.Unlock()
	for _, st := range []*sql.Stmt{s.begin, s.commit, s.rollback, s.insEffect, s.endEffect, s.endRun, s.insWhole} {
		st.Close()
	}
	s.jconn.Close()
	return s.db.Close()
}

// waitRemoved waits for the side journals being deleted.
func (s *Store) waitRemoved() { s.removing.wait() }

// counter is a count that may be waited on to reach zero, and added to
// while it is.
type counter struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func (c *counter) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += d
	if c.n == 0 && c.zero != nil {
		c.zero.Broadcast()
	}
}

func (c *counter) wait() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zero == nil {
		c.zero = sync.NewCond(&c.mu)
	}
	for c.n > 0 {
		c.zero.Wait()
	}
}

// Checkpoint folds the write-ahead log back into the database file.
func (s *Store) Checkpoint() error {
	_, err := s.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
	return err
}

// migrations are the schema's versions; migration i takes the schema from
// version i to i+1. Never edit one that has shipped: add another.
var migrations = []string{
	`CREATE TABLE runs (
		n            INTEGER PRIMARY KEY,
		id           TEXT NOT NULL UNIQUE,
		flow         TEXT NOT NULL,
		file         TEXT NOT NULL,
		root         TEXT NOT NULL,
		inputs       TEXT NOT NULL,
		options      TEXT NOT NULL,
		status       TEXT NOT NULL,
		error_code   TEXT,
		error_step   TEXT,
		error_msg    TEXT,
		started      INTEGER NOT NULL,
		ended        INTEGER,
		result       TEXT,
		resumed_from TEXT,
		owner_pid    INTEGER,
		owner_start  TEXT,
		owner_host   TEXT
	);
	CREATE INDEX runs_flow ON runs (flow, n);
	CREATE TABLE blobs (
		hash TEXT PRIMARY KEY,
		text BLOB NOT NULL
	) WITHOUT ROWID;
	CREATE TABLE sources (
		run  INTEGER NOT NULL REFERENCES runs (n) ON DELETE CASCADE,
		ord  INTEGER NOT NULL,
		path TEXT NOT NULL,
		hash TEXT NOT NULL REFERENCES blobs (hash),
		PRIMARY KEY (run, ord)
	) WITHOUT ROWID;
	CREATE TABLE effects (
		id        INTEGER PRIMARY KEY,
		run       INTEGER NOT NULL REFERENCES runs (n) ON DELETE CASCADE,
		path      TEXT NOT NULL,
		step      TEXT NOT NULL,
		kind      TEXT NOT NULL,
		visit     INTEGER NOT NULL,
		attempt   INTEGER NOT NULL,
		status    TEXT NOT NULL,
		done      INTEGER,
		code      TEXT,
		error     TEXT,
		output    TEXT,
		exit_code INTEGER,
		stdout    BLOB,
		stderr    BLOB,
		truncated INTEGER,
		started   INTEGER NOT NULL,
		ended     INTEGER
	);
	CREATE INDEX effects_run ON effects (run, id);
	CREATE TABLE approvals (
		run       INTEGER NOT NULL REFERENCES runs (n) ON DELETE CASCADE,
		path      TEXT NOT NULL,
		step      TEXT NOT NULL,
		visit     INTEGER NOT NULL,
		message   TEXT NOT NULL,
		requested INTEGER NOT NULL,
		decided   INTEGER,
		approved  INTEGER,
		by        TEXT,
		reason    TEXT,
		PRIMARY KEY (run, path, step, visit)
	) WITHOUT ROWID;
	CREATE TABLE waits (
		run   INTEGER NOT NULL REFERENCES runs (n) ON DELETE CASCADE,
		path  TEXT NOT NULL,
		step  TEXT NOT NULL,
		visit INTEGER NOT NULL,
		due   INTEGER NOT NULL,
		PRIMARY KEY (run, path, step, visit)
	) WITHOUT ROWID;`,
	// Effects of exit handlers, which a resume runs again.
	`ALTER TABLE effects ADD COLUMN on_exit INTEGER NOT NULL DEFAULT 0;`,
	// Model calls: the model, its raw answer and the tokens spent.
	`ALTER TABLE effects ADD COLUMN model TEXT;
	ALTER TABLE effects ADD COLUMN answer TEXT;
	ALTER TABLE effects ADD COLUMN prompt_tokens INTEGER;
	ALTER TABLE effects ADD COLUMN completion_tokens INTEGER;`,
	// Effects keyed by run: effect k of run n has id n<<32 + k, so a run's
	// journal is one range of the table's own key, and a start row writes
	// one b-tree page instead of two (the index on (run, id) is gone; so
	// is the foreign key, whose cascade would scan the table without it:
	// GC deletes a run's effects by their range).
	`CREATE TABLE effects_by_run (
		id        INTEGER PRIMARY KEY,
		run       INTEGER NOT NULL,
		path      TEXT NOT NULL,
		step      TEXT NOT NULL,
		kind      TEXT NOT NULL,
		visit     INTEGER NOT NULL,
		attempt   INTEGER NOT NULL,
		on_exit   INTEGER NOT NULL DEFAULT 0,
		status    TEXT NOT NULL,
		done      INTEGER,
		code      TEXT,
		error     TEXT,
		output    TEXT,
		exit_code INTEGER,
		stdout    BLOB,
		stderr    BLOB,
		truncated INTEGER,
		started   INTEGER NOT NULL,
		ended     INTEGER,
		model     TEXT,
		answer    TEXT,
		prompt_tokens     INTEGER,
		completion_tokens INTEGER
	);
	INSERT INTO effects_by_run (id, run, path, step, kind, visit, attempt, on_exit, status, done, code, error, output, exit_code,
		stdout, stderr, truncated, started, ended, model, answer, prompt_tokens, completion_tokens)
	SELECT (run << 32) + ROW_NUMBER() OVER (PARTITION BY run ORDER BY id), run, path, step, kind, visit, attempt, on_exit, status,
		done, code, error, output, exit_code, stdout, stderr, truncated, started, ended, model, answer, prompt_tokens, completion_tokens
	FROM effects;
	DROP TABLE effects;
	ALTER TABLE effects_by_run RENAME TO effects;`,
	// An approval's timeout (nanoseconds, 0 for none), recorded when it is
	// first asked: skein approve refuses a late decision without loading
	// the flow. NULL for approvals asked before.
	`ALTER TABLE approvals ADD COLUMN timeout INTEGER;`,
	// skein runs --status S lists the newest runs with a status without
	// reading every run.
	`CREATE INDEX runs_status ON runs (status, id);`,
	// When an approval timed out (its deadline, nanoseconds), recorded by
	// the run that saw it: a decision after that is refused, and one
	// recorded just before is the one the run takes.
	`ALTER TABLE approvals ADD COLUMN expired INTEGER;`,
	// A request to cancel a run that has not ended (skein cancel): who
	// asked, why and when, as JSON; the process that owns the run reads
	// it and cancels the run.
	`ALTER TABLE runs ADD COLUMN cancel TEXT;`,
	// An approval step's fields (JSON, as graphir.FieldsJSON writes
	// them), recorded when it is first asked so that skein approve checks
	// a decision's values without loading the flow, and the values given
	// with the decision (a JSON object of every field).
	`ALTER TABLE approvals ADD COLUMN fields TEXT;
	ALTER TABLE approvals ADD COLUMN vals TEXT;`,
	// What an attempt actually ran (vm.Rendered as JSON: a task's argv
	// after its templates, a model call's messages), keys masked,
	// recorded with its start row. NULL for attempts recorded before.
	`ALTER TABLE effects ADD COLUMN rendered TEXT;`,
	// skein serve's queue: every firing of a trigger, webhook delivery
	// and enqueued start, in order, with the run it became; and each
	// clock trigger's last firing, recorded with it (a firing is made
	// once, whatever restarts).
	`CREATE TABLE queue (
		n        INTEGER PRIMARY KEY,
		flow     TEXT NOT NULL,
		root     TEXT NOT NULL,
		name     TEXT NOT NULL,
		inputs   TEXT NOT NULL,
		trigger  TEXT NOT NULL,
		conc     INTEGER NOT NULL,
		key      TEXT NOT NULL,
		fired    INTEGER,
		delivery TEXT,
		state    TEXT NOT NULL,
		run      TEXT,
		error    TEXT,
		enqueued INTEGER NOT NULL,
		started  INTEGER,
		ended    INTEGER
	);
	CREATE INDEX queue_state ON queue (state, n);
	CREATE UNIQUE INDEX queue_delivery ON queue (trigger, delivery) WHERE delivery IS NOT NULL;
	CREATE TABLE trigger_marks (
		flow    TEXT NOT NULL,
		trigger TEXT NOT NULL,
		at      INTEGER NOT NULL,
		PRIMARY KEY (flow, trigger)
	) WITHOUT ROWID;`,
	// The hopper: how deep an item a run emitted lies below one queued
	// from outside (0), and that run.
	`ALTER TABLE queue ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE queue ADD COLUMN parent TEXT;`,
	// A run's page lists the items it emitted; the runs list, the
	// trigger of each run.
	`CREATE INDEX queue_parent ON queue (parent) WHERE parent IS NOT NULL;
	CREATE INDEX queue_run ON queue (run) WHERE run IS NOT NULL;`,
	// A model call's usage beyond its prompt and completion tokens (the
	// cached and reasoning tokens, the HTTP attempts, the cost), as the
	// JSON of model.Usage: a replayed call counts what the original did.
	// NULL for calls without them and those recorded before.
	`ALTER TABLE effects ADD COLUMN usage TEXT;`,
	// The W3C trace context of the request that queued an item, which
	// its run continues, whenever it starts (docs/observability.md).
	`ALTER TABLE queue ADD COLUMN traceparent TEXT;
	ALTER TABLE queue ADD COLUMN tracestate TEXT;`,
}

// effectIDs is the range of effect ids of run n: [lo, hi).
func effectIDs(n int64) (lo, hi int64) { return n << 32, (n + 1) << 32 }

// migrate brings the schema up to date inside one immediate transaction:
// a second process opening the store at the same time waits for the first
// and then finds nothing to do.
func (s *Store) migrate() error {
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var version int
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version == len(migrations) {
		return nil
	}
	tx, err := conn.BeginTx(ctx, nil) // immediate: takes the write lock now
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("the store's schema (version %d) is newer than this skein knows (%d): upgrade skein", version, len(migrations))
	}
	for ; version < len(migrations); version++ {
		if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
			return fmt.Errorf("migration %d: %v", version+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version)); err != nil {
		return err
	}
	return tx.Commit()
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// retryBusy runs fn again while it fails with SQLITE_BUSY, for at most
// about ten seconds, waiting a little longer each time.
func retryBusy(fn func() error) error {
	wait := 5 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// NotStoreError is the error of [Open] for a path that holds something
// other than a run store: a directory, or a file that is not a SQLite
// database.
type NotStoreError struct {
	Dir string // the path, when it is a directory
}

func (e *NotStoreError) Error() string {
	if e.Dir != "" {
		return fmt.Sprintf("not a run store (it is a directory; a store is a file, such as %s)", filepath.Join(e.Dir, ".skein", FileName))
	}
	return "not a run store (the file is not a SQLite database)"
}

// storeErr makes SQLite's messages about files readable.
func storeErr(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "SQLITE_NOTADB") || strings.Contains(msg, "file is not a database"):
		return &NotStoreError{}
	case strings.Contains(msg, "SQLITE_CANTOPEN") || strings.Contains(msg, "unable to open database file"):
		return errors.New("cannot open or create the database file (is its directory writable?)")
	case strings.Contains(msg, "SQLITE_READONLY") || strings.Contains(msg, "readonly database") || errors.Is(err, syscall.EROFS):
		return errors.New("the database is read-only")
	case strings.Contains(msg, "SQLITE_FULL") || strings.Contains(msg, "database or disk is full") || errors.Is(err, syscall.ENOSPC):
		return errors.New("the disk is full")
	}
	return err
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n) }
