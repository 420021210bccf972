package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every shape skein init offers writes a flow, its test and a README that
// pass skein check (with no warning), skein test and skein fmt --check as
// written; a second init into the same place writes nothing.
func TestInitShapes(t *testing.T) {
	skein := func(args ...string) (int, string) {
		t.Helper()
		var out bytes.Buffer
		code := Main(context.Background(), args, stdio{strings.NewReader(""), &out, &out})
		return code, out.String()
	}
	code, list := skein("init", "--list")
	if code != 0 {
		t.Fatalf("init --list: %d\n%s", code, list)
	}
	names := shapeNames()
	if len(names) < 6 {
		t.Fatalf("only %d shapes: %v", len(names), names)
	}
	for _, name := range names {
		if !strings.Contains(list, name+" ") {
			t.Errorf("init --list does not list %s:\n%s", name, list)
		}
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			if code, out := skein("init", dir, "--shape", name); code != 0 {
				t.Fatalf("init: %d\n%s", code, out)
			}
			flow := filepath.Join(dir, "flow.star")
			if code, out := skein("check", flow); code != 0 || !strings.Contains(out, "ok: 1 flow") {
				t.Errorf("check: %d\n%s", code, out)
			}
			if code, out := skein("test", dir); code != 0 {
				t.Errorf("test: %d\n%s", code, out)
			}
			if code, out := skein("fmt", "--check", flow, filepath.Join(dir, "flow_test.star")); code != 0 {
				t.Errorf("fmt --check: %d\n%s", code, out)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || !strings.Contains(string(b), "skein test "+dir) {
				t.Errorf("README: %v\n%s", err, b)
			}
			before, _ := os.ReadFile(flow)
			if code, out := skein("init", dir, "--shape", "basic"); code != 1 || !strings.Contains(out, "exists: nothing was written") {
				t.Errorf("init over it: %d\n%s", code, out)
			}
			if after, _ := os.ReadFile(flow); !bytes.Equal(before, after) {
				t.Error("init over a flow changed it")
			}
		})
	}
	if code, out := skein("init", t.TempDir(), "--shape", "repair"); code != 2 || !strings.Contains(out, `no shape "repair"`) {
		t.Errorf("unknown shape: %d\n%s", code, out)
	}
}
