package main

// This file is skein logs --follow's side of live output: it prints a
// running task's output as the task prints it, from the live files the
// skein running it writes beside the store (vm/store's live.go), and what
// is left from the record once the task's completion is in.

import (
	"fmt"
	"io"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/vm/store"
)

// liveFollow is the attempt logs --follow prints as it goes.
type liveFollow struct {
	id    int64
	tail  *store.LiveTail
	where string
	visit int
	try   int
	show  func(string) string

	stream    int  // the section being printed: 0 stdout, 1 stderr
	lineStart bool // what was printed ends a line (or nothing was)
}

// followLive starts following attempt e, printing its header.
func followLive(w io.Writer, st *store.Store, runID string, e *store.Effect, show func(string) string) *liveFollow {
	lf := &liveFollow{id: e.ID, tail: st.TailLive(runID, e.ID), where: runs.Place(e.Path, e.Step), visit: e.Visit, try: e.Attempt, show: show, lineStart: true}
	fmt.Fprintf(w, "==> %s (visit %d, attempt %d) %s <==\n", lf.where, lf.visit, lf.try, store.Running)
	return lf
}

// next prints what the attempt printed since the last call.
func (lf *liveFollow) next(w io.Writer) {
	out, errOut := lf.tail.Next()
	lf.write(w, 0, out)
	lf.write(w, 1, errOut)
}

// finish prints the rest, once the attempt's completion e is recorded
// (status is how it ended), and a line saying how it ended.
func (lf *liveFollow) finish(w io.Writer, e *store.Effect, status string) {
	for i, r := range lf.tail.Rest(e) {
		lf.write(w, i, r.Live)
		if r.Cut != 0 {
			lf.section(w, i)
			lf.endLine(w)
			if r.Cut > 0 {
				fmt.Fprintf(w, "--- %s not kept ---\n", plural(int(r.Cut), "byte"))
			} else {
				fmt.Fprintln(w, "--- some output not kept ---")
			}
		}
		lf.write(w, i, []byte(r.Record))
	}
	lf.endLine(w)
	if status == "failed" && e.Error != "" {
		status += ": " + e.Error
	}
	fmt.Fprintf(w, "==> %s (visit %d, attempt %d) ended: %s <==\n", lf.where, lf.visit, lf.try, visible.Text(status, false))
}

// close lets go of the live files (logs stopped before the attempt ended).
func (lf *liveFollow) close() { lf.tail.Close() }

func (lf *liveFollow) write(w io.Writer, stream int, b []byte) {
	if len(b) == 0 {
		return
	}
	lf.section(w, stream)
	io.WriteString(w, lf.show(string(b)))
	lf.lineStart = b[len(b)-1] == '\n'
}

// section starts stream's section, unless it is the one being printed.
func (lf *liveFollow) section(w io.Writer, stream int) {
	if stream == lf.stream {
		return
	}
	lf.endLine(w)
	fmt.Fprintln(w, [...]string{"--- stdout ---", "--- stderr ---"}[stream])
	lf.stream = stream
}

func (lf *liveFollow) endLine(w io.Writer) {
	if !lf.lineStart {
		fmt.Fprintln(w)
		lf.lineStart = true
	}
}
