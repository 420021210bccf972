package servertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestWorkerKilledMidTask kills (-9) the worker running a task: the task
// runs again on the other worker and the run succeeds, without the step
// having retries (a lost worker is not the step's failure). The run's
// --heartbeat-timeout 6s makes Temporal declare the worker lost within
// seconds; it is three heartbeats (tasks heartbeat every second), not the
// smallest allowed 2s, so that a live worker a busy machine stalls for a
// moment is not declared lost too (the task would then run a third time).
func TestWorkerKilledMidTask(t *testing.T) {
	taskMovesWorker(t, []string{"--heartbeat-timeout", "6s"}, func(w *proc) {
		// The worker dies (kill -9); its task dies with it (the worker's
		// keeper kills what its tasks left when the worker is gone).
		w.cmd.Process.Kill()
		<-w.done
	})
}

// TestWorkerStoppedMidTask stops (SIGTERM) the worker running a task, as
// an operator does: the worker ends its task, fails the activity so that
// Temporal runs it again on the other worker, and exits 0; the run
// succeeds without the step having retries. (Before, SIGTERM killed the
// worker outright: the task was found lost only when its heartbeats
// timed out, and the worker's spans were never exported.)
func TestWorkerStoppedMidTask(t *testing.T) {
	taskMovesWorker(t, nil, func(w *proc) {
		w.cmd.Process.Signal(syscall.SIGTERM)
		if code := w.wait(t, time.Minute); code != 0 || !strings.Contains(w.stderr.String(), "skein worker: stopped") {
			t.Fatalf("the stopped worker exited %d (%v), want 0 having said it stopped\nstderr:\n%s", code, w.err, w.stderr.String())
		}
	})
}

// taskMovesWorker runs a task on one of two workers, has lose take that
// worker away mid-task, and checks the task runs again on the other and
// the run succeeds with one visit of the step. runArgs are skein run's
// extra flags.
func taskMovesWorker(t *testing.T, runArgs []string, lose func(w *proc)) {
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
	run := start(t, dir, nil, skeinBin, append([]string{"run", flow, "--engine", "temporal", "--address", address, "--task-queue", q,
		"--json"}, runArgs...)...)

	attempts := filepath.Join(dir, "attempts")
	lines := func() []string {
		b, _ := os.ReadFile(attempts)
		return strings.Fields(strings.ReplaceAll(string(b), "\n", " \n "))
	}
	waitFor(t, time.Minute, "the task to start", func() bool { return len(lines()) >= 2 })
	first, pid := lines()[0], atoiPid(t, lines()[1])
	t.Cleanup(func() { killGroup(pid) })
	w, ok := workers[first]
	if !ok {
		t.Fatalf("the task ran on %q, not a worker of the test", first)
	}
	lose(w)
	waitFor(t, 30*time.Second, "the lost worker's task to end", func() bool { return !alive(pid) })

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

// TestWorkerKilledMidWorkflow kills (-9) the worker that ran the run's
// workflow code while the run waits on a durable timer: the other worker
// takes the workflow over, replaying its history, and the run finishes
// with the outputs made before the kill.
func TestWorkerKilledMidWorkflow(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, `
flow(output = "after")
a = step("a", run = ["echo", "before"])
pause = step("pause", wait = "5s")
after = step("after", fn = lambda r: r.a.stdout.strip() + " and after")
`)
	q := queue(t)
	w1, w2 := worker(t, q, nil), worker(t, q, nil)
	workers := map[int]*proc{w1.cmd.Process.Pid: w1, w2.cmd.Process.Pid: w2}
	id := detach(t, dir, flow, q)
	c := newClient(t)

	// Once the timer runs, the worker that started it is the one whose
	// pid leads the identity of the last workflow task.
	var decider int
	waitFor(t, time.Minute, "the run's timer to start", func() bool {
		timer, last := false, 0
		it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			switch e.GetEventType() {
			case enums.EVENT_TYPE_TIMER_STARTED:
				timer = true
			case enums.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				last = identityPid(e.GetWorkflowTaskStartedEventAttributes().GetIdentity())
			}
		}
		decider = last
		return timer
	})
	w, ok := workers[decider]
	if !ok {
		t.Fatalf("the workflow task ran on pid %d, not a worker of the test (%v)", decider, workers)
	}
	w.cmd.Process.Kill()
	<-w.done

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res temporal.RunOutput
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatalf("the run's result: %v", err)
	}
	r, err := temporaltest.Decode(res.Result)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "succeeded" || r.Output != "before and after" {
		t.Errorf("status %s, output %v; want succeeded, %q\n%s", r.Status, r.Output, "before and after", res.Result)
	}
	// The workflow's last task ran on the other worker.
	last := 0
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_TASK_STARTED {
			last = identityPid(e.GetWorkflowTaskStartedEventAttributes().GetIdentity())
		}
	}
	if last == decider || workers[last] == nil {
		t.Errorf("the last workflow task ran on pid %d; want the other worker's (the killed one was %d)", last, decider)
	}
}

// identityPid is the pid a worker's default identity (PID@HOST@) starts
// with; 0 when it does not.
func identityPid(identity string) int {
	pid, _ := strconv.Atoi(strings.SplitN(identity, "@", 2)[0])
	return pid
}

// TestWorkerKilledTwiceAttempts kills (-9) the worker running a task,
// then the worker running it again: the third run, on the third worker,
// succeeds, and the task saw SKEIN_ATTEMPT 1, 2 and 3 (Temporal's
// re-runs after a lost worker count, as a re-run after a crash does
// locally).
func TestWorkerKilledTwiceAttempts(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, `
flow(output = "slow")
slow = step("slow", run = ["sh", "-c", 'echo "$SKEIN_ATTEMPT $WORKER $$" >> attempts; if [ "$(wc -l < attempts)" -lt 3 ]; then exec sleep 3600; fi; echo "attempt $SKEIN_ATTEMPT"'])
`)
	q := queue(t)
	workers := map[string]*proc{}
	for _, name := range []string{"w1", "w2", "w3"} {
		workers[name] = worker(t, q, []string{"WORKER=" + name})
	}
	run := start(t, dir, nil, skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q,
		"--json", "--heartbeat-timeout", "6s")
	attempts := filepath.Join(dir, "attempts")
	lines := func() [][]string {
		b, _ := os.ReadFile(attempts)
		var l [][]string
		for _, s := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(s); len(f) == 3 {
				l = append(l, f)
			}
		}
		return l
	}
	for n := 1; n <= 2; n++ {
		waitFor(t, 2*time.Minute, fmt.Sprintf("run %d of the task", n), func() bool { return len(lines()) >= n })
		l := lines()[n-1]
		w, ok := workers[l[1]]
		if !ok {
			t.Fatalf("the task ran on %q, not a live worker of the test", l[1])
		}
		delete(workers, l[1])
		pid := atoiPid(t, l[2])
		w.cmd.Process.Kill()
		<-w.done
		t.Cleanup(func() { killGroup(pid) })
	}
	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("skein run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, run.stdout.String(), run.stderr.String())
	}
	var seen []string
	for _, l := range lines() {
		seen = append(seen, l[0])
	}
	if strings.Join(seen, " ") != "1 2 3" {
		t.Errorf("the task saw SKEIN_ATTEMPT %v; want 1 2 3", seen)
	}
	res, err := temporaltest.Decode([]byte(run.stdout.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Steps["slow"]; res.Status != "succeeded" || got.Visits != 1 || !strings.Contains(fmt.Sprint(got.Output), "stdout:attempt 3") {
		t.Errorf("status %s, slow %+v; want succeeded, one visit, attempt 3", res.Status, got)
	}
}
