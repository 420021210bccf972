package lang

// This file converts every failure of loading (syntax, resolution,
// evaluation, budget, a module's own failure) into one *graphir.Error with the
// position of the user's line and the trace.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
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
// *graphir.Error. loc, when not nil, maps the interpreter's call positions
// (the "(" of a call) to the start of the call.
func convert(err error, loc graphir.Locator) *graphir.Error {
	var ge *graphir.Error
	if errors.As(err, &ge) && !isEval(err) {
		return ge
	}
	var serr syntax.Error
	if errors.As(err, &serr) {
		msg, hint := splitHint(serr.Msg)
		return &graphir.Error{Code: codes.ParseError, Pos: pos(serr.Pos), Msg: msg, Hint: hint, Err: err}
	}
	var rerrs resolve.ErrorList
	if errors.As(err, &rerrs) && len(rerrs) > 0 {
		msg, hint := splitHint(rerrs[0].Msg)
		if hint == "" {
			hint = predeclaredHint(msg)
		}
		e := &graphir.Error{Code: codes.ParseError, Pos: pos(rerrs[0].Pos), Msg: msg, Hint: hint, Err: err}
		for _, more := range rerrs[1:] {
			e.Trace = append(e.Trace, pos(more.Pos).String()+": "+more.Msg)
		}
		return e
	}
	var eval *starlark.EvalError
	if errors.As(err, &eval) {
		return convertEval(eval, loc)
	}
	return &graphir.Error{Code: codes.LoadError, Msg: err.Error(), Err: err}
}

// predeclaredHint suggests a builtin for "undefined: NAME": the resolver
// only spell-checks a file's own names, and a misspelled builtin
// (chian, stpe) is the likelier mistake.
func predeclaredHint(msg string) string {
	name, ok := strings.CutPrefix(msg, "undefined: ")
	if !ok {
		return ""
	}
	names := builtins.Names()
	names = append(names, starlark.Universe.Keys()...)
	if n := spell.Nearest(name, names); n != "" {
		return fmt.Sprintf("did you mean %q?", n)
	}
	return ""
}

func isEval(err error) bool {
	var eval *starlark.EvalError
	return errors.As(err, &eval)
}

func convertEval(eval *starlark.EvalError, loc graphir.Locator) *graphir.Error {
	// Frames with a position in a file, innermost first. A frame stopped
	// in a call reports the call's "(": point at the start of the call,
	// as for the nodes the call creates.
	var frames []graphir.Pos
	var trace []string
	for i := len(eval.CallStack) - 1; i >= 0; i-- {
		f := eval.CallStack[i]
		if !f.Pos.IsValid() || f.Pos.Filename() == "<builtin>" {
			continue
		}
		p := pos(f.Pos)
		if loc != nil {
			p = loc.CallStart(p)
		}
		frames = append(frames, p)
		trace = append(trace, p.String()+": in "+f.Name)
	}

	// A failing module: report its own error, with the load() line of each
	// importer appended to its trace.
	var me *moduleError
	if errors.As(eval.Unwrap(), &me) {
		inner := *me.err
		inner.Trace = append(append([]string(nil), inner.Trace...), trace...)
		return &inner
	}

	msg := graphir.ClipMessage(eval.Msg) // a fail() can say megabytes
	msg = strings.TrimPrefix(msg, "Starlark computation cancelled: ")
	msg, hint := splitHint(msg)
	if hinted := (*graphir.Error)(nil); hint == "" && errors.As(eval.Unwrap(), &hinted) {
		hint = hinted.Hint // a builtin's (or the loader's) advice
	}
	e := &graphir.Error{Code: codes.LoadError, Msg: msg, Hint: hint, Err: eval}
	// Point at the innermost frame in a file the user wrote: an error
	// inside an @std helper is the caller's to fix.
	at := -1
	for i, p := range frames {
		if !strings.HasPrefix(p.File, graphir.StdPrefix) {
			at = i
			break
		}
	}
	if at < 0 && len(frames) > 0 {
		at = 0
	}
	if at >= 0 {
		e.Pos = frames[at]
		e.Trace = append(append([]string(nil), trace[:at]...), trace[at+1:]...)
	}
	return e
}
