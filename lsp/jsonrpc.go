package lsp

// This file reads and writes JSON-RPC 2.0 messages framed the way the
// Language Server Protocol frames them: headers, a blank line, then
// Content-Length bytes of JSON.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// maxFrame bounds one message body, so that a bad header cannot make the
// server allocate without limit: a Content-Length over it is a bad frame.
const maxFrame = 64 << 20

// maxHeaderLine and maxHeaders bound a frame's headers (LSP has two,
// Content-Length and Content-Type): a header line that never ends grew
// without bound.
const (
	maxHeaderLine = 4096
	maxHeaders    = 16
)

// contentLength is the header a frame starts with; after a bad frame the
// reader skips to its next occurrence.
const contentLength = "content-length:"

// JSON-RPC and LSP error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// message is any JSON-RPC message: a request (ID and Method), a
// notification (Method only) or a response (ID and Result or Error).
type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *respError       `json:"error,omitempty"`
}

type respError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// errFrame is a frame whose headers are wrong; reading may go on with the
// next frame.
type errFrame struct{ msg string }

func (e *errFrame) Error() string { return e.msg }

// reader reads frames.
type reader struct {
	r *bufio.Reader
	// resync is set after a bad frame whose body's length is unknown:
	// the next read skips to the next Content-Length header.
	resync bool
	// prefix is what a resync read of the next header line.
	prefix string
}

func newReader(r io.Reader) *reader { return &reader{r: bufio.NewReaderSize(r, maxHeaderLine)} }

// read returns the body of the next frame. A frame with bad headers is an
// *errFrame; io.EOF means the stream ended between frames. After a bad
// frame whose length is unknown (a header line too long, Content-Length
// missing, not a number, over maxFrame or given twice with two values),
// reading goes on at the next Content-Length header: its body cannot be
// told from the frames after it.
func (r *reader) read() ([]byte, error) {
	if r.resync {
		r.resync = false
		if err := r.skip(); err != nil {
			return nil, err
		}
	}
	length := -1
	headers := 0
	bad := func(format string, args ...any) error {
		r.resync = true
		return &errFrame{fmt.Sprintf(format, args...)}
	}
	for {
		line, err := r.line()
		if err == bufio.ErrBufferFull {
			return nil, bad("a header line longer than %d bytes", maxHeaderLine)
		}
		if err != nil {
			if err == io.EOF && line == "" && headers == 0 {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if headers == 0 {
				continue // stray blank lines between frames
			}
			break
		}
		if headers++; headers > maxHeaders {
			return nil, bad("more than %d header lines", maxHeaders)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, bad("bad header line %q", line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			switch {
			case err != nil || n < 0:
				return nil, bad("bad Content-Length %q", strings.TrimSpace(value))
			case n > maxFrame:
				return nil, bad("frame of %d bytes is larger than %d", n, maxFrame)
			case length >= 0 && n != length:
				return nil, bad("two Content-Length headers, %d and %d", length, n)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, bad("frame without Content-Length")
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r.r, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
}

// line reads one header line of at most maxHeaderLine bytes; a longer one
// is bufio.ErrBufferFull, the rest of it left to skip.
func (r *reader) line() (string, error) {
	b, err := r.r.ReadSlice('\n')
	s := r.prefix + string(b)
	r.prefix = ""
	return s, err
}

// skip reads up to the next Content-Length header (any case), which the
// next line() returns. io.EOF when the stream ends first.
func (r *reader) skip() error {
	matched := 0
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			return io.EOF
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		switch {
		case c == contentLength[matched]:
			matched++
		case c == contentLength[0]:
			matched = 1
		default:
			matched = 0
		}
		if matched == len(contentLength) {
			r.prefix = "Content-Length:"
			return nil
		}
	}
}

// writer writes frames; it is safe for concurrent use.
type writer struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *writer) write(m *message) error {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := fmt.Fprintf(w.w, "Content-Length: %d\r\n\r\n", len(body)); err != nil {
		return err
	}
	_, err = w.w.Write(body)
	return err
}

func isFrameError(err error) bool {
	var fe *errFrame
	return errors.As(err, &fe)
}
