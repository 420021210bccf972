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
// server allocate without limit.
const maxFrame = 64 << 20

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
type reader struct{ r *bufio.Reader }

func newReader(r io.Reader) *reader { return &reader{bufio.NewReader(r)} }

// read returns the body of the next frame. A frame with bad headers is an
// *errFrame (its body, if its length was known, has been skipped); io.EOF
// means the stream ended between frames.
func (r *reader) read() ([]byte, error) {
	length := -1
	sawHeader := false
	for {
		line, err := r.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && !sawHeader {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !sawHeader {
				continue // stray blank lines between frames
			}
			break
		}
		sawHeader = true
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, &errFrame{fmt.Sprintf("bad header line %q", line)}
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, &errFrame{fmt.Sprintf("bad Content-Length %q", strings.TrimSpace(value))}
			}
			length = n
		}
	}
	if length < 0 {
		return nil, &errFrame{"frame without Content-Length"}
	}
	if length > maxFrame {
		if _, err := io.CopyN(io.Discard, r.r, int64(length)); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, &errFrame{fmt.Sprintf("frame of %d bytes is larger than %d", length, maxFrame)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r.r, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
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
