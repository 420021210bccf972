package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// A store that fills up (ENOSPC on the side journal, from a size limit)
// refuses the batch holding the completion that does not fit: the effect
// the run asks for next is never started but stops the run with
// store_error, Finish makes a result that says otherwise a store_error
// too, and the database passes SQLite's integrity check, with every
// earlier completion readable.
func TestStoreFull(t *testing.T) {
	sideMaxBytes = "100000"
	defer func() { sideMaxBytes = "" }()
	s, rec := beginRun(t)
	defer s.Close()
	out := "small"
	var ran []string
	rec.Inner = producer(func(req *vm.EffectRequest) *vm.EffectCompletion {
		ran = append(ran, req.Step)
		return &vm.EffectCompletion{OK: true, Stdout: out}
	})
	start := func(step string) *vm.EffectCompletion {
		ch := make(chan *vm.EffectCompletion, 1)
		rec.Start(context.Background(), &vm.EffectRequest{Kind: graphir.KindTask, Step: step, Visit: 1, Attempt: 1},
			func(c *vm.EffectCompletion) { ch <- c })
		rec.Idle(nil) // the run waits: the batch commits
		return <-ch
	}
	if c := start("a"); !c.OK || c.Stop != nil {
		t.Fatalf("a: %+v", c)
	}
	out = strings.Repeat("x", 1<<20)
	if c := start("b"); !c.OK {
		t.Fatalf("b: %+v, want it handed on before its commit", c.Code)
	}
	c := start("c")
	if c.Stop == nil || c.Stop.Code != "store_error" || !strings.Contains(c.Stop.Msg, "the disk is full") {
		t.Fatalf("c: %+v, want a store_error stop saying the disk is full", c)
	}
	if want := []string{"a", "b"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q: c must not start", ran, want)
	}
	res := &vm.Result{Status: vm.Succeeded, Started: time.Now()}
	if err := rec.Finish(res); err != nil {
		t.Fatal(err)
	}
	if res.Status != vm.Failed || res.Error == nil || res.Error.Code != "store_error" {
		t.Errorf("finished as %s %+v, want failed with store_error", res.Status, res.Error)
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
	if r, err := s.Get("r1"); err != nil || r.Status != string(vm.Failed) || r.ErrorCode != "store_error" {
		t.Errorf("run recorded as %+v, %v; want failed with store_error", r, err)
	}
}

type producer func(*vm.EffectRequest) *vm.EffectCompletion

func (p producer) Start(_ context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	done(p(req))
}
