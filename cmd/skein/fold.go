package main

// This file folds the lines of a fast run on a terminal. A terminal takes
// some tens of MB/s and a person reads a few lines a second, so when more
// than foldAfter lines of steps that succeed (and of loops going round
// again) come within one tick, they are no longer printed: they are
// counted per step, and the live block shows the counts, redrawn on the
// tick with the rest of it. When the rate falls (a tick with fewer than
// unfoldBelow of them), before a failure or a retry, and when the run
// ends, one line says what was folded. Failures, retries, log lines, tool
// calls and the run's summary are printed as ever. Piped output and
// --events are never folded: they keep the full record, as does the run
// store.

import (
	"strconv"
	"time"

	"github.com/skeinlang/skein/vm"
)

const (
	// foldAfter is how many foldable lines a tick may print before the
	// rest are folded: 2,000 lines a second.
	foldAfter = 100
	// unfoldBelow is how few foldable lines in a tick end the folding.
	unfoldBelow = 10
	// foldShown is how many folded steps the live block and the fold's
	// line name; the others are counted as "more".
	foldShown = 4
)

// folder counts the lines a terminal does not print while the run is too
// fast to read. It is part of a progress and guarded by its lock.
type folder struct {
	on      bool
	seen    int // foldable lines since the last tick
	total   int // lines folded since the folding began
	entries []foldEntry
	index   map[string]int // an entry's key: its index
	kbuf    []byte
}

// foldEntry is one step (or loop) whose lines are folded, wherever it ran
// (map items and loop scopes are one entry: there are as many entries as
// the graph has steps, not as the run has visits).
type foldEntry struct {
	label string // the step as the line shows it: "draft", "child › b", "loop l"
	count int
	last  time.Duration // the latest visit's duration
	loop  bool
}

// take counts a foldable line of ev and reports whether it is folded
// rather than printed. A loop's line is one going round again.
func (f *folder) take(ev *vm.Event) bool {
	f.seen++
	if !f.on {
		if f.seen <= foldAfter {
			return false
		}
		f.on = true
	}
	loop := ev.Type == vm.LoopIteration
	key := ev.Step
	if len(ev.Flow) != 0 || loop {
		k := f.kbuf[:0]
		if loop {
			k = append(k, "loop "...)
		}
		for _, s := range ev.Flow {
			k = append(append(k, s...), " › "...)
		}
		k = append(k, ev.Step...)
		f.kbuf = k
		key = "" // looked up by k, without a copy
	}
	i, ok := 0, false
	if key != "" {
		i, ok = f.index[key]
	} else {
		i, ok = f.index[string(f.kbuf)]
	}
	if !ok {
		if key == "" {
			key = string(f.kbuf)
		}
		if f.index == nil {
			f.index = map[string]int{}
		}
		i = len(f.entries)
		f.index[key] = i
		f.entries = append(f.entries, foldEntry{label: key, loop: loop})
	}
	e := &f.entries[i]
	e.count++
	e.last = ev.Duration
	f.total++
	return true
}

// tick ends a tick and reports whether the folding ends with it: the
// lines came slower than unfoldBelow in it.
func (f *folder) tick() bool {
	end := f.on && f.seen < unfoldBelow
	f.seen = 0
	if end {
		f.on = false
	}
	return end && f.total > 0
}

// appendLine appends the line saying what was folded and forgets it, or
// returns b unchanged when nothing was.
func (f *folder) appendLine(b []byte, color bool) []byte {
	if f.total == 0 {
		return b
	}
	b = appendPaint(b, color, "32", "ok   ")
	b = append(b, ' ')
	b = f.appendCounts(b, ", ", false)
	b = append(b, " ("...)
	b = appendCount(b, f.total)
	b = append(b, " lines folded; --events prints each)"...)
	f.total = 0
	f.entries = f.entries[:0]
	clear(f.index)
	return b
}

// appendCounts appends the folded steps with their counts, at most
// foldShown of them, separated by sep, each with its latest duration when
// withTime.
func (f *folder) appendCounts(b []byte, sep string, withTime bool) []byte {
	for i, e := range f.entries {
		if i == foldShown {
			b = append(b, sep...)
			b = append(b, "and "...)
			b = strconv.AppendInt(b, int64(len(f.entries)-i), 10)
			return append(b, " more"...)
		}
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, e.label...)
		b = append(b, " ×"...)
		b = appendCount(b, e.count)
		if withTime && !e.loop {
			b = append(b, ' ')
			b = appendDuration(b, e.last)
		}
	}
	return b
}

// appendCount appends n (not negative) with a comma between thousands:
// 41,210.
func appendCount(b []byte, n int) []byte {
	s := strconv.Itoa(n)
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, byte(c))
	}
	return b
}
