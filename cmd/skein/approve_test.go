package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/vm/store"
)

// On a terminal an approval is asked inline; the answer is recorded as the
// decision, by $USER.
func TestApprovalPrompt(t *testing.T) {
	dir := t.TempDir()
	flow := `
flow(inputs = {"v": "1.4"})
build = step("build", shell = "echo built")
deploy = step("deploy", approve = "Deploy {{ inputs.v }} to prod?")
ship = step("ship", env = {"BY": "{{ deploy.by }}"}, run = ["sh", "-c", "echo shipped by $BY"])
chain(START, build, deploy, ship, END)
`
	if err := os.WriteFile(filepath.Join(dir, "flow.star"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	for _, c := range []struct {
		answer string
		ok     bool
	}{{"y", true}, {"n", false}} {
		t.Setenv("USER", "pat")
		term := startTerminal(t, dir, t.TempDir(), "run", "--store", db, "flow.star")
		term.expect(`approve "deploy": Deploy 1.4 to prod? [y/N]`)
		term.send(c.answer + "\r")
		if c.ok {
			term.expect("succeeded")
		} else {
			term.expect("rejected by pat")
		}
		// The answer shows where it is typed, after the question: the
		// live progress is not drawn under the question meanwhile.
		if out := term.out.String(); !strings.Contains(out, "[y/N] "+c.answer+"\r\n") {
			t.Errorf("answer %q was not shown after the question:\n%q", c.answer, out)
		}
		done := make(chan error, 1)
		go func() { done <- term.cmd.Wait() }()
		select {
		case err := <-done:
			if (err == nil) != c.ok {
				t.Errorf("answer %q: exit %v; output:\n%s", c.answer, err, term.out.String())
			}
		case <-time.After(ptyDeadline):
			t.Fatalf("skein run did not exit; output:\n%q", term.out.String())
		}
		st, err := store.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.Get("last")
		if err != nil {
			t.Fatal(err)
		}
		aps, err := st.Approvals(r.ID)
		st.Close()
		if err != nil || len(aps) != 1 || aps[0].Decided.IsZero() || aps[0].Approved != c.ok || aps[0].By != "pat" {
			t.Errorf("answer %q: approvals %+v, %v", c.answer, aps, err)
		}
		if c.ok && !strings.Contains(term.out.String(), "shipped by pat") {
			t.Errorf("output:\n%s", term.out.String())
		}
	}
}

// An unanswered inline prompt ends at the approval's timeout: the step
// fails with code timeout.
func TestApprovalPromptTimeout(t *testing.T) {
	dir := t.TempDir()
	flow := `
gate = step("gate", approve = "Go?", timeout = "1s")
chain(START, gate, END)
`
	if err := os.WriteFile(filepath.Join(dir, "flow.star"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	term := startTerminal(t, dir, t.TempDir(), "run", "--store", filepath.Join(dir, "runs.db"), "flow.star")
	term.expect(`approve "gate": Go? [y/N]`)
	term.expect("no decision within 1s")
	term.expect("[timeout]")
}

// An approval recorded before the store kept timeouts (its column NULL,
// from a store made before that migration) is not refused by skein
// approve, which cannot know its timeout without loading the flow; the
// resumed run, which has the flow, times the late decision out.
func TestApproveTimeoutNotRecorded(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "gate.star")
	if err := os.WriteFile(flow, []byte(`step("gate", approve = "Go?", timeout = "1m")`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	skein := func(args ...string) (int, string) {
		var o, e strings.Builder
		code := Main(context.Background(), append(args[:1:1], append([]string{"--store", db}, args[1:]...)...), stdio{strings.NewReader(""), &o, &e})
		return code, o.String() + e.String()
	}
	if code, out := skein("run", "--no-prompt", flow); code != exitWaiting {
		t.Fatalf("run: exit %d, want %d:\n%s", code, exitWaiting, out)
	}
	// What an older skein left: no timeout, asked two minutes ago.
	sq, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sq.Exec(`UPDATE approvals SET timeout = NULL, requested = requested - ?`, int64(2*time.Minute))
	sq.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code, out := skein("approve", "last"); code != exitOK {
		t.Fatalf("approve: exit %d, want %d:\n%s", code, exitOK, out)
	}
	code, out := skein("resume", "--json", "last")
	if code != exitFail || !strings.Contains(out, `"code": "timeout"`) {
		t.Errorf("resume: exit %d, want %d and code timeout:\n%s", code, exitFail, out)
	}
}
