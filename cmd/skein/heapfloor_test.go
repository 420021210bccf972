package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
)

// TestHeapFloor checks that execute keeps the floor alive while the run
// goes on: the collector's target, read from inside the run (as the VM
// writes a retry's event), is above what it is once the run is over by
// more than the floor; and that a GOGC or GOMEMLIMIT the user set is left
// to decide alone.
func TestHeapFloor(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("the test process runs with the collector tuned: no floor to see")
	}
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.star")
	if err := os.WriteFile(flow, []byte(`def flaky(r):
    fail("not yet")
step("flaky", fn = flaky, retries = 1, backoff = "1ms")
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var during uint64
	out := &hookWriter{hook: func(p []byte) {
		if during == 0 && strings.Contains(string(p), `"step_retrying"`) {
			during = heapGoal()
		}
	}}
	var stderr strings.Builder
	Main(context.Background(), []string{"run", "--no-store", "--events", flow}, stdio{strings.NewReader(""), out, &stderr})
	if during == 0 {
		t.Fatalf("no step_retrying event was written; stdout:\n%s\nstderr:\n%s", out.b.String(), stderr.String())
	}
	if after := heapGoal(); during < after+heapFloorSize {
		t.Errorf("the collector's target was %d bytes during the run and is %d after it: want the floor's %d more during it", during, after, heapFloorSize)
	}

	for _, tc := range []struct{ name, value string }{{"GOGC", "200"}, {"GOMEMLIMIT", "1GiB"}} {
		t.Setenv(tc.name, tc.value)
		if f := heapFloor(); f != nil {
			t.Errorf("with %s set, heapFloor() is %d bytes, want none", tc.name, len(f))
		}
		t.Setenv(tc.name, "")
	}
}

// heapGoal collects the garbage and returns the collector's next target.
func heapGoal() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// hookWriter keeps what is written to it and calls hook on each write.
type hookWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	hook func(p []byte)
}

func (w *hookWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hook(p)
	return w.b.Write(p)
}
