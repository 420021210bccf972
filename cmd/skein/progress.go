package main

// This file shows a run as it goes: on a terminal a live block of the steps
// running with their elapsed time under the lines of the steps finished;
// elsewhere plain lines, one per event. Both end with a summary of the path
// and the result.
//
// Output goes through one buffer (see runOutput), flushed on a short tick,
// at once when a step fails or is retried, and at the end, so a fast run
// costs one write per tick rather than one per line. On a terminal the live block is
// redrawn on the tick (20 times a second), not per event.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"
	"golang.org/x/term"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/vm"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

type progress struct {
	mu      sync.Mutex
	w       *runOutput
	tty     bool
	color   bool
	running []activeStep // terminal only
	drawn   int          // lines of the live block now on screen
	ticks   int
	flush   *flusher
	buf     []byte // the line being built, reused
	wbuf    []byte // the event's location, reused
	dbuf    []byte // the live block, reused
	// skipped holds the steps already shown as skipped (child flow path
	// and name): a step skipped again, in every iteration of a loop say,
	// is shown once.
	skipped map[string]bool
	kbuf    []byte
	// items are the short forms of the map items under way, by their
	// place (flow and scope, to the item's own part), learnt from the
	// first step_started in each item.
	items map[string]string
	// held keeps the terminal still while a question is asked: nothing
	// is drawn or flushed until it is released.
	held bool
	// fold counts the lines of a run too fast to read on a terminal
	// (see fold.go).
	fold folder
}

type activeStep struct {
	where   string
	kind    string
	started time.Time
	attempt int
	// text is the end of the model reply streaming in (model_delta
	// events), of the agent's turn and the HTTP attempt in delta.
	text  []byte
	delta [2]int
}

// maxStreamText is how much of a streaming reply a running step keeps.
const maxStreamText = 240

func newProgress(w io.Writer, tty bool) *progress {
	return &progress{w: newRunOutput(w), tty: tty, color: useColor(tty)}
}

// start begins flushing the output on a tick, and on a terminal redrawing
// the live block.
// streamTail is the last n runes of a streaming reply's text, as one
// line of visible text.
func streamTail(text []byte, n int) string {
	s := visible.Text(strings.Join(strings.Fields(strings.ToValidUTF8(string(text), "")), " "), false)
	if r := []rune(s); len(r) > n {
		s = "…" + string(r[len(r)-n:])
	}
	return s
}

// tokensLine says what a run's model calls spent: tokens, the calls, the
// HTTP attempts when retries or fallbacks made more, and the cost when
// the models have a price.
func tokensLine(res *vm.Result) string {
	u := res.Usage
	s := fmt.Sprintf("%d (%d prompt, %d completion) in %s", u.Total(), u.PromptTokens, u.CompletionTokens, plural(res.ModelCalls, "model call"))
	if u.Attempts > res.ModelCalls {
		s += fmt.Sprintf(" (%s)", plural(u.Attempts, "HTTP attempt"))
	}
	if u.Cost > 0 {
		s += ", cost " + dollars(u.Cost)
	}
	return s
}

// dollars writes an amount of US dollars to the millionth, without
// trailing zeros past the cents.
func dollars(v float64) string {
	s := strconv.FormatFloat(v, 'f', 6, 64)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return "$" + s
}

func (p *progress) start() {
	p.flush = startFlusher(flushEvery, p.tick)
}

// tick flushes the output, and on a terminal ends a tick of the folding
// and redraws the live block.
func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		return
	}
	if p.tty {
		p.ticks++
		if p.fold.tick() {
			p.unfold()
		}
		p.redraw()
	}
	p.w.Flush()
}

// unfold prints the line saying what was folded, if anything was.
func (p *progress) unfold() {
	if b := p.fold.appendLine(p.buf[:0], p.color); len(b) > 0 {
		p.line(b)
		p.buf = b[:0]
	}
}

// hold stops drawing and flushing (on), with the live block erased, so a
// question can be asked below what was printed; hold(false) goes on.
func (p *progress) hold(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.clear()
		p.w.sync()
	}
	p.held = on
}

// stop ends the live block and flushes the output.
func (p *progress) stop() {
	if p.flush != nil {
		p.flush.stop()
	}
	p.mu.Lock()
	p.held = false
	p.unfold()
	p.clear()
	if p.tty {
		// Back to the start of a clean line: the terminal may have echoed
		// ^C where the cursor was.
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.running = nil
	p.w.sync()
	p.mu.Unlock()
}

func (p *progress) paint(code, s string) string { return paint(p.color, code, s) }

// useColor reports whether output to a terminal (tty) may be coloured:
// yes unless NO_COLOR is set.
func useColor(tty bool) bool { return tty && os.Getenv("NO_COLOR") == "" }

// paint wraps s in the ANSI SGR code when color is on.
func paint(color bool, code, s string) string {
	if !color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// appendPaint appends s, wrapped in the ANSI SGR code when color is on.
func appendPaint(b []byte, color bool, code, s string) []byte {
	if !color {
		return append(b, s...)
	}
	b = append(b, "\x1b["...)
	b = append(b, code...)
	b = append(b, 'm')
	b = append(b, s...)
	return append(b, "\x1b[0m"...)
}

// clear erases the live block.
func (p *progress) clear() {
	for ; p.drawn > 0; p.drawn-- {
		p.w.WriteString("\x1b[1A\x1b[2K")
	}
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// redraw draws the live block: one line per running step, and a line of
// the steps folded while the run is too fast to read.
func (p *progress) redraw() {
	p.clear()
	if len(p.running) == 0 && p.fold.total == 0 {
		return
	}
	p.w.WriteByte('\r') // as in line
	now := time.Now()
	spin := spinner[(p.ticks/2)%len(spinner)] // a frame per 100 ms
	b := p.dbuf[:0]
	lines := 0
	for _, a := range p.running {
		b = append(b, ' ', ' ')
		b = appendPaint(b, p.color, "36", spin)
		b = append(b, ' ')
		b = append(b, a.where...)
		b = append(b, ' ')
		b = p.appendDim(b, func(b []byte) []byte { return appendDuration(b, now.Sub(a.started)) })
		if a.attempt > 1 {
			b = append(b, " (attempt "...)
			b = strconv.AppendInt(b, int64(a.attempt), 10)
			b = append(b, ')')
		}
		b = append(b, '\n')
		if len(a.text) > 0 {
			// The reply as it streams in: its last words, on one line.
			b = append(b, "    "...)
			b = p.appendDim(b, func(b []byte) []byte { return append(b, streamTail(a.text, 72)...) })
			b = append(b, '\n')
			lines++
		}
	}
	p.drawn = len(p.running) + lines
	if p.fold.total > 0 {
		b = append(b, ' ', ' ')
		b = appendPaint(b, p.color, "32", "✓")
		b = append(b, ' ')
		b = p.fold.appendCounts(b, " · ", true)
		b = append(b, '\n')
		p.drawn++
	}
	p.w.Write(b)
	p.dbuf = b
}

// appendDim appends what add appends, dimmed when color is on.
func (p *progress) appendDim(b []byte, add func([]byte) []byte) []byte {
	if !p.color {
		return add(b)
	}
	b = append(b, "\x1b[2m"...)
	return append(add(b), "\x1b[0m"...)
}

// line writes b and a newline as a permanent line, above the live block
// (which the next tick redraws).
func (p *progress) line(b []byte) {
	p.clear()
	if p.tty {
		// From the start of the line: the terminal may have echoed ^C
		// where the cursor was.
		p.w.WriteByte('\r')
	}
	p.w.Write(append(b, '\n'))
}

// note writes text (one or more lines) as permanent lines, at once.
func (p *progress) note(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line([]byte(text))
	p.show()
}

// show makes what was written visible at once: the live block is redrawn
// and the buffer flushed.
func (p *progress) show() {
	if p.held {
		return
	}
	if p.tty {
		p.redraw()
	}
	p.w.sync()
}

// find returns the index of the running step at where, or -1.
func (p *progress) find(where []byte) int {
	for i := range p.running {
		if p.running[i].where == string(where) {
			return i
		}
	}
	return -1
}

// appendWhere appends the location of ev as progress shows it: as
// [vm.Event.AppendWhere], with each map item's index followed by a short
// form of the item, "per_file[3: main.go] › lint". An item's form is
// learnt from its first step_started and forgotten when it ends.
func (p *progress) appendWhere(b []byte, ev *vm.Event) []byte {
	if len(ev.Scope) == 0 {
		return ev.AppendWhere(b)
	}
	key := append(p.kbuf[:0], strings.Join(ev.Flow, "\x00")...)
	defer func() { p.kbuf = key[:0] }()
	for _, s := range ev.Flow {
		b = append(append(b, s...), " › "...)
	}
	for i, s := range ev.Scope {
		key = append(append(key, '\x00'), s...)
		if i < len(ev.Items) && ev.Items[i] != "" {
			if p.items == nil {
				p.items = map[string]string{}
			}
			p.items[string(key)] = ev.Items[i]
		}
		if label := p.items[string(key)]; label != "" && strings.HasSuffix(s, "]") {
			b = append(b, s[:len(s)-1]...)
			b = append(append(append(b, ": "...), visible.Text(label, false)...), ']')
		} else {
			b = append(b, s...)
		}
		b = append(b, " › "...)
	}
	if ev.Type == vm.MapItem {
		// The item has ended: what ran in it has been shown.
		key = fmt.Appendf(append(key, '\x00'), "%s[%d]", ev.Step, ev.Index)
		delete(p.items, string(key))
	}
	return append(b, ev.Step...)
}

func (p *progress) event(ev *vm.Event) {
	// No defer: this runs for every event of the run, and a function
	// with as many returns as put cannot have its defers inlined.
	p.mu.Lock()
	p.buf = p.put(ev, p.buf[:0])[:0]
	p.mu.Unlock()
}

// put shows ev, building its line in b (returned, for reuse). It is
// called holding p.mu.
func (p *progress) put(ev *vm.Event, b []byte) []byte {
	where := p.appendWhere(p.wbuf[:0], ev)
	p.wbuf = where
	switch ev.Type {
	case vm.RunStarted:
		if len(ev.Flow) != 0 {
			return b
		}
		b = appendPaint(b, p.color, "1", "run")
		b = append(append(b, ' '), visible.Text(ev.FlowName, false)...) // flow(name=) is free text
	case vm.StepStarted:
		if p.tty {
			w := ev.Step // where, without a copy, for a step of the top-level run
			if len(ev.Flow) != 0 || len(ev.Scope) != 0 {
				w = string(where)
			}
			p.running = append(p.running, activeStep{where: w, kind: ev.Kind, started: ev.Time, attempt: 1})
			return b
		}
		b = append(append(b, "start "...), where...)
	case vm.StepRetrying:
		if p.tty {
			p.unfold()
			for i := range p.running {
				if p.running[i].where == string(where) {
					p.running[i].attempt = ev.Attempt
				}
			}
		}
		b = appendPaint(b, p.color, "33", "retry")
		b = append(append(b, ' '), where...)
		b = append(append(b, ": "...), visible.Text(ev.Error, false)...)
		b = append(b, " (attempt "...)
		b = strconv.AppendInt(b, int64(ev.Attempt), 10)
		b = append(appendDuration(append(b, " in "...), ev.Duration), ')')
		p.line(b)
		p.show()
		return b
	case vm.ModelDelta:
		if p.tty {
			// Agents' turns and llm steps: shown under the step, on the next tick.
			if i := p.find(where); i >= 0 {
				a := &p.running[i]
				if d := [2]int{ev.Index, ev.Attempt}; d != a.delta {
					a.text, a.delta = a.text[:0], d
				}
				a.text = append(a.text, ev.Message...)
				if over := len(a.text) - maxStreamText; over > 0 {
					a.text = append(a.text[:0], a.text[over:]...)
				}
			}
		}
		return b
	case vm.StepFinished:
		if p.tty {
			if i := p.find(where); i >= 0 {
				p.running = append(p.running[:i], p.running[i+1:]...)
			}
		}
		failed := ev.Status != string(vm.StepSucceeded)
		if p.tty {
			if !failed && p.fold.take(ev) {
				return b
			}
			if failed {
				p.unfold() // what was folded came before
			}
		}
		if failed {
			b = appendPaint(b, p.color, "31", "FAIL ")
			b = append(append(b, ' '), where...)
			b = append(append(b, ' '), visible.Text(traceAt(ev.Trace)+ev.Error, false)...)
		} else if ev.Replayed {
			b = appendPaint(b, p.color, "32", "ok   ")
			b = append(append(b, ' '), where...)
			b = append(b, ' ')
			p.line(p.appendDim(b, func(b []byte) []byte { return append(b, "(replayed)"...) }))
			return b
		} else {
			b = appendPaint(b, p.color, "32", "ok   ")
			b = append(append(b, ' '), where...)
		}
		b = append(b, ' ')
		b = p.appendDim(b, func(b []byte) []byte { return appendDuration(b, ev.Duration) })
		if failed && (ev.Kind == "task" || ev.Kind == "shell") {
			b = append(b, p.tailText(ev.Output)...)
		}
		p.line(b)
		if failed {
			p.show()
		}
		return b
	case vm.StepPruned:
		k := p.kbuf[:0]
		for _, f := range ev.Flow {
			k = append(append(k, f...), '/')
		}
		k = append(k, ev.Step...)
		p.kbuf = k
		if p.skipped[string(k)] {
			return b
		}
		if p.skipped == nil {
			p.skipped = map[string]bool{}
		}
		p.skipped[string(k)] = true
		b = appendPaint(b, p.color, "2", "skip ")
		b = append(b, ' ')
		if p.color {
			b = append(append(append(b, "\x1b[2m"...), where...), "\x1b[0m"...)
		} else {
			b = append(b, where...)
		}
	case vm.ToolCalled:
		if ev.Status == "succeeded" {
			b = appendPaint(b, p.color, "36", "tool ")
		} else {
			b = appendPaint(b, p.color, "33", "tool ")
		}
		b = append(append(b, ' '), where...)
		b = append(append(b, ": "...), ev.Tool...)
		b = append(append(b, ' '), visible.Text(clipLine(ev.Args, 80), false)...)
		if ev.Status != "succeeded" {
			b = append(append(b, " -> "...), visible.Text(clipLine(ev.Result, 80), false)...)
		}
	case vm.ToolGranted:
		b = appendPaint(b, p.color, "35", "grant")
		b = append(append(b, ' '), where...)
		b = append(append(b, ": "...), ev.Tool...)
		b = append(append(b, " ("...), visible.Text(clipLine(ev.Message, 80), false)...)
		b = append(b, ')')
	case vm.StepLog:
		b = append(append(b, "      "...), where...)
		b = append(append(b, ": "...), visible.Text(ev.Message, false)...)
	case vm.LoopIteration:
		if p.tty && !ev.Stop && !ev.Exhausted && p.fold.take(ev) {
			return b
		}
		b = appendPaint(b, p.color, "36", "loop ")
		b = append(append(b, ' '), where...)
		b = append(b, " iteration "...)
		b = strconv.AppendInt(b, int64(ev.Index), 10)
		switch {
		case ev.Stop:
			b = append(b, " done"...)
		case ev.Exhausted:
			b = append(b, " exhausted after "...)
			b = strconv.AppendInt(b, int64(ev.Index), 10)
			b = append(b, " iterations"...)
		default:
			b = append(b, " again"...)
		}
		if ev.Message != "" {
			b = append(append(b, ": "...), visible.Text(ev.Message, false)...)
		}
	default:
		return b
	}
	p.line(b)
	return b
}

// summary prints how the run ended, its path and its result.
func (p *progress) summary(res *vm.Result) {
	switch res.Status {
	case vm.Succeeded:
		fmt.Fprintf(p.w, "%s in %s\n", p.paint("1;32", "succeeded"), formatDuration(res.Duration))
	default:
		msg := ""
		if res.Error != nil {
			// A failure of no step (a secret() unset, a bad input) is
			// shown where the flow names it; a step's failure says its
			// position under the line, with the step.
			e := *res.Error
			if e.Step != "" {
				e.Pos = graphir.Pos{}
			}
			msg = ": " + visible.Text(e.Error(), false)
		}
		fmt.Fprintf(p.w, "%s in %s%s\n", p.paint("1;31", string(res.Status)), formatDuration(res.Duration), msg)
		var b strings.Builder
		p.writeFailure(&b, res)
		io.WriteString(p.w, b.String())
	}
	fmt.Fprintf(p.w, "  path:   %s\n", pathText(res, 24))
	for _, s := range res.Steps {
		if s.Kind == graphir.KindLoop && s.Exhausted {
			fmt.Fprintf(p.w, "  note:   loop %s exhausted after %d iterations\n", s.Name, s.Iterations)
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(p.w, "  %s %s\n", p.paint("33", "warning:"), visible.Text(w, false))
	}
	for _, g := range res.Grants {
		fmt.Fprintf(p.w, "  grant:  %s granted to %s and later agent steps (%s)\n", g.Tool, g.Step, visible.Text(g.Reason, false))
	}
	for _, f := range res.Findings {
		fmt.Fprintf(p.w, "  %s %s\n", p.paint("33", "finding:"), visible.Text(f, false))
	}
	// Calls that failed before an answer used no tokens: nothing to say.
	if res.ModelCalls > 0 && res.Usage.Total() > 0 {
		fmt.Fprintf(p.w, "  tokens: %s\n", tokensLine(res))
	}
	if h := res.OnExit; h != nil && h.Status != vm.StepSucceeded {
		fmt.Fprintf(p.w, "  on_exit: %s %s: %s [%s]\n", h.Name, h.Status, visible.Text(traceAt(h.Trace)+h.Error, false), h.Code)
	}
	if res.Status == vm.Succeeded {
		fmt.Fprintf(p.w, "  output: %s\n", outputText(res.Output, "          "))
	}
	p.w.sync()
}

// outputText is a run's result as the summary shows it: a task's record
// as what the task printed (its stdout, trimmed; --json keeps the whole
// record), its lines under each other, at most outputLines of them; any
// other value on one line, as valueText gives it. Lines after the first
// start with indent.
func outputText(v starlark.Value, indent string) string {
	stdout, isTask := vm.TaskStdout(v)
	if !isTask {
		return visible.Text(valueText(v, 300), false)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return "(nothing on stdout)"
	}
	var b strings.Builder
	for i, l := range lines {
		if i == outputLines {
			fmt.Fprintf(&b, "\n%s… %d more lines (--json has them all)", indent, len(lines)-i)
			break
		}
		if i > 0 {
			b.WriteString("\n" + indent)
		}
		b.WriteString(visible.Text(valueText(starlark.String(strings.TrimSuffix(l, "\r")), 300), false))
	}
	return b.String()
}

// outputLines is how many lines of a task's stdout the summary shows.
const outputLines = 20

// pathText shows the path, the last max entries of it when it is long.
func pathText(res *vm.Result, max int) string {
	path := res.Path
	prefix := ""
	if len(path) > max {
		path = path[len(path)-max:]
	}
	if hidden := res.PathTotal - len(path); hidden > 0 {
		prefix = fmt.Sprintf("(%d earlier) → ", hidden)
	}
	if len(path) == 0 {
		return "(no steps ran)"
	}
	return prefix + strings.Join(path, " → ")
}

// formatDuration prints a duration briefly: 850µs, 12ms, 3.2s, 2m05s.
func formatDuration(d time.Duration) string { return string(appendDuration(nil, d)) }

// appendDuration appends d as formatDuration prints it.
func appendDuration(b []byte, d time.Duration) []byte {
	switch {
	case d < time.Millisecond:
		return append(strconv.AppendInt(b, d.Microseconds(), 10), "µs"...)
	case d < time.Second:
		return append(strconv.AppendInt(b, d.Milliseconds(), 10), "ms"...)
	case d < time.Minute:
		return append(strconv.AppendFloat(b, d.Seconds(), 'f', 1, 64), 's')
	}
	b = append(strconv.AppendInt(b, int64(d.Minutes()), 10), 'm')
	s := int64(d.Seconds()) % 60
	if s < 10 {
		b = append(b, '0')
	}
	return append(strconv.AppendInt(b, s, 10), 's')
}

// clipLine is s on one line, cut to n bytes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
