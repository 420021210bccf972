package servertest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// approveFlow waits for a decision on deploy; a rejection or a timeout is
// routed to rollback.
const approveFlow = `
flow(inputs = {"v": "1.4"})
build = step("build", run = ["echo", "building"])
deploy = step("deploy", approve = "Deploy {{ inputs.v }} to prod?", timeout = "1h")
ship = step("ship", fn = lambda r: "shipped by " + r.deploy.by)
rollback = step("rollback", fn = lambda r: "rolled back: " + r.deploy.error)
chain(START, build, deploy, ship, END)
edge(deploy, rollback, on = "failure")
edge(rollback, END)
`

// TestApproveBySignal: skein run --engine temporal shows the approval the
// run waits for and the command that decides it; skein show shows the run
// waiting; skein approve sends the decision as a signal and the run goes
// on; a second decision is refused, saying what was decided.
func TestApproveBySignal(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, approveFlow)
	q := queue(t)
	worker(t, q, nil)
	run := start(t, dir, nil, skeinBin, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q)
	cmdRE := regexp.MustCompile(`decide with: skein approve (\S+) deploy --engine temporal --address ` + regexp.QuoteMeta(address) + `\n`)
	waitFor(t, 2*time.Minute, "the run to show the approval", func() bool { return cmdRE.MatchString(run.stdout.String()) })
	id := cmdRE.FindStringSubmatch(run.stdout.String())[1]
	if !strings.Contains(run.stdout.String(), "approval \"deploy\" waits for a decision: Deploy 1.4 to prod?\n") {
		t.Errorf("skein run does not show the approval's message:\n%s", run.stdout.String())
	}
	conn := []string{"--engine", "temporal", "--address", address}

	// While it waits.
	out, stderr, code := skein(t, dir, append([]string{"show", id}, conn...)...)
	if code != 0 || !strings.Contains(out, "status running\n") || !regexp.MustCompile(`(?m)^  build\s+succeeded\s+visits 1`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^  deploy\s+visit 1\s+waiting since .*: skein approve `+regexp.QuoteMeta(id)+` deploy --engine temporal`).MatchString(out) {
		t.Errorf("skein show while waiting: exit %d\n%s%s", code, out, stderr)
	}
	out, _, _ = skein(t, dir, append([]string{"show", id, "--json"}, conn...)...)
	var rec struct {
		Status    string `json:"status"`
		Approvals []struct {
			Step    string `json:"step"`
			Message string `json:"message"`
		} `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Status != "running" || len(rec.Approvals) != 1 || rec.Approvals[0].Message != "Deploy 1.4 to prod?" {
		t.Errorf("skein show --json while waiting: %v\n%s", err, out)
	}
	_, stderr, code = skein(t, dir, append([]string{"approve", id, "deplyo"}, conn...)...)
	if code != 1 || !strings.Contains(stderr, `step "deplyo" of run `+id+` is not waiting for a decision; the run waits for deploy (did you mean "deploy"?)`) {
		t.Errorf("skein approve of a misspelt step: exit %d\n%s", code, stderr)
	}

	_, stderr, code = skein(t, dir, append([]string{"approve", id, "--by", "ann", "--reason", "lgtm"}, conn...)...)
	if code != 0 || stderr != `approved "deploy" of run `+id+"\n" {
		t.Errorf("skein approve: exit %d\n%s", code, stderr)
	}
	if code := run.wait(t, 2*time.Minute); code != 0 {
		t.Errorf("skein run: exit %d after the approval\nstdout:\n%s\nstderr:\n%s", code, run.stdout.String(), run.stderr.String())
	}
	if s := run.stdout.String(); !strings.Contains(s, "ok    deploy ") || !strings.Contains(s, "  output: shipped by ann\n") {
		t.Errorf("skein run's progress and summary:\n%s", s)
	}

	_, stderr, code = skein(t, dir, append([]string{"approve", id, "deploy", "--reject", "--by", "bob"}, conn...)...)
	if code != 1 || !strings.Contains(stderr, `approval "deploy" of run `+id+` was already decided: approved by ann at `) || !strings.Contains(stderr, "(lgtm)") {
		t.Errorf("a second decision: exit %d\n%s", code, stderr)
	}
	out, stderr, code = skein(t, dir, append([]string{"show", id}, conn...)...)
	if code != 0 || !strings.Contains(out, "status succeeded\n") || !strings.Contains(out, `output "shipped by ann"`) ||
		!regexp.MustCompile(`(?m)^  deploy\s+visit 1\s+approved by ann at \S+ \(lgtm\)$`).MatchString(out) {
		t.Errorf("skein show after the run: exit %d\n%s%s", code, out, stderr)
	}
}

// TestRejectDetached: a detached run rejected by skein approve --reject
// routes the rejection as locally; skein show --json prints the result
// object.
func TestRejectDetached(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, approveFlow)
	q := queue(t)
	worker(t, q, nil)
	id := detach(t, dir, flow, q)
	conn := []string{"--engine", "temporal", "--address", address}
	// Until the run asks, there is nothing to decide.
	awaitApproval(t, dir, id, conn)
	_, stderr, code := skein(t, dir, append([]string{"approve", id, "deploy", "--reject", "--reason", "not today", "--by", "bob"}, conn...)...)
	if code != 0 || stderr != `rejected "deploy" of run `+id+"\n" {
		t.Errorf("skein approve --reject: exit %d\n%s", code, stderr)
	}
	got := awaitEnd(t, dir, id, conn)
	want := temporaltest.Comparable{Status: "succeeded", Output: "rolled back: rejected by bob: not today", Path: []string{"build", "deploy", "rollback"},
		Steps: map[string]temporaltest.Step{
			"build":    {Status: "succeeded", Visits: 1, Output: map[string]any{"stdout": "building\n", "stderr": "", "exit_code": 0.0, "error": nil, "code": nil, "text": "building"}},
			"deploy":   {Status: "failed", Visits: 1, Code: "rejected"},
			"ship":     {Status: "skipped"},
			"rollback": {Status: "succeeded", Visits: 1, Output: "rolled back: rejected by bob: not today"},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skein show --json (-want +got):\n%s", diff)
	}
	_, stderr, code = skein(t, dir, append([]string{"show", "nosuchrun"}, conn...)...)
	if code != 1 || !strings.Contains(stderr, "skein show: run nosuchrun not found on Temporal at "+address+" (namespace default)") {
		t.Errorf("skein show of an unknown run: exit %d\n%s", code, stderr)
	}
	_, stderr, code = skein(t, dir, append([]string{"approve", "nosuchrun"}, conn...)...)
	if code != 1 || !strings.Contains(stderr, "skein approve: run nosuchrun not found on Temporal at ") {
		t.Errorf("skein approve of an unknown run: exit %d\n%s", code, stderr)
	}
}

// TestEventsAsLocal: skein run --engine temporal --events prints the same
// events as a local run, child flows' and loops' included, in the same
// order (times, ids and durations aside).
func TestEventsAsLocal(t *testing.T) {
	dir := t.TempDir()
	flow, err := (&temporaltest.Scenario{Files: map[string]string{
		"flow.star": `
flow(output = "use")
prep = step("prep", fn = lambda r: ["a", "bb"])
child = step("child", flow = "sub/child.star", inputs = {"words": "{{ prep }}"})
b = step("b", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [b], until = lambda it: it.iteration == 2, max_iterations = 3)
use = step("use", fn = lambda r: r.child)
chain(START, prep, child, l, use, END)
`,
		"sub/child.star": `
flow(inputs = {"words": None}, output = "out")
t = step("t", run = ["echo", "hi"])
out = step("out", fn = lambda r: "/".join(r.inputs.words) + " " + r.t.stdout.strip())
`}}).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, nil)
	norm := regexp.MustCompile(`"(time|run_id)":"[^"]*",?|,"duration_ms":[0-9.]+`)
	local, stderr, code := skein(t, dir, "run", flow, "--no-store", "--events")
	if code != 0 {
		t.Fatalf("local run: exit %d\n%s", code, stderr)
	}
	remote, stderr, code := skein(t, dir, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q, "--events")
	if code != 0 {
		t.Fatalf("temporal run: exit %d\n%s", code, stderr)
	}
	if diff := cmp.Diff(norm.ReplaceAllString(local, ""), norm.ReplaceAllString(remote, "")); diff != "" {
		t.Errorf("local (-) and temporal (+) events differ:\n%s", diff)
	}
}

// TestApproveValuesDetached: skein approve --set on Temporal sends the
// values of the step's fields with the decision; values that do not fit
// are refused by the run, saying why, and the approval waits on; the
// next decision's values reach the steps after it.
func TestApproveValuesDetached(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, `
gate = step("gate", approve = "Release?", fields = {"version": input(type = "string"), "rollout": input("canary", choices = ["canary", "all"])})
ship = step("ship", fn = lambda r: "shipped %s to %s" % (r.gate.values.version, r.gate.values.rollout))
chain(START, gate, ship, END)
`)
	q := queue(t)
	worker(t, q, nil)
	id := detach(t, dir, flow, q)
	conn := []string{"--engine", "temporal", "--address", address}
	awaitApproval(t, dir, id, conn)
	_, stderr, code := skein(t, dir, append([]string{"approve", id, "--set", "version=1.2", "--set", "rollout=most"}, conn...)...)
	if code != 1 || !strings.Contains(stderr, `field "rollout" must be one of "canary", "all", got "most"`) {
		t.Errorf("values that do not fit: exit %d\n%s", code, stderr)
	}
	_, stderr, code = skein(t, dir, append([]string{"approve", id, "--set", "version=1.2", "--set", "rollout=all", "--by", "ann"}, conn...)...)
	if code != 0 {
		t.Errorf("skein approve --set: exit %d\n%s", code, stderr)
	}
	got := awaitEnd(t, dir, id, conn)
	if got.Status != "succeeded" {
		t.Errorf("run: %+v", got)
	}
	if s := got.Steps["ship"].Output; s != "shipped 1.2 to all" {
		t.Errorf("ship output %v", s)
	}
}

// awaitApproval waits until skein show says run id's approval waits.
func awaitApproval(t testing.TB, dir, id string, conn []string) {
	t.Helper()
	waitFor(t, 2*time.Minute, "the approval to wait", func() bool {
		out, _, _ := skein(t, dir, append([]string{"show", id}, conn...)...)
		return strings.Contains(out, "waiting since")
	})
}

// awaitEnd waits until run id is no longer running and returns its
// record as skein show --json gives it.
func awaitEnd(t testing.TB, dir, id string, conn []string) temporaltest.Comparable {
	t.Helper()
	var got temporaltest.Comparable
	waitFor(t, 2*time.Minute, "the run to end", func() bool {
		out, _, _ := skein(t, dir, append([]string{"show", id, "--json"}, conn...)...)
		var err error
		got, err = temporaltest.Decode([]byte(out))
		return err == nil && got.Status != "running"
	})
	return got
}
