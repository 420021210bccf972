package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// A store that fills up (SQLITE_FULL, from a page limit) refuses the
// completion that does not fit, stops the run with store_error, and leaves
// a database that passes SQLite's integrity check, with every earlier
// completion readable.
func TestStoreFull(t *testing.T) {
	testMaxPages = "40"
	defer func() { testMaxPages = "" }()
	s, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Begin(&NewRun{ID: "r1", Flow: "f", File: "f.star", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	out := "small"
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		return &vm.EffectCompletion{OK: true, Stdout: out}
	})
	start := func(step string) *vm.EffectCompletion {
		ch := make(chan *vm.EffectCompletion, 1)
		rec.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: step, Visit: 1, Attempt: 1},
			func(c *vm.EffectCompletion) { ch <- c })
		return <-ch
	}
	if c := start("a"); !c.OK || c.Stop != nil {
		t.Fatalf("a: %+v", c)
	}
	out = strings.Repeat("x", 1<<20)
	c := start("b")
	if c.Stop == nil || c.Stop.Code != "store_error" || !strings.Contains(c.Stop.Msg, "the disk is full") {
		t.Fatalf("b: %+v, want a store_error stop saying the disk is full", c)
	}
	var check string
	if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	effects, err := s.Effects("r1", 0)
	if err != nil || len(effects) != 2 {
		t.Fatalf("effects: %d, %v", len(effects), err)
	}
	if a, b := effects[0], effects[1]; a.Status != "succeeded" || a.Stdout != "small" || b.Status != Running || b.Stdout != "" {
		t.Errorf("a %s %q, b %s (%d bytes of stdout); want a succeeded with its output, b running with none", a.Status, a.Stdout, b.Status, len(b.Stdout))
	}
}

type producer func(*vm.EffectRequest) *vm.EffectCompletion

func (p producer) Start(_ context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	done(p(req))
}
