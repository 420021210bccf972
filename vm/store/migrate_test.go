package store

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// A store made by an older skein (schema version 1) is brought up to date
// when it is opened, keeping its runs.
func TestMigrateFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(migrations[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 1;
		INSERT INTO runs (id, flow, file, root, inputs, options, status, started) VALUES ('r1', 'f', 'f.star', '.', '{}', '{}', 'failed', 1);
		INSERT INTO effects (run, path, step, kind, visit, attempt, status, done, started) VALUES (1, '', 'a', 'task', 1, 1, 'succeeded', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("version %d, %v; want %d", version, err, len(migrations))
	}
	effects, err := s.Effects("r1", 0)
	if err != nil || len(effects) != 1 || effects[0].OnExit || effects[0].Model != "" {
		t.Fatalf("effects %+v, %v", effects, err)
	}
	// A newer schema than this skein knows is refused, not guessed at.
	if _, err := s.db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path); err == nil {
		t.Fatal("opened a store with a newer schema")
	}
}
