package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveBytes serves in to its end and returns the messages the server
// wrote.
func serveBytes(t *testing.T, in string) []message {
	t.Helper()
	var out bytes.Buffer // the server's writer holds a lock; its timers stop when Serve returns
	s := &Server{Debounce: time.Millisecond}
	if err := s.Serve(strings.NewReader(in), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	r := newReader(bytes.NewReader(out.Bytes()))
	var msgs []message
	for {
		body, err := r.read()
		if err == io.EOF {
			return msgs
		}
		if err != nil {
			t.Fatalf("the server wrote a bad frame: %v", err)
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
}

// A malformed frame is answered with a parse error and the server goes on
// with the frame after it: header lines that never end, a Content-Length
// that is huge, not a number, missing or given twice used to leave it
// reading forever or growing without bound (issue 26).
func TestBadFrames(t *testing.T) {
	good := frame(`{"jsonrpc":"2.0","id":7,"method":"shutdown"}`)
	for name, bad := range map[string]string{
		"long header line": strings.Repeat("X", 1<<20) + "\r\n\r\n{}",
		"huge length":      "Content-Length: 1099511627776\r\n\r\n{}",
		"not a number":     "Content-Length: ten\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"x"}`,
		"missing":          "Content-Type: application/json\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"x"}`,
		"doubled":          "Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
		"many headers":     strings.Repeat("X-A: b\r\n", 100) + "\r\n{}",
		"negative":         "Content-Length: -5\r\n\r\n{}",
		"no colon":         "hello\r\n\r\n{}",
	} {
		msgs := serveBytes(t, bad+good)
		if len(msgs) != 2 || msgs[0].Error == nil || msgs[0].Error.Code != codeParseError || !strings.HasPrefix(msgs[0].Error.Message, "bad frame: ") ||
			msgs[1].ID == nil || string(*msgs[1].ID) != "7" {
			t.Errorf("%s: got %s", name, describeMsgs(msgs))
		}
	}
	// A header line that never ends is read in bounded pieces to the end
	// of the input.
	if msgs := serveBytes(t, strings.Repeat("Y", 4<<20)); len(msgs) != 1 || msgs[0].Error == nil {
		t.Errorf("an endless header line: %s", describeMsgs(msgs))
	}
}

func describeMsgs(msgs []message) string {
	var b strings.Builder
	for _, m := range msgs {
		id := "none"
		if m.ID != nil {
			id = string(*m.ID)
		}
		fmt.Fprintf(&b, "[id %s error %v] ", id, m.Error)
	}
	return b.String()
}

// FuzzFrames reads arbitrary bytes as frames: every read ends, with a
// body of at most maxFrame bytes, a bad frame, or the end of the input,
// and a well-formed frame after garbage that holds no "Content-Length"
// and ends as headers do is still read.
func FuzzFrames(f *testing.F) {
	for _, seed := range []string{"", "Content-Length: 2\r\n\r\n{}", "Content-Length: x\r\n\r\n", "content-length: 3\r\n\r\nabc", "a:b\r\nContent-Length: 1\r\n\r\nx", strings.Repeat("z", 5000), "Content-Length: 9999999999999\r\n\r\n", "\r\n\r\nContent-Length: 0\r\n\r\n"} {
		f.Add([]byte(seed))
	}
	const tail = `{"tail":true}`
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append(append([]byte(nil), data...), frame(tail)...)
		r := newReader(bytes.NewReader(in))
		sawTail := false
		for i := 0; ; i++ {
			if i > len(in)+2 {
				t.Fatalf("more reads than bytes on %q", in)
			}
			body, err := r.read()
			if err != nil && !isFrameError(err) {
				break
			}
			if len(body) > maxFrame {
				t.Fatalf("a body of %d bytes", len(body))
			}
			if string(body) == tail {
				sawTail = true
			}
		}
		ended := len(data) == 0 || bytes.HasSuffix(data, []byte("\r\n\r\n"))
		if !sawTail && ended && !bytes.Contains(bytes.ToLower(data), []byte("content-length")) {
			t.Fatalf("the frame after %q was not read", data)
		}
	})
}

// Opening or changing a buffer checks it and the buffers whose last check
// read it, not every open buffer: each didOpen checked them all, so with
// 200 open a hover waited 1.7 s (issue 26). The checks are counted by the
// diagnostics each publishes for its own buffer (with its version).
func TestRecheckDependents(t *testing.T) {
	files := map[string]string{"main.star": "load(\"lib.star\", \"x\")\nstep(x)\n", "lib.star": "x = \"a\"\n"}
	for i := range 5 {
		files[fmt.Sprintf("other%d.star", i)] = fmt.Sprintf("step(\"o%d\")\n", i)
	}
	dir := writeFiles(t, files)
	var out bytes.Buffer
	s := &Server{Debounce: time.Hour, w: &writer{w: &out}, docs: map[string]*document{}, published: map[string]map[string]bool{}}
	checks := map[string]int{}
	check := func() map[string]int {
		// No checker runs: the test checks what is stale, then reads
		// what that published.
		s.checkStale(context.Background())
		r := newReader(&out)
		for {
			body, err := r.read()
			if err != nil {
				break
			}
			var m struct {
				Params publishDiagnosticsParams `json:"params"`
			}
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			if m.Params.Version != nil {
				checks[filepath.Base(pathOf(m.Params.URI))]++
			}
		}
		out.Reset()
		return checks
	}
	open := func(name string) {
		p, _ := json.Marshal(map[string]any{"textDocument": map[string]any{"uri": uriOf(filepath.Join(dir, name)), "version": 1, "text": files[name]}})
		if err := s.didOpen(p); err != nil {
			t.Fatal(err)
		}
		check()
	}
	for i := range 5 {
		open(fmt.Sprintf("other%d.star", i))
	}
	open("main.star")
	open("lib.star") // main read lib from the disk: it reads the buffer now
	want := map[string]int{"main.star": 2, "lib.star": 1, "other0.star": 1, "other1.star": 1, "other2.star": 1, "other3.star": 1, "other4.star": 1}
	if got := check(); !maps.Equal(got, want) {
		t.Errorf("checks after opening: %v, want %v", got, want)
	}
	p, _ := json.Marshal(map[string]any{"textDocument": map[string]any{"uri": uriOf(filepath.Join(dir, "lib.star")), "version": 2}, "contentChanges": []any{map[string]any{"text": "x = \"b\"\n"}}})
	if err := s.didChange(p); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.checkNow() // the debounce is over
	s.mu.Unlock()
	want["main.star"], want["lib.star"] = 3, 2
	if got := check(); !maps.Equal(got, want) {
		t.Errorf("checks after changing lib.star: %v, want %v", got, want)
	}
	if g := s.docs[filepath.Join(dir, "main.star")].good.g; g.Node("b") == nil {
		t.Error("main.star does not see lib.star's change")
	}
}
