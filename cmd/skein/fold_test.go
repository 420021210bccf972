package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm"
)

// screen is what a terminal keeps of out once the live block's redraws
// are done: the permanent lines, in order. It knows the few sequences
// progress writes: "\x1b[1A\x1b[2K" erases the line above, "\r" and
// "\r\x1b[K" go back to the start of the line.
func screen(out string) []string {
	var lines []string
	cur := ""
	for len(out) > 0 {
		switch {
		case strings.HasPrefix(out, "\x1b[1A\x1b[2K"):
			if len(lines) > 0 {
				lines = lines[:len(lines)-1]
			}
			out = out[len("\x1b[1A\x1b[2K"):]
		case strings.HasPrefix(out, "\r\x1b[K"):
			cur = ""
			out = out[len("\r\x1b[K"):]
		case out[0] == '\r':
			cur = ""
			out = out[1:]
		case out[0] == '\n':
			lines = append(lines, cur)
			cur = ""
			out = out[1:]
		default:
			i := strings.IndexAny(out, "\r\n\x1b")
			if i == 0 { // a sequence progress does not write
				i = 1
			} else if i < 0 {
				i = len(out)
			}
			cur += out[:i]
			out = out[i:]
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// foldLine matches the line saying what was folded: the steps with their
// counts, and the total.
var foldLine = regexp.MustCompile(`^ok    (.+) \(([0-9,]+) lines folded; --events prints each\)$`)

// foldedCounts adds up, over the lines of a terminal, how often draft and
// critique are shown as succeeded: their own lines and the fold lines.
func foldedCounts(t *testing.T, lines []string) (draft, critique, foldLines int) {
	t.Helper()
	num := func(s string) int {
		n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, l := range lines {
		switch {
		case foldLine.MatchString(l):
			m := foldLine.FindStringSubmatch(l)
			sum := 0
			for _, c := range strings.Split(m[1], ", ") {
				name, count, ok := strings.Cut(c, " ×")
				if !ok {
					t.Fatalf("%q: no count in %q", l, c)
				}
				switch n := num(count); name {
				case "draft":
					draft += n
				case "critique":
					critique += n
				default:
					t.Errorf("%q: folded %q", l, name)
				}
				sum += num(count)
			}
			if num(m[2]) != sum {
				t.Errorf("%q: the total is not the sum", l)
			}
			foldLines++
		case strings.HasPrefix(l, "ok    draft "):
			draft++
		case strings.HasPrefix(l, "ok    critique "):
			critique++
		}
	}
	return draft, critique, foldLines
}

// TestProgressFoldsOnTerminal drives a terminal's progress through a
// 50,000-iteration loop, with a tick every 1,000 iterations (a run at 20
// µs an iteration): past foldAfter lines in a tick, the lines of steps
// that succeed are counted in the live block instead of printed; the
// failure in the middle is printed in full, after a line saying what was
// folded before it; when the rate falls the folding ends with such a line
// and lines are printed again; a burst folds them again, and the run's
// end says what was folded last.
// Every success is accounted for, and the terminal gets a few KB instead
// of the 1.6 MB of lines.
func TestProgressFoldsOnTerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	out := &recorder{}
	p := newProgress(out, true) // not started: the test ticks
	at := time.Now()
	ok := func(step string) {
		p.event(&vm.Event{Type: vm.StepStarted, Time: at, Step: step})
		p.event(&vm.Event{Type: vm.StepFinished, Time: at, Step: step, Status: "succeeded", Duration: 3 * time.Microsecond})
	}
	p.event(&vm.Event{Type: vm.RunStarted, Time: at, FlowName: "loop"})
	const n, burst = 50_000, 2 * foldAfter
	for i := 1; i <= n; i++ {
		ok("draft")
		if i == 30_000 {
			p.event(&vm.Event{Type: vm.StepStarted, Time: at, Step: "critique"})
			p.event(&vm.Event{Type: vm.StepFinished, Time: at, Step: "critique", Status: "failed", Error: "boom", Duration: time.Millisecond})
		} else {
			ok("critique")
		}
		if i%1000 == 0 {
			p.tick()
		}
	}
	p.tick()
	p.tick() // a tick with no lines: the folding ends
	ok("draft")
	ok("critique") // printed again
	p.tick()
	for range burst { // folded past foldAfter lines
		ok("draft")
	}
	p.stop()
	p.summary(&vm.Result{Status: vm.Succeeded, Duration: time.Second, Path: []string{"draft", "critique"}, PathTotal: 2*n + 1})

	raw := out.String()
	if len(raw) > 20_000 {
		t.Errorf("%d bytes written to the terminal for %d iterations", len(raw), n)
	}
	lines := screen(raw)
	draft, critique, folds := foldedCounts(t, lines)
	if draft != n+1+burst || critique != n {
		t.Errorf("draft shown %d times (want %d), critique %d (want %d):\n%s", draft, n+1+burst, critique, n, strings.Join(lines, "\n"))
	}
	if folds != 3 {
		t.Errorf("%d fold lines, want 3 (before the failure, when the rate fell, at the end):\n%s", folds, strings.Join(lines, "\n"))
	}
	// What surrounds the folds, in order: the first tick's lines printed,
	// the failure after what was folded before it, the lines printed
	// again once the rate fell, the summary after the last fold.
	var shape []string
	for _, l := range lines {
		switch {
		case foldLine.MatchString(l):
			shape = append(shape, "fold")
		case strings.HasPrefix(l, "ok    "):
			if len(shape) == 0 || shape[len(shape)-1] != "ok" {
				shape = append(shape, "ok")
			}
		default:
			shape = append(shape, l)
		}
	}
	want := []string{"run loop", "ok", "fold", "FAIL  critique boom 1ms", "fold", "ok", "fold",
		"succeeded in 1.0s", "  path:   (99999 earlier) → draft → critique", "  output: null"}
	if diff := cmp.Diff(want, shape); diff != "" {
		t.Errorf("the terminal's lines (-want +got):\n%s", diff)
	}
	if got := lines[1]; got != "ok    draft 3µs" {
		t.Errorf("first line after the header %q", got)
	}
}

// TestRunTerminalFoldsFastLoop runs a 50,000-iteration loop of fn steps
// on a pseudo-terminal and then a step that fails: the terminal gets a
// bounded output (the lines alone would be some 1.8 MB), every iteration
// is still accounted for by its line or a fold line, and the failure and
// the run's summary are shown in full.
func TestRunTerminalFoldsFastLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("a 50,000-iteration run")
	}
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "loop.star"), `flow(name = "fast", inputs = {"n": 50000})
draft = step("draft", fn = lambda r: {"n": r.visits("draft")}, max_visits = 1 << 20)
critique = step("critique", fn = lambda r: {"ok": r.draft.n >= r.inputs.n})
last = step("last", fn = lambda r: fail("boom after %d" % r.draft.n))
chain(START, draft, critique)
edge(critique, draft, when = "not critique.ok")
edge(critique, last, when = "critique.ok")
edge(last, END)
`)
	term := startTerminal(t, dir, state, "run", "--no-store", "loop.star")
	if code := term.wait(); code != 1 {
		t.Errorf("exit status %d", code)
	}
	raw := term.out.String()
	t.Logf("%d bytes on the terminal", len(raw))
	// Folded, the terminal gets the first tick's lines and a redraw of
	// the live block per tick (some 150 bytes, 20 a second): 200 KB is a
	// run of over a minute.
	if len(raw) > 200_000 {
		t.Errorf("%d bytes written to the terminal", len(raw))
	}
	lines := screen(strings.ReplaceAll(raw, "\r\n", "\n"))
	draft, critique, folds := foldedCounts(t, lines)
	if draft != 50_000 || critique != 50_000 || folds == 0 {
		t.Errorf("draft shown %d times, critique %d, in %d fold lines; want 50,000 each, folded:\n%s", draft, critique, folds, strings.Join(lines, "\n"))
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"\nFAIL  last loop.star:4:40: fail: boom after 50000 ",
		"\nfailed in ",
		": fail: boom after 50000 [step_failed]",
		"\n  path:   (99977 earlier) → ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q on the terminal:\n%s", want, text)
		}
	}
	if i, j := strings.Index(text, "\nFAIL  last"), strings.LastIndex(text, "lines folded"); i < j {
		t.Errorf("a fold line after the failure:\n%s", text)
	}
}
