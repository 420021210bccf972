package lsp

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// openSteps opens, unchecked, a buffer of 1,000 steps that each run echo
// with a template, each line ending in tail.
func openSteps(b *testing.B, tail string) (*Server, *document) {
	var src strings.Builder
	src.WriteString("flow(name = \"big\", inputs = {\"who\": \"me\"})\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&src, "s%d = step(\"s%d\", run = [\"echo\", \"{{ inputs.who }}\"])%s\n", i, i, tail)
	}
	s := &Server{w: &writer{w: io.Discard}, docs: map[string]*document{}, published: map[string]map[string]bool{}}
	path := filepath.Join(b.TempDir(), "big.star")
	d := &document{path: path, uri: uriOf(path), text: newText(src.String()), stale: true}
	s.docs[path] = d
	return s, d
}

// BenchmarkCheckBuffer measures what one keystroke costs once the debounce
// has passed: load and check a buffer of 1,000 steps, convert and publish
// its diagnostics.
func BenchmarkCheckBuffer(b *testing.B) {
	s, d := openSteps(b, "")
	b.ReportAllocs()
	for b.Loop() {
		s.mu.Lock()
		d.stale = true // as after a keystroke
		s.mu.Unlock()
		s.checkStale(context.Background())
	}
	if d.good == nil || len(d.good.g.Steps()) != 1000 {
		b.Fatal("the buffer did not load")
	}
}

// BenchmarkHoverLastLine measures a hover over inputs.who in the last line
// of a buffer of 1,000 steps, where what the cursor is in (a string, a
// template hole) is read from the start of the buffer.
func BenchmarkHoverLastLine(b *testing.B) {
	s, d := openSteps(b, "  # step's 'comment'")
	s.checkStale(context.Background())
	line := strings.Index("s999 = step(\"s999\", run = [\"echo\", \"{{ inputs.who }}\"])", "who") + 1
	params := []byte(fmt.Sprintf(`{"textDocument": {"uri": %q}, "position": {"line": 1000, "character": %d}}`, d.uri, line))
	b.ReportAllocs()
	for b.Loop() {
		if res, e := s.hover(params); e != nil || res == nil {
			b.Fatalf("hover: %v %v", res, e)
		}
	}
}

// BenchmarkHoverVariable measures a hover over a variable bound to a step
// near the end of a buffer of 20,000 steps: which variables name steps is
// read from the syntax tree once per version, not once per request.
func BenchmarkHoverVariable(b *testing.B) {
	var src strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&src, "s%d = step(\"s%d\")\n", i, i)
	}
	s := &Server{w: &writer{w: io.Discard}, docs: map[string]*document{}, published: map[string]map[string]bool{}}
	path := filepath.Join(b.TempDir(), "big.star")
	d := &document{path: path, uri: uriOf(path), text: newText(src.String()), stale: true}
	s.docs[path] = d
	s.checkStale(context.Background())
	params := []byte(fmt.Sprintf(`{"textDocument": {"uri": %q}, "position": {"line": 19000, "character": 2}}`, d.uri))
	b.ReportAllocs()
	for b.Loop() {
		if res, e := s.hover(params); e != nil || res == nil {
			b.Fatalf("hover: %v %v", res, e)
		}
	}
}
