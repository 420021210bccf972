package servertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestWorkerKilledMidTask kills (-9) the worker running a task: the task
// runs again on the other worker and the run succeeds, without the step
// having retries (a lost worker is not the step's failure). The run's
// --heartbeat-timeout 2s makes Temporal declare the worker lost within
// seconds.
func TestWorkerKilledMidTask(t *testing.T) {
	dir := t.TempDir()
	sc := temporaltest.Scenario{Files: map[string]string{"flow.star": `
flow(output = "after")
slow = step("slow", run = ["sh", "-c", 'echo "$WORKER $$" >> attempts; if [ "$(wc -l < attempts)" -eq 1 ]; then exec sleep 3600; fi; echo "ran on $WORKER"'])
after = step("after", fn = lambda r: r.slow.stdout.strip())
`}}
	flow, err := sc.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	workers := map[string]*proc{
		"w1": worker(t, q, []string{"WORKER=w1"}),
		"w2": worker(t, q, []string{"WORKER=w2"}),
	}
	run := start(t, dir, nil, skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q,
		"--json", "--heartbeat-timeout", "2s")

	attempts := filepath.Join(dir, "attempts")
	lines := func() []string {
		b, _ := os.ReadFile(attempts)
		return strings.Fields(strings.ReplaceAll(string(b), "\n", " \n "))
	}
	waitFor(t, time.Minute, "the task to start", func() bool { return len(lines()) >= 2 })
	first, pid := lines()[0], atoiPid(t, lines()[1])
	w, ok := workers[first]
	if !ok {
		t.Fatalf("the task ran on %q, not a worker of the test", first)
	}
	// The worker dies (kill -9); its task dies with it (the worker's
	// keeper kills what its tasks left when the worker is gone).
	w.cmd.Process.Kill()
	<-w.done
	t.Cleanup(func() { killGroup(pid) })
	waitFor(t, 30*time.Second, "the killed worker's task to be killed", func() bool { return !alive(pid) })

	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("skein run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, run.stdout.String(), run.stderr.String())
	}
	res, err := temporaltest.Decode([]byte(run.stdout.String()))
	if err != nil {
		t.Fatal(err)
	}
	second := "w1"
	if first == "w1" {
		second = "w2"
	}
	if res.Status != "succeeded" || res.Output != "ran on "+second {
		t.Errorf("status %s, output %v; want succeeded, %q\n%s", res.Status, res.Output, "ran on "+second, run.stdout.String())
	}
	if got := res.Steps["slow"]; got.Status != "succeeded" || got.Visits != 1 {
		t.Errorf("slow: status %s, visits %d; want succeeded, 1", got.Status, got.Visits)
	}
	b, _ := os.ReadFile(attempts)
	if l := strings.Split(strings.TrimSpace(string(b)), "\n"); len(l) != 2 || !strings.HasPrefix(l[1], second+" ") {
		t.Errorf("attempts:\n%s\nwant the task started twice, first on %s, then on %s", b, first, second)
	}
}
