package servertest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// cancelFlow runs a task that writes its pid and sleeps an hour; its exit
// handler records the run's status.
const cancelFlow = `
flow(on_exit = "cleanup")
slow = step("slow", run = ["sh", "-c", 'echo started; echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 3600'])
cleanup = step("cleanup", fn = lambda r: r.run.status)
`

// cancelled checks a cancelled run's result: the run and its task
// cancelled with the output it wrote, the exit handler run, and the
// task's process gone.
func cancelled(t *testing.T, result []byte, pid int) {
	t.Helper()
	res, err := temporaltest.Decode(result)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "cancelled" || res.Steps["slow"].Status != "cancelled" {
		t.Errorf("status %s, slow %s; want cancelled, cancelled\n%s", res.Status, res.Steps["slow"].Status, result)
	}
	// What the task wrote before it was killed stays in its record, as
	// locally.
	if out, _ := res.Steps["slow"].Output.(map[string]any); out["stdout"] != "started\n" {
		t.Errorf("slow's output %v, want the stdout it wrote (started)\n%s", res.Steps["slow"].Output, result)
	}
	var handler struct {
		OnExit struct {
			Output string `json:"output"`
		} `json:"on_exit"`
	}
	json.Unmarshal(result, &handler)
	if handler.OnExit.Output != "cancelled" {
		t.Errorf("exit handler output %q, want cancelled\n%s", handler.OnExit.Output, result)
	}
	// The task's activity acknowledges its cancellation once the process
	// is killed and reaped, before the run's result exists.
	if alive(pid) {
		t.Errorf("the task's process %d outlived the cancelled run", pid)
	}
}

// TestCancelFromCLI: Ctrl-C (SIGINT) on `skein run --engine temporal`
// cancels the workflow, which kills the task's process on the worker; the
// exit handler runs and the cancelled result is printed (exit 1).
func TestCancelFromCLI(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, cancelFlow)
	q := queue(t)
	w := worker(t, q, nil)
	run := start(t, dir, nil, skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q, "--json")
	pidFile := filepath.Join(dir, "pid")
	waitFor(t, time.Minute, "the task to start", func() bool { _, err := os.Stat(pidFile); return err == nil })
	pid := readPid(t, pidFile)
	t.Cleanup(func() { killGroup(pid) })

	run.cmd.Process.Signal(os.Interrupt)
	if code := run.wait(t, 2*time.Minute); code != 1 {
		t.Errorf("skein run: exit %d after Ctrl-C, want 1\nstderr:\n%s", code, run.stderr.String())
	}
	cancelled(t, []byte(run.stdout.String()), pid)

	// The worker logs the SDK's warnings (a workflow task that fails, the
	// server out of reach); a cancelled task is not one. Stopped (SIGINT),
	// it says so.
	w.stop(t)
	want := "skein worker: serving task queue " + q + " at " + address + " (namespace default)\nskein worker: stopped\n"
	if got := w.stderr.String(); got != want {
		t.Errorf("the worker's stderr:\n%s\nwant:\n%s", got, want)
	}
}

// TestCancelDetached: a run started with --detach and cancelled with the
// Temporal CLI (temporal workflow cancel) ends the same way.
func TestCancelDetached(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, cancelFlow)
	q := queue(t)
	worker(t, q, nil)
	id := detach(t, dir, flow, q)
	pidFile := filepath.Join(dir, "pid")
	waitFor(t, time.Minute, "the task to start", func() bool { _, err := os.Stat(pidFile); return err == nil })
	pid := readPid(t, pidFile)
	t.Cleanup(func() { killGroup(pid) })

	if b, err := exec.Command(temporalBin, "workflow", "cancel", "--address", address, "--workflow-id", id).CombinedOutput(); err != nil {
		t.Fatalf("temporal workflow cancel: %v\n%s", err, b)
	}
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res temporal.RunOutput
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatalf("the run's result: %v", err)
	}
	cancelled(t, res.Result, pid)
	// skein show lists the exit handler's record with the steps.
	out, stderr, code := skein(t, dir, "show", id, "--engine", "temporal", "--address", address)
	if !regexp.MustCompile(`(?m)^  on_exit\s+succeeded\s+visits 1\s+\S+\s+"cancelled"$`).MatchString(out) {
		t.Errorf("skein show: exit %d, no exit handler row in:\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// TestCancelCommand: skein cancel --engine temporal, from another
// process, cancels the run's workflow: the task is killed on the worker,
// the exit handler runs, the run ends cancelled; a second cancel is
// refused.
func TestCancelCommand(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, cancelFlow)
	q := queue(t)
	worker(t, q, nil)
	run := start(t, dir, nil, skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q, "--json")
	pidFile := filepath.Join(dir, "pid")
	waitFor(t, time.Minute, "the task to start", func() bool { _, err := os.Stat(pidFile); return err == nil })
	pid := readPid(t, pidFile)
	t.Cleanup(func() { killGroup(pid) })

	_, stderr, code := skein(t, dir, "cancel", "last", "--engine", "temporal", "--address", address)
	if code != 0 || !strings.Contains(stderr, "asked Temporal to cancel run ") {
		t.Fatalf("skein cancel: exit %d\n%s", code, stderr)
	}
	if code := run.wait(t, 2*time.Minute); code != 1 {
		t.Errorf("skein run: exit %d after skein cancel, want 1\nstderr:\n%s", code, run.stderr.String())
	}
	cancelled(t, []byte(run.stdout.String()), pid)
	_, stderr, code = skein(t, dir, "cancel", "last", "--engine", "temporal", "--address", address)
	if code != 1 || !strings.Contains(stderr, "there is nothing to cancel") {
		t.Errorf("a second skein cancel: exit %d\n%s", code, stderr)
	}
}

// TestCancelBeforeStart: a run cancelled while one of its tasks waits for
// a free slot on the only worker (--parallel 1) shows that task, which
// never started, cancelled with exit_code -1, as locally (a task stopped
// before it told how it ended has no exit status).
func TestCancelBeforeStart(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, `
a = step("a", run = ["sh", "-c", 'echo $$ > a; sleep 600'])
b = step("b", run = ["sh", "-c", 'echo $$ > b; sleep 600'])
edge(START, a)
edge(START, b)
edge(a, END)
edge(b, END)
`)
	q := queue(t)
	worker(t, q, nil, "--parallel", "1")
	run := start(t, dir, nil, skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q, "--json")
	started := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	waitFor(t, time.Minute, "a task to start", func() bool { return started("a") || started("b") })
	first, second := "a", "b"
	if !started("a") {
		first, second = "b", "a"
	}
	pid := readPid(t, filepath.Join(dir, first))
	t.Cleanup(func() { killGroup(pid) })
	run.cmd.Process.Signal(os.Interrupt)
	if code := run.wait(t, 2*time.Minute); code != 1 {
		t.Fatalf("skein run: exit %d after Ctrl-C, want 1\nstderr:\n%s", code, run.stderr.String())
	}
	if started(second) {
		t.Skipf("both tasks started (the worker ran %s too before the cancel)", second)
	}
	res, err := temporaltest.Decode([]byte(run.stdout.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{first, second} {
		s := res.Steps[name]
		out, _ := s.Output.(map[string]any)
		if s.Status != "cancelled" || out["exit_code"] != -1.0 {
			t.Errorf("%s: status %s, output %v; want cancelled, exit_code -1", name, s.Status, s.Output)
		}
	}
}
