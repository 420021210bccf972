package vm_test

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/vm"
)

// The offline stub model answers every kind of model call with no key,
// server or network: rules by the text a request contains (an agent's
// turns in order, calling real tools), and without a rule the plainest
// answer a call accepts (a schema's example, a router's first label, a
// judge's STOP).
func TestStubModel(t *testing.T) {
	res := runFiles(t, map[string]string{"flow.star": `
model("m", provider = "stub", answers = [
    {"match": "Classify", "reply": "billing"},
    {"match": "Fix the build", "turns": [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]},
        {"reply": "fixed after one look"},
    ]},
])
model("f", provider = "stub", answers = "answers.json")
echo = tool("echo", run = ["printf", "[%s]", "{{ args.text }}"], params = {"text": "string"})
fix = step("fix", agent = "Fix the build", model = "m", tools = [echo])
pick = router("pick", llm = "Classify: {{ fix }}", model = "m", routes = {"urgent": ABORT, "billing": "plan"})
plan = step("plan", llm = "Plan for {{ fix }}", model = "m",
    schema = {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}, "owner": {"type": "string"}}, "required": ["steps"]})
draft = step("draft", llm = "Draft it", model = "f")
critique = step("critique", llm = "Critique {{ draft }}", model = "m")
polish = loop("polish", body = [draft, critique], until = judge("good enough", model = "m"), max_iterations = 3)
flow(output = "summary")
summary = step("summary", fn = lambda r: {"fix": r.fix, "plan": r.plan, "polish": r.polish, "route": r.pick})
chain(START, fix, pick)
chain(plan, polish, summary, END)
`, "answers.json": `[{"match": "Draft", "reply": {"text": "a draft", "words": 2}}]`}, nil, vm.Options{Env: []string{"PATH=/usr/bin:/bin"}})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	got := resultJSON(t, res)
	for _, want := range []string{
		`"fix":"fixed after one look"`,
		`"route":"billing"`,
		`"plan":{"steps":[]}`,
		`"polish":"stub answer to: Critique {\"text\":\"a draft\",\"words\":2}"`,
		`"tool_calls"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("result lacks %s:\n%s", want, got)
		}
	}
	if res.Step("polish").Iterations != 1 {
		t.Errorf("the judge did not stop the loop at once: %d iterations", res.Step("polish").Iterations)
	}
	if res.Usage.Total() == 0 || res.ModelCalls != 7 {
		t.Errorf("usage %+v in %d calls", res.Usage, res.ModelCalls)
	}
	if o := res.Step("fix").Output; o != starlark.String("fixed after one look") {
		t.Errorf("fix: %v", o)
	}
}

// A stub rule whose reply does not match a step's schema fails the step as
// a real model's would, after one repair.
func TestStubModelSchemaMismatch(t *testing.T) {
	res := run(t, `
model("m", provider = "stub", answers = [{"reply": "not json"}])
s = step("s", llm = "x", model = "m", schema = {"type": "object", "properties": {"a": {"type": "string"}}})
chain(START, s, END)
`, nil, vm.Options{})
	if res.Status != vm.Failed || res.Error.Code != "model_error" || !strings.Contains(res.Step("s").Error, "not JSON") {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
}

// A file of answers that is missing or malformed is refused before the
// run, naming the file.
func TestStubModelAnswersChecked(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"", "answers.json: no such file"},
		{`{"match": "x"}`, `want a list of rules`},
		{`[{"match": "x"}]`, `rule 1 ("x"): no reply, tool_calls or turns`},
		{`[{"match": "x", "replly": "y"}]`, `unknown field "replly"`},
	} {
		files := map[string]string{"flow.star": `
model("m", provider = "stub", answers = "answers.json")
s = step("s", llm = "x", model = "m")
chain(START, s, END)
`}
		if tc.file != "" {
			files["answers.json"] = tc.file
		}
		err := vm.CheckModels(load(t, files), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.file, err, tc.want)
		}
	}
}
