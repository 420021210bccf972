package main

// This file decides what a run shows a person about a failure: the tail of
// a failed task's stderr (or stdout), the step whose failure began a path
// to ABORT, the Starlark backtrace of a runtime error. Everything a step
// produced passes through visible first, so output printed to a terminal
// can never move the cursor, clear the screen or retitle the window.

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/vm"
)

// Bounds of the output tail shown under a failed step.
const (
	tailLines = 10
	tailBytes = 2048
)

// outputTail returns the last lines a failed task printed, bounded (see
// tailLines and tailBytes), made visible: its stderr, or its stdout when
// stderr is empty. The first result names the stream; both are "" when
// the step printed nothing or is no task. A stderr that only says what
// the step's error says (a task that could not start) is not shown again.
func outputTail(output starlark.Value) (stream string, lines []string) {
	m, ok := output.(starlark.HasAttrs)
	if !ok {
		return "", nil
	}
	errMsg := ""
	if v, err := m.Attr("error"); err == nil {
		if s, ok := v.(starlark.String); ok {
			errMsg = strings.TrimSpace(string(s))
		}
	}
	for _, name := range []string{"stderr", "stdout"} {
		v, err := m.Attr(name)
		if err != nil {
			return "", nil // no task output
		}
		s, ok := v.(starlark.String)
		if !ok || strings.TrimSpace(string(s)) == "" || name == "stderr" && errMsg != "" && strings.TrimSpace(string(s)) == errMsg {
			continue
		}
		return name, textTail(string(s))
	}
	return "", nil
}

// textTail returns the last lines of text, bounded (see tailLines and
// tailBytes), made visible; "…" first when some were left out.
func textTail(text string) []string {
	text = strings.TrimRight(text, "\n")
	cut := false
	if len(text) > tailBytes {
		text, cut = text[len(text)-tailBytes:], true
		for i := 0; i < utf8.UTFMax && i < len(text) && !utf8.RuneStart(text[0]); i++ {
			text = text[1:]
		}
	}
	all := strings.Split(text, "\n")
	if len(all) > tailLines {
		all, cut = all[len(all)-tailLines:], true
	} else if cut && len(all) > 1 {
		all = all[1:] // the first line is partial
	}
	var lines []string
	if cut {
		lines = append(lines, "…")
	}
	for _, l := range all {
		lines = append(lines, visible.Text(strings.TrimRight(l, "\r"), false))
	}
	return lines
}

// failedRecord finds the record of the step whose failure a run error (or
// its cause) is about, following a loop's or map's failure into the body
// step that failed and a child flow's into the child's run.
func failedRecord(res *vm.Result, step string) *vm.StepRecord {
	rec := res.Step(step)
	for depth := 0; rec != nil && depth < 32; depth++ {
		if rec.Child != nil && rec.Child.Error != nil {
			if inner := failedRecord(rec.Child, rec.Child.Error.Step); inner != nil {
				return inner
			}
		}
		if rec.Kind.String() != "loop" && rec.Kind.String() != "map" {
			return rec
		}
		var inner *vm.StepRecord
		for _, s := range res.Steps {
			if s != rec && s.Status == vm.StepFailed && strings.Contains(rec.Error, fmt.Sprintf("step %q failed", s.Name)) {
				inner = s
				break
			}
		}
		if inner == nil {
			return rec
		}
		rec = inner
	}
	return rec
}

// writeFailure writes what the summary says about a failed run under its
// first line: the cause, the output tail of the step that failed, and the
// Starlark backtrace, each labelled like "path:".
func (p *progress) writeFailure(b *strings.Builder, res *vm.Result) {
	e := res.Error
	if e == nil {
		return
	}
	subject, trace := e.Step, e.Trace
	if c := e.Cause; c != nil {
		fmt.Fprintf(b, "  cause:  step %q failed: %s [%s]\n", c.Step, visible.Text(c.Msg, false), c.Code)
		subject, trace = c.Step, c.Trace
	}
	if subject != "" {
		if rec := failedRecord(res, subject); rec != nil && rec.Status == vm.StepFailed {
			if stream, lines := outputTail(rec.Output); stream != "" {
				label := stream + ":"
				switch {
				case rec.Kind == graphir.KindLoop:
					// An exhausted loop's output is its last iteration's,
					// not a stream of its own.
					label = fmt.Sprintf("%s of the last iteration of %s:", stream, rec.Name)
				case rec.Name != e.Step:
					label = fmt.Sprintf("%s of %s:", stream, rec.Name)
				}
				fmt.Fprintf(b, "  %s\n", label)
				for _, l := range lines {
					fmt.Fprintf(b, "    %s %s\n", p.paint("2", "|"), l)
				}
			}
			if len(trace) == 0 {
				trace = rec.Trace
			}
		}
	}
	if len(trace) > 0 {
		b.WriteString("  trace:\n")
		for _, t := range trace {
			fmt.Fprintf(b, "    %s\n", visible.Text(t, false))
		}
	}
}

// writeTail writes the output tail of a failed task under its FAIL line.
func (p *progress) tailText(output starlark.Value) string {
	_, lines := outputTail(output)
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "\n      %s %s", p.paint("2", "|"), l)
	}
	return b.String()
}

// traceAt is "file:line:col: " of the innermost frame of a backtrace, or
// "" without one.
func traceAt(trace []string) string {
	if len(trace) == 0 {
		return ""
	}
	at, _, ok := strings.Cut(trace[0], ": in ")
	if !ok {
		return ""
	}
	return at + ": "
}
