package servertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestScenarioEvents runs the shared scenario table with --events on
// both engines: the same events, in the same order when the run has
// --parallel 1 (in any order otherwise), with their times, durations and
// run ids left out.
func TestScenarioEvents(t *testing.T) {
	scenarios, err := temporaltest.Load(filepath.Join("..", "testdata", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, nil)
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			if sc.Scripted() {
				// A person acts in it (decides, cancels): one skein run
				// would wait for them. TestScenarios drives it step by step.
				t.Skip("a person acts in this scenario: TestScenarios compares it")
			}
			dir, args := scenarioRun(t, sc, "--events")
			lout, lerr, _ := skein(t, dir, append(args, "--no-store")...)
			rout, rerr, _ := skein(t, dir, append(args, "--engine", "temporal", "--address", address, "--task-queue", q)...)
			local, remote := events(t, lout, lerr), events(t, rout, rerr)
			if strings.Contains(sc.Files["flow.star"], "jitter = True") {
				// A jittered delay is a hash of where the retry is, the
				// run's id among it: two runs wait differently.
				local, remote = withoutKey(t, local, "backoff_ms"), withoutKey(t, remote, "backoff_ms")
			}
			if sc.ParallelOrOne() > 1 {
				sort.Strings(local)
				sort.Strings(remote)
			}
			if diff := cmp.Diff(local, remote); diff != "" {
				t.Errorf("local (-) and temporal (+) events differ:\n%s", diff)
			}
		})
	}
}

// events reads --events output: one JSON object a line, re-encoded
// without the fields that differ from run to run, and without the
// model_delta events only the local engine sends.
func events(t *testing.T, out, stderr string) []string {
	t.Helper()
	var evs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not an event: %q: %v\nstderr:\n%s", line, err, stderr)
		}
		if ev["event"] == "model_delta" {
			// Replies stream on the local engine only (docs/models.md,
			// Streaming): the reply a delta carries is in model_call and
			// step_finished on both engines.
			continue
		}
		for _, k := range []string{"time", "run_id", "duration_ms"} {
			delete(ev, k)
		}
		b, _ := json.Marshal(ev)
		evs = append(evs, string(b))
	}
	return evs
}

// withoutKey re-encodes events without the field key.
func withoutKey(t *testing.T, evs []string, key string) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i, line := range evs {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		delete(ev, key)
		b, _ := json.Marshal(ev)
		out[i] = string(b)
	}
	return out
}

// TestManyChildFlowsEventsOnce follows a run of 20 child flows started at
// once with --events, 20 times (SKEIN_TEST_CHILD_RUNS sets how many): no
// event line is printed twice. A child's log asked for before the child
// workflow started fails, and the follower asks again at the next poll;
// it must not hand on again what it handed on before the failure.
func TestManyChildFlowsEventsOnce(t *testing.T) {
	dir := t.TempDir()
	flow, err := (&temporaltest.Scenario{Files: map[string]string{
		"kid.star": `flow(inputs = {"n": 0})` + "\n" + `chain(START, step("t", run = ["echo", "{{ inputs.n }}"]), END)`,
		"flow.star": `
flow(inputs = {"ns": list(range(20))})
kids = map("kids", over = "inputs.ns", body = [step("kid", flow = "kid.star", inputs = {"n": "{{ item }}"})], concurrency = 20)
chain(START, kids, END)
`}}).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, nil)
	worker(t, q, nil)
	runs := 20
	if n, err := strconv.Atoi(os.Getenv("SKEIN_TEST_CHILD_RUNS")); err == nil && n > 0 {
		runs = n
	}
	for i := range runs {
		out, stderr, code := skein(t, dir, "run", flow, "--events", "-p", "20", "--engine", "temporal", "--address", address, "--task-queue", q)
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstderr:\n%s", i+1, code, stderr)
		}
		seen := map[string]bool{}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, line := range lines {
			if seen[line] {
				t.Fatalf("run %d printed twice: %s\n(of %d lines)", i+1, line, len(lines))
			}
			seen[line] = true
		}
		// Each child's step, started and finished, besides the rest.
		if n := strings.Count(out, `"step_started"`); n < 41 {
			t.Fatalf("run %d: %d step_started events, want at least 41 (20 child steps, their tasks, the map)\n%s", i+1, n, out)
		}
	}
}
