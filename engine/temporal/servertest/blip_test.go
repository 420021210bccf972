package servertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// The server out of reach for a moment while a task runs is no outcome
// of the step: the task goes on (or runs again), the step succeeds, and
// it is never cancelled. Each test has a dev server of its own, which it
// pauses or restarts.

// TestServerPausedMidTask stops the server's process (SIGSTOP) for 2s
// while a task runs, then lets it go on (SIGCONT).
func TestServerPausedMidTask(t *testing.T) {
	blipMidTask(t, func(s *devServer) {
		pid := s.cmd.Process.Pid
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	})
}

// TestServerRestartedMidTask stops the server (SIGTERM, its state in a
// file) while a task runs and starts it again on the same port.
func TestServerRestartedMidTask(t *testing.T) {
	blipMidTask(t, func(s *devServer) {
		s.stop()
		port := s.address[strings.LastIndexByte(s.address, ':')+1:]
		again, err := launchServer(filepath.Join(t.TempDir(), "server.log"), atoiPort(t, port), s.cmd.Args[len(s.cmd.Args)-2:]...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { again.stop() })
	})
}

// blipMidTask runs a task on a server of the test's own, does blip to the
// server while the task runs, then lets the task end: the run succeeds,
// its step ran to its end.
func blipMidTask(t *testing.T, blip func(*devServer)) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := launchServer(filepath.Join(t.TempDir(), "server.log"), port, "--db-filename", filepath.Join(t.TempDir(), "temporal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.stop() })

	dir := t.TempDir()
	flow := writeFlow(t, dir, `
slow = step("slow", run = ["sh", "-c", 'echo "$SKEIN_ATTEMPT $$" >> attempts; while [ ! -e release ]; do sleep 0.1; done; echo released'])
`)
	q := queue(t)
	w := workerAt(t, s.address, q, nil)
	out, stderr, code := skein(t, dir, "run", flow, "--engine", "temporal", "--address", s.address, "--task-queue", q, "--detach")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("skein run --detach: exit %d, stdout %q\nstderr:\n%s", code, out, stderr)
	}
	attempts := filepath.Join(dir, "attempts")
	waitFor(t, time.Minute, "the task to start", func() bool {
		b, _ := os.ReadFile(attempts)
		return len(b) > 0
	})
	blip(s)
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// The client retries while the server comes back.
	var res temporal.RunOutput
	waitFor(t, 3*time.Minute, "the run's result", func() bool {
		c, err := dialAt(s.address, 5*time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return c.GetWorkflow(ctx, id, "").Get(ctx, &res) == nil
	})
	r, err := temporaltest.Decode(res.Result)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(attempts)
	if slow := r.Steps["slow"]; r.Status != "succeeded" || slow.Status != "succeeded" || slow.Visits != 1 || !strings.Contains(fmt.Sprint(slow.Output), "stdout:released") {
		t.Errorf("status %s, slow %+v; want succeeded, succeeded in 1 visit, released\n%s\ntask starts (SKEIN_ATTEMPT pid):\n%s\nworker:\n%s",
			r.Status, slow, res.Result, b, w.stderr.String())
	}
	t.Logf("task starts (SKEIN_ATTEMPT pid):\n%sworker:\n%s", b, w.stderr.String())
}

// atoiPort reads a port number.
func atoiPort(t testing.TB, s string) int {
	t.Helper()
	return atoiPid(t, s)
}
