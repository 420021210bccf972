package lang

// This file converts every failure of loading (syntax, resolution,
// evaluation, budget, a module's own failure) into one *graphir.Error with the
// position of the user's line and the trace.

import (
	"errors"
	"regexp"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
)

func pos(p syntax.Position) graphir.Pos {
	if !p.IsValid() {
		return graphir.Pos{}
	}
	return graphir.Pos{File: p.Filename(), Line: int(p.Line), Col: int(p.Col)}
}

var didYouMean = regexp.MustCompile(`\s*\(did you mean ([^)]*)\?\)`)

// splitHint moves a trailing "(did you mean x?)" of a Starlark message into
// a hint.
func splitHint(msg string) (string, string) {
	m := didYouMean.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg, ""
	}
	name := msg[m[2]:m[3]]
	if !strings.HasPrefix(name, `"`) {
		name = `"` + name + `"`
	}
	return msg[:m[0]] + msg[m[1]:], "did you mean " + name + "?"
}

// moduleError is what a load() of a failing module returns to the
// interpreter: it carries the module's own error through the importer's.
type moduleError struct{ err *graphir.Error }

func (e *moduleError) Error() string { return e.err.Msg }

// convert turns an error from parsing or executing a file into a
// *graphir.Error.
func convert(err error) *graphir.Error {
	var ge *graphir.Error
	if errors.As(err, &ge) && !isEval(err) {
		return ge
	}
	var serr syntax.Error
	if errors.As(err, &serr) {
		msg, hint := splitHint(serr.Msg)
		return &graphir.Error{Code: "parse_error", Pos: pos(serr.Pos), Msg: msg, Hint: hint, Err: err}
	}
	var rerrs resolve.ErrorList
	if errors.As(err, &rerrs) && len(rerrs) > 0 {
		msg, hint := splitHint(rerrs[0].Msg)
		e := &graphir.Error{Code: "parse_error", Pos: pos(rerrs[0].Pos), Msg: msg, Hint: hint, Err: err}
		for _, more := range rerrs[1:] {
			e.Trace = append(e.Trace, pos(more.Pos).String()+": "+more.Msg)
		}
		return e
	}
	var eval *starlark.EvalError
	if errors.As(err, &eval) {
		return convertEval(eval)
	}
	return &graphir.Error{Code: "load_error", Msg: err.Error(), Err: err}
}

func isEval(err error) bool {
	var eval *starlark.EvalError
	return errors.As(err, &eval)
}

func convertEval(eval *starlark.EvalError) *graphir.Error {
	// Frames with a position in a file, innermost first.
	var frames []starlark.CallFrame
	for i := len(eval.CallStack) - 1; i >= 0; i-- {
		f := eval.CallStack[i]
		if f.Pos.IsValid() && f.Pos.Filename() != "<builtin>" {
			frames = append(frames, f)
		}
	}
	var trace []string
	for _, f := range frames {
		trace = append(trace, pos(f.Pos).String()+": in "+f.Name)
	}

	// A failing module: report its own error, with the load() line of each
	// importer appended to its trace.
	var me *moduleError
	if errors.As(eval.Unwrap(), &me) {
		inner := *me.err
		inner.Trace = append(append([]string(nil), inner.Trace...), trace...)
		return &inner
	}

	msg := eval.Msg
	msg = strings.TrimPrefix(msg, "Starlark computation cancelled: ")
	msg, hint := splitHint(msg)
	e := &graphir.Error{Code: "load_error", Msg: msg, Hint: hint, Err: eval}
	if len(frames) > 0 {
		e.Pos = pos(frames[0].Pos)
		e.Trace = trace[1:]
	}
	return e
}
