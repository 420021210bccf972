package servertest

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// TestModelsOnWorkers runs a flow with an llm step, an LLM router and an
// agent with a tool through the CLI on a real server: the default model's
// variables come from skein run's environment, the API key only from the
// worker's; the result is the local run's and the model server sees the
// key on every request.
func TestModelsOnWorkers(t *testing.T) {
	// A server for each run: its replies go in order.
	server := func() *modeltest.Server {
		s := modeltest.New(
			modeltest.Rule{Match: "summarize", Replies: []modeltest.Reply{{Content: "red build", Prompt: 11, Completion: 2}}},
			modeltest.Rule{Match: "route", Replies: []modeltest.Reply{{Content: `{"label": "bug"}`}}},
			modeltest.Rule{Match: "fix the bug", Replies: []modeltest.Reply{
				{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text": "patched"}`}}},
				{Content: "fixed it"},
			}},
		)
		t.Cleanup(s.Close)
		return s
	}
	ls, ts := server(), server()
	dir := t.TempDir()
	sc := temporaltest.Scenario{Files: map[string]string{"flow.star": `
flow(output = "report")
echo = tool("echo", run = ["printf", "[%s]", "{{ args.text }}"], params = {"text": "string"})
summary = step("summary", llm = "summarize the build")
triage = router("triage", llm = "route {{ summary }}", routes = {"bug": "fix", "feature": "plan"})
fix = step("fix", agent = "fix the bug", tools = [echo])
plan = step("plan", fn = lambda r: "planned")
report = step("report", fn = lambda r: [r.summary, r.triage, r.fix], join = "or")
edge(START, summary)
edge(summary, triage)
edge(fix, report)
edge(plan, report)
edge(report, END)
`}}
	flow, err := sc.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	const key = "sk-on-the-worker"
	q := queue(t)
	worker(t, q, []string{"OPENAI_API_KEY=" + key})

	local := start(t, dir, []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ls.BaseURL(), "OPENAI_API_KEY=" + key}, skeinBin, "run", flow, "--json", "--no-store")
	if code := local.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("local run: exit %d\n%s", code, local.stderr.String())
	}
	remote := start(t, dir, []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ts.BaseURL(), "OPENAI_API_KEY="}, skeinBin, "run", flow, "--json", "--engine", "temporal", "--address", address, "--task-queue", q)
	if code := remote.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("temporal run: exit %d\n%s", code, remote.stderr.String())
	}
	canon := func(b string) any {
		var x map[string]any
		if err := json.Unmarshal([]byte(b), &x); err != nil {
			t.Fatal(err)
		}
		delete(x, "run_id")
		delete(x, "duration_ms")
		for _, st := range x["steps"].(map[string]any) {
			delete(st.(map[string]any), "duration_ms")
		}
		return x
	}
	if diff := cmp.Diff(canon(local.stdout.String()), canon(remote.stdout.String())); diff != "" {
		t.Errorf("local (-) and temporal (+) differ:\n%s", diff)
	}
	lr, reqs := ls.Requests(), ts.Requests()
	if len(reqs) != 4 || len(lr) != 4 {
		t.Errorf("%d model requests locally and %d on temporal, want 4", len(lr), len(reqs))
	}
	for i := range min(len(lr), len(reqs)) {
		if diff := cmp.Diff(lr[i].Body, reqs[i].Body); diff != "" {
			t.Errorf("request %d differs:\n%s", i, diff)
		}
	}
	for i, r := range reqs {
		if r.Authorization != "Bearer "+key {
			t.Errorf("request %d: authorization %q", i, r.Authorization)
		}
	}
}

// TestCassetteReplayedByRuns: workers replaying a cassette
// (--cassette --replay-only) answer each run from the start of the tape,
// as a local run is: three runs of examples/llm_triage.star on the same
// worker all succeed (the second failed replay_miss when the answers
// were counted across the worker's runs).
func TestCassetteReplayedByRuns(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	// One worker, which must answer every run.
	worker(t, q, nil, "--cassette", filepath.Join(root, "examples", "cassettes", "llm_triage.json"), "--replay-only")
	for i := 1; i <= 3; i++ {
		stdout, stderr, code := skein(t, root, "run", "examples/llm_triage.star", "--json", "--engine", "temporal", "--address", address, "--task-queue", q)
		res, err := temporaltest.Decode([]byte(stdout))
		if code != 0 || err != nil || res.Status != "succeeded" {
			t.Fatalf("run %d: exit %d, status %s (%v)\nstdout:\n%s\nstderr:\n%s", i, code, res.Status, err, stdout, stderr)
		}
	}
}
