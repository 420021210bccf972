package temporal

import (
	"log/slog"
	"os"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// replay replays the history in file, of the workflow with id, and fails
// t if the workflow decides differently.
func replay(t *testing.T, file, id string) {
	t.Helper()
	h := readHistory(t, file)
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(Run, workflow.RegisterOptions{Name: WorkflowName})
	err := r.ReplayWorkflowHistoryWithOptions(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readHistory reads a history recorded as JSON.
func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReplay replays histories recorded on a Temporal dev server: a change
// to the VM or the workflow that makes different decisions from the same
// history fails here, as it would fail every run in flight.
//
//   - testdata/history.json: a task, a wait and a child flow.
//   - testdata/history_approval.json: a wait, an approval decided by a
//     skein.approve signal (with a refused decision before it waited and a
//     second one after), its timeout timer cancelled, then a task.
func TestReplay(t *testing.T) {
	for _, tc := range []struct{ file, id string }{
		{"testdata/history.json", "20261201T130248.788Z-4aa29bc6"},
		{"testdata/history_approval.json", "20261201T145136.017Z-5f56c693"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			replay(t, tc.file, tc.id)
		})
	}
}

// TestReplayContinued replays the three executions of one run recorded on
// a Temporal dev server (testdata/continued: a loop of tasks, a model call
// and an fn step, continued as new every 3 effects): the first ends by
// continuing as new, the others start from a snapshot, the second makes a
// model call. A change to the snapshot, to when a run continues or to
// model calls that decides differently from these histories fails here.
func TestReplayContinued(t *testing.T) {
	for _, name := range []string{"1.json", "2.json", "3.json"} {
		t.Run(name, func(t *testing.T) {
			replay(t, "testdata/continued/"+name, "continue-replay")
		})
	}
}
