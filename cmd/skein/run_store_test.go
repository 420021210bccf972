package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/skeinlang/skein/vm/store"
)

// TestStoreScripts runs the scripts in testdata/store: recording runs, the
// store's location, runs/show/logs/gc, resume and approvals.
func TestStoreScripts(t *testing.T) {
	p := scriptParams("testdata/store")
	p.Cmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"waitfile": cmdWaitFile,
		"waitgrep": cmdWaitGrep,
		"killpg":   cmdKillGroup,
		"pgone":    cmdProcessGroupGone,
	}
	testscript.Run(t, p)
}

// killpg FILE: kill the process group whose id FILE holds (what a task left
// running when skein was killed under it).
func cmdKillGroup(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: killpg FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// A store whose directory cannot be written stops skein run with a clear
// error before anything runs, whether the store is new or already there.
// The directory is made read-only with chmod, or (for root, who writes
// anyway) immutable with chattr +i; the test is skipped where neither
// holds.
func TestStoreReadOnlyDir(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "touch.star")
	touched := filepath.Join(dir, "touched")
	if err := os.WriteFile(flow, []byte(fmt.Sprintf("step(%q, shell = %q)\n", "t", "touch "+touched)), 0o644); err != nil {
		t.Fatal(err)
	}
	skein := filepath.Join(dir, ".skein")
	if err := os.Mkdir(skein, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() (int, string) {
		var o, e strings.Builder
		code := Main(context.Background(), []string{"run", flow}, stdio{strings.NewReader(""), &o, &e})
		return code, e.String()
	}
	for _, existing := range []bool{false, true} {
		if existing {
			if code, errs := run(); code != exitOK {
				t.Fatalf("making the store: exit %d: %s", code, errs)
			}
			if err := os.Remove(touched); err != nil {
				t.Fatalf("the first run did not run its task: %v", err)
			}
		}
		readOnly(t, skein)
		code, errs := run()
		writable(skein)
		want := "skein run: run store " + filepath.Join(skein, "runs.db") + ": cannot open or create the database file (is its directory writable?)\n" +
			"skein: " + flow + " not run (--no-store runs it without recording)\n"
		if code != exitFail || errs != want {
			t.Errorf("existing store %v: exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", existing, code, errs, exitFail, want)
		}
		if _, err := os.Stat(touched); err == nil {
			t.Errorf("existing store %v: the task ran", existing)
		}
	}
}

// readOnly makes dir unwritable for this process, or skips the test.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		os.Chmod(dir, 0o555)
	} else if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("root writes anywhere, and chattr +i fails: %v %s", err, out)
	}
	t.Cleanup(func() { writable(dir) })
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		writable(dir)
		t.Skip("cannot make a directory read-only here")
	}
}

func writable(dir string) {
	if os.Geteuid() == 0 {
		exec.Command("chattr", "-i", dir).Run()
	}
	os.Chmod(dir, 0o755)
}

// runMain runs skein with args and no input, returning its exit code,
// output and errors.
func runMain(args ...string) (int, string, string) {
	var o, e strings.Builder
	code := Main(context.Background(), args, stdio{strings.NewReader(""), &o, &e})
	return code, o.String(), e.String()
}

// A store in a directory that cannot be written, its write-ahead log
// gone (checkpointed when its last run ended), is still listed and shown;
// a run on it is refused as before (issue 26: skein runs could not open
// it).
func TestStoreReadOnlyListed(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "f.star")
	if err := os.WriteFile(flow, []byte("step(\"a\", run = [\"true\"])\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runMain("run", flow); code != exitOK {
		t.Fatalf("making the store: exit %d: %s", code, errs)
	}
	store := filepath.Join(dir, ".skein", "runs.db")
	if _, err := os.Stat(store + "-wal"); err == nil {
		t.Skip("the write-ahead log is still there")
	}
	readOnly(t, filepath.Join(dir, ".skein"))
	for _, args := range [][]string{{"runs", "--store", store}, {"show", "last", "--store", store}} {
		if code, out, errs := runMain(args...); code != exitOK || !strings.Contains(out, "succeeded") {
			t.Errorf("skein %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
}

// A run records who started it: --by, else the user the environment
// names; skein show says so (and skein serve's pages show it).
func TestRunBy(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "f.star")
	if err := os.WriteFile(flow, []byte("step(\"a\", run = [\"true\"])\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SKEIN_USER", "bob")
	store := filepath.Join(dir, ".skein", "runs.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--by", "alice", flow}, " by alice, took "},
		{[]string{"run", flow}, " by bob, took "},
		{[]string{"resume", "last", "--from", "a", "--by", "carol", "--store", store}, " by carol, took "},
		{[]string{"resume", "last", "--from", "a", "--store", store}, " by bob, took "},
	} {
		if code, _, errs := runMain(c.args...); code != exitOK {
			t.Fatalf("skein %v: exit %d: %s", c.args, code, errs)
		}
		code, out, errs := runMain("show", "last", "--store", store)
		if code != exitOK || !strings.Contains(out, c.want) {
			t.Errorf("skein show after skein %v: exit %d, want %q in\n%s%s", c.args, code, c.want, out, errs)
		}
	}
}

// skein show gives each task's attempt the command it ran, its templates
// filled in (a shell step's script), quoted where a shell would need it.
func TestShowCommandRan(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "f.star")
	src := `flow(inputs = {"who": input("Ann Lee")})
a = step("a", run = ["echo", "hi {{ inputs.who }}", "--to=x"])
b = step("b", shell = "echo two")
chain(START, a, b, END)
`
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runMain("run", flow); code != exitOK {
		t.Fatalf("skein run: exit %d: %s", code, errs)
	}
	code, out, errs := runMain("show", "last", "--store", filepath.Join(dir, ".skein", "runs.db"))
	if code != exitOK || !strings.Contains(out, `$ echo "hi Ann Lee" --to=x`) || !strings.Contains(out, "$ echo two") {
		t.Errorf("skein show: exit %d, want the commands a and b ran in\n%s%s", code, out, errs)
	}
}

// skein show of a running run someone asked to cancel says so, in text
// and in --json, until its process acts on the request.
func TestShowCancelRequested(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".skein", "runs.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Begun by this process, which is alive: the run is running.
	if _, err := st.Begin(&store.NewRun{ID: "20260101T000000.000Z-0000000a", Flow: "f", File: "f.star", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMain("show", "last", "--store", path)
	if code != exitOK || strings.Contains(out, "cancel") {
		t.Fatalf("before any request: exit %d\n%s%s", code, out, errs)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := st.RequestCancel("20260101T000000.000Z-0000000a", store.CancelRequest{By: "ops", Reason: "release pulled", At: at}); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runMain("show", "last", "--store", path)
	want := "cancel requested by ops at " + at.Local().Format("2006-01-02 15:04:05") + ": release pulled (not acted on yet)\n"
	if code != exitOK || !strings.Contains(out, "\nstatus running\n") || !strings.Contains(out, want) {
		t.Errorf("show: exit %d, want %q in\n%s%s", code, want, out, errs)
	}
	code, out, errs = runMain("show", "--json", "last", "--store", path)
	var got struct {
		Status string
		Cancel *struct{ By, Reason, At string } `json:"cancel_requested"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("show --json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if got.Status != "running" || got.Cancel == nil || got.Cancel.By != "ops" || got.Cancel.Reason != "release pulled" || got.Cancel.At != "2026-01-02T03:04:05Z" {
		t.Errorf("show --json: %s", out)
	}
}
