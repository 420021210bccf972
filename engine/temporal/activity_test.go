package temporal

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm/proc"
)

// The task activity's input recorded in a history (testdata/history.json,
// from before tasks had a job type) decodes into a TaskInput, and a
// TaskInput encodes under the same field names: runs in flight and
// workers of either side keep understanding each other.
func TestTaskInputAsRecorded(t *testing.T) {
	h := readHistory(t, "testdata/history.json")
	var recorded *commonpb.Payload
	for _, e := range h.Events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.ActivityType.Name == TaskActivity {
			recorded = a.Input.Payloads[0]
			break
		}
	}
	if recorded == nil {
		t.Fatal("no task activity in the history")
	}
	var in TaskInput
	if err := converter.GetDefaultDataConverter().FromPayload(recorded, &in); err != nil {
		t.Fatal(err)
	}
	want := TaskInput{Job: proc.Job{RunID: "20261201T130248.788Z-4aa29bc6", Step: "a", Visit: 1, Attempt: 1,
		Argv: []string{"sh", "-c", "echo $(( 2 * 21 ))"}, Dir: "/tmp/temporal-e2e",
		KillGrace: 2 * time.Second, MaxOutput: 1 << 20}, Kind: graphir.KindTask, Root: "/tmp/temporal-e2e"}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("recorded input (-want +got):\n%s", diff)
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(in)
	if err != nil {
		t.Fatal(err)
	}
	if got, was := jsonKeys(t, p.Data), jsonKeys(t, recorded.Data); !slices.Equal(got, was) {
		t.Errorf("TaskInput's fields are %v, the history's %v", got, was)
	}
}

// jsonKeys is the sorted field names of the JSON object b.
func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(m))
}
