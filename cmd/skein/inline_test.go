package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

const approvalFlow = `
flow(name = "deploy", inputs = {"v": "1.4"})
build = step("build", shell = "echo build")
deploy = step("deploy", approve = "Deploy {{ inputs.v }} to prod?")
ship = step("ship", env = {"BY": "{{ deploy.by }}"}, run = ["sh", "-c", "echo ship by $BY"])
chain(START, build, deploy, ship, END)
`

// lastApprovals returns the approvals of the last run in the store db.
func lastApprovals(t *testing.T, db string) (*store.Run, []*store.Approval) {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get("last")
	if err != nil {
		t.Fatal(err)
	}
	aps, err := st.Approvals(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r, aps
}

// On a terminal the REPL asks an approval inline: y approves, n asks for
// a reason; both are recorded as skein approve records them. Ctrl-C at the
// question cancels the run and the session goes on.
func TestREPLTerminalApproval(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "deploy.star"), approvalFlow)
	db := filepath.Join(dir, ".skein", store.FileName)
	t.Setenv("USER", "pat")
	term := startTerminal(t, dir, state, "repl", "deploy.star")
	term.expect(">>> ")

	term.send(":run\r")
	term.expect(`approve "deploy": Deploy 1.4 to prod? [y/N] `)
	term.send("y\r")
	term.expect("succeeded in")
	term.expect("  run:    ")
	term.expect(">>> ")
	r, aps := lastApprovals(t, db)
	if r.Status != "succeeded" || len(aps) != 1 || !aps[0].Approved || aps[0].By != "pat" {
		t.Errorf("approved: run %s, approvals %+v", r.Status, aps)
	}

	term.send(":run v=2\r")
	term.expect(`approve "deploy": Deploy 2 to prod? [y/N] `)
	term.send("n\r")
	term.expect("reason (Enter for none): ")
	term.send("not today\r")
	term.expect("rejected by pat: not today [rejected]")
	term.expect(">>> ")
	r, aps = lastApprovals(t, db)
	if r.Status != "failed" || len(aps) != 1 || aps[0].Approved || aps[0].Reason != "not today" {
		t.Errorf("rejected: run %s, approvals %+v", r.Status, aps)
	}

	term.send(":run\r")
	term.expect(`[y/N] `)
	term.send(keyCtrlC)
	term.expect("cancelled in")
	term.expect(">>> ")
	r, aps = lastApprovals(t, db)
	if r.Status != "cancelled" || len(aps) != 1 || !aps[0].Decided.IsZero() {
		t.Errorf("cancelled: run %s, approvals %+v", r.Status, aps)
	}
	// The line typed next is the session's, not a late answer.
	term.send("6 * 7\r")
	term.expect("\r\n42\r\n")
	term.expect(">>> ")
	term.exit()
}

// exitFlow's task writes its pid and sleeps; its exit handler writes a
// file, then sleeps far past the time the test waits.
func exitFlow(dir string) string {
	return fmt.Sprintf(`flow(on_exit = "cleanup")
slow = step("slow", run = ["sh", "-c", "echo $$ > %[1]s/pid.tmp && mv %[1]s/pid.tmp %[1]s/pid && exec sleep 600"])
cleanup = step("cleanup", run = ["sh", "-c", "echo $$ > %[1]s/cleaning.tmp && mv %[1]s/cleaning.tmp %[1]s/cleaning && exec sleep 600"])
chain(START, slow, END)
`, dir)
}

// In the REPL the first Ctrl-C cancels the run, a second one stops its
// exit handler at once (without it the handler would have 30s, longer
// than the test waits).
func TestREPLTerminalSecondInterrupt(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "slow.star"), exitFlow(dir))
	term := startTerminal(t, dir, state, "repl", "slow.star")
	term.expect(">>> ")
	term.send(":run\r")
	w := &watchRun{t: t, dir: dir, out: term.out}
	pid := w.readPid(filepath.Join(dir, "pid"))
	term.send(keyCtrlC)
	term.expect("cancelling the run: its exit handler has up to 30s (Ctrl-C again stops it)")
	cleaner := w.readPid(filepath.Join(dir, "cleaning"))
	term.send(keyCtrlC)
	term.expect("cancelled in")
	term.expect("on_exit: cleanup cancelled: the exit handler was stopped")
	term.expect(">>> ")
	waitGroupGone(t, pid)
	waitGroupGone(t, cleaner)
	term.exit()
}

// watch --run asks approvals with the answers it is given: each decision
// is recorded, and each run after a save is a run of its own.
func TestWatchRunApproval(t *testing.T) {
	t.Setenv("USER", "pat")
	in, answers := io.Pipe()
	defer answers.Close()
	w := startWatch(t, map[string]string{"flow.star": approvalFlow}, func(c *watchConfig) {
		c.run = true
		c.answers = chanLines(in)
	})
	w.output(`approve "deploy": Deploy 1.4 to prod\? \[y/N\] $`)
	io.WriteString(answers, "y\n")
	w.output(`(?m)^succeeded in .*\n(.*\n)*  run:    \S+\n`)
	db := filepath.Join(w.dir, ".skein", store.FileName)
	first, aps := lastApprovals(t, db)
	if first.Status != "succeeded" || len(aps) != 1 || !aps[0].Approved || aps[0].By != "pat" {
		t.Errorf("approved: run %s, approvals %+v", first.Status, aps)
	}

	saveByRename(t, w.path("flow.star"), strings.Replace(approvalFlow, `"1.4"`, `"2"`, 1))
	w.output(`approve "deploy": Deploy 2 to prod\? \[y/N\] $`)
	io.WriteString(answers, "n too risky\n")
	w.output(`rejected by pat: too risky \[rejected\]`)
	w.output(`(?m)^failed in .*\n(.*\n)*  run:    \S+\n`)
	second, aps := lastApprovals(t, db)
	if second.ID == first.ID || second.Status != "failed" || len(aps) != 1 || aps[0].Approved || aps[0].Reason != "too risky" {
		t.Errorf("rejected: run %s %s (first %s), approvals %+v", second.ID, second.Status, first.ID, aps)
	}

	// A save while the question is up cancels that run; the new run asks
	// again, and the answer goes to it.
	saveByRename(t, w.path("flow.star"), strings.Replace(approvalFlow, `"1.4"`, `"3"`, 1))
	w.output(`Deploy 3 to prod\? \[y/N\] $`)
	saveByRename(t, w.path("flow.star"), strings.Replace(approvalFlow, `"1.4"`, `"4"`, 1))
	w.output(`Deploy 4 to prod\? \[y/N\] $`)
	io.WriteString(answers, "y\n")
	w.output(`Deploy 4 to prod\? \[y/N\] (.*\n)+succeeded in `)
	w.stop()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first. A save seen as two events may add a cancelled run.
	var statuses []string
	for _, r := range runs {
		statuses = append(statuses, string(r.Status))
	}
	got := strings.Join(statuses, " ")
	if len(runs) < 4 || !strings.HasPrefix(got, "succeeded cancelled") || !strings.HasSuffix(got, "failed succeeded") {
		t.Errorf("runs, newest first: %s", got)
	}
}

// watch --run refuses to start a run whose models cannot be called, as
// skein run does, and records nothing.
func TestWatchRunModelCheck(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("SKEIN_MODEL", "")
	w := startWatch(t, map[string]string{"flow.star": `ask = step("ask", llm = "Say hi")` + "\n"}, func(c *watchConfig) { c.run = true })
	w.output(`step "ask": no model configured: set SKEIN_MODEL.*\nnot run: the flow's models cannot be called\n`)
	w.stop()
	if _, err := os.Stat(filepath.Join(w.dir, ".skein", store.FileName)); err == nil {
		t.Errorf("a run was recorded")
	}
}

// In watch, a save cancels the run and its exit handler gets its grace;
// a Ctrl-C then stops the handler at once and watching goes on. After
// that, a first Ctrl-C stops watching and a second stops the handler.
func TestWatchRunSecondInterrupt(t *testing.T) {
	ints := make(chan os.Signal, 1)
	dir := t.TempDir()
	w := startWatch(t, map[string]string{"flow.star": exitFlow(dir)}, func(c *watchConfig) {
		c.run = true
		c.interrupts = ints
	})
	pid := w.readPid(filepath.Join(dir, "pid"))
	os.Remove(filepath.Join(dir, "pid"))
	saveByRename(t, w.path("flow.star"), exitFlow(dir)+"# changed\n")
	cleaner := w.readPid(filepath.Join(dir, "cleaning"))
	os.Remove(filepath.Join(dir, "cleaning"))
	w.output(`stopping the run: its exit handler has up to 30s \(Ctrl-C stops it\)`)
	ints <- os.Interrupt
	waitGroupGone(t, pid)
	waitGroupGone(t, cleaner)
	w.next(`changed: `)
	pid = w.readPid(filepath.Join(dir, "pid"))

	done := make(chan struct{})
	go func() {
		defer close(done)
		w.stop()
	}()
	// The watch context ending is the first stop here; the handler then
	// has its grace until the next Ctrl-C, which the watch takes once it
	// says it is stopping the run.
	cleaner = w.readPid(filepath.Join(dir, "cleaning"))
	w.output(`(?s)stopping the run: .*stopping the run: `)
	select {
	case <-done:
		t.Fatalf("the watch ended before its run's exit handler did")
	default:
	}
	ints <- os.Interrupt
	select {
	case <-done:
	case <-time.After(watchDeadline):
		t.Fatalf("the watch did not end after the second Ctrl-C:\n%s", w.out.String())
	}
	waitGroupGone(t, pid)
	waitGroupGone(t, cleaner)
}

// skein watch --run on a terminal asks an approval there, and records the
// decision; Ctrl-C then stops watching.
func TestWatchTerminalApproval(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "deploy.star"), approvalFlow)
	t.Setenv("USER", "pat")
	term := startTerminal(t, dir, state, "watch", "--run", "deploy.star")
	term.expect(`approve "deploy": Deploy 1.4 to prod? [y/N] `)
	term.send("n\r")
	term.expect("reason (Enter for none): ")
	term.send("not now\r")
	term.expect("rejected by pat: not now [rejected]")
	term.expect("  run:    ")
	term.send(keyCtrlC)
	if code := term.wait(); code != 0 {
		t.Errorf("exit status %d:\n%q", code, term.out.String())
	}
	r, aps := lastApprovals(t, filepath.Join(dir, ".skein", store.FileName))
	if r.Status != "failed" || len(aps) != 1 || aps[0].Approved || aps[0].By != "pat" || aps[0].Reason != "not now" {
		t.Errorf("run %s, approvals %+v", r.Status, aps)
	}
}

// An approval not answered in the REPL ends at its timeout; the question
// stops reading, so the next line typed is the session's.
func TestREPLTerminalApprovalTimeout(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	saveInPlace(t, filepath.Join(dir, "gate.star"), `
gate = step("gate", approve = "Go?", timeout = "1s")
chain(START, gate, END)
`)
	term := startTerminal(t, dir, state, "repl", "gate.star")
	term.expect(">>> ")
	term.send(":run\r")
	term.expect(`approve "gate": Go? (times out at `)
	term.expect("no decision within 1s [timeout]")
	term.expect(">>> ")
	term.send("6 * 7\r")
	term.expect("\r\n42\r\n")
	term.expect(">>> ")
	term.exit()
}

// The sources recorded for a flow typed in are read as a flow is: a file
// that has since grown past the limit, gone or become a device is left out
// rather than read into the store whole.
func TestDiskSourcesBounded(t *testing.T) {
	dir := t.TempDir()
	small, big := filepath.Join(dir, "flow.star"), filepath.Join(dir, "big.star")
	if err := os.WriteFile(small, []byte(`step("a")`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, lang.MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	g := &graphir.Graph{Files: []string{small, big, filepath.Join(dir, "gone.star"), "/dev/null"}}
	want := []store.Source{{Path: small, Text: []byte(`step("a")`)}}
	if diff := cmp.Diff(want, diskSources(g)); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
}

// logWriter records what is written to it as entries of a shared log.
type logWriter struct{ log *[]string }

func (w logWriter) Write(p []byte) (int, error) {
	*w.log = append(*w.log, "print "+string(p))
	return len(p), nil
}

// The terminal is in its usual mode before a question shows and until its
// last answer is read: an answer typed as soon as the question shows is
// read as a line (in line editing's mode its Enter would not end one, and
// the REPL's question hung; TestREPLTerminalApproval caught it on a busy
// machine).
func TestInlineAskUsualModeFirst(t *testing.T) {
	for _, tc := range []struct {
		answers []string
		want    []string
	}{
		{[]string{"y"}, []string{"usual", `print approve "gate": Go? [y/N] `, "read y", "editing"}},
		{[]string{"n", "not today"}, []string{"usual", `print approve "gate": Go? [y/N] `, "read n",
			"print reason (Enter for none): ", "read not today", "editing"}},
	} {
		var log []string
		answers := tc.answers
		a := &inlineAsker{
			out: logWriter{&log},
			read: func(context.Context) (string, error) {
				line := answers[0]
				answers = answers[1:]
				log = append(log, "read "+line)
				return line, nil
			},
			usual: func() (func(), error) {
				log = append(log, "usual")
				return func() { log = append(log, "editing") }, nil
			},
		}
		approved, _, _, ok := a.ask(context.Background(), &vm.EffectRequest{Step: "gate", Message: "Go?"}, time.Time{})
		if !ok || approved != (tc.answers[0] == "y") {
			t.Errorf("answers %q: approved %v, ok %v", tc.answers, approved, ok)
		}
		if diff := cmp.Diff(tc.want, log); diff != "" {
			t.Errorf("answers %q (-want +got):\n%s", tc.answers, diff)
		}
	}
	// A terminal whose mode cannot be set: the run parks, nothing asked.
	var log []string
	a := &inlineAsker{out: logWriter{&log}, read: func(context.Context) (string, error) { return "y", nil },
		usual: func() (func(), error) { return nil, errors.New("not a terminal") }}
	if _, _, _, ok := a.ask(context.Background(), &vm.EffectRequest{Step: "gate", Message: "Go?"}, time.Time{}); ok || len(log) != 0 {
		t.Errorf("mode not set: ok %v, log %q", ok, log)
	}
}
