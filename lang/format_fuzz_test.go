package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzFormat feeds arbitrary source to Format: it must return formatted
// source or an error, never panic; what it returns formats to itself.
// (Format itself refuses a result whose syntax tree differs.)
func FuzzFormat(f *testing.F) {
	files, _ := filepath.Glob("../examples/*.star")
	more, _ := filepath.Glob("../testdata/check/valid/*.star")
	for _, file := range append(files, more...) {
		if src, err := os.ReadFile(file); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("x = (1 + 2) * 3  # c\nload('a.star', 'b', c = 'd')\n"))
	f.Add([]byte("def f(r):\n    \"\"\"Doc.\n      more\n    \"\"\"\n    return [x for x in r if x]\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		// A hang guard, generous for a busy machine (a panic here is
		// recorded as a crasher).
		timer := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("Format hangs (no result after 30s) on %q", src)) })
		defer timer.Stop()
		out, err := Format("f.star", src)
		if err != nil {
			return
		}
		again, err := Format("f.star", out)
		if err != nil {
			t.Fatalf("the formatted source does not format: %v\n%s", err, out)
		}
		if string(again) != string(out) {
			t.Fatalf("formatting is not idempotent:\n%s\n---\n%s", out, again)
		}
	})
}
