package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoops runs the loops the harness measures, as its in-process
// baseline and its -vm mode run them, so that a change that breaks one
// (a new checker error, say) fails here and not only in `make
// bench-cli`: a run that does not load or succeed exits non-zero.
func TestLoops(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"loop.star": loopFlow, "loopdict.star": loopDictFlow} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		run := loadLoop(file)
		for _, n := range []int{1, 3} {
			if d := run(n); d <= 0 {
				t.Errorf("%s, n=%d: timed %v", name, n, d)
			}
		}
		vmAlone(file, 3)
	}
}
