package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

// TestHeapFloor checks that the block a run keeps holds the collector's
// target above twice its size, and that a GOGC or GOMEMLIMIT the user set
// is left to decide alone.
func TestHeapFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	floor := heapFloor()
	if len(floor) != heapFloorSize {
		t.Fatalf("heapFloor() is %d bytes, want %d", len(floor), heapFloorSize)
	}
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if goal := s[0].Value.Uint64(); goal < 2*heapFloorSize {
		t.Errorf("with the floor kept, the collector's target is %d bytes, want at least %d", goal, 2*heapFloorSize)
	}
	runtime.KeepAlive(floor)
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(v, map[string]string{"GOGC": "200", "GOMEMLIMIT": "1GiB"}[v])
		if f := heapFloor(); f != nil {
			t.Errorf("with %s set, heapFloor() is %d bytes, want none", v, len(f))
		}
		t.Setenv(v, "")
	}
}
