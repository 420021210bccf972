package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// skein check --envelope works on every example: each flow checked has
// its envelope printed, in text and in JSON.
func TestCheckEnvelopeExamples(t *testing.T) {
	code, out, errs := runMain("check", "--envelope", "../../examples")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	flows := strings.Count(out, "envelope of ")
	if flows < 15 || strings.Count(out, "  run: ") != flows {
		t.Errorf("%d envelopes, %d totals:\n%s", flows, strings.Count(out, "  run: "), out)
	}
	code, out, errs = runMain("check", "--envelope", "--json", "../../examples")
	if code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, errs)
	}
	var r struct {
		Envelopes []struct {
			File  string                    `json:"file"`
			Total map[string]map[string]any `json:"total"`
			Steps []map[string]any          `json:"steps"`
		} `json:"envelopes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Envelopes) != flows {
		t.Errorf("--json has %d envelopes, the text %d", len(r.Envelopes), flows)
	}
	for _, e := range r.Envelopes {
		for _, k := range []string{"model_calls", "completion_tokens", "output_cost_usd", "processes", "tool_calls", "approvals", "seconds"} {
			if _, ok := e.Total[k]["max"]; !ok {
				t.Errorf("%s: total.%s has no max: %v", e.File, k, e.Total[k])
			}
		}
		if len(e.Steps) == 0 {
			t.Errorf("%s: no steps", e.File)
		}
	}
}

// An envelope over the flow's own max_tokens is a warning, and an error
// with --strict.
func TestCheckEnvelopeStrict(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "f.star")
	src := `flow(max_tokens = 1000)
model("m", model = "gpt-4o-mini", max_tokens = 800)
a = step("a", llm = "one", model = "m", retries = 0)
b = step("b", llm = "two", model = "m", retries = 0)
chain(START, a, b, END)
`
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runMain("check", flow)
	if code != exitOK || !strings.Contains(out, "f.star:1:1: warning: a run may spend 1,600 completion tokens, more than its max_tokens 1,000 [envelope_exceeds_budget]") {
		t.Errorf("without --strict: exit %d:\n%s", code, out)
	}
	code, out, _ = runMain("check", "--strict", flow)
	if code != exitFail || !strings.Contains(out, "error: a run may spend 1,600") {
		t.Errorf("with --strict: exit %d:\n%s", code, out)
	}
}

// skein graph --envelope labels each step with what it may spend.
func TestGraphEnvelope(t *testing.T) {
	code, out, errs := runMain("graph", "--envelope", "../../examples/llm_build_fix.star")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := `"fix" [label="fix\n(llm, retries 2)\n≤ 3 visits · 18 calls · 24,576 tok · ∞ $"];`; !strings.Contains(out, want) {
		t.Errorf("no %s in:\n%s", want, out)
	}
	_, out, _ = runMain("graph", "--envelope", "-f", "mermaid", "../../examples/map_items.star")
	if want := "check_one · task · ≤ 1×n(per_file) visits · 1×n(per_file) procs"; !strings.Contains(out, want) {
		t.Errorf("no %s in:\n%s", want, out)
	}
	_, out, _ = runMain("graph", "../../examples/llm_build_fix.star")
	if strings.Contains(out, "visits") {
		t.Errorf("without --envelope the graph has envelopes:\n%s", out)
	}
}

// skein show says what a run spent against its envelope.
func TestShowSpentAgainstEnvelope(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "f.star")
	src := `a = step("a", run = ["true"], retries = 2)
b = step("b", run = ["false"], retries = 1, backoff = "1ms")
gate = step("gate", fn = lambda r: 1)
edge(START, a)
edge(a, b)
edge(b, gate, on = "failure")
edge(gate, END)
`
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, ".skein", "runs.db")
	if code, out, errs := runMain("run", flow, "--store", store); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runMain("show", "last", "--store", store)
	if code != exitOK || !strings.Contains(out, "\nspent processes 3 of at most 5\n") {
		t.Errorf("show: exit %d\n%s%s", code, out, errs)
	}
}
