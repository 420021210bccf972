package temporal

import (
	"log/slog"
	"os"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplay replays a history recorded on a Temporal dev server (a task, a
// wait and a child flow; testdata/history.json, workflow id below): a
// change to the VM or the workflow that makes different decisions from the
// same history fails here, as it would fail every run in flight.
func TestReplay(t *testing.T) {
	f, err := os.Open("testdata/history.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(Run, workflow.RegisterOptions{Name: WorkflowName})
	err = r.ReplayWorkflowHistoryWithOptions(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: "20261201T130248.788Z-4aa29bc6"},
	})
	if err != nil {
		t.Fatal(err)
	}
}
