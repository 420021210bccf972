package vm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// TestModelKeysNotInherited: tasks and an agent's tools do not see the key
// variables of the flow's models (an agent with a printenv tool would hand
// the key to the model, the record, the events and the cassette); a step
// that passes one with env= gets it.
func TestModelKeysNotInherited(t *testing.T) {
	const other = "sk-other-SECRET"
	s := modeltest.New(modeltest.Rule{Match: "look", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "env", Arguments: `{}`}}},
		{ToolCalls: []modeltest.ToolCall{{ID: "c2", Name: "leak", Arguments: `{}`}}},
		{Content: "done"},
	}})
	defer s.Close()
	var evs events
	opts := modelOpts(s, &evs)
	opts.Env = append(opts.Env, "OTHER_KEY="+other, "KEEP=kept")
	res := run(t, `
model("m", model = "m1", base_url = "`+s.BaseURL()+`")
model("o", model = "m2", base_url = "`+s.BaseURL()+`", api_key_env = "OTHER_KEY")
env = tool("env", run = ["printenv"])
leak = tool("leak", shell = "echo 'the key is `+other+`'")
look = step("look", agent = "look around", model = "m", tools = [env, leak])
task = step("task", run = ["printenv"])
passed = step("passed", run = ["printenv", "OTHER_KEY"], env = {"OTHER_KEY": "given"})
leaky = step("leaky", shell = "echo `+testKey+` >&2")
chain(START, look, task, passed, leaky, END)
`, nil, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	all := resultJSON(t, res) + evs.json()
	for _, r := range s.Requests() {
		all += r.Raw
	}
	for _, secret := range []string{testKey, other} {
		if strings.Contains(all, secret) {
			t.Errorf("key %q reached the record, events or a request to the model", secret)
		}
	}
	if !strings.Contains(all, "the key is ***") || !strings.Contains(all, "***") {
		t.Errorf("a printed key was not masked:\n%s", all)
	}
	if !strings.Contains(all, "KEEP=kept") || !strings.Contains(all, `"given`) {
		t.Errorf("the environment, or env=, did not reach the tasks:\n%s", all)
	}
}

// TestModelKeysAcrossChildFlows: a child flow's tasks do not inherit the
// keys of its parent's models, and where a child flow's file is a
// template (its models unknown until it loads), the parent's tasks do not
// inherit any *_API_KEY variable.
func TestModelKeysAcrossChildFlows(t *testing.T) {
	opts := vm.Options{Env: []string{"PARENT_KEY=parent-SECRET-1", "CHILD_API_KEY=child-SECRET-2", "KEEP=kept"}}
	res := runFiles(t, map[string]string{
		"flow.star": `
model("m", model = "m1", base_url = "http://127.0.0.1:9/v1", api_key_env = "PARENT_KEY")
flow(inputs = {"which": "child"}, output = "kid")
env = step("env", run = ["printenv"])
kid = step("kid", flow = "{{ inputs.which }}.star")
chain(START, env, kid, END)
`,
		"child.star": `
model("c", model = "m2", base_url = "http://127.0.0.1:9/v1", api_key_env = "CHILD_API_KEY")
flow(output = "env")
env = step("env", run = ["printenv"])
chain(START, env, END)
`}, nil, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	all := resultJSON(t, res)
	for _, secret := range []string{"parent-SECRET-1", "child-SECRET-2"} {
		if strings.Contains(all, secret) {
			t.Errorf("key %q reached a task:\n%s", secret, all)
		}
	}
	if strings.Count(all, "KEEP=kept") < 2 {
		t.Errorf("the environment did not reach both tasks:\n%s", all)
	}
}

// TestModelKeysMaskedLive: a task's live output (what a terminal or
// skein logs --follow shows as it prints) is masked as its record is.
func TestModelKeysMaskedLive(t *testing.T) {
	var out, errw strings.Builder
	opts := vm.Options{Env: []string{"LIVE_KEY=sk-live-SECRET-1"}, Effects: teeing{&out, &errw}}
	res := run(t, `
model("m", model = "m1", base_url = "http://127.0.0.1:9/v1", api_key_env = "LIVE_KEY")
t = step("t", shell = "echo 'key: sk-live-SECRET-1 end'; echo sk-live-SECRET-1 >&2")
chain(START, t, END)
`, nil, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if out.String() != "key: *** end\n" || errw.String() != "***\n" {
		t.Errorf("live output: stdout %q, stderr %q", out.String(), errw.String())
	}
}

// TestModelKeysMaskedInErrors: a server that echoes the key it was sent
// in its error message (as OpenAI's 401 does) does not put it in the
// record or the events: neither the step's error nor a retry's event
// holds it (issue 26).
func TestModelKeysMaskedInErrors(t *testing.T) {
	echo := `{"error":{"message":"Incorrect API key provided: ` + testKey + `"}}`
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Status: 500, Raw: echo}, {Status: 401, Raw: echo}}})
	defer s.Close()
	var evs events
	opts := modelOpts(s, &evs)
	res := run(t, `
a = step("a", llm = "hi", retries = 1, backoff = "1ms")
chain(START, a, END)
`, nil, opts)
	if res.Status != vm.Failed {
		t.Fatalf("status %s, want failed", res.Status)
	}
	all := resultJSON(t, res) + evs.json()
	if strings.Contains(all, testKey) {
		t.Errorf("the key reached the record or the events:\n%s", all)
	}
	if !strings.Contains(all, "Incorrect API key provided: ***") {
		t.Errorf("the error was not kept, masked:\n%s", all)
	}
}

// rendering records what each attempt rendered, by step, and runs it.
type rendering struct {
	mu   sync.Mutex
	seen map[string][]*vm.Rendered
}

func (p *rendering) Start(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	p.mu.Lock()
	p.seen[q.Step] = append(p.seen[q.Step], q.Rendered())
	p.mu.Unlock()
	vm.Local{}.Start(ctx, q, done)
}

// TestRenderedMasked: an attempt's rendered argv and model messages are
// those after the templates, with the run's model keys masked, and an
// agent's later turns render nothing (its first holds the messages); a
// child flow's are the inputs it was given.
func TestRenderedMasked(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "look", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "say", Arguments: `{"word": "` + testKey + `"}`}}},
		{Content: "done"},
	}}, modeltest.Rule{Replies: []modeltest.Reply{{Content: "ok"}}})
	defer s.Close()
	opts := modelOpts(s, nil)
	p := &rendering{seen: map[string][]*vm.Rendered{}}
	opts.Effects = p
	res := runFiles(t, map[string]string{"flow.star": `
flow(inputs = {"who": input(type = "string")})
say = tool("say", run = ["echo", "{{ args.word }}"], params = {"word": "string"})
task = step("task", run = ["echo", "hello {{ inputs.who }}"])
ask = step("ask", llm = "tell {{ inputs.who }}", system = "be brief")
look = step("look", agent = "look", tools = [say])
kid = step("kid", flow = "child.star", inputs = {"name": "{{ inputs.who }}", "n": 2})
chain(START, task, ask, look, kid, END)
`, "child.star": `
flow(inputs = {"name": input(type = "string"), "n": input(1)})
`}, map[string]any{"who": "Ann " + testKey}, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	masked := "Ann ***"
	want := map[string][]*vm.Rendered{
		"task": {{Argv: []string{"echo", "hello " + masked}}},
		"ask":  {{Messages: []vm.RenderedMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "tell " + masked}}}},
		"look": {{Messages: []vm.RenderedMessage{{Role: "user", Content: "look"}}}, {Argv: []string{"echo", "***"}}, nil},
		"kid":  {{Inputs: json.RawMessage(`{"n":2,"name":"` + masked + `"}`)}},
	}
	if diff := cmp.Diff(want, p.seen); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
}

// What an attempt ran is recorded bounded: a big templated argument keeps
// its start and end with what was cut, and a child's inputs over the bound
// are left out (the child's own record has them).
func TestRenderedBounded(t *testing.T) {
	p := &rendering{seen: map[string][]*vm.Rendered{}}
	big := strings.Repeat("x", 100<<10) + "END" // under one argument's limit (128 KiB)
	res := runFiles(t, map[string]string{"flow.star": `
flow(inputs = {"big": input(type = "string")})
task = step("task", run = ["echo", "{{ inputs.big }}"])
kid = step("kid", flow = "child.star", inputs = {"name": "{{ inputs.big }}"})
chain(START, task, kid, END)
`, "child.star": `
flow(inputs = {"name": input(type = "string")})
`}, map[string]any{"big": big}, vm.Options{Effects: p})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	arg := p.seen["task"][0].Argv[1]
	if len(arg) > vm.MaxRendered+100 || !strings.HasPrefix(arg, "xxx") || !strings.HasSuffix(arg, "END") || !strings.Contains(arg, "bytes cut") {
		t.Errorf("recorded argument of %d bytes (%q…)", len(arg), arg[:40])
	}
	if r := p.seen["kid"]; len(r) != 1 || r[0] != nil {
		t.Errorf("kid's rendered record %+v, want none (its inputs are over the bound)", r)
	}
}
