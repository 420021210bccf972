package main

// This file shows a run as it goes: on a terminal a live block of the steps
// running with their elapsed time under the lines of the steps finished;
// elsewhere plain lines, one per event. Both end with a summary of the path
// and the result.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/skeinlang/skein/vm"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	color   bool
	running []*activeStep
	drawn   int // lines of the live block now on screen
	stopped chan struct{}
	ticker  sync.WaitGroup
	frame   int
}

type activeStep struct {
	where   string
	kind    string
	started time.Time
	attempt int
}

func newProgress(w io.Writer, tty bool) *progress {
	return &progress{w: w, tty: tty, color: useColor(tty), stopped: make(chan struct{})}
}

// start begins redrawing the live block on a terminal.
func (p *progress) start() {
	if !p.tty {
		return
	}
	p.ticker.Add(1)
	go func() {
		defer p.ticker.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stopped:
				return
			case <-t.C:
				p.mu.Lock()
				p.frame++
				p.redraw()
				p.mu.Unlock()
			}
		}
	}()
}

// stop ends the live block.
func (p *progress) stop() {
	close(p.stopped)
	p.ticker.Wait()
	p.mu.Lock()
	p.clear()
	p.running = nil
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

// clear erases the live block.
func (p *progress) clear() {
	if p.drawn > 0 {
		fmt.Fprint(p.w, strings.Repeat("\x1b[1A\x1b[2K", p.drawn))
		p.drawn = 0
	}
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// redraw draws the live block: one line per running step.
func (p *progress) redraw() {
	p.clear()
	var b strings.Builder
	now := time.Now()
	for _, a := range p.running {
		extra := ""
		if a.attempt > 1 {
			extra = fmt.Sprintf(" (attempt %d)", a.attempt)
		}
		fmt.Fprintf(&b, "  %s %s %s%s\n", p.paint("36", spinner[p.frame%len(spinner)]), a.where,
			p.paint("2", formatDuration(now.Sub(a.started))), extra)
	}
	p.drawn = len(p.running)
	fmt.Fprint(p.w, b.String())
}

// line prints a permanent line above the live block.
func (p *progress) line(format string, args ...any) {
	if p.tty {
		p.clear()
	}
	fmt.Fprintf(p.w, format+"\n", args...)
	if p.tty {
		p.redraw()
	}
}

func (p *progress) event(ev vm.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	where := ev.Where()
	switch ev.Type {
	case vm.RunStarted:
		if len(ev.Flow) == 0 {
			p.line("%s %s", p.paint("1", "run"), ev.FlowName)
		}
	case vm.StepStarted:
		p.running = append(p.running, &activeStep{where: where, kind: ev.Kind, started: ev.Time, attempt: 1})
		if !p.tty {
			p.line("start %s", where)
		}
	case vm.StepRetrying:
		for _, a := range p.running {
			if a.where == where {
				a.attempt = ev.Attempt
			}
		}
		p.line("%s %s: %s; retrying (attempt %d)", p.paint("33", "retry"), where, ev.Error, ev.Attempt)
	case vm.StepFinished:
		for i, a := range p.running {
			if a.where == where {
				p.running = append(p.running[:i], p.running[i+1:]...)
				break
			}
		}
		if ev.Status == string(vm.StepSucceeded) {
			p.line("%s %s %s", p.paint("32", "ok   "), where, p.paint("2", formatDuration(ev.Duration)))
		} else {
			p.line("%s %s %s %s", p.paint("31", "FAIL "), where, ev.Error, p.paint("2", formatDuration(ev.Duration)))
		}
	case vm.StepPruned:
		p.line("%s %s", p.paint("2", "skip "), p.paint("2", where))
	case vm.StepLog:
		p.line("      %s: %s", where, ev.Message)
	case vm.LoopIteration:
		what := "again"
		if ev.Stop {
			what = "done"
		}
		if ev.Message != "" {
			what += ": " + ev.Message
		}
		p.line("%s %s iteration %d %s", p.paint("36", "loop "), where, ev.Index, what)
	}
}

// summary prints how the run ended, its path and its result.
func (p *progress) summary(res *vm.Result) {
	switch res.Status {
	case vm.Succeeded:
		fmt.Fprintf(p.w, "%s in %s\n", p.paint("1;32", "succeeded"), formatDuration(res.Duration))
	default:
		msg := ""
		if res.Error != nil {
			msg = fmt.Sprintf(": %s [%s]", res.Error.Msg, res.Error.Code)
		}
		fmt.Fprintf(p.w, "%s in %s%s\n", p.paint("1;31", string(res.Status)), formatDuration(res.Duration), msg)
	}
	fmt.Fprintf(p.w, "  path:   %s\n", pathText(res, 24))
	if res.Status == vm.Succeeded {
		fmt.Fprintf(p.w, "  output: %s\n", valueText(res.Output, 300))
	}
}

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
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
