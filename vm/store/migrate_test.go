package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
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
		INSERT INTO runs (id, flow, file, root, inputs, options, status, started) VALUES ('r2', 'f', 'f.star', '.', '{}', '{}', 'running', 2);
		INSERT INTO effects (run, path, step, kind, visit, attempt, status, done, started) VALUES (1, '', 'a', 'task', 1, 1, 'succeeded', 1, 1);
		INSERT INTO effects (run, path, step, kind, visit, attempt, status, done, started) VALUES (2, '', 'x', 'task', 1, 1, 'succeeded', 1, 2);
		INSERT INTO effects (run, path, step, kind, visit, attempt, status, done, started) VALUES (2, '', 'y', 'task', 1, 1, 'succeeded', 2, 2);
		INSERT INTO effects (run, path, step, kind, visit, attempt, status, done, started) VALUES (1, '', 'b', 'task', 1, 1, 'failed', 2, 1);
		INSERT INTO approvals (run, path, step, visit, message, requested) VALUES (2, '', 'gate', 1, 'Go?', 2)`); err != nil {
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
	// The journals of the two runs, which interleaved in the table, come
	// back whole and in order, each under its own run's range of ids.
	for id, want := range map[string][]string{"r1": {"a", "b"}, "r2": {"x", "y"}} {
		effects, err := s.Effects(id, 0)
		if err != nil || len(effects) != 2 || effects[0].OnExit || effects[0].Model != "" || effects[0].Rendered != nil {
			t.Fatalf("effects of %s: %+v, %v", id, effects, err)
		}
		for i, e := range effects {
			if e.Step != want[i] {
				t.Errorf("effect %d of %s is %q, want %q", i, id, e.Step, want[i])
			}
		}
		if effects[1].ID <= effects[0].ID {
			t.Errorf("ids of %s out of order: %d, %d", id, effects[0].ID, effects[1].ID)
		}
	}
	// An approval asked before timeouts were recorded has none known.
	if aps, err := s.Approvals("r2"); err != nil || len(aps) != 1 || aps[0].Timeout >= 0 || !aps[0].Deadline().IsZero() {
		t.Fatalf("approvals of r2: %+v, %v", aps, err)
	}
	// A run taken over after the migration goes on after its last effect.
	rec, err := s.Continue("r2", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.record(&vm.EffectRequest{Step: "z", Kind: graphir.KindTask, Visit: 1, Attempt: 1}, 1, &vm.EffectCompletion{OK: true}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sync(); err != nil {
		t.Fatal(err)
	}
	if effects, err := s.Effects("r2", 0); err != nil || len(effects) != 3 || effects[2].Step != "z" || effects[2].Done != 3 {
		t.Fatalf("effects of r2 after Continue: %+v, %v", effects, err)
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

// A store of the schema before usage was kept opens: its model calls
// read back with their prompt and completion tokens, and a call recorded
// after the migration keeps its whole usage.
func TestMigrateUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	prev := len(migrations) - 1
	for _, m := range migrations[:prev] {
		if _, err := db.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	lo, _ := effectIDs(1)
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d;
		INSERT INTO runs (id, flow, file, root, inputs, options, status, started) VALUES ('r1', 'f', 'f.star', '.', '{}', '{}', 'running', 1);
		INSERT INTO effects (id, run, path, step, kind, visit, attempt, status, done, started, model, answer, prompt_tokens, completion_tokens)
		VALUES (%d, 1, '', 'ask', 'llm', 1, 1, 'succeeded', 1, 1, 'm1', 'yes', 7, 2)`, prev, lo+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	effects, err := s.Effects("r1", 0)
	if err != nil || len(effects) != 1 || effects[0].Usage != (model.Usage{PromptTokens: 7, CompletionTokens: 2}) {
		t.Fatalf("effects of r1: %+v, %v", effects, err)
	}
	rec, err := s.Continue("r1", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := model.Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 8, ReasoningTokens: 3, Attempts: 2, Cost: 0.5}
	if err := rec.record(&vm.EffectRequest{Step: "ask2", Kind: graphir.KindLLM, Visit: 1, Attempt: 1}, 2, &vm.EffectCompletion{OK: true, Model: "m1", Answer: "ok", Usage: u}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sync(); err != nil {
		t.Fatal(err)
	}
	if effects, err := s.Effects("r1", 0); err != nil || len(effects) != 2 || effects[1].Usage != u {
		t.Fatalf("effects of r1 after Continue: %+v, %v", effects, err)
	}
}

// GC deletes the effects of the runs it deletes (they are no longer
// removed by a cascade) and nothing else's.
func TestGCDeletesEffects(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("r%d", i)
		rec, err := s.Begin(&NewRun{ID: id, Flow: "f", File: "f.star", Started: time.Unix(int64(i), 0)})
		if err != nil {
			t.Fatal(err)
		}
		for v := 1; v <= 2; v++ {
			if err := rec.record(&vm.EffectRequest{Step: "t", Kind: graphir.KindTask, Visit: v, Attempt: 1}, 1, &vm.EffectCompletion{OK: true}); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Finish(&vm.Result{RunID: id, Status: vm.Succeeded, Started: time.Unix(int64(i), 0)}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if n, err := s.GC(1, 0); err != nil || n != 2 {
		t.Fatalf("GC = %d, %v", n, err)
	}
	var left int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM effects`).Scan(&left); err != nil || left != 2 {
		t.Fatalf("%d effects left, %v; want the 2 of the run kept", left, err)
	}
	if effects, err := s.Effects(ids[2], 0); err != nil || len(effects) != 2 {
		t.Fatalf("effects of the run kept: %d, %v", len(effects), err)
	}
}
