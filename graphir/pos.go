package graphir

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/skeinlang/skein/graphir/codes"
)

// Pos is a position in a source file, as editors print it: 1-based line and
// column (in runes). The zero Pos is unknown.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// IsValid reports whether p names a file.
func (p Pos) IsValid() bool { return p.File != "" }

// String formats p as file:line:col, dropping the parts that are unknown.
func (p Pos) String() string {
	switch {
	case p.File == "":
		return "<unknown>"
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Less orders positions by file, line and column.
func (p Pos) Less(q Pos) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	if p.Line != q.Line {
		return p.Line < q.Line
	}
	return p.Col < q.Col
}

// Frame is one call frame of the Starlark stack that created a node or edge.
type Frame struct {
	Func string `json:"func"`
	Pos  Pos    `json:"pos"`
}

// Stack is a call stack, outermost frame first.
type Stack []Frame

// StdPrefix starts the name of every embedded standard module.
const StdPrefix = "@std/"

// UserFrame returns the index of the frame a diagnostic should point at: the
// outermost frame in a file the user wrote (not an embedded @std module).
// It returns -1 for an empty stack.
func (s Stack) UserFrame() int {
	for i, f := range s {
		if f.Pos.IsValid() && !strings.HasPrefix(f.Pos.File, StdPrefix) {
			return i
		}
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].Pos.IsValid() {
			return i
		}
	}
	return -1
}

// Trace returns the frames other than the one at index user, innermost first,
// in the form printed under a diagnostic.
func (s Stack) Trace(user int) []string {
	if len(s) < 2 {
		return nil
	}
	var out []string
	for i := len(s) - 1; i >= 0; i-- {
		if i == user {
			continue
		}
		out = append(out, fmt.Sprintf("%s: in %s", s[i].Pos, s[i].Func))
	}
	return out
}

// Error is the one error type of Skein: a code of docs/codes.md, a message for
// people, and where it applies (a position, a step, a trace). Load errors,
// check diagnostics and runtime failures all carry one.
type Error struct {
	Code  codes.Code // a code of the table (docs/codes.md), e.g. codes.LoadError
	Msg   string     // lower-case, names the thing
	Pos   Pos        // where, when known
	Step  string     // the step it concerns, if any
	Hint  string     // e.g. `did you mean "publish"?`
	Trace []string   // further frames, innermost first
	Err   error      // the underlying error, if any
	// Cause is the step failure that began the path to this error, when
	// that failure was routed on (say to a step that then went to ABORT).
	Cause *Error
}

// MaxMessage bounds the bytes of a message a flow writes (a fail(), a
// print() line) as Skein keeps, shows and records it: a fail() of 60 MB
// of control characters was 360 MB of JSON in the run's record and 240
// MB of escapes on the terminal.
const MaxMessage = 16 << 10

// ClipMessage returns msg, or its first 12 KiB and its last 4 KiB (cut at
// characters) with how many bytes were left out between them: the end of
// a message often says why (a path's "is longer than ...").
func ClipMessage(msg string) string { return Clip(msg, MaxMessage) }

// Clip returns s, or, when it is longer than max bytes, its first three
// quarters of max and its last quarter (cut at characters) with how many
// bytes were left out between them.
func Clip(s string, max int) string {
	msg := s
	if len(msg) <= max {
		return msg
	}
	head, tail := max*3/4, len(msg)-max/4
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return msg[:head] + fmt.Sprintf(" … (%d bytes cut) … ", tail-head) + msg[tail:]
}

// AsError returns the *Error in err's chain (a loader's error wrapped by
// fmt.Errorf("%w") included), or a plain load_error with err's message; nil
// for nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var ge *Error
	if errors.As(err, &ge) {
		return ge
	}
	return &Error{Code: codes.LoadError, Msg: err.Error()}
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos.IsValid() {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Code != "" {
		fmt.Fprintf(&b, " [%s]", e.Code)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }
