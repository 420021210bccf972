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
			if len(sc.Forks) > 0 {
				forks(t, sc, dir, args, runID(t, rout), q)
			}
		})
	}
}

// forks forks the scenario's run on both engines as its forks say, with
// skein resume --from / --set: a run of the flow on a run store beside
// it locally, remoteID on Temporal. Each fork's results must agree, name
// the run forked in resumed_from, and give the fork's output when the
// scenario says it. (That no model is called again upstream the package
// test proves, counting the model activities; TestForkOnServer proves it
// on a server with a model server.)
func forks(t *testing.T, sc temporaltest.Scenario, dir string, args []string, remoteID, q string) {
	t.Helper()
	lout, lerr, lcode := skein(t, dir, args...)
	if lcode != 0 {
		t.Fatalf("local run on a store: exit %d\n%s", lcode, lerr)
	}
	localID := runID(t, lout)
	for _, fk := range sc.Forks {
		var fargs []string
		if fk.From != "" {
			fargs = append(fargs, "--from", fk.From)
		}
		for k, v := range fk.Set {
			fargs = append(fargs, "--set", k+"="+string(v))
		}
		lout, lerr, lcode := skein(t, dir, append([]string{"resume", localID, "--json"}, fargs...)...)
		rout, rerr, rcode := skein(t, dir, append(append([]string{"resume", remoteID, "--json"}, fargs...), "--engine", "temporal", "--address", address, "--task-queue", q)...)
		if lcode != 0 || rcode != 0 {
			t.Fatalf("skein resume %s: exit %d locally, %d on temporal\nlocal stderr:\n%s\ntemporal stderr:\n%s", fargs, lcode, rcode, lerr, rerr)
		}
		local, err := temporaltest.Decode([]byte(lout))
		if err != nil {
			t.Fatalf("local fork %s: %v\n%s", fargs, err, lout)
		}
		remote, err := temporaltest.Decode([]byte(rout))
		if err != nil {
			t.Fatalf("temporal fork %s: %v\n%s", fargs, err, rout)
		}
		if diff := cmp.Diff(local, remote); diff != "" {
			t.Errorf("fork %s: local (-) and temporal (+) differ:\n%s", fargs, diff)
		}
		if fk.Output != nil && !cmp.Equal(local.Output, fk.Output) {
			t.Errorf("fork %s: output %v, want %v", fargs, local.Output, fk.Output)
		}
		if got := resumedFrom(t, lout); got != localID {
			t.Errorf("local fork %s: resumed_from %q, want %q", fargs, got, localID)
		}
		if got := resumedFrom(t, rout); got != remoteID {
			t.Errorf("temporal fork %s: resumed_from %q, want %q", fargs, got, remoteID)
		}
	}
}

// runID is the run_id of a result object.
func runID(t *testing.T, out string) string {
	t.Helper()
	var r struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.RunID == "" {
		t.Fatalf("no run_id in the result (%v):\n%s", err, out)
	}
	return r.RunID
}

// resumedFrom is the resumed_from of a result object.
func resumedFrom(t *testing.T, out string) string {
	t.Helper()
	var r struct {
		ResumedFrom string `json:"resumed_from"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r.ResumedFrom
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
