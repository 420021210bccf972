package store

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// A store created now has 16 KiB pages; one an older skein created, at
// SQLite's 4 KiB, keeps them when it is opened (and migrated) now
// (docs/performance.md).
func TestPageSize(t *testing.T) {
	pageSizeOf := func(s *Store) int {
		t.Helper()
		var n int
		if err := s.db.QueryRow(`PRAGMA page_size`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	s, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	if n := pageSizeOf(s); n != 16<<10 {
		t.Errorf("a new store has pages of %d bytes, want 16384", n)
	}
	s.Close()

	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=page_size(4096)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(migrations[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for range 2 { // migrated, then as it is
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := pageSizeOf(s); n != 4096 {
			t.Errorf("a store created at 4 KiB pages has pages of %d bytes once opened, want 4096", n)
		}
		s.Close()
	}
}
