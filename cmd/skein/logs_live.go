package main

// This file is skein logs --follow's side of live output: it prints a
// running task's output as the run service gives it, piece by piece
// (engine/runs' logs.go), each stream under its own section.

import (
	"fmt"
	"io"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/internal/visible"
)

// livePrinter prints the attempt logs --follow gives as it goes.
type livePrinter struct {
	w    io.Writer
	show func(string) string

	stream    int  // the section being printed: 0 stdout, 1 stderr
	lineStart bool // what was printed ends a line (or nothing was)
}

// print prints one piece of the attempt.
func (lp *livePrinter) print(o *runs.LiveOutput) {
	switch {
	case o.Start:
		lp.stream, lp.lineStart = 0, true
		fmt.Fprintf(lp.w, "==> %s (visit %d, attempt %d) %s <==\n", o.Log.Where, o.Log.Visit, o.Log.Attempt, o.Log.Status)
	case o.End:
		lp.endLine()
		status := o.Log.Status
		if status == "failed" && o.Log.Error != "" {
			status += ": " + o.Log.Error
		}
		fmt.Fprintf(lp.w, "==> %s (visit %d, attempt %d) ended: %s <==\n", o.Log.Where, o.Log.Visit, o.Log.Attempt, visible.Text(status, false))
	case o.Cut != 0:
		lp.section(o.Stream)
		lp.endLine()
		if o.Cut > 0 {
			fmt.Fprintf(lp.w, "--- %s not kept ---\n", plural(int(o.Cut), "byte"))
		} else {
			fmt.Fprintln(lp.w, "--- some output not kept ---")
		}
	case len(o.Text) > 0:
		lp.section(o.Stream)
		io.WriteString(lp.w, lp.show(string(o.Text)))
		lp.lineStart = o.Text[len(o.Text)-1] == '\n'
	}
}

// section starts stream's section, unless it is the one being printed.
func (lp *livePrinter) section(stream int) {
	if stream == lp.stream {
		return
	}
	lp.endLine()
	fmt.Fprintln(lp.w, [...]string{"--- stdout ---", "--- stderr ---"}[stream])
	lp.stream = stream
}

func (lp *livePrinter) endLine() {
	if !lp.lineStart {
		fmt.Fprintln(lp.w)
		lp.lineStart = true
	}
}
