package servertest

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestOperatorFindsRuns: a run started where no worker serves its task
// queue says so at once instead of waiting without a word; skein show and
// approve find a run on Temporal by a prefix of its id or as last, as for
// a local run, skein runs lists them, and show names its flow file by absolute path, as a local run's
// record does, though the run was started as `skein run flow.star`.
func TestOperatorFindsRuns(t *testing.T) {
	dir := t.TempDir()
	writeFlow(t, dir, `chain(START, step("a", run = ["echo", "hi"]), END)`)
	q := queue(t)
	conn := []string{"--engine", "temporal", "--address", address}
	out, stderr, code := skein(t, dir, append([]string{"run", "flow.star", "--task-queue", q, "--detach"}, conn...)...)
	id := strings.TrimSpace(out)
	want := "skein run: no worker serves task queue " + q + " at " + address + " (namespace default): run " + id + " waits until one does (skein worker --engine temporal --address " + address + " --task-queue " + q + ")\n"
	if code != 0 || id == "" || stderr != want {
		t.Fatalf("skein run --detach without a worker: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, stderr, want)
	}

	worker(t, q, nil)
	prefix := id[:len(id)-3]
	waitFor(t, 2*time.Minute, "the run to end", func() bool {
		out, _, _ := skein(t, dir, append([]string{"show", prefix}, conn...)...)
		return strings.Contains(out, "status succeeded\n")
	})
	// With a worker, no note; this run is the last one.
	out, stderr, code = skein(t, dir, append([]string{"run", "flow.star", "--task-queue", q, "--json"}, conn...)...)
	if code != 0 || strings.Contains(stderr, "no worker") {
		t.Errorf("skein run with a worker: exit %d, stderr:\n%s", code, stderr)
	}
	out, _, _ = skein(t, dir, append([]string{"show", "last", "--json"}, conn...)...)
	if strings.Contains(out, id) || !strings.Contains(out, `"status": "succeeded"`) {
		t.Errorf("skein show last does not show the last run:\n%s", out)
	}
	// skein resume says how to reset the run's workflow with Temporal's
	// CLI, which knows neither last nor a prefix, at the same address.
	last := regexp.MustCompile(`"run_id": "([^"]+)"`).FindStringSubmatch(out)
	for ref, want := range map[string]string{prefix: id, "last": last[len(last)-1]} {
		_, stderr, code = skein(t, dir, append([]string{"resume", ref}, conn...)...)
		if cmd := "(temporal workflow reset --address " + address + " --workflow-id " + want + " --type FirstWorkflowTask"; code != 2 || !strings.Contains(stderr, cmd) {
			t.Errorf("skein resume %s: exit %d, stderr:\n%s\nwant exit 2 and %q", ref, code, stderr, cmd)
		}
	}
	out, stderr, code = skein(t, dir, append([]string{"show", prefix}, conn...)...)
	if head := "run " + id + "\nflow flow (" + filepath.Join(dir, "flow.star") + ")\nstatus succeeded\n"; code != 0 || !strings.HasPrefix(out, head) {
		t.Errorf("skein show PREFIX: exit %d, stdout:\n%s\nstderr:\n%s\nwant it to begin:\n%s", code, out, stderr, head)
	}
	// skein runs lists both, newest first, as the run store would.
	out, stderr, code = skein(t, dir, append([]string{"runs", "-n", "2"}, conn...)...)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(rows) != 3 || !strings.HasPrefix(rows[0], "ID ") ||
		!regexp.MustCompile(`^\S+\s+flow\s+succeeded\s`).MatchString(rows[1]) || !regexp.MustCompile(`^`+regexp.QuoteMeta(id)+`\s+flow\s+succeeded\s`).MatchString(rows[2]) {
		t.Errorf("skein runs -n 2: exit %d, stdout:\n%s\nstderr:\n%s\nwant the two runs, this one second", code, out, stderr)
	}
	_, stderr, code = skein(t, dir, append([]string{"approve", prefix}, conn...)...)
	if want := "skein approve: run " + id + " has ended (completed): it waits for no approval\n"; code != 1 || stderr != want {
		t.Errorf("skein approve PREFIX: exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
	_, stderr, code = skein(t, dir, append([]string{"show", "20"}, conn...)...)
	if code != 1 || !strings.HasPrefix(stderr, `skein show: run "20" is ambiguous: it starts `) {
		t.Errorf("skein show 20: exit %d, stderr:\n%s\nwant it ambiguous", code, stderr)
	}
	_, stderr, code = skein(t, dir, append([]string{"show", "zz"}, conn...)...)
	if want := "skein show: run zz not found on Temporal at " + address + " (namespace default)\n"; code != 1 || stderr != want {
		t.Errorf("skein show zz: exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}

// TestLogs: skein logs --engine temporal prints what a run's tasks
// printed as skein logs prints a local run's (the same flow, run
// locally), child flows' tasks under their step, a retried attempt's
// output too. With STEP, that step's only; a step that never ran is named
// with a did-you-mean.
func TestLogs(t *testing.T) {
	dir := t.TempDir()
	if _, err := (&temporaltest.Scenario{Files: map[string]string{
		"flow.star": `flaky = step("flaky", run = ["sh", "-c", 'echo "try $SKEIN_ATTEMPT"; echo oops >&2; test "$SKEIN_ATTEMPT" -ge 2'], retries = 1, backoff = "100ms")
kid = step("kid", flow = "child.star")
chain(START, flaky, kid, END)
`,
		"child.star": `chain(START, step("t", run = ["echo", "in child"]), END)`,
	}}).Write(dir); err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, nil)
	conn := []string{"--engine", "temporal", "--address", address}
	out, stderr, code := skein(t, dir, append([]string{"run", "flow.star", "--task-queue", q, "--detach"}, conn...)...)
	if code != 0 {
		t.Fatalf("skein run --detach: exit %d\n%s", code, stderr)
	}
	id := strings.TrimSpace(out)
	out, stderr, code = skein(t, dir, append([]string{"logs", id, "--follow"}, conn...)...)
	want := `==> flaky (visit 1, attempt 1) failed: exit status 1 <==
try 1
--- stderr ---
oops
==> flaky (visit 1, attempt 2) succeeded <==
try 2
--- stderr ---
oops
==> kid › t (visit 1, attempt 1) succeeded <==
in child
`
	if code != 0 || out != want {
		t.Errorf("skein logs --follow: exit %d, stderr:\n%s\nstdout (-want +got):\n%s", code, stderr, cmp.Diff(want, out))
	}
	if _, stderr, code := skein(t, dir, "run", "flow.star"); code != 0 {
		t.Fatalf("skein run (local): exit %d\n%s", code, stderr)
	}
	if local, _, _ := skein(t, dir, "logs", "last"); local != want {
		t.Errorf("skein logs of the local run (-temporal +local):\n%s", cmp.Diff(want, local))
	}
	out, _, code = skein(t, dir, append([]string{"logs", id, "t"}, conn...)...)
	if want := "==> kid › t (visit 1, attempt 1) succeeded <==\nin child\n"; code != 0 || out != want {
		t.Errorf("skein logs RUN t: exit %d, stdout (-want +got):\n%s", code, cmp.Diff(want, out))
	}
	_, stderr, code = skein(t, dir, append([]string{"logs", id, "flakey"}, conn...)...)
	if want := "skein logs: run " + id + ` has no task or shell step "flakey" that ran (did you mean "flaky"?)` + "\n"; code != 1 || stderr != want {
		t.Errorf("skein logs RUN flakey: exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}
