package frontend

import (
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Loads lower the collector's target while any is in progress, nested or
// overlapping, and put back what was there.
func TestLoadingGC(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	outer := leanGC()
	if got := gcPercent(); got != loadGCPercent {
		t.Fatalf("during a load: GC percent %d, want %d", got, loadGCPercent)
	}
	inner := leanGC()
	outer() // a child flow's load may outlast the load that started it
	if got := gcPercent(); got != loadGCPercent {
		t.Errorf("while an inner load goes on: GC percent %d, want %d", got, loadGCPercent)
	}
	inner()
	if got := gcPercent(); got != 100 {
		t.Errorf("after the loads: GC percent %d, want 100", got)
	}
}

// A target the user chose is kept.
func TestLoadingGCKeepsTheUsers(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "300")
	debug.SetGCPercent(300)
	leanGC()()
	done := leanGC()
	if got := gcPercent(); got != 300 {
		t.Errorf("with GOGC=300: GC percent %d during a load", got)
	}
	done()
	t.Setenv("GOGC", "")
	debug.SetGCPercent(20)
	done = leanGC()
	if got := gcPercent(); got != 20 {
		t.Errorf("with a lower target: GC percent %d during a load, want 20", got)
	}
	done()
}
