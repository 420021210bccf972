package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// recorder is an io.Writer that keeps what was written, for tests.
type recorder struct {
	mu     sync.Mutex
	b      strings.Builder
	writes int
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	return r.b.Write(p)
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// TestProgressBuffersUntilItMatters feeds events to a progress without its
// tick: lines of steps that succeed wait in the buffer; a failure, a retry
// and the end are written at once, with everything before them, in order.
func TestProgressBuffersUntilItMatters(t *testing.T) {
	out := &recorder{}
	p := newProgress(out, false) // not started: no tick, only the flushes that must happen
	at := time.Now()
	p.event(&vm.Event{Type: vm.RunStarted, Time: at, FlowName: "demo"})
	p.event(&vm.Event{Type: vm.StepStarted, Time: at, Step: "a"})
	p.event(&vm.Event{Type: vm.StepFinished, Time: at, Step: "a", Status: "succeeded", Duration: 1500 * time.Microsecond})
	if got := out.String(); got != "" {
		t.Errorf("a run going well was written before any flush:\n%s", got)
	}
	p.event(&vm.Event{Type: vm.StepStarted, Time: at, Scope: []string{"l#2"}, Step: "b"})
	p.event(&vm.Event{Type: vm.StepFinished, Time: at, Scope: []string{"l#2"}, Step: "b", Status: "failed", Error: "exit status 3", Duration: 2 * time.Second})
	want := "run demo\nstart a\nok    a 1ms\nstart l#2 › b\nFAIL  l#2 › b exit status 3 2.0s\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("after a failure (-want +got):\n%s", diff)
	}
	p.event(&vm.Event{Type: vm.StepLog, Time: at, Step: "c", Message: "hello"})
	p.event(&vm.Event{Type: vm.StepRetrying, Time: at, Step: "c", Error: "timeout", Attempt: 2, Duration: 2 * time.Second})
	want += "      c: hello\nretry c: timeout (attempt 2 in 2.0s)\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("after a retry (-want +got):\n%s", diff)
	}
	p.event(&vm.Event{Type: vm.LoopIteration, Time: at, Step: "l", Index: 3, Stop: true, Message: "good"})
	p.event(&vm.Event{Type: vm.StepPruned, Time: at, Step: "d"})
	p.stop()
	want += "loop  l iteration 3 done: good\nskip  d\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("after stop (-want +got):\n%s", diff)
	}
	p.summary(&vm.Result{Status: vm.Failed, Duration: 3 * time.Minute, Path: []string{"a", "b"}, PathTotal: 2})
	want += "failed in 3m00s\n  path:   a → b\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("after the summary (-want +got):\n%s", diff)
	}
}

// TestProgressPipedOrdered runs a flow whose events come from many
// goroutines (parallel shell steps, child flows) through the progress of
// piped output: every line is there once, whole, and each step's start
// comes before its end, with the summary last.
func TestProgressPipedOrdered(t *testing.T) {
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("src = step(\"src\", fn = lambda r: 1)\nedge(START, src)\n")
	src.WriteString("join = step(\"join\", join = \"and\")\nedge(join, END)\n")

	const n = 40
	for i := range n {
		if i%4 == 0 {
			fmt.Fprintf(&src, "s%d = step(\"s%d\", flow = \"child.star\")\n", i, i)
		} else {
			fmt.Fprintf(&src, "s%d = step(\"s%d\", shell = \"echo %d\")\n", i, i, i)
		}
		fmt.Fprintf(&src, "edge(src, s%d)\nedge(s%d, join)\n", i, i)
	}
	files := map[string]string{
		"flow.star":  src.String(),
		"child.star": "a = step(\"a\", fn = lambda r: 1)\nb = step(\"b\", shell = \"true\")\nchain(START, a, b, END)\n",
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := lang.Load(filepath.Join(dir, "flow.star"), lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	p := newProgress(out, false)
	p.start()
	res := vm.Prepare(g).Run(context.Background(), nil, vm.Options{Parallel: 8, OnEvent: p.event, LoadFlow: loadOptions("", 0).ChildLoader(nil)})
	p.stop()
	p.summary(res)
	if res.Status != vm.Succeeded {
		t.Fatalf("run %s: %v\n%s", res.Status, res.Error, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	seen := map[string]int{}
	started := map[string]bool{}
	for i, l := range lines {
		seen[l]++
		switch {
		case strings.HasPrefix(l, "start "):
			started[strings.TrimPrefix(l, "start ")] = true
		case strings.HasPrefix(l, "ok    "):
			rest := strings.TrimPrefix(l, "ok    ")
			where := rest[:strings.LastIndex(rest, " ")]
			if !started[where] {
				t.Errorf("line %d %q: the step ended before it started", i, l)
			}
		case strings.HasPrefix(l, "succeeded in "):
			if i != len(lines)-3 {
				t.Errorf("summary at line %d of %d", i, len(lines))
			}
		}
	}
	if c := seen["start src"]; c != 1 {
		t.Errorf("start src: %d times", c)
	}
	oks := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "ok    ") {
			oks++
		}
	}
	if want := 2 + n + 2*(n/4); oks != want {
		t.Errorf("%d ok lines, want %d:\n%s", oks, want, out.String())
	}
	if out.writes > len(lines)/2 {
		t.Errorf("%d writes for %d lines: the output is not buffered", out.writes, len(lines))
	}
}

// TestRunTerminal runs a flow on a pseudo-terminal: the live block shows
// the running step (redrawn on the tick), finished steps print their
// lines above it, and the summary ends the output once the block is gone.
func TestRunTerminal(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	flow := `flow(name = "tty")
fast = step("fast", fn = lambda r: 1)
slow = step("slow", shell = "while [ ! -e go ]; do sleep 0.02; done; echo done$FAST", env = {"FAST": "{{ fast }}"})
chain(START, fast, slow, END)
`
	if err := os.WriteFile(filepath.Join(dir, "flow.star"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	term := startTerminal(t, dir, state, "run", "flow.star")
	term.expect("run tty\r\n")
	term.expect("ok    fast ")
	term.expect(" slow ") // the live block: spinner, step, elapsed time
	term.expect("\x1b[1A\x1b[2K")
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	term.expect("ok    slow ")
	term.expect("succeeded in ")
	term.expect("  output: done1\r\n")
	if err := term.cmd.Wait(); err != nil {
		t.Errorf("skein run: %v; output:\n%q", err, term.out.String())
	}
}

// The summary's tokens line says the HTTP attempts when retries or
// fallbacks made more than the calls, and the cost when a priced model
// answered.
func TestTokensLine(t *testing.T) {
	for _, c := range []struct {
		calls int
		u     model.Usage
		want  string
	}{
		{1, model.Usage{PromptTokens: 10, CompletionTokens: 5, Attempts: 1}, "15 (10 prompt, 5 completion) in 1 model call"},
		{1, model.Usage{PromptTokens: 1000, CompletionTokens: 500, Attempts: 2, Cost: 0.0075}, "1500 (1000 prompt, 500 completion) in 1 model call (2 HTTP attempts), cost $0.0075"},
		{3, model.Usage{PromptTokens: 1, CompletionTokens: 1, Cost: 12.5}, "2 (1 prompt, 1 completion) in 3 model calls, cost $12.50"},
	} {
		if got := tokensLine(&vm.Result{ModelCalls: c.calls, Usage: c.u}); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// On a terminal, the reply an llm= step streams shows under the running
// step, its last words on one line, and goes with the step; a retry's
// reply replaces the failed attempt's.
func TestProgressStreamedReply(t *testing.T) {
	out := &recorder{}
	p := newProgress(out, true)
	p.color = false
	at := time.Now()
	ev := func(e vm.Event) { e.Time, e.Step, e.Kind, e.Visit = at, "draft", "llm", 1; p.event(&e) }
	live := func() string {
		before := len(out.String())
		p.mu.Lock()
		p.redraw()
		p.w.sync()
		p.mu.Unlock()
		return out.String()[before:]
	}
	ev(vm.Event{Type: vm.StepStarted})
	ev(vm.Event{Type: vm.ModelDelta, Attempt: 1, Message: "Once upon"})
	ev(vm.Event{Type: vm.ModelDelta, Attempt: 1, Message: " a time,\nthere"})
	if s := live(); !strings.Contains(s, " draft ") || !strings.Contains(s, "    Once upon a time, there\n") {
		t.Errorf("live block:\n%q", s)
	}
	ev(vm.Event{Type: vm.ModelDelta, Attempt: 2, Message: "Again"})
	if s := live(); !strings.Contains(s, "    Again\n") || strings.Contains(s, "Once") {
		t.Errorf("live block after a retry:\n%q", s)
	}
	ev(vm.Event{Type: vm.StepFinished, Status: string(vm.StepSucceeded)})
	if s := live(); strings.Contains(s, "Again") {
		t.Errorf("the reply outlived its step:\n%q", s)
	}
	if got := streamTail([]byte(strings.Repeat("x", 100)+" \x1b[31mend"), 10); !strings.HasSuffix(got, "end") || strings.ContainsRune(got, 0x1b) || len([]rune(got)) > 11 {
		t.Errorf("streamTail = %q", got)
	}
}
