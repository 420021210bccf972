package lsp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPositions(t *testing.T) {
	tx := newText("x = 1\na é𝄞 b\n")
	// "b" is rune column 6 of line 2; é is one UTF-16 unit, 𝄞 two, so it
	// is character 6 of line 1 in LSP terms (0-based).
	if got := tx.toLSP(2, 6); got != (position{1, 6}) {
		t.Errorf("toLSP(2, 6) = %v, want {1 6}", got)
	}
	if got := tx.toLSP(2, 5); got != (position{1, 5}) {
		t.Errorf("toLSP(2, 5) = %v, want {1 5} (after the surrogate pair)", got)
	}
	if off := tx.offset(position{1, 6}); tx.line(1)[off:] != "b" {
		t.Errorf("offset of {1 6} is %d (%q)", off, tx.line(1)[off:])
	}
	if got := tx.lspAt(1, strings.Index(tx.line(1), "b")); got != (position{1, 6}) {
		t.Errorf("lspAt = %v", got)
	}
	// Past the end of a line or the file: clamped.
	if got := tx.toLSP(1, 99); got != (position{0, 5}) {
		t.Errorf("toLSP(1, 99) = %v", got)
	}
	if off := tx.offset(position{0, 99}); off != 5 {
		t.Errorf("offset past the end = %d", off)
	}
	if got := tx.end(); got != (position{2, 0}) {
		t.Errorf("end = %v", got)
	}
	if r := wordRange(tx, 2, 6); r != (lspRange{position{1, 6}, position{1, 7}}) {
		t.Errorf("wordRange = %v", r)
	}
}

func TestStringAndWord(t *testing.T) {
	l := `a = step("a", run = ["echo", "{{ b.stdout }}"])  # "not"`
	s, _, _, ok := stringAt(l, strings.Index(l, "stdout"))
	if !ok || s != "{{ b.stdout }}" {
		t.Errorf("stringAt = %q %v", s, ok)
	}
	if _, _, _, ok := stringAt(l, strings.Index(l, "run")); ok {
		t.Error("run = is not in a string")
	}
	if _, _, _, ok := stringAt(l, strings.Index(l, "not")); ok {
		t.Error("a comment is not a string")
	}
	if w, _, _ := wordAt(l, strings.Index(l, "dout")); w != "stdout" {
		t.Errorf("wordAt = %q", w)
	}
	for src, want := range map[string]string{
		`step("a", `:                  "step",
		`step("a", run = [`:           "",
		`step("a", env = {"x": f(`:    "f",
		`step("a", env = {"x": f(1),`: "",
		`step("(", `:                  "step",
		"step(\"a\", # (\n":           "step",
		`x = 1`:                       "",
	} {
		if got := enclosingCall(src); got != want {
			t.Errorf("enclosingCall(%q) = %q, want %q", src, got, want)
		}
	}
}

func TestReader(t *testing.T) {
	r := newReader(strings.NewReader("Content-Length: 2\r\n\r\n{}" +
		"Content-Length: x\r\n\r\n" +
		"Content-Type: a\r\n\r\n" +
		"garbage\r\n\r\n" +
		"\r\nContent-Length: 4\r\n\r\nnull"))
	var got []string
	for {
		b, err := r.read()
		if err == io.EOF {
			break
		}
		if isFrameError(err) {
			got = append(got, "bad")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if strings.Join(got, " ") != "{} bad bad bad null" {
		t.Errorf("frames: %v", got)
	}
	if _, err := newReader(strings.NewReader("Content-Length: 10\r\n\r\nabc")).read(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v", err)
	}
	if _, err := newReader(strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n", maxFrame+1))).read(); err == nil {
		t.Error("an oversized frame was accepted")
	}
}

// session runs a Server in process over pipes.
type session struct {
	t    *testing.T
	in   io.WriteCloser
	msgs chan map[string]any // what the server wrote, read as it comes
	err  chan error
}

func newSession(t *testing.T) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, msgs: make(chan map[string]any, 1000), err: make(chan error, 1)}
	srv := &Server{Debounce: time.Millisecond}
	go func() {
		s.err <- srv.Serve(inR, outW)
		outW.Close()
	}()
	go func() {
		defer close(s.msgs)
		r := newReader(outR)
		for {
			b, err := r.read()
			if err != nil {
				return
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				panic(err)
			}
			s.msgs <- m
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

func (s *session) send(m map[string]any) {
	m["jsonrpc"] = "2.0"
	b, _ := json.Marshal(m)
	fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n%s", len(b), b)
}

// next returns the next message; a long silence fails the test (a hang
// guard, not a timing assertion).
func (s *session) next() map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(30 * time.Second):
		s.t.Fatal("no message from the server")
	}
	return nil
}

// published reads notifications until one for each of uris has come, and
// returns the last diagnostics messages of each.
func (s *session) published(uris ...string) map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	wanted := map[string]bool{}
	for _, u := range uris {
		wanted[u] = true
	}
	for len(seen) < len(uris) {
		m := s.next()
		if m["method"] != "textDocument/publishDiagnostics" {
			continue
		}
		p := m["params"].(map[string]any)
		uri := p["uri"].(string)
		if !wanted[uri] {
			continue
		}
		seen[uri] = true
		var msgs []string
		for _, d := range p["diagnostics"].([]any) {
			d := d.(map[string]any)
			msgs = append(msgs, fmt.Sprintf("%v %v:%v", d["code"], d["range"].(map[string]any)["start"].(map[string]any)["line"], d["message"]))
		}
		out[uri] = msgs
	}
	return out
}

// TestChildDiagnostics: a child flow's diagnostics land in the child's
// file, come from its open buffer, and are cleared once it is fixed.
func TestChildDiagnostics(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parent := write("parent.star", "c = step(\"c\", flow = \"child.star\")\n")
	child := write("child.star", "a = step(\"a\", run = [\"echo\", \"{{ nope.stdout }}\"])\n")
	pu, cu := uriOf(parent), uriOf(child)
	s := newSession(t)
	open := func(uri, text string) {
		s.send(map[string]any{"method": "textDocument/didOpen", "params": map[string]any{
			"textDocument": map[string]any{"uri": uri, "languageId": "skein", "version": 1, "text": text}}})
	}
	open(pu, "c = step(\"c\", flow = \"child.star\")\n")
	got := s.published(pu, cu)
	if len(got[pu]) != 0 || len(got[cu]) != 1 || !strings.HasPrefix(got[cu][0], "unknown_name 0:") {
		t.Fatalf("diagnostics: %v", got)
	}
	// Open the child and fix it in the buffer only: the parent's check
	// reads the buffer, and both clear the child's diagnostics.
	open(cu, "a = step(\"a\", run = [\"echo\", \"{{ nope.stdout }}\"])\n")
	s.published(cu) // the child's own check
	s.published(cu) // the parent's
	s.send(map[string]any{"method": "textDocument/didChange", "params": map[string]any{
		"textDocument":   map[string]any{"uri": cu, "version": 2},
		"contentChanges": []any{map[string]any{"text": "a = step(\"a\", run = [\"echo\", \"ok\"])\n"}}}})
	for i := 0; i < 2; i++ { // the child's own check and the parent's
		m := s.published(cu)
		if len(m[cu]) != 0 {
			t.Errorf("after the fix (%d): %v", i, m)
		}
	}
	// exit without shutdown is an error the command turns into status 1.
	s.send(map[string]any{"method": "exit"})
	if err := <-s.err; !errors.Is(err, ErrNoShutdown) {
		t.Errorf("Serve = %v, want ErrNoShutdown", err)
	}
}

// TestSymbolsNest: loop and map bodies are children of their loop or map.
func TestSymbolsNest(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.star")
	src := `a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: 2)
l = loop("l", body = [a, b], until = lambda it: True, max_iterations = 3)
c = step("c")
`
	s := newSession(t)
	s.send(map[string]any{"method": "textDocument/didOpen", "params": map[string]any{
		"textDocument": map[string]any{"uri": uriOf(p), "languageId": "skein", "version": 1, "text": src}}})
	s.published(uriOf(p))
	s.send(map[string]any{"id": 1, "method": "textDocument/documentSymbol", "params": map[string]any{"textDocument": map[string]any{"uri": uriOf(p)}}})
	var m map[string]any
	for m = s.next(); m["id"] == nil; m = s.next() {
	}
	var desc []string
	var walk func(xs []any, depth int)
	walk = func(xs []any, depth int) {
		for _, x := range xs {
			x := x.(map[string]any)
			desc = append(desc, strings.Repeat(">", depth)+x["name"].(string))
			if ch, ok := x["children"].([]any); ok {
				walk(ch, depth+1)
			}
		}
	}
	walk(m["result"].([]any), 0)
	if strings.Join(desc, " ") != "l >a >b c" {
		t.Errorf("symbols: %v", desc)
	}
}
