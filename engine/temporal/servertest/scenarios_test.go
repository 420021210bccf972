package servertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
			if sc.Scripted() {
				scripted(t, sc, q)
				return
			}
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

// scripted runs a scenario in which a person decides approvals or
// cancels the run, on both engines, and compares the results as
// TestScenarios does. Locally the run parks on each approval (skein run,
// then skein approve and skein resume until it ends), or is cancelled
// with skein cancel from another process; on Temporal it is started
// detached, decided with skein approve --engine temporal once it waits,
// or cancelled with skein cancel --engine temporal, and read back with
// skein show --json.
func scripted(t *testing.T, sc temporaltest.Scenario, q string) {
	dir, args := scenarioRun(t, sc, "--json")
	conn := []string{"--engine", "temporal", "--address", address}

	// Locally, on a run store beside the flow.
	var lout, lerr string
	var lcode int
	if sc.CancelWhen != "" {
		p := start(t, dir, nil, skeinBin, args...)
		awaitFile(t, dir, sc.CancelWhen)
		if _, stderr, code := skein(t, dir, "cancel", "last"); code != 0 {
			t.Fatalf("skein cancel: exit %d\n%s", code, stderr)
		}
		lcode = p.wait(t, 2*time.Minute)
		lout, lerr = p.stdout.String(), p.stderr.String()
		os.Remove(filepath.Join(dir, sc.CancelWhen)) // the Temporal run makes its own
	} else {
		lout, lerr, lcode = skein(t, dir, args...)
		for _, d := range sc.Decisions {
			if lcode != 3 {
				t.Fatalf("local run: exit %d before the decision on %s; want 3 (parked)\n%s%s", lcode, d.Step, lout, lerr)
			}
			if _, stderr, code := skein(t, dir, append([]string{"approve", "last", d.Step}, decisionArgs(t, d)...)...); code != 0 {
				t.Fatalf("skein approve %s: exit %d\n%s", d.Step, code, stderr)
			}
			lout, lerr, lcode = skein(t, dir, "resume", "last", "--json")
		}
	}
	local, err := temporaltest.Decode([]byte(lout))
	if err != nil {
		t.Fatalf("local run (exit %d): %v\nstderr:\n%s", lcode, err, lerr)
	}

	// On Temporal.
	var detached []string
	for _, a := range args {
		if a != "--json" {
			detached = append(detached, a)
		}
	}
	out, stderr, code := skein(t, dir, append(append(detached, "--detach", "--task-queue", q), conn...)...)
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("skein run --detach: exit %d, stdout %q\nstderr:\n%s", code, out, stderr)
	}
	if sc.CancelWhen != "" {
		awaitFile(t, dir, sc.CancelWhen)
		if _, stderr, code := skein(t, dir, append([]string{"cancel", id}, conn...)...); code != 0 {
			t.Fatalf("skein cancel --engine temporal: exit %d\n%s", code, stderr)
		}
	}
	for _, d := range sc.Decisions {
		// Refused until the run waits for it.
		waitFor(t, 2*time.Minute, "the run to take the decision on "+d.Step, func() bool {
			_, _, code := skein(t, dir, append(append([]string{"approve", id, d.Step}, decisionArgs(t, d)...), conn...)...)
			return code == 0
		})
	}
	remote := awaitEnd(t, dir, id, conn)
	if sc.CancelWhen != "" {
		// Temporal's cancellation carries no reason: the local run's
		// error says who cancelled it, the workflow's does not
		// (docs/temporal.md).
		if e, ok := local.Error.(map[string]any); ok {
			if msg, _ := e["message"].(string); strings.HasPrefix(msg, "the run was cancelled by ") {
				e["message"] = "the run was cancelled"
			}
		}
	}
	if diff := cmp.Diff(local.WithoutTimes(), remote.WithoutTimes()); diff != "" {
		t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
	}
}

// decisionArgs are the flags of skein approve that give decision d.
func decisionArgs(t *testing.T, d temporaltest.Decision) []string {
	t.Helper()
	var args []string
	if d.By != "" {
		args = append(args, "--by", d.By)
	}
	if d.Reject {
		args = append(args, "--reject")
	}
	if d.Reason != "" {
		args = append(args, "--reason", d.Reason)
	}
	for k, v := range d.Values {
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			s = string(b)
		}
		args = append(args, "--set", k+"="+s)
	}
	return args
}

// awaitFile waits until dir/name exists.
func awaitFile(t *testing.T, dir, name string) {
	t.Helper()
	waitFor(t, 2*time.Minute, name+" to be made", func() bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	})
}
