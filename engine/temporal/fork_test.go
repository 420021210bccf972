package temporal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/testsuite"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// forkFlow calls a model upstream, and again in a child flow; what
// follows appends to a log, so a test sees what ran again.
var forkFlow = temporaltest.Scenario{Files: map[string]string{
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
`,
}}

// forkRun runs in to its end in the SDK's test environment, and returns
// its output and its journal as JournalQuery answers it.
func forkRun(t *testing.T, in RunInput, a *Activities) (*RunOutput, *Journal) {
	t.Helper()
	return runJournal(t, newEnvWith(t, a), in)
}

// runJournal runs in to its end in env and returns its output and its
// journal as JournalQuery answers it.
func runJournal(t *testing.T, env *testsuite.TestWorkflowEnvironment, in RunInput) (*RunOutput, *Journal) {
	t.Helper()
	env.ExecuteWorkflow(WorkflowName, in)
	out := output(t, env)
	v, err := env.QueryWorkflow(JournalQuery)
	if err != nil {
		t.Fatal(err)
	}
	var j Journal
	if err := v.Get(&j); err != nil {
		t.Fatal(err)
	}
	return out, &j
}

func TestForkFromJournal(t *testing.T) {
	// A fork answers what ran before its step from the run's journal,
	// child flows' included: no model call is made again upstream, and
	// what follows the step runs again.
	g, sources, _ := setup(t, forkFlow)
	dir := filepath.Dir(g.File)
	ms := modeltest.New(
		modeltest.Rule{Match: "summarize", Replies: []modeltest.Reply{{Content: "red build"}}},
		modeltest.Rule{Match: "title for", Replies: []modeltest.Reply{{Content: "Red"}}},
	)
	defer ms.Close()
	in := RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1,
		ModelEnv: []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + ms.BaseURL()}}
	acts := &Activities{Env: append(os.Environ(), "OPENAI_API_KEY=k")}
	out, j := forkRun(t, in, acts)
	if res := decode(t, out.Result); res.Status != "succeeded" || res.Steps["score"].Output != 3.0 {
		t.Fatalf("run: %s, score %v", res.Status, res.Steps["score"].Output)
	}
	calls := len(ms.Requests())
	if calls != 2 {
		t.Fatalf("the run made %d model calls, want 2", calls)
	}
	var kidTitle bool
	for _, e := range j.Entries {
		kidTitle = kidTitle || e.Path == "kid" && e.Step == "title" && e.Status == "succeeded"
	}
	if !kidTitle || j.Lost != "" {
		t.Fatalf("the journal lacks the child flow's model call (lost %q): %+v", j.Lost, j.Entries)
	}

	for _, tc := range []struct {
		name   string
		from   string
		set    map[string]json.RawMessage
		calls  int    // model calls made again
		output string // the fork's output
	}{
		{name: "set", set: map[string]json.RawMessage{"score": json.RawMessage(`42`)}, output: "42"},
		{name: "from fn", from: "score", output: "3"},
		{name: "from report", from: "report", output: "3"},
		// The child flow runs again, its model call answered from the
		// record (it completed before the child flow did), as locally.
		{name: "from child", from: "kid", output: "3"},
		{name: "from the start", from: "ask", calls: 2, output: "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, "log"))
			before := len(ms.Requests())
			fin, _, err := ForkInput(context.Background(), "RUN1", j, tc.from, tc.set)
			if err != nil {
				t.Fatal(err)
			}
			out, fj := forkRun(t, *fin, acts)
			var res struct {
				Status      string `json:"status"`
				ResumedFrom string `json:"resumed_from"`
				Steps       map[string]struct {
					Output any `json:"output"`
				} `json:"steps"`
			}
			if err := json.Unmarshal(out.Result, &res); err != nil {
				t.Fatal(err)
			}
			if res.Status != "succeeded" || res.ResumedFrom != "RUN1" {
				t.Fatalf("fork: %s, resumed from %q", res.Status, res.ResumedFrom)
			}
			if got := len(ms.Requests()) - before; got != tc.calls {
				t.Errorf("the fork made %d model calls, want %d", got, tc.calls)
			}
			if got := strings.TrimSpace(res.Steps["report"].Output.(map[string]any)["stdout"].(string)); got != tc.output {
				t.Errorf("report printed %q, want %q", got, tc.output)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != tc.output+"\n" {
				t.Errorf("the log has %q: report ran not once again", b)
			}
			if res.Steps["ask"].Output != "red build" || res.Steps["kid"].Output != "Red" {
				t.Errorf("upstream outputs %v, %v", res.Steps["ask"].Output, res.Steps["kid"].Output)
			}
			// The fork's journal is whole (what it replayed included):
			// a fork of it calls no model either.
			before = len(ms.Requests())
			fin2, _, err := ForkInput(context.Background(), "RUN2", fj, "report", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.set) > 0 && string(fin2.Fork.Set["score"]) != "42" {
				t.Errorf("a fork of a fork set %s, want its values kept", fin2.Fork.Set)
			}
			out2, _ := forkRun(t, *fin2, acts)
			if res := decode(t, out2.Result); res.Status != "succeeded" || res.Steps["ask"].Output != "red build" {
				t.Errorf("fork of the fork: %s, ask %v", res.Status, res.Steps["ask"].Output)
			}
			if got := len(ms.Requests()) - before; got != 0 {
				t.Errorf("the fork of the fork made %d model calls", got)
			}
		})
	}
}

func TestForkRefusals(t *testing.T) {
	// What a local resume refuses, a fork on Temporal refuses alike,
	// before any workflow starts.
	g, sources, _ := setup(t, forkFlow)
	j := &Journal{Input: RunInput{Flow: g.File, Root: g.Root, Sources: sources},
		Entries: []JournalEntry{{Step: "ask", Kind: "llm", Visit: 1, Attempt: 1, Status: "succeeded", Done: 1, Output: json.RawMessage(`"x"`)}}}
	for _, tc := range []struct {
		from string
		set  map[string]json.RawMessage
		want string
	}{
		{set: map[string]json.RawMessage{"scor": json.RawMessage(`1`)}, want: `--set: flow flow has no step "scor" (did you mean "score"?)`},
		{from: "rport", want: `run RUN1 has no completed effect step "rport" to resume from`},
	} {
		if _, _, err := ForkInput(context.Background(), "RUN1", j, tc.from, tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("from %q set %v: got %v, want %q", tc.from, tc.set, err, tc.want)
		}
	}
	lost := *j
	lost.Lost = "child flow X: its journal outgrew the bound"
	if _, _, err := ForkInput(context.Background(), "RUN1", &lost, "report", nil); err == nil || !strings.Contains(err.Error(), "cannot be forked: child flow X") {
		t.Errorf("a lost journal: %v", err)
	}
}

// A fork of a detached run that continued as new is a run of its own:
// its input keeps none of the run's span settings (the workflow made the
// run's spans and carried those left open), so the fork's workflow makes
// no spans (the client following it does) and does not end the run's.
func TestForkOfDetachedRunMakesNoWorkflowSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func() *telemetry.Provider) { spanProvider = f }(spanProvider)
	spanProvider = func() *telemetry.Provider { return p }

	_, in := runScenario(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
a = step("a", run = ["echo", "a"])
b = step("b", run = ["echo", "b"])
c = step("c", run = ["echo", "c"])
d = step("d", run = ["echo", "d"])
chain(START, a, b, c, d, END)
`}})
	in.Spans, in.Traced, in.ContinueEvery = true, true, 2
	var j *Journal
	for n := 0; j == nil; n++ {
		env := newEnvWith(t, &Activities{})
		env.ExecuteWorkflow(WorkflowName, in)
		var next RunInput
		if continued(t, env.GetWorkflowError(), &next) {
			in = next
			continue
		}
		if n == 0 || in.SpanCarry == nil {
			t.Fatalf("the run continued %d times, carrying spans %v: want it to carry them on", n, in.SpanCarry)
		}
		output(t, env)
		v, err := env.QueryWorkflow(JournalQuery)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Get(&j); err != nil {
			t.Fatal(err)
		}
	}
	if len(exp.GetSpans()) == 0 {
		t.Fatal("the detached run made no spans")
	}
	exp.Reset()

	fin, _, err := ForkInput(context.Background(), "RUN1", j, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	if fin.Spans || fin.SpanCarry != nil || fin.SpanParent != "" || fin.SpanFlow != "" {
		t.Errorf("the fork's input keeps the run's spans: Spans %v, SpanCarry %v, SpanParent %q, SpanFlow %q",
			fin.Spans, fin.SpanCarry, fin.SpanParent, fin.SpanFlow)
	}
	out, _ := forkRun(t, *fin, &Activities{})
	if res := decode(t, out.Result); res.Status != "succeeded" {
		t.Fatalf("fork: %s", res.Status)
	}
	for _, s := range exp.GetSpans() {
		t.Errorf("the fork's workflow made span %s", s.Name)
	}
}
