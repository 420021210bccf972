package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestREPLScripts runs the sessions in testdata/repl: each pipes a script
// into `skein repl` and compares what it prints. UPDATE=1 rewrites the
// expected output.
func TestREPLScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/repl"))
}

// skeinExe returns the skein command to run in a subprocess: the test
// binary itself, which TestMain (testscript.Main) puts on $PATH as "skein".
func skeinExe(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("skein")
	if err != nil {
		t.Fatalf("skein is not on $PATH: TestMain must register it with testscript.Main: %v", err)
	}
	return exe
}

// ptyDeadline bounds each wait on a terminal: a hang guard, generous for
// a race-enabled skein on a busy machine; nothing waits it out when all
// is well.
const ptyDeadline = 60 * time.Second

// terminal is `skein repl` running on a pseudo-terminal.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	out  *syncBuffer
	read chan struct{} // closed when the output ends
	mark int           // output before mark has been matched
}

// startTerminal runs skein with args on a new pseudo-terminal in dir.
func startTerminal(t *testing.T, dir, state string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(skeinExe(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERM=xterm", "NO_COLOR=1", "XDG_STATE_HOME="+state, "HOME="+dir,
		"GORACE=atexit_sleep_ms=0") // a race-enabled binary otherwise waits 1s on exit
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, pty: f, out: &syncBuffer{}, read: make(chan struct{})}
	go func() {
		defer close(term.read)
		io.Copy(term.out, f)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		f.Close()
		<-term.read
	})
	return term
}

// send types s.
func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := term.pty.Write([]byte(s)); err != nil {
		term.t.Fatal(err)
	}
}

// expect waits for s to appear in the output after what was matched
// before.
func (term *terminal) expect(s string) {
	term.t.Helper()
	deadline := time.Now().Add(ptyDeadline)
	for time.Now().Before(deadline) {
		out := term.out.String()
		if i := strings.Index(out[term.mark:], s); i >= 0 {
			term.mark += i + len(s)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	term.t.Fatalf("no %q in the output after %d bytes:\n%q", s, term.mark, term.out.String())
}

// interruptLine types text and then Ctrl-C, once the editor has echoed
// text. liner writes a prompt before it turns the terminal's signals off
// for the line, so a Ctrl-C sent as soon as the prompt shows can reach
// the terminal while they are on: the kernel then sends SIGINT and drops
// the typed text, and the session waits at the prompt for good. The echo
// is liner's own (the terminal's is off), so seeing it means the line is
// being read with the signals off.
func (term *terminal) interruptLine(text string) {
	term.t.Helper()
	term.send(text)
	term.expect(text)
	term.send(keyCtrlC)
}

// exit types Ctrl-D and waits for the session to end with status 0.
func (term *terminal) exit() {
	term.t.Helper()
	term.send("\x04")
	done := make(chan error, 1)
	go func() { done <- term.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			term.t.Errorf("skein repl: %v; output:\n%q", err, term.out.String())
		}
	case <-time.After(ptyDeadline):
		term.t.Fatalf("skein repl did not exit on Ctrl-D; output:\n%q", term.out.String())
	}
}

const (
	keyLeft  = "\x1b[D"
	keyUp    = "\x1b[A"
	keyBack  = "\x7f"
	keyCtrlA = "\x01"
	keyCtrlC = "\x03"
	keyTab   = "\t"
)

// TestREPLTerminal drives the REPL the way a person does: line editing,
// multi-line input, Ctrl-C, completion and history across sessions.
func TestREPLTerminal(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	term := startTerminal(t, dir, state, "repl")
	term.expect(":help lists the commands")
	term.expect(">>> ")

	// Line editing: "10 + 5", two left, delete the "+", type "*".
	term.send("10 + 5" + keyLeft + keyLeft + keyBack + "*\r")
	term.expect("\r\n50\r\n")
	term.expect(">>> ")
	// Ctrl-A goes to the start of the line.
	term.send("2" + keyCtrlA + "4\r")
	term.expect("\r\n42\r\n")

	// Ctrl-C drops the line being typed, and a compound statement.
	term.expect(">>> ")
	term.interruptLine("this is not starlark(")
	term.expect("^C")
	term.expect(">>> ")
	term.send("def f():\r")
	term.expect("... ")
	term.interruptLine("    return 1")
	term.expect(">>> ")
	term.send("def nine():\r")
	term.expect("... ")
	term.send("    return 9\r")
	term.expect("... ")
	term.send("\r")
	term.expect(">>> ")
	term.send("nine()\r")
	term.expect("\r\n9\r\n")

	// Completion: a module, its members, a global, a step name, a command.
	term.expect(">>> ")
	term.send("jso" + keyTab)
	term.expect("json")
	term.send(".enc" + keyTab)
	term.expect("json.encode")
	term.send(`([1, "x"])` + "\r")
	term.expect(`"[1,\"x\"]"`)
	term.expect(">>> ")
	term.send(`build_all = step("build_all")` + "\r")
	term.expect(">>> ")
	term.send("build_a" + keyTab + ".na" + keyTab + "\r")
	term.expect(`"build_all"`)
	term.expect(">>> ")
	term.send(":che" + keyTab + "\r")
	term.expect("ok: 1 step, 2 edges")
	term.expect(">>> ")
	term.send(`"history marker"` + "\r")
	term.expect(`"history marker"`)
	term.expect(">>> ")
	term.exit()

	hist, err := os.ReadFile(filepath.Join(state, "skein", "history"))
	if err != nil {
		t.Fatal(err)
	}
	// A compound statement is one entry, its line breaks escaped.
	if !strings.Contains(string(hist), "\"history marker\"\n") || !strings.Contains(string(hist), "\ndef nine():\\n    return 9\n") {
		t.Errorf("history file:\n%s", hist)
	}

	// A new session recalls the last one's lines.
	term = startTerminal(t, dir, state, "repl")
	term.expect(">>> ")
	term.send(keyUp + "\r")
	term.expect("\r\n\"history marker\"\r\n")
	term.expect(">>> ")

	// Up recalls a whole def, which runs again as it was entered.
	term.send("def seven():\r")
	term.expect("... ")
	term.send("    return 7\r")
	term.expect("... ")
	term.send("\r")
	term.expect(">>> ")
	term.send(keyUp + "\r")
	term.expect(">>> ")
	term.send("seven()\r")
	term.expect("\r\n7\r\n")
	term.expect(">>> ")
	if out := term.out.String(); strings.Contains(out, "error") {
		t.Errorf("recalling the def failed:\n%q", out)
	}
	term.exit()
}

// TestREPLTerminalInterruptRun checks that Ctrl-C during :run cancels the
// run, kills its processes and leaves the session usable.
func TestREPLTerminalInterruptRun(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "sleep.star"), pidFlow(filepath.Join(dir, "pid")))
	term := startTerminal(t, dir, state, "repl", "sleep.star")
	term.expect("loaded sleep.star: 1 step, 2 edges")
	term.expect(">>> ")
	term.send(":run who=me\r")
	w := &watchRun{t: t, dir: dir, out: term.out}
	pid := w.readPid(filepath.Join(dir, "pid"))
	term.send(keyCtrlC)
	term.expect("cancelled in")
	term.expect(">>> ")
	waitGroupGone(t, pid)
	term.send("6 * 7\r")
	term.expect("\r\n42\r\n")
	term.expect(">>> ")
	term.exit()
}

// TestDocsREPLTranscript types the session docs/cli.md shows into skein
// repl on a terminal and checks that every line it shows is printed, in
// order, times and the run's id aside.
func TestDocsREPLTranscript(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- transcript: repl -->\n```\n")
	if !ok {
		t.Fatal("docs/cli.md has no <!-- transcript: repl --> block")
	}
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	if lines[0] != "$ skein repl" {
		t.Fatalf("the transcript starts with %q, not $ skein repl", lines[0])
	}
	dir := t.TempDir()
	term := startTerminal(t, dir, t.TempDir(), "repl", "--store", filepath.Join(dir, "runs.db"))
	var want []string // what the session prints, in order
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, ">>> "), strings.HasPrefix(l, "... "), l == "...":
			prompt, input, _ := strings.Cut(l, " ")
			term.expect(prompt + " ")
			term.send(input + "\r")
		default:
			want = append(want, l)
		}
	}
	term.expect(">>> ")
	term.exit()
	// What a person sees: the escapes of the live progress and of line
	// editing aside, lines as they end.
	escapes := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	var got []string
	for _, l := range strings.Split(escapes.ReplaceAllString(term.out.String(), ""), "\n") {
		if i := strings.LastIndex(strings.TrimRight(l, "\r"), "\r"); i >= 0 {
			l = l[i+1:] // what was drawn over
		}
		got = append(got, strings.TrimRight(l, "\r"))
	}
	vary := regexp.MustCompile(`[0-9.]+(µs|ms|s)\b|\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}`)
	norm := func(s string) string { return vary.ReplaceAllString(s, "X") }
	i := 0
	for _, w := range want {
		for i < len(got) && norm(got[i]) != norm(w) {
			i++
		}
		if i == len(got) {
			t.Fatalf("the session did not print %q (in order); it printed:\n%s", w, strings.Join(got, "\n"))
		}
		i++
	}
}
