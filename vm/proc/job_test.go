package proc_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm/proc"
)

// A job and an outcome survive JSON (an engine's payloads) unchanged,
// under the field names the histories of runs in flight hold. (JSON holds
// text: bytes that are not UTF-8 arrive as U+FFFD, see Job.)
func TestJobJSON(t *testing.T) {
	in := "in put"
	job := proc.Job{RunID: "20261201T130248.788Z-4aa29bc6", Step: "a", Visit: 2, Attempt: 3,
		Argv: []string{"sh", "-c", "cat; echo $B"}, Env: []string{"B=bé"}, Dir: "/tmp/flow", Stdin: &in,
		Timeout: 90 * time.Second, KillGrace: 2 * time.Second, MaxOutput: 1 << 20}
	roundTrip(t, job, []string{"Argv", "Attempt", "Dir", "Env", "KillGrace", "MaxOutput", "RunID", "Stdin", "Step", "Timeout", "Visit"})
	out := proc.Outcome{OK: false, Cancelled: true, Error: "cancelled", Code: "step_failed", ExitCode: -1,
		Stdout: "begun\n", Stderr: "x é", Truncated: true}
	roundTrip(t, out, []string{"Cancelled", "Code", "Error", "ExitCode", "Stderr", "Stdout", "Truncated"})
}

// roundTrip checks that v encodes with the fields named and decodes back
// to itself.
func roundTrip[T any](t *testing.T, v T, fields []string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var names map[string]json.RawMessage
	if err := json.Unmarshal(b, &names); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(names))
	if diff := cmp.Diff(fields, got); diff != "" {
		t.Errorf("%T's JSON fields (-want +got):\n%s\n%s", v, diff, b)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, back); diff != "" {
		t.Errorf("%T after a JSON round trip (-want +got):\n%s", v, diff)
	}
}
