package servertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestLongLoopContinuesAsNew runs a loop of 20,000 iterations with one
// task each (about 120,000 events, past Temporal's 51,200-event limit on
// one execution) through skein run --engine temporal: the run continues
// as new on its own and succeeds, with the last iteration's output and
// every iteration counted. Under the race detector (make test-temporal)
// it runs 2,000 iterations (about 12,000 events, three executions) to
// stay within CI's time; SKEIN_TEST_LONG_LOOP sets the iterations.
func TestLongLoopContinuesAsNew(t *testing.T) {
	n := 20_000
	if raceEnabled {
		n = 2_000
	}
	if s := os.Getenv("SKEIN_TEST_LONG_LOOP"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("SKEIN_TEST_LONG_LOOP=%q: want a positive number", s)
		}
	}
	dir := t.TempDir()
	sc := temporaltest.Scenario{Files: map[string]string{"flow.star": fmt.Sprintf(`
flow(output = "l")
t = step("t", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [t], until = lambda it: it.iteration == %d, max_iterations = %d)
`, n, n)}}
	flow, err := sc.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, nil)
	p := start(t, dir, nil, skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q, "--json", "-p", "1")
	// A bound on a hang: the loop takes minutes on a loaded machine.
	if code := p.wait(t, 40*time.Minute); code != 0 {
		t.Fatalf("skein run: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	out := []byte(p.stdout.String())
	res, err := temporaltest.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "succeeded" || res.Output.(map[string]any)["stdout"] != fmt.Sprintf("%d\n", n) || res.Steps["t"].Visits != n {
		t.Fatalf("status %s, output %v, t visits %d", res.Status, res.Output, res.Steps["t"].Visits)
	}

	// The last execution was continued into from the ones before.
	var id struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(out, &id); err != nil {
		t.Fatal(err)
	}
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, id.RunID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	start := ev.GetWorkflowExecutionStartedEventAttributes()
	if start == nil {
		t.Fatalf("the last execution's first event is %s", ev.GetEventType())
	}
	var in temporal.RunInput
	if err := converter.GetDefaultDataConverter().FromPayloads(start.GetInput(), &in); err != nil {
		t.Fatal(err)
	}
	if want := n / temporal.DefaultContinueEvery; want > 0 && (in.Executions < want-1 || start.GetContinuedExecutionRunId() == "") {
		t.Errorf("the last execution is number %d (continued from %q), want about %d", in.Executions+1, start.GetContinuedExecutionRunId(), want)
	}
}

// TestShowContinuedRun: skein show of a run that continued as new (every
// 2 effects here, through the SDK, as skein run cannot ask that) gives
// the start of its first execution, not of its last.
func TestShowContinuedRun(t *testing.T) {
	dir := t.TempDir()
	src := `
flow(output = "l")
t = step("t", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [t], until = lambda it: it.iteration == 6, max_iterations = 6)
`
	flow := writeFlow(t, dir, src)
	q := queue(t)
	worker(t, q, nil)
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "show-continued-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: q}, temporal.WorkflowName,
		temporal.RunInput{Flow: flow, Root: dir, Sources: map[string]string{flow: src}, Parallel: 1, ContinueEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	var out temporal.RunOutput
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil || out.Status != "succeeded" {
		t.Fatalf("the run: %v, status %q\n%s", err, out.Status, out.Result)
	}
	first, err := c.DescribeWorkflowExecution(ctx, id, run.GetRunID())
	if err != nil {
		t.Fatal(err)
	}
	last, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if last.GetWorkflowExecutionInfo().GetExecution().GetRunId() == run.GetRunID() {
		t.Fatal("the run did not continue as new")
	}
	started := first.GetWorkflowExecutionInfo().GetStartTime().AsTime().Local().Format("2006-01-02 15:04:05.000")
	stdout, stderr, code := skein(t, dir, "show", id, "--engine", "temporal", "--address", address)
	if want := "\nstarted " + started + ", took "; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("skein show: exit %d\n%s\nstderr:\n%s\nwant it to say %q (the first execution's start)", code, stdout, stderr, want)
	}
}
