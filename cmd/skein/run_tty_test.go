package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wait waits for the command on the terminal to end and returns its exit
// status.
func (term *terminal) wait() int {
	term.t.Helper()
	done := make(chan error, 1)
	go func() { done <- term.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(ptyDeadline):
		term.t.Fatalf("skein did not exit; output:\n%q", term.out.String())
	}
	<-term.read
	return term.cmd.ProcessState.ExitCode()
}

// On a terminal, what steps print is shown with its control sequences made
// visible: a task cannot clear the screen or retitle the window.
func TestRunTerminalEscapes(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "esc.star"), `
a = step("a", shell = "printf 'before\\033[2J\\033]0;pwned\\007after\\n' >&2; exit 7")
b = step("b", fn = lambda r: "out\x1b[31mred")
edge(START, a)
edge(a, b, on = "failure")
edge(b, END)
`)
	term := startTerminal(t, dir, state, "run", "esc.star")
	if code := term.wait(); code != 0 {
		t.Errorf("exit status %d", code)
	}
	out := term.out.String()
	for _, raw := range []string{"\x1b[2J", "\x1b]0;", "\x07", "\x1b[31m"} {
		if strings.Contains(out, raw) {
			t.Errorf("the output holds the raw sequence %q:\n%q", raw, out)
		}
	}
	for _, shown := range []string{`| before\x1b[2J\x1b]0;pwned\x07after`, `output: out\x1b[31mred`} {
		if !strings.Contains(out, shown) {
			t.Errorf("the output does not show %q:\n%q", shown, out)
		}
	}
}

// Ctrl-C on a terminal: the summary starts at the beginning of its line,
// not after the terminal's echo of ^C.
func TestRunTerminalCancel(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	pid := filepath.Join(dir, "pid")
	saveInPlace(t, filepath.Join(dir, "sleep.star"), pidFlow(pid))
	term := startTerminal(t, dir, state, "run", "sleep.star", "--input", "who=me")
	w := &watchRun{t: t, dir: dir, out: term.out}
	w.readPid(pid)
	term.send(keyCtrlC)
	if code := term.wait(); code != 1 {
		t.Errorf("exit status %d", code)
	}
	out := term.out.String()
	i := strings.Index(out, "cancelled in")
	if i < 0 {
		t.Fatalf("no summary:\n%q", out)
	}
	if before := out[:i]; !strings.HasSuffix(before, "\n") && !strings.HasSuffix(before, "\r\x1b[K") {
		t.Errorf("the summary does not start its line:\n%q", out)
	}
	// So does whatever is written after the terminal echoed ^C where the
	// cursor was (the FAIL line of the step it cancelled, the run's
	// header): it starts at the beginning of the line.
	c := strings.Index(out, "^C")
	if c < 0 {
		t.Skipf("the terminal did not echo ^C:\n%q", out)
	}
	rest := out[c+2:]
	for strings.HasPrefix(rest, "\x1b[") {
		end := strings.IndexFunc(rest[2:], func(r rune) bool { return r >= '@' && r <= '~' })
		rest = rest[2+end+1:]
	}
	if !strings.HasPrefix(rest, "\r") && !strings.HasPrefix(rest, "\n") {
		t.Errorf("what follows ^C does not start its line:\n%q", out)
	}
}

// ":load " completes file paths: directories, then .star files.
func TestREPLTerminalLoadCompletion(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "flows", "only.star"), `step("only")`+"\n")
	term := startTerminal(t, dir, state, "repl")
	term.expect(">>> ")
	term.send(":load " + keyTab)
	term.expect("flows/")
	term.send(keyTab + "\r")
	term.expect("loaded flows/only.star: 1 step, 2 edges")
	term.expect(">>> ")
	term.exit()
}

// skein logs on a terminal shows a task's output with its control
// sequences made visible (piped, it passes the bytes on as they were).
func TestLogsTerminalEscapes(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "esc.star"), `step("a", shell = "printf 'one\\033[2J\\033]0;pwned\\007two\\n'")`+"\n")
	term := startTerminal(t, dir, state, "run", "esc.star")
	if code := term.wait(); code != 0 {
		t.Fatalf("run: exit status %d:\n%q", code, term.out.String())
	}
	term = startTerminal(t, dir, state, "logs", "last")
	if code := term.wait(); code != 0 {
		t.Fatalf("logs: exit status %d:\n%q", code, term.out.String())
	}
	out := term.out.String()
	if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\x1b]0;") {
		t.Errorf("logs wrote the raw sequences:\n%q", out)
	}
	if !strings.Contains(out, `one\x1b[2J\x1b]0;pwned\x07two`) {
		t.Errorf("logs does not show the output:\n%q", out)
	}
}

// Closing the terminal (SIGHUP) stops a run the way Ctrl-C does: the run
// ends cancelled and its exit handler runs. skein used to die on the
// spot, leaving the run "interrupted" and its exit handler not run.
func TestRunTerminalHangup(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "hup.star"), `
flow(on_exit = "bye")
s = step("s", run = ["sleep", "60"])
bye = step("bye", shell = 'echo "$STATUS" > bye.txt', env = {"STATUS": "{{ run.status }}"})
`)
	// skein leaves SIGHUP alone when it starts with it ignored (nohup),
	// and so would the skein started here if this test's process ignored
	// it (nohup go test, some CI runners): a signal handler installed here
	// makes it start with the default disposition instead.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	term := startTerminal(t, dir, state, "run", "--store", filepath.Join(dir, "runs.db"), "hup.star")
	term.expect(" s ") // the spinner of the running task
	term.pty.Close()
	if code := term.wait(); code != 1 {
		t.Errorf("exit status %d, want 1 (cancelled)", code)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bye.txt"))
	if err != nil || string(b) != "cancelled\n" {
		t.Errorf("the exit handler did not run after the hangup: %q %v", b, err)
	}
}
