package servertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// TestForkOnServer forks a run on a real server with skein resume --set
// and --from: the forks answer the model calls before the step from the
// run's journal (its child flow's included), so the model server is not
// asked again, run what follows again, and name the run in resumed_from.
func TestForkOnServer(t *testing.T) {
	ms := modeltest.New(
		modeltest.Rule{Match: "summarize", Replies: []modeltest.Reply{{Content: "red build"}}},
		modeltest.Rule{Match: "title for", Replies: []modeltest.Reply{{Content: "Red"}}},
	)
	defer ms.Close()
	dir := t.TempDir()
	flow, err := (&temporaltest.Scenario{Files: map[string]string{
		"flow.star": `
flow(output = "report")
ask = step("ask", llm = "summarize the build")
kid = step("kid", flow = "kid.star", inputs = {"text": "{{ ask }}"})
score = step("score", fn = lambda r: len(r.kid))
report = step("report", env = {"SCORE": "{{ score }}"}, shell = "echo $SCORE >> log; echo $SCORE")
chain(START, ask, kid, score, report, END)
`,
		"kid.star": `
flow(inputs = {"text": None}, output = "title")
title = step("title", llm = "title for {{ inputs.text }}")
`}}).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, []string{"OPENAI_API_KEY=k"})
	conn := []string{"--engine", "temporal", "--address", address, "--task-queue", q, "--json"}

	p := start(t, dir, []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ms.BaseURL()}, skeinBin, append([]string{"run", flow}, conn...)...)
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("skein run: exit %d\n%s", code, p.stderr.String())
	}
	var first struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(p.stdout.String()), &first); err != nil || first.RunID == "" {
		t.Fatalf("skein run --json: %v\n%s", err, p.stdout.String())
	}
	if n := len(ms.Requests()); n != 2 {
		t.Fatalf("the run made %d model calls, want 2", n)
	}

	for _, tc := range []struct {
		args []string
		want string // what report prints
	}{
		{[]string{"--set", "score=42"}, "42"},
		{[]string{"--from", "score"}, "3"},
		{[]string{"--from", "kid"}, "3"},
	} {
		os.Remove(filepath.Join(dir, "log"))
		out, stderr, code := skein(t, dir, append(append([]string{"resume", first.RunID}, tc.args...), conn...)...)
		if code != 0 {
			t.Fatalf("skein resume %s: exit %d\n%s", tc.args, code, stderr)
		}
		var res struct {
			RunID       string `json:"run_id"`
			Status      string `json:"status"`
			ResumedFrom string `json:"resumed_from"`
			Steps       map[string]struct {
				Output json.RawMessage `json:"output"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("skein resume %s --json: %v\n%s", tc.args, err, out)
		}
		if res.Status != "succeeded" || res.ResumedFrom != first.RunID || res.RunID == first.RunID {
			t.Errorf("skein resume %s: run %s %s, resumed from %q", tc.args, res.RunID, res.Status, res.ResumedFrom)
		}
		if got := string(res.Steps["kid"].Output); got != `"Red"` {
			t.Errorf("skein resume %s: kid's output %s", tc.args, got)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "log")); strings.TrimSpace(string(b)) != tc.want {
			t.Errorf("skein resume %s: report logged %q, want %q once", tc.args, b, tc.want)
		}
		if n := len(ms.Requests()); n != 2 {
			t.Errorf("skein resume %s: the model server had %d calls, want the run's 2 only", tc.args, n)
		}
	}

	// What a fork cannot take is refused before anything starts.
	_, stderr, code := skein(t, dir, append([]string{"resume", first.RunID, "--set", "scor=1"}, conn...)...)
	if code != 2 || !strings.Contains(stderr, `--set: flow flow has no step "scor" (did you mean "score"?)`) {
		t.Errorf("--set scor: exit %d\n%s", code, stderr)
	}
}
