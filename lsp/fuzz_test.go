package lsp

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// FuzzServe feeds arbitrary bytes to a session: the server must answer or
// skip every frame and return at the end of the input, never panic or hang.
func FuzzServe(f *testing.F) {
	open := `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///tmp/fuzz/f.star","languageId":"skein","version":1,"text":"a = step(\"a\", run = [\"echo\", \"{{ b.x }}\"])\n"}}}`
	for _, seed := range []string{
		"",
		frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`),
		frame(open) + frame(`{"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///tmp/fuzz/f.star"},"position":{"line":0,"character":33}}}`),
		frame(open) + frame(`{"jsonrpc":"2.0","id":3,"method":"textDocument/completion","params":{"textDocument":{"uri":"file:///tmp/fuzz/f.star"},"position":{"line":9,"character":-4}}}`),
		frame(open) + frame(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///tmp/fuzz/f.star","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":2},"end":{"line":0,"character":1}},"text":"x"}]}}`),
		frame(open) + frame(`{"jsonrpc":"2.0","id":4,"method":"textDocument/formatting","params":{"textDocument":{"uri":"file:///tmp/fuzz/f.star"}}}`),
		"Content-Length: 5\r\n\r\n{}",
		"Content-Length: -1\r\n\r\n",
		frame(`[1,2]`) + frame(`{"id":{},"method":7}`),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &Server{Debounce: time.Millisecond}
		done := make(chan error, 1)
		go func() { done <- s.Serve(bytes.NewReader(data), io.Discard) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("Serve did not return on %q", data)
		}
	})
}
