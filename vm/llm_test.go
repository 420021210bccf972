package vm_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

const testKey = "sk-vm-test-SECRET"

// modelOpts points a run at the fake server, collecting its events.
func modelOpts(s *modeltest.Server, evs *events) vm.Options {
	o := vm.Options{Env: []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + s.BaseURL(), "OPENAI_API_KEY=" + testKey}}
	if evs != nil {
		o.OnEvent = evs.add
	}
	return o
}

type events struct {
	mu   sync.Mutex
	list []vm.Event
}

func (e *events) add(ev *vm.Event) {
	e.mu.Lock()
	e.list = append(e.list, *ev)
	e.mu.Unlock()
}

func (e *events) json() string {
	var b strings.Builder
	for _, ev := range e.list {
		b.Write(ev.AppendJSON(nil))
		b.WriteByte('\n')
	}
	return b.String()
}

func (e *events) of(t vm.EventType) []vm.Event {
	var out []vm.Event
	for _, ev := range e.list {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

func resultJSON(t *testing.T, res *vm.Result) string {
	t.Helper()
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func messages(r modeltest.Request) []any { m, _ := r.Body["messages"].([]any); return m }

func TestLLMStep(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "summarize", Replies: []modeltest.Reply{{Content: "a short summary", Prompt: 10, Completion: 4}}},
		modeltest.Rule{Match: "patch for", Replies: []modeltest.Reply{
			{Content: `{"file": 7}`, Prompt: 20, Completion: 5},
			{Content: `{"file": "main.go", "patch": "+func helper() {}"}`, Prompt: 30, Completion: 9}}},
	)
	defer s.Close()
	var evs events
	res := run(t, `
flow(inputs = {"topic": "go"})
sum = step("sum", llm = "summarize {{ inputs.topic }}", system = "be brief")
fix = step("fix", llm = "patch for {{ sum }}", schema = {"type": "object", "properties": {"file": {"type": "string"}, "patch": {"type": "string"}}, "required": ["file", "patch"]})
use = step("use", fn = lambda r: r.fix.file + ":" + r.sum)
chain(START, sum, fix, use, END)
`, nil, modelOpts(s, &evs))
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if got := res.Output.(starlark.String); got != "main.go:a short summary" {
		t.Errorf("output %s", got)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (one repair)", len(reqs))
	}
	want := []any{
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "summarize go"},
	}
	if diff := cmp.Diff(want, messages(reqs[0])); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if reqs[0].Body["model"] != "m1" || reqs[0].Authorization != "Bearer "+testKey {
		t.Errorf("model %v, authorization %q", reqs[0].Body["model"], reqs[0].Authorization)
	}
	if rf, _ := reqs[1].Body["response_format"].(map[string]any); rf["type"] != "json_schema" {
		t.Errorf("response_format %v", reqs[1].Body["response_format"])
	}
	// The schema's own system message (a local server may ignore
	// response_format), the prompt, the reply and the repair.
	if n := len(messages(reqs[2])); n != 4 {
		t.Errorf("repair request has %d messages, want 4", n)
	}
	fix := res.Step("fix")
	if fix.Model != "m1" || fix.Usage != (model.Usage{PromptTokens: 50, CompletionTokens: 14, Attempts: 2}) {
		t.Errorf("fix: model %q usage %+v", fix.Model, fix.Usage)
	}
	if res.Usage != (model.Usage{PromptTokens: 60, CompletionTokens: 18, Attempts: 3}) || res.ModelCalls != 2 {
		t.Errorf("run usage %+v over %d calls", res.Usage, res.ModelCalls)
	}
	calls := evs.of(vm.ModelCall)
	if len(calls) != 2 || calls[0].Step != "sum" || calls[1].Usage.PromptTokens != 50 || calls[1].Model != "m1" {
		t.Errorf("model_call events: %+v", calls)
	}
	out := resultJSON(t, res) + evs.json()
	if strings.Contains(out, testKey) || strings.Contains(out, "OPENAI_API_KEY") {
		t.Errorf("the key leaked into the result or events:\n%s", out)
	}
	if !strings.Contains(resultJSON(t, res), `"usage":{"prompt_tokens":60,"completion_tokens":18,"attempts":3}`) {
		t.Errorf("no run usage in %s", resultJSON(t, res))
	}
}

func TestLLMStepModelError(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "bad", Replies: []modeltest.Reply{{Content: "not json"}}},
		modeltest.Rule{Match: "down", Replies: []modeltest.Reply{{Status: 503}}},
	)
	defer s.Close()
	var evs events
	res := run(t, `
fix = step("fix", llm = "bad", schema = {"type": "object"})
down = step("down", llm = "down", retries = 1, backoff = "1ms")
report = step("report", fn = lambda r: r.fix.code)
edge(START, fix)
edge(fix, END)
edge(fix, down, on = "failure")
edge(down, END)
edge(down, report, on = "failure")
edge(report, END)
`, nil, modelOpts(s, &evs))
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	fix, down := res.Step("fix"), res.Step("down")
	if fix.Code != "model_error" || !strings.Contains(fix.Error, "also after one repair") {
		t.Errorf("fix: %s %s", fix.Code, fix.Error)
	}
	if down.Code != "model_error" || !strings.Contains(down.Error, "HTTP 503") {
		t.Errorf("down: %s %s", down.Code, down.Error)
	}
	if got := res.Output.(starlark.String); got != "model_error" {
		t.Errorf("output %s", got)
	}
	n := 0
	for _, r := range s.Requests() {
		if r.LastUser() == "down" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("down was tried %d times, want 2 (retries = 1)", n)
	}
	retries := evs.of(vm.StepRetrying)
	if len(retries) != 1 || retries[0].Step != "down" || retries[0].Visit != 1 || retries[0].Attempt != 2 || !strings.Contains(retries[0].Error, "HTTP 503") {
		t.Errorf("step_retrying events: %+v", retries)
	}
}

// A model's reply whose value would be over the bound of one value (a
// million empty objects in 3 MB of JSON) is refused before it is decoded:
// the step fails with model_error naming the size (issue 9).
func TestLLMStepReplyTooBig(t *testing.T) {
	skipBigUnderRace(t)
	big := `{"items": [` + strings.Repeat("{},", 999999) + "{}]}"
	s := modeltest.New(modeltest.Rule{Match: "list", Replies: []modeltest.Reply{{Content: big}}})
	defer s.Close()
	res := run(t, `step("list", llm = "list them", schema = {"type": "object"})`, nil, modelOpts(s, nil))
	st := res.Step("list")
	if res.Status != vm.Failed || st.Code != "model_error" ||
		!strings.Contains(st.Error, "the reply cannot be used: decoding this JSON would make about 76.8 MiB (past the bound at byte 2516589); one value may take at most 64 MiB") {
		t.Errorf("status %s, step %s: %s", res.Status, st.Code, st.Error)
	}
}

const triage = `
flow(inputs = {"ticket": "x"})
escalate = step("escalate", fn = lambda r: "paged")
reply = step("reply", fn = lambda r: "replied")
%s
edge(START, pick)
edge(escalate, END)
edge(reply, END)
`

func TestLLMRouter(t *testing.T) {
	for _, tc := range []struct {
		name, answer, router string
		status               vm.Status
		code, label, output  string
	}{
		{"normalized", "Urgent.", `pick = router("pick", llm = "route {{ inputs.ticket }}", routes = {"urgent": escalate, "routine": reply}, default = reply)`, vm.Succeeded, "", "urgent", "paged"},
		{"json", `{"label": "routine"}`, `pick = router("pick", llm = "route {{ inputs.ticket }}", routes = {"urgent": escalate, "routine": reply}, default = reply)`, vm.Succeeded, "", "routine", "replied"},
		{"unknown takes default", "spam", `pick = router("pick", llm = "route {{ inputs.ticket }}", routes = {"urgent": escalate, "routine": reply}, default = reply)`, vm.Succeeded, "", "reply", "replied"},
		{"no default", "spam", `pick = router("pick", llm = "route {{ inputs.ticket }}", routes = {"urgent": escalate, "routine": reply})`, vm.Failed, "no_route", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: tc.answer}}})
			defer s.Close()
			res := run(t, strings.Replace(triage, "%s", tc.router, 1), map[string]any{"ticket": "db down"}, modelOpts(s, nil))
			if res.Status != tc.status {
				t.Fatalf("status %s: %v", res.Status, res.Error)
			}
			pick := res.Step("pick")
			if tc.code != "" {
				if string(res.Error.Code) != tc.code || !strings.Contains(res.Error.Msg, `the model answered "spam", which is none of "urgent", "routine"`) {
					t.Errorf("error %v", res.Error)
				}
			} else {
				if got := pick.Output.(starlark.String); string(got) != tc.label {
					t.Errorf("label %s, want %s", got, tc.label)
				}
				if got := res.Output.(starlark.String); string(got) != tc.output {
					t.Errorf("output %s", got)
				}
			}
			if pick.Answer != tc.answer || pick.Model != "m1" {
				t.Errorf("record: answer %q model %q", pick.Answer, pick.Model)
			}
			req := s.Requests()[0]
			if req.LastUser() != "route db down" {
				t.Errorf("prompt %q", req.LastUser())
			}
			rf := req.Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
			enum := rf["schema"].(map[string]any)["properties"].(map[string]any)["label"].(map[string]any)["enum"]
			if diff := cmp.Diff([]any{"urgent", "routine"}, enum); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

const judged = `
body = step("draft", llm = "draft {{ loop.iteration }} feedback={{ loop.feedback }}")
polish = loop("polish", body = [body], until = judge("the draft is short"), max_iterations = 3)
chain(START, polish, END)
`

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name       string
		verdicts   []modeltest.Reply
		iterations int
		reason     string
		exhausted  bool
		warning    bool
	}{
		{"stop", []modeltest.Reply{{Content: `{"verdict": "CONTINUE", "reason": "shorter"}`}, {Content: `{"verdict": "STOP", "reason": "ok"}`}}, 2, "until", false, false},
		{"plain text", []modeltest.Reply{{Content: "STOP - fine"}}, 1, "until", false, false},
		{"unrelated", []modeltest.Reply{{Content: `{"verdict": "UNRELATED", "reason": "drafts are not numbers"}`}}, 1, "condition_unrelated", false, true},
		{"unreadable continues", []modeltest.Reply{{Content: "hmm, hard to say"}}, 3, "exhausted", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := modeltest.New(
				modeltest.Rule{Match: "Condition: the draft is short", Replies: tc.verdicts},
				modeltest.Rule{Match: "draft", Replies: []modeltest.Reply{{Content: "a draft"}}},
			)
			defer s.Close()
			var evs events
			res := run(t, judged, nil, modelOpts(s, &evs))
			if res.Status != vm.Succeeded {
				t.Fatalf("status %s: %v", res.Status, res.Error)
			}
			l := res.Step("polish")
			if l.Iterations != tc.iterations || l.StoppedReason != tc.reason || l.Exhausted != tc.exhausted {
				t.Errorf("iterations %d stopped %q exhausted %v", l.Iterations, l.StoppedReason, l.Exhausted)
			}
			if (len(res.Warnings) > 0) != tc.warning {
				t.Errorf("warnings %q", res.Warnings)
			}
			if tc.warning && !strings.Contains(res.Warnings[0], `loop "polish": the judge found the condition "the draft is short" unrelated`) {
				t.Errorf("warning %q", res.Warnings[0])
			}
			if got := res.Output.(starlark.String); got != "a draft" {
				t.Errorf("output %s", got)
			}
			var judges, drafts []modeltest.Request
			for _, r := range s.Requests() {
				if strings.HasPrefix(r.LastUser(), "Condition:") {
					judges = append(judges, r)
				} else {
					drafts = append(drafts, r)
				}
			}
			if len(judges) != tc.iterations || len(drafts) != tc.iterations {
				t.Fatalf("%d judge and %d draft calls, want %d each (a judge after every iteration)", len(judges), len(drafts), tc.iterations)
			}
			if want := "Condition: the draft is short\n\nOutput of iteration 1:\na draft\n\nPrevious feedback: (none)"; judges[0].LastUser() != want {
				t.Errorf("judge prompt %q\nwant %q", judges[0].LastUser(), want)
			}
			rf := judges[0].Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
			if rf["name"] != "verdict" || rf["strict"] != true {
				t.Errorf("judge schema %v", rf)
			}
			if tc.name == "stop" {
				if got := drafts[1].LastUser(); got != "draft 2 feedback=shorter" {
					t.Errorf("second draft saw %q: the judge's reason is the next iteration's feedback", got)
				}
				if !strings.Contains(judges[1].LastUser(), "Previous feedback: shorter") {
					t.Errorf("second judge prompt %q", judges[1].LastUser())
				}
			}
			if l.Model != "m1" || l.Usage.Total() == 0 {
				t.Errorf("loop record: model %q usage %+v", l.Model, l.Usage)
			}
		})
	}
}

func TestBudgetAcrossChildFlow(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "ok", Prompt: 40, Completion: 10}}})
	defer s.Close()
	res := runFiles(t, map[string]string{
		"flow.star": `
flow(max_tokens = 120)
first = step("first", llm = "one")
child = step("child", flow = "child.star")
chain(START, first, child, END)
`,
		"child.star": `
a = step("a", llm = "two")
b = step("b", llm = "three")
c = step("c", llm = "four")
chain(START, a, b, c, END)
`}, nil, modelOpts(s, nil))
	if res.Status != vm.Failed || res.Error.Code != "budget_exceeded" {
		t.Fatalf("status %s: %v, want budget_exceeded", res.Status, res.Error)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d calls, want 3: the third overran 120 tokens", n)
	}
	if !strings.Contains(res.Error.Msg, "token budget of 120 exceeded: this call spent 50 (150 used)") {
		t.Errorf("message %q", res.Error.Msg)
	}
	// --max-tokens overrides the flow's budget.
	s2 := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "ok", Prompt: 40, Completion: 10}}})
	defer s2.Close()
	opts := modelOpts(s2, nil)
	opts.MaxTokens = 10_000
	res = runFiles(t, map[string]string{
		"flow.star":  "flow(max_tokens = 10)\nchain(START, step(\"a\", llm = \"x\"), step(\"b\", llm = \"y\"), END)\n",
		"child.star": "",
	}, nil, opts)
	if res.Status != vm.Succeeded {
		t.Errorf("with MaxTokens: %s %v", res.Status, res.Error)
	}
}

func TestModelCancelMidRequest(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "late", Delay: time.Minute}}})
	defer s.Close()
	g := load(t, map[string]string{"flow.star": `chain(START, step("slow", llm = "wait"), END)`})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(s.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := vm.Run(ctx, g, nil, modelOpts(s, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != vm.Cancelled || res.Step("slow").Status != vm.StepCancelled {
		t.Errorf("status %s, step %s", res.Status, res.Step("slow").Status)
	}
}

func TestModelCassetteReplay(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "route", Replies: []modeltest.Reply{{Content: `{"label": "urgent"}`}}},
	)
	path := filepath.Join(t.TempDir(), "c.json")
	src := strings.Replace(triage, "%s", `pick = router("pick", llm = "route {{ inputs.ticket }}", routes = {"urgent": escalate, "routine": reply}, default = reply)`, 1)
	rec, err := model.OpenCassette(path, false, &model.Client{})
	if err != nil {
		t.Fatal(err)
	}
	opts := modelOpts(s, nil)
	opts.Models = rec
	if res := run(t, src, map[string]any{"ticket": "db down"}, opts); res.Status != vm.Succeeded || res.Output.(starlark.String) != "paged" {
		t.Fatalf("recording: %s %v", res.Status, res.Error)
	}
	s.Close()
	rep, err := model.OpenCassette(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts = vm.Options{Env: []string{"SKEIN_MODEL=m1"}, Models: rep}
	if res := run(t, src, map[string]any{"ticket": "db down"}, opts); res.Status != vm.Succeeded || res.Output.(starlark.String) != "paged" {
		t.Errorf("replay: %s %v", res.Status, res.Error)
	}
	res := run(t, src, map[string]any{"ticket": "printer jam"}, opts)
	if res.Status != vm.Failed || res.Error.Code != "replay_miss" || res.Error.Step != "pick" {
		t.Errorf("miss: %s %v", res.Status, res.Error)
	}
}

// Model calls are effects: a scripted producer answers them, and the core
// reads its answers as it reads a live reply.
func TestModelEffectsScripted(t *testing.T) {
	var reqs []*vm.EffectRequest
	p := producerFunc(func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		reqs = append(reqs, q)
		switch q.Step {
		case "pick":
			done(&vm.EffectCompletion{OK: true, Answer: "ROUTINE!", Model: q.Chat.Model})
		default:
			done(&vm.EffectCompletion{Code: "step_failed", Error: "unexpected " + q.Step})
		}
	})
	src := strings.Replace(triage, "%s", `pick = router("pick", llm = "route {{ inputs.ticket }}", routes = {"urgent": escalate, "routine": reply})`, 1)
	res := run(t, src, map[string]any{"ticket": "t"}, vm.Options{Effects: p, Env: []string{"SKEIN_MODEL=m9"}})
	if res.Status != vm.Succeeded || res.Output.(starlark.String) != "replied" {
		t.Fatalf("%s %v", res.Status, res.Error)
	}
	if len(reqs) != 1 || reqs[0].Prompt != "route t" || reqs[0].Chat.Model != "m9" || reqs[0].Chat.Endpoint.KeyEnv != "OPENAI_API_KEY" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestCheckModels(t *testing.T) {
	g, err := lang.LoadSource("flow.star", []byte(`
model("claude", model = "claude-sonnet-4", base_url = "https://api.anthropic.com/v1/", api_key_env = "ANTHROPIC_API_KEY")
a = step("a", llm = "x", model = "claude")
b = step("b", llm = "y")
chain(START, a, b, END)
`), lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, `flow.star:3:5: step "a": model "claude" (claude-sonnet-4) at https://api.anthropic.com/v1/: set ANTHROPIC_API_KEY to its API key`},
		{[]string{"ANTHROPIC_API_KEY=k"}, `flow.star:4:5: step "b": no model configured: set SKEIN_MODEL to a model id`},
		{[]string{"ANTHROPIC_API_KEY=k", "SKEIN_MODEL=gpt-4o-mini"}, `flow.star:4:5: step "b": model "gpt-4o-mini" at https://api.openai.com/v1: set OPENAI_API_KEY to its API key`},
		{[]string{"ANTHROPIC_API_KEY=k", "SKEIN_MODEL=llama3", "SKEIN_BASE_URL=http://127.0.0.1:8080/v1"}, ""},
	} {
		err := vm.CheckModels(g, tc.env)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("env %v:\n got %q\nwant %q", tc.env, got, tc.want)
		}
	}
	_ = json.Valid
}

func TestJudgeFails(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "Condition:", Replies: []modeltest.Reply{{Status: 400, Raw: `{"error":{"message":"bad schema"}}`}}},
		modeltest.Rule{Match: "draft", Replies: []modeltest.Reply{{Content: "a draft"}}},
	)
	defer s.Close()
	res := run(t, judged, nil, modelOpts(s, nil))
	if res.Status != vm.Failed || res.Error.Code != "model_error" || res.Error.Step != "polish" {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	l := res.Step("polish")
	if l.Status != vm.StepFailed || !strings.Contains(l.Error, `judge after iteration 1: model "m1": HTTP 400: bad schema`) {
		t.Errorf("loop record: %s %q", l.Status, l.Error)
	}
}

// Model calls in map items run at once (within --parallel); records,
// usage and the budget stay consistent.
func TestModelCallsInMap(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "route", Replies: []modeltest.Reply{{Content: "odd", Prompt: 3, Completion: 1}}},
		modeltest.Rule{Replies: []modeltest.Reply{{Content: "hi", Prompt: 5, Completion: 2, Delay: 5 * time.Millisecond}}},
	)
	defer s.Close()
	opts := modelOpts(s, nil)
	opts.Parallel = 4
	res := run(t, `
flow(output = "each")
say = step("say", llm = "say {{ item }}")
pick = router("pick", llm = "route {{ item }}", routes = {"odd": "odd", "even": "even"}, default = "even")
odd = step("odd", fn = lambda r: "o")
even = step("even", fn = lambda r: "e")
each = map("each", over = "range(6)", body = [say, pick, odd, even], concurrency = 3)
edge(say, pick)
chain(START, each, END)
`, nil, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("%s: %v", res.Status, res.Error)
	}
	if res.ModelCalls != 12 || res.Usage != (model.Usage{PromptTokens: 6*5 + 6*3, CompletionTokens: 6*2 + 6*1, Attempts: 12}) {
		t.Errorf("%d calls, usage %+v", res.ModelCalls, res.Usage)
	}
	if got := res.Output.String(); got != `["o", "o", "o", "o", "o", "o"]` {
		t.Errorf("output %s", got)
	}
}

// TestCheckModelsChildren: the models of literal child flows, of a step
// and of a flow= tool, are checked before the run as the flow's own are.
func TestCheckModelsChildren(t *testing.T) {
	child := `
model("c", model = "m-child", api_key_env = "CHILD_KEY")
flow(output = "a")
a = step("a", llm = "x", model = "c")
chain(START, a, END)
`
	for _, tc := range []struct{ name, flow string }{
		{"step", `
s = step("s", flow = "child.star")
chain(START, s, END)
`},
		{"tool", `
model("m", model = "m1", base_url = "http://127.0.0.1:9/v1", api_key_env = "")
sum = tool("sum", flow = "child.star", help = "summarize")
a = step("a", agent = "go", model = "m", tools = [sum])
chain(START, a, END)
`},
	} {
		g := load(t, map[string]string{"flow.star": tc.flow, "child.star": child})
		err := vm.CheckModels(g, nil)
		if err == nil || !strings.Contains(err.Error(), `step "a": model "c" (m-child) at https://api.openai.com/v1: set CHILD_KEY to its API key`) {
			t.Errorf("%s: got %v", tc.name, err)
		}
		if err := vm.CheckModels(g, []string{"CHILD_KEY=k"}); err != nil {
			t.Errorf("%s: with the key set: %v", tc.name, err)
		}
	}
}

// With Stream, an llm= step's reply comes as model_delta events, in
// order, before the step ends, with the run's model keys masked even when
// a key is split over two pieces; the output is the one without
// streaming.
func TestLLMStreamEvents(t *testing.T) {
	reply := "the key is " + testKey + " ok"
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: reply, Chunks: []string{"the key ", "is sk-vm-", "test-SECRET", " ok"}, Prompt: 10, Completion: 4, Cached: 6}}})
	defer s.Close()
	src := `chain(START, step("say", llm = "say it"), END)`
	var plain events
	want := run(t, src, nil, modelOpts(s, &plain))
	var evs events
	opts := modelOpts(s, &evs)
	opts.Stream = true
	res := run(t, src, nil, opts)
	if res.Status != vm.Succeeded || res.Output != want.Output || res.Usage != want.Usage || res.Usage.CachedTokens != 6 {
		t.Fatalf("streamed: %s %v %v %+v; without: %v %+v", res.Status, res.Error, res.Output, res.Usage, want.Output, want.Usage)
	}
	if n := len(plain.of(vm.ModelDelta)); n != 0 {
		t.Errorf("%d model_delta events without Stream", n)
	}
	var text strings.Builder
	finished := false
	for _, ev := range evs.list {
		switch ev.Type {
		case vm.ModelDelta:
			if finished || ev.Step != "say" || ev.Kind != "llm" || ev.Visit != 1 || ev.Attempt != 1 {
				t.Errorf("model_delta %+v (after the step finished: %v)", ev, finished)
			}
			text.WriteString(ev.Message)
		case vm.StepFinished:
			finished = ev.Step == "say"
		}
	}
	if text.String() != "the key is *** ok" {
		t.Errorf("streamed text %q", text.String())
	}
	if out := evs.json(); strings.Contains(out, testKey) || !strings.Contains(out, `{"event":"model_delta",`) {
		t.Errorf("events:\n%s", out)
	}
	// The JSON form reads back.
	for _, ev := range evs.of(vm.ModelDelta) {
		back, err := vm.DecodeEvent(ev.AppendJSON(nil))
		if err != nil || back.Message != ev.Message || back.Attempt != ev.Attempt || back.Type != vm.ModelDelta {
			t.Errorf("decoded %+v, %v; want %+v", back, err, ev)
		}
	}
}
