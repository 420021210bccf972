package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinlang/skein/engine/runs"
)

// A skein without the Temporal engine refuses every command asked for it
// with exit status 2 (bad usage, as docs/temporal.md says), and says how
// to get one that has it, before it loads, opens or dials anything.
// (no_temporal.txtar checks the messages.)
func TestNoTemporalExitsTwo(t *testing.T) {
	if runs.HasEngine("temporal") {
		t.Skip("this skein has the Temporal engine")
	}
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.star")
	if err := os.WriteFile(flow, []byte(`a = step("a", run = ["touch", "ran"])`+"\nchain(START, a, END)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", flow, "--engine", "temporal"},
		{"worker", "--engine", "temporal", "--address", "127.0.0.1:1"},
		{"worker"},
		{"approve", "RUN", "--engine", "temporal"},
		{"cancel", "RUN", "--engine", "temporal"},
		{"show", "RUN", "--engine", "temporal"},
		{"logs", "RUN", "--engine", "temporal"},
		{"runs", "--engine", "temporal"},
		{"resume", "RUN", "--engine", "temporal"},
	} {
		code, _, stderr := runMain(args...)
		if code != exitUsage || !strings.Contains(stderr, "built without the Temporal engine") || !strings.Contains(stderr, temporalInstall) {
			t.Errorf("skein %s: exit %d, stderr:\n%s\nwant exit 2 and how to get the engine", strings.Join(args, " "), code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the flow ran")
	}
}
