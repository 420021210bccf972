package servertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestScenarios runs the engines' shared scenario table
// (engine/temporal/testdata/scenarios) through the CLI: each flow with
// `skein run --json` locally and with `skein run --engine temporal --json`
// on two real workers, and compares the exit codes and the results'
// status, error, output, path and step records.
func TestScenarios(t *testing.T) {
	scenarios, err := temporaltest.Load(filepath.Join("..", "testdata", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, nil)
	worker(t, q, nil)
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			dir, args := scenarioRun(t, sc, "--json")
			lout, lerr, lcode := skein(t, dir, append(args, "--no-store")...)
			local, err := temporaltest.Decode([]byte(lout))
			if err != nil {
				t.Fatalf("local run (exit %d): %v\nstderr:\n%s", lcode, err, lerr)
			}
			rout, rerr, rcode := skein(t, dir, append(args, "--engine", "temporal", "--address", address, "--task-queue", q)...)
			remote, err := temporaltest.Decode([]byte(rout))
			if err != nil {
				t.Fatalf("temporal run (exit %d): %v\nstderr:\n%s", rcode, err, rerr)
			}
			if lcode != rcode {
				t.Errorf("exit %d locally, %d on temporal\nlocal stderr:\n%s\ntemporal stderr:\n%s", lcode, rcode, lerr, rerr)
			}
			if diff := cmp.Diff(local, remote); diff != "" {
				t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
			}
		})
	}
}

// scenarioRun writes sc's files into a new directory and returns it with
// the arguments of `skein run` for its flow in mode (--json, --events),
// with its --parallel and its inputs. skein runs in that directory and
// the flow is named relative to it, as a user types `skein run
// flow.star`: messages that name a flow file (runtime errors' positions
// and traces, subflow_cycle's) must read the same on both engines, while
// the workers run elsewhere.
func scenarioRun(t *testing.T, sc temporaltest.Scenario, mode string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := sc.Write(dir); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "flow.star", mode, "-p", strconv.Itoa(sc.ParallelOrOne())}
	if sc.Inputs != nil {
		b, err := json.Marshal(sc.Inputs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "inputs.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--inputs-file", "inputs.json")
	}
	return dir, args
}
