package vm

// This file locates runtime errors inside Starlark (docs/language.md): the
// file:line:col where an evaluation failed and the backtrace that led
// there, with positions inside string expressions mapped back to where the
// expression is written.

import (
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
)

// exprError is an evaluation error of the expression x: it lets positions
// reported inside x's compiled function be mapped back to the file.
type exprError struct {
	x   *graphir.Expr
	err error
}

func (e *exprError) Error() string { return e.err.Error() }
func (e *exprError) Unwrap() error { return e.err }

// frames returns the Starlark frames of an evaluation error, innermost
// first, with built-ins left out and positions mapped to the user's files.
// It returns nil when err is no Starlark evaluation error.
func frames(err error) []graphir.Frame {
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		return nil
	}
	var x *graphir.Expr
	var xe *exprError
	if errors.As(err, &xe) {
		x = xe.x
	}
	var out []graphir.Frame
	for i := len(ee.CallStack) - 1; i >= 0; i-- {
		fr := ee.CallStack[i]
		file := fr.Pos.Filename()
		if file == "<builtin>" || file == "" {
			continue
		}
		f := graphir.Frame{Func: fr.Name, Pos: graphir.Pos{File: file, Line: int(fr.Pos.Line), Col: int(fr.Pos.Col)}}
		if file == graphir.ExprFile {
			if x == nil {
				continue
			}
			f.Func = fmt.Sprintf("expression %q", x.Src)
			f.Pos = x.FilePos(int(fr.Pos.Line), int(fr.Pos.Col))
		}
		out = append(out, f)
	}
	return out
}

// errTrace is the backtrace of an evaluation error for records and
// summaries: "file:line:col: in func", innermost first.
func errTrace(err error) []string {
	fs := frames(err)
	if len(fs) == 0 {
		return nil
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = fmt.Sprintf("%s: in %s", f.Pos, f.Func)
	}
	return out
}

// evalMessage is the message of an evaluation error, without where it
// happened (see [errPos]) and without Starlark's own backtrace (see
// [errTrace]).
func evalMessage(err error) string {
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		return err.Error()
	}
	msg := ee.Msg
	if strings.Contains(msg, "too many steps") {
		msg = "evaluation exceeded its step budget"
	}
	var te *templateError
	if errors.As(err, &te) {
		msg = fmt.Sprintf("template {{ %s }}: %s", te.x.Src, msg)
	}
	return msg
}

// errPos is where an evaluation error happened, "file:line:col", or "".
func errPos(err error) string {
	if fs := frames(err); len(fs) > 0 && fs[0].Pos.IsValid() {
		return fs[0].Pos.String()
	}
	return ""
}

// located is the message of an evaluation error with where it happened:
// "template {{ x }}: file:line:col: msg".
func located(err error) string {
	msg := evalMessage(err)
	at := errPos(err)
	if at == "" {
		return msg
	}
	var te *templateError
	if errors.As(err, &te) {
		prefix := fmt.Sprintf("template {{ %s }}: ", te.x.Src)
		return prefix + at + ": " + strings.TrimPrefix(msg, prefix)
	}
	return at + ": " + msg
}
