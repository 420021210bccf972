package lsp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/lang"
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
	// Where each line starts, in bytes: é is two, 𝄞 four; before the
	// first line and past the last, clamped to the buffer.
	for line, want := range map[int]int{-1: 0, 0: 0, 1: 6, 2: len(tx.src), 3: len(tx.src), 1 << 30: len(tx.src)} {
		if got := tx.lineStart(line); got != want {
			t.Errorf("lineStart(%d) = %d, want %d", line, got, want)
		}
	}
}

// TestPastTheEnd: requests at a position past the end of the buffer
// answer as at its end, never with an internal error (completion sliced
// the buffer at the start of a line that does not exist).
func TestPastTheEnd(t *testing.T) {
	src := "a = step(\"a\")\n"
	dir := writeFiles(t, map[string]string{"e.star": src})
	uri := uriOf(filepath.Join(dir, "e.star"))
	s := newSession(t)
	s.open(uri, src)
	s.published(uri)
	for _, method := range []string{"textDocument/completion", "textDocument/hover", "textDocument/definition"} {
		for _, line := range []int{1, 2, 1000000} {
			s.request(method, map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": line, "character": 3}})
		}
	}
	// An incremental change past the end appends, as at the end.
	s.send(map[string]any{"method": "textDocument/didChange", "params": map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"range": map[string]any{"start": map[string]any{"line": 5, "character": 0}, "end": map[string]any{"line": 5, "character": 0}}, "text": "b = step(1)\n"}},
	}})
	if got := s.published(uri)[uri]; len(got) != 1 || got[0] != "load_error 1:step: name must be a string, got int 1" {
		t.Errorf("after a change past the end: %v", got)
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
	// In a buffer, a triple-quoted string spans lines and another ends at
	// its line's end.
	buf := "p = \"\"\"one\n{{ inputs.who }}\"\"\" # 'x\nq = \"open\nr = 'it''s'\n"
	for _, tc := range []struct {
		at   string
		want string
		ok   bool
	}{{"who", "one\n{{ inputs.who }}", true}, {"x", "", false}, {"pen", "open", true}, {"r =", "", false}, {"s'", "s", true}} {
		got, _, _, ok := stringAt(buf, strings.Index(buf, tc.at))
		if got != tc.want || ok != tc.ok {
			t.Errorf("stringAt(buffer, %q) = %q %v, want %q %v", tc.at, got, ok, tc.want, tc.ok)
		}
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
	// After a bad frame, whose body's length is unknown, reading goes on
	// at the next Content-Length: the headers between are skipped.
	if strings.Join(got, " ") != "{} bad null" {
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
	t      *testing.T
	in     io.WriteCloser
	msgs   chan map[string]any // what the server wrote, read as it comes
	err    chan error
	nextID int
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

// request sends a request and returns its result, skipping notifications.
func (s *session) request(method string, params any) any {
	s.t.Helper()
	s.nextID++
	id := float64(s.nextID)
	s.send(map[string]any{"id": s.nextID, "method": method, "params": params})
	for {
		m := s.next()
		if m["method"] == nil && m["id"] == id {
			if m["error"] != nil {
				s.t.Fatalf("%s: %v", method, m["error"])
			}
			return m["result"]
		}
	}
}

func (s *session) open(uri, text string) {
	s.send(map[string]any{"method": "textDocument/didOpen", "params": map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": "skein", "version": 1, "text": text}}})
}

func writeFiles(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const featureFlow = `load("@std/patterns.star", "fan_out")

flow(name = "f", inputs = {"who": input("me", help = "who to greet")})

a = step("a", run = ["echo", "{{ inputs.who }}"], max_visits = 2)
b = step("b", run = ["echo", "b"])
c = step("c", join = "or")
pick = router("pick", by = "a.stdout", routes = {"x": b, "y": "c"}, default = b)
edge(START, a)
edge(a, pick)
edge(b, c)
edge(c, END)
`

// TestFeatures asks for hover, definition and completion at places in one
// flow.
func TestFeatures(t *testing.T) {
	dir := writeFiles(t, map[string]string{"f.star": featureFlow})
	uri := uriOf(filepath.Join(dir, "f.star"))
	s := newSession(t)
	s.open(uri, featureFlow)
	if ds := s.published(uri)[uri]; len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	lines := strings.Split(featureFlow, "\n")
	at := func(line int, sub string, delta int) map[string]any {
		i := strings.Index(lines[line], sub)
		if i < 0 {
			t.Fatalf("%q not on line %d", sub, line)
		}
		return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": line, "character": i + delta}}
	}
	hover := func(p map[string]any) string {
		r := s.request("textDocument/hover", p)
		if r == nil {
			return ""
		}
		return r.(map[string]any)["contents"].(map[string]any)["value"].(string)
	}
	for _, tc := range []struct {
		name string
		p    map[string]any
		want []string
	}{
		{"a step variable", at(9, "a, pick", 0), []string{"**task** `a`", "max_visits: 2", "join: and",
			"envelope of a run: visits at most 1; 1 processes; time unbounded (has no timeout) a visit"}},
		{"a route given by name", at(7, `"c"}`, 1), []string{"**noop** `c`", "join: or", "max_visits: unbounded"}},
		{"a router and what it reads", at(9, "pick)", 0), []string{"**router** `pick`", "reads: a.stdout"}},
		{"a builtin", at(7, "router", 1), []string{"router(name, *, by=None", "exactly one branch"}},
		{"a keyword argument", at(4, "max_visits", 2), []string{"**max_visits** of `step(", "default `None`"}},
		{"a new builtin", at(2, "input(", 1), []string{"input(default=<required>", "Declares one flow input"}},
		{"an input", at(4, "who", 0), []string{"**input `who`** (string), default `\"me\"`", "who to greet"}},
		{"a sentinel", at(8, "START", 1), []string{"**START**"}},
	} {
		got := hover(tc.p)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("hover on %s: %q lacks %q", tc.name, got, w)
			}
		}
	}
	if got := hover(at(0, "load", 1)); got != "" {
		t.Errorf("hover on load: %q, want nothing", got)
	}

	def := func(p map[string]any) string {
		r := s.request("textDocument/definition", p)
		if r == nil {
			return "none"
		}
		l := r.([]any)[0].(map[string]any)
		st := l["range"].(map[string]any)["start"].(map[string]any)
		return fmt.Sprintf("%s:%v:%v", filepath.Base(pathOf(l["uri"].(string))), st["line"], st["character"])
	}
	for _, tc := range []struct {
		name string
		p    map[string]any
		want string
	}{
		{"edge() argument", at(9, "a, pick", 0), "f.star:4:4"},
		{"route value", at(7, "b, ", 0), "f.star:5:4"},
		{"route by name", at(7, `"c"}`, 1), "f.star:6:4"},
		{"expression", at(7, "a.stdout", 0), "f.star:4:4"},
		{"input", at(4, "who", 1), "f.star:2:27"},
		{"a keyword", at(4, "max_visits", 1), "none"},
		{"an @std load", at(0, "@std", 2), "none"},
	} {
		if got := def(tc.p); got != tc.want {
			t.Errorf("definition of %s: %s, want %s", tc.name, got, tc.want)
		}
	}

	labels := func(p map[string]any) string {
		var out []string
		for _, it := range s.request("textDocument/completion", p).(map[string]any)["items"].([]any) {
			it := it.(map[string]any)
			l := it["label"].(string)
			if ins, ok := it["insertText"].(string); ok && ins != l {
				l += "=>" + ins
			}
			out = append(out, l)
		}
		return strings.Join(out, " ")
	}
	if got := labels(at(0, `patterns`, 0)); got != "@std/patterns.star=>patterns.star" {
		t.Errorf("completion after @std/: %s", got)
	}
	if got := labels(at(7, `stdout`, 0)); got != "stdout text stderr exit_code error code" {
		t.Errorf("completion after a.: %s", got)
	}
	if got := labels(at(4, `{{ `, 3)); !strings.HasPrefix(got, "a b c pick inputs self") {
		t.Errorf("completion in a template: %s", got)
	}
	if got := labels(at(6, `join`, 0)); !strings.HasPrefix(got, "name=>name =  run=>run = ") {
		t.Errorf("completion in step(): %s", got)
	}
}

// TestModuleDiagnostics: a load error inside a module is shown in the
// module, and cleared once the module's buffer is fixed.
func TestModuleDiagnostics(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"main.star": "load(\"lib.star\", \"x\")\na = step(\"a\")\n",
		"lib.star":  "x = 1\nstep(\"zz\", run = \"echo\")\n",
	})
	mu, lu := uriOf(filepath.Join(dir, "main.star")), uriOf(filepath.Join(dir, "lib.star"))
	s := newSession(t)
	s.open(mu, "load(\"lib.star\", \"x\")\na = step(\"a\")\n")
	got := s.published(mu, lu)
	if len(got[lu]) != 1 || !strings.HasPrefix(got[lu][0], "load_error 1:") || !strings.Contains(got[lu][0], "run must be") {
		t.Fatalf("diagnostics: %v", got)
	}
	s.open(lu, "x = 1\nstep(\"zz\", run = \"echo\")\n")
	s.published(lu)
	s.published(lu)
	// Saving sends the text: the fix is checked at once.
	s.send(map[string]any{"method": "textDocument/didSave", "params": map[string]any{
		"textDocument": map[string]any{"uri": lu}, "text": "x = 1\n"}})
	for i := 0; i < 2; i++ {
		if m := s.published(lu); len(m[lu]) != 0 {
			t.Errorf("after the fix: %v", m)
		}
	}
	// Closing the module leaves the main flow's view of the disk file.
	s.send(map[string]any{"method": "textDocument/didClose", "params": map[string]any{"textDocument": map[string]any{"uri": lu}}})
	if m := s.published(lu); len(m[lu]) != 0 {
		t.Errorf("after close, what the closed buffer published is cleared: %v", m)
	}
	if m := s.published(lu); len(m[lu]) != 1 {
		t.Errorf("after close, the main flow sees the file on disk again: %v", m)
	}
}

func TestInHole(t *testing.T) {
	s := "built a {{ a.stdout }} and b"
	for sub, want := range map[string]bool{"a {{": false, "a.stdout": true, "and": false} {
		if got := inHole(s, strings.Index(s, sub)); got != want {
			t.Errorf("inHole at %q = %v", sub, got)
		}
	}
}

// TestMultilineTemplate: completion and hover work inside a triple-quoted
// prompt that spans lines.
func TestMultilineTemplate(t *testing.T) {
	src := "a = step(\"a\", run = [\"echo\"])\nb = step(\"b\", llm = \"\"\"Summarize:\n{{ a.stdout }} and {{ a. }}\n\"\"\")\n"
	dir := writeFiles(t, map[string]string{"m.star": src})
	uri := uriOf(filepath.Join(dir, "m.star"))
	s := newSession(t)
	s.open(uri, src)
	s.published(uri)
	line := strings.Split(src, "\n")[2]
	pos := func(sub string, delta int) map[string]any {
		return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": 2, "character": strings.Index(line, sub) + delta}}
	}
	var labels []string
	for _, it := range s.request("textDocument/completion", pos("a. }}", 2)).(map[string]any)["items"].([]any) {
		labels = append(labels, it.(map[string]any)["label"].(string))
	}
	if strings.Join(labels, ",") != "stdout,text,stderr,exit_code,error,code" {
		t.Errorf("completion in a multi-line prompt: %v", labels)
	}
	h := s.request("textDocument/hover", pos("a.stdout", 0))
	if h == nil || !strings.Contains(h.(map[string]any)["contents"].(map[string]any)["value"].(string), "**task** `a`") {
		t.Errorf("hover in a multi-line prompt: %v", h)
	}
	if h := s.request("textDocument/hover", pos("and", 1)); h != nil {
		t.Errorf("hover on the literal text of a prompt: %v", h)
	}
}

// A module the loader would refuse to read (docs/language.md: larger than 8 MiB) is
// a load error in the editor too, not read whole.
func TestModuleTooBig(t *testing.T) {
	main := "load(\"big.star\", \"x\")\na = step(\"a\")\n"
	dir := writeFiles(t, map[string]string{"main.star": main})
	big := append([]byte("x = 1\n#"), bytes.Repeat([]byte{' '}, lang.MaxFileSize)...)
	if err := os.WriteFile(filepath.Join(dir, "big.star"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	mu := uriOf(filepath.Join(dir, "main.star"))
	s := newSession(t)
	s.open(mu, main)
	if got := s.published(mu); len(got[mu]) != 1 || !strings.Contains(got[mu][0], "larger than the limit") {
		t.Fatalf("diagnostics: %v", got)
	}
}

// A buffer over the size limit is the load error skein check gives the
// file (it was checked as if no limit applied), and is not formatted.
func TestBufferTooBig(t *testing.T) {
	big := "a = step(\"a\")\n#" + strings.Repeat(" ", lang.MaxFileSize)
	dir := writeFiles(t, map[string]string{"big.star": big})
	uri := uriOf(filepath.Join(dir, "big.star"))
	s := newSession(t)
	s.open(uri, big)
	if got := s.published(uri)[uri]; len(got) != 1 || got[0] != "load_error 0:cannot read "+filepath.Join(dir, "big.star")+": larger than the limit of 8 MiB" {
		t.Errorf("diagnostics: %v", got)
	}
	if edits := s.request("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": uri}, "options": map[string]any{"tabSize": 4, "insertSpaces": true}}); edits != nil {
		t.Errorf("formatting a buffer over the limit: %v", edits)
	}
}

// A buffer whose expression nests too deeply is a parse error in the
// editor, and the server goes on answering: it died of a stack overflow
// on didOpen (issue 26).
func TestDeepBuffer(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20))
	deep := "x = " + strings.Repeat("1+", 30_000) + "1\n"
	dir := writeFiles(t, map[string]string{"deep.star": deep})
	uri := uriOf(filepath.Join(dir, "deep.star"))
	s := newSession(t)
	s.open(uri, deep)
	if got := s.published(uri)[uri]; len(got) != 1 || !strings.Contains(got[0], "parse_error") || !strings.Contains(got[0], "nested too deeply") {
		t.Errorf("diagnostics: %v", got)
	}
	for _, method := range []string{"textDocument/hover", "textDocument/documentSymbol", "textDocument/formatting"} {
		s.request(method, map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": 0, "character": 2}, "options": map[string]any{"tabSize": 4, "insertSpaces": true}})
	}
}

// TestSecretDiagnostics: the checker's secrets findings are published like
// any other, at the read, and reveal(...) clears them.
func TestSecretDiagnostics(t *testing.T) {
	src := "flow(inputs = {\"token\": input(secret = True)})\na = step(\"a\", run = [\"echo\", \"{{ inputs.token }}\"])\n"
	dir := writeFiles(t, map[string]string{"s.star": src})
	uri := uriOf(filepath.Join(dir, "s.star"))
	s := newSession(t)
	s.open(uri, src)
	if got := s.published(uri)[uri]; len(got) != 1 || !strings.HasPrefix(got[0], `secret_leak 1:secret input "token" reaches argument 1 of step "a" (pass it to a process in env=`) {
		t.Errorf("diagnostics %v", got)
	}
	s.send(map[string]any{"method": "textDocument/didChange", "params": map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"text": strings.Replace(src, "{{ inputs.token }}", "{{ reveal(inputs.token) }}", 1)}},
	}})
	if got := s.published(uri)[uri]; len(got) != 0 {
		t.Errorf("after reveal: %v", got)
	}
}
