package lsp

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkCheckBuffer measures what one keystroke costs once the debounce
// has passed: load and check a buffer of 1,000 steps, convert and publish
// its diagnostics.
func BenchmarkCheckBuffer(b *testing.B) {
	var src strings.Builder
	src.WriteString("flow(name = \"big\", inputs = {\"who\": \"me\"})\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&src, "s%d = step(\"s%d\", run = [\"echo\", \"{{ inputs.who }}\"])\n", i, i)
	}
	s := &Server{w: &writer{w: io.Discard}, docs: map[string]*document{}, published: map[string]map[string]bool{}}
	path := filepath.Join(b.TempDir(), "big.star")
	d := &document{path: path, uri: uriOf(path), text: newText(src.String())}
	s.docs[path] = d
	b.ReportAllocs()
	for b.Loop() {
		s.mu.Lock()
		s.checkAll()
		s.mu.Unlock()
	}
	if d.good == nil || len(d.good.g.Steps()) != 1000 {
		b.Fatal("the buffer did not load")
	}
}
