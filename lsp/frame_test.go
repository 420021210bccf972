package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the server's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// serveBytes serves in to its end and returns the messages the server
// wrote.
func serveBytes(t *testing.T, in string) []message {
	t.Helper()
	var out syncBuffer
	s := &Server{Debounce: time.Millisecond}
	if err := s.Serve(strings.NewReader(in), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	r := newReader(bytes.NewReader(out.b.Bytes()))
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
