package store

import (
	"testing"
	"time"
)

// With an age bound, gc also deletes the runs left waiting or interrupted
// since before it; a run still going, and younger ones, stay.
func TestGCStaleRuns(t *testing.T) {
	s := openInternal(t)
	old := time.Now().Add(-48 * time.Hour)
	begin := func(id string, started time.Time) *Recorder {
		rec, err := s.Begin(&NewRun{ID: id, Flow: "f", File: "f.star", Started: started})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	set := func(id, sql string, args ...any) {
		if _, err := s.db.Exec(`UPDATE runs SET `+sql+` WHERE id = ?`, append(args, id)...); err != nil {
			t.Fatal(err)
		}
	}
	begin("r-going", old)       // this process: still going
	begin("r-interrupted", old) // a process that died
	set("r-interrupted", `owner_pid = ?, owner_start = ''`, 1<<30)
	begin("r-waiting", old)
	set("r-waiting", `status = 'waiting', owner_pid = NULL`)
	begin("r-young-waiting", time.Now())
	set("r-young-waiting", `status = 'waiting', owner_pid = NULL`)

	if n, err := s.GC(100, 0); err != nil || n != 0 {
		t.Fatalf("without an age bound: GC = %d, %v; want nothing deleted", n, err)
	}
	n, err := s.GC(100, 24*time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("GC = %d, %v; want the old waiting and interrupted runs deleted", n, err)
	}
	runs, err := s.Runs(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range runs {
		left = append(left, r.ID)
	}
	if len(left) != 2 || left[0] != "r-young-waiting" || left[1] != "r-going" {
		t.Errorf("left %v; want r-young-waiting and r-going", left)
	}
}
