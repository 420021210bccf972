package vm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// toolMessages returns the tool messages of a request, as call id -> content.
func toolMessages(r modeltest.Request) map[string]string {
	out := map[string]string{}
	for _, x := range messages(r) {
		m, _ := x.(map[string]any)
		if m["role"] == "tool" {
			id, _ := m["tool_call_id"].(string)
			c, _ := m["content"].(string)
			out[id] = c
		}
	}
	return out
}

// toolNames returns the names of the functions a request offers.
func toolNames(r modeltest.Request) []string {
	var out []string
	tools, _ := r.Body["tools"].([]any)
	for _, x := range tools {
		f, _ := x.(map[string]any)["function"].(map[string]any)
		out = append(out, f["name"].(string))
	}
	return out
}

const agentTools = `
read_file = tool("read_file", run = ["cat", "{{ args.path }}"], params = {"path": "string"}, help = "print a file")
echo = tool("echo", run = ["printf", "[%s]", "{{ args.text }}"], params = {"text": "string"})
fails = tool("fails", shell = "echo broken >&2; exit 3")
`

func TestAgentToolRoundTrip(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "fix", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path": "flow.star"}`}}},
		{Content: "done: it declares tools"},
	}})
	defer s.Close()
	var evs events
	res := run(t, agentTools+`
fix = step("fix", agent = "fix the {{ 'build' }}", system = "You fix builds.", tools = [read_file])
chain(START, fix, END)
`, nil, modelOpts(s, &evs))
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if res.Output != starlark.String("done: it declares tools") {
		t.Errorf("output %v", res.Output)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	def, _ := reqs[0].Body["tools"].([]any)
	want := []any{map[string]any{"type": "function", "function": map[string]any{"name": "read_file", "description": "print a file",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}},
			"required": []any{"path"}, "additionalProperties": false}}}}
	if d := cmp.Diff(want, def); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	msgs := messages(reqs[1])
	if len(msgs) != 4 {
		t.Fatalf("second request has %d messages, want system, user, assistant, tool: %v", len(msgs), msgs)
	}
	asst := msgs[2].(map[string]any)
	if asst["role"] != "assistant" || asst["content"] != nil {
		t.Errorf("assistant message %v (content must be null)", asst)
	}
	if calls, _ := asst["tool_calls"].([]any); len(calls) != 1 || calls[0].(map[string]any)["id"] != "c1" {
		t.Errorf("tool_calls %v", asst["tool_calls"])
	}
	if got := toolMessages(reqs[1])["c1"]; !strings.Contains(got, `tool("read_file"`) {
		t.Errorf("tool result %q does not hold the file", got)
	}
	rec := res.Step("fix").Agent
	if rec == nil || rec.Turns != 2 || len(rec.ToolCalls) != 1 || !rec.ToolCalls[0].OK || rec.ToolCalls[0].Args != `{"path":"flow.star"}` {
		t.Fatalf("agent record %+v", rec)
	}
	if len(rec.Conversation) != 5 || rec.Conversation[4].Content != "done: it declares tools" {
		t.Errorf("conversation %+v", rec.Conversation)
	}
	tc := evs.of(vm.ToolCalled)
	if len(tc) != 1 || tc[0].Tool != "read_file" || tc[0].Step != "fix" || tc[0].Status != "succeeded" || !strings.Contains(tc[0].Result, "read_file") {
		t.Errorf("tool_call events %+v", tc)
	}
	if res.ModelCalls != 2 || len(evs.of(vm.ModelCall)) != 2 {
		t.Errorf("model calls %d", res.ModelCalls)
	}
	// The turn that called a tool says how many it called, in its event's
	// JSON too (what spans' finish reasons read, on either engine).
	if mc := evs.of(vm.ModelCall); len(mc) == 2 {
		if mc[0].Calls != 1 || mc[1].Calls != 0 {
			t.Errorf("model_call events' tool calls %d, %d, want 1, 0", mc[0].Calls, mc[1].Calls)
		}
		b := mc[0].AppendJSON(nil)
		if back, err := vm.DecodeEvent(b); err != nil || back.Calls != 1 || !strings.Contains(string(b), `"tool_calls":1`) {
			t.Errorf("model_call JSON %s read back with %d tool calls (%v)", b, back.Calls, err)
		}
		if b := mc[1].AppendJSON(nil); strings.Contains(string(b), "tool_calls") {
			t.Errorf("a turn without tool calls says tool_calls: %s", b)
		}
	}
	j := resultJSON(t, res)
	if !strings.Contains(j, `"agent":{"turns":2`) || !strings.Contains(j, `"tool_calls":[{"turn":1,"id":"c1","tool":"read_file"`) {
		t.Errorf("result JSON lacks the agent record: %s", j)
	}
	if ev := string(tc[0].AppendJSON(nil)); !strings.Contains(ev, `"event":"tool_call"`) || !strings.Contains(ev, `"arguments":"{\"path\":\"flow.star\"}"`) {
		t.Errorf("event JSON %s", ev)
	}
}

// TestAgentParallelFailingInvalidHostile: several tool calls in one reply
// all run, and their results go back in the order of the calls; a failing
// tool, arguments that violate params and an unknown tool are told to the
// model; a hostile argument stays one argv element.
func TestAgentParallelFailingInvalidHostile(t *testing.T) {
	hostile := `a b; rm -rf / $(touch pwned) "q"`
	args, _ := json.Marshal(map[string]string{"text": hostile})
	s := modeltest.New(modeltest.Rule{Match: "go", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{
			{ID: "a", Name: "echo", Arguments: string(args)},
			{ID: "b", Name: "fails", Arguments: `{}`},
			{ID: "c", Name: "read_file", Arguments: `{"path": 7}`},
			{ID: "d", Name: "read_file", Arguments: `{"path": "x", "mode": "rw"}`},
			{ID: "e", Name: "reed_file", Arguments: `{}`},
			{ID: "f", Name: "read_file", Arguments: `not json`},
		}},
		{Content: "ok"},
	}})
	defer s.Close()
	var evs events
	res := run(t, agentTools+`
a = step("a", agent = "go", tools = [read_file, echo, fails])
chain(START, a, END)
`, nil, vm.Options{Env: modelOpts(s, nil).Env, OnEvent: evs.add, Parallel: 4})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := toolMessages(reqs[1])
	if got["a"] != "["+hostile+"]" {
		t.Errorf("hostile argument: %q, want one argv element %q", got["a"], "["+hostile+"]")
	}
	if !strings.HasPrefix(got["b"], "the tool failed (exit code 3)") || !strings.Contains(got["b"], "broken") {
		t.Errorf("failing tool: %q", got["b"])
	}
	if !strings.Contains(got["c"], "do not match its parameters") || !strings.Contains(got["d"], "do not match its parameters") {
		t.Errorf("invalid arguments: %q / %q", got["c"], got["d"])
	}
	if !strings.Contains(got["e"], `no tool "reed_file"`) || !strings.Contains(got["e"], `did you mean "read_file"`) {
		t.Errorf("unknown tool: %q", got["e"])
	}
	if !strings.Contains(got["f"], "not a JSON object") {
		t.Errorf("bad JSON: %q", got["f"])
	}
	// The order of the tool messages is the order of the calls.
	var order []string
	for _, x := range messages(reqs[1]) {
		if m := x.(map[string]any); m["role"] == "tool" {
			order = append(order, m["tool_call_id"].(string))
		}
	}
	if d := cmp.Diff([]string{"a", "b", "c", "d", "e", "f"}, order); d != "" {
		t.Errorf("tool message order (-want +got):\n%s", d)
	}
	rec := res.Step("a").Agent
	oks := map[string]bool{}
	codes := map[string]string{}
	for _, c := range rec.ToolCalls {
		oks[c.ID], codes[c.ID] = c.OK, string(c.Code)
	}
	if !oks["a"] || oks["b"] || oks["c"] || codes["c"] != "invalid_arguments" || codes["e"] != "unknown_tool" {
		t.Errorf("records %+v", rec.ToolCalls)
	}
	if n := len(evs.of(vm.ToolCalled)); n != 6 {
		t.Errorf("%d tool_call events, want 6", n)
	}
}

func TestAgentMaxTurns(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "loop", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{Name: "echo", Arguments: `{"text": "again"}`}}},
	}})
	defer s.Close()
	res := run(t, agentTools+`
a = step("a", agent = "loop forever", tools = [echo], max_turns = 3)
b = step("b")
chain(START, a, END)
edge(a, b, on = "failure")
`, nil, modelOpts(s, nil))
	if rec := res.Step("a"); rec.Status != vm.StepFailed || rec.Code != "max_turns" || !strings.Contains(rec.Error, "max_turns 3") {
		t.Fatalf("a: %s %s %s", rec.Status, rec.Code, rec.Error)
	}
	if res.Step("b").Status != vm.StepSucceeded {
		t.Errorf("the failure was not routed")
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
	if rec := res.Step("a").Agent; rec.Turns != 3 || len(rec.ToolCalls) != 2 {
		t.Errorf("turns %d, tool calls %d (the last turn's calls do not run)", rec.Turns, len(rec.ToolCalls))
	}
}

func TestAgentSchemaAnswer(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "judge", Replies: []modeltest.Reply{
		{Content: `{"verdict": 3}`},
		{Content: `{"verdict": "fixed"}`},
	}})
	defer s.Close()
	res := run(t, `
a = step("a", agent = "judge it", schema = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]})
use = step("use", fn = lambda r: r.a.verdict)
chain(START, a, use, END)
`, nil, modelOpts(s, nil))
	if res.Status != vm.Succeeded || res.Output != starlark.String("fixed") {
		t.Fatalf("status %s output %v: %v", res.Status, res.Output, res.Error)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastUser(), "does not match the required JSON schema") {
		t.Errorf("no repair turn: %d requests", len(reqs))
	}
	if rf, _ := reqs[0].Body["response_format"].(map[string]any); rf["type"] != "json_schema" {
		t.Errorf("response_format %v", reqs[0].Body["response_format"])
	}
}

// TestAgentGrants: request_tool grants a confirmed request for a pool
// tool to the step and to later agent steps, at most max_grants per run;
// unconfirmed and out-of-pool requests are refused and recorded.
func TestAgentGrants(t *testing.T) {
	req := func(name string, confirmed bool) string {
		b, _ := json.Marshal(map[string]any{"name": name, "reason": "need it", "confirmed": confirmed})
		return string(b)
	}
	s := modeltest.New(
		modeltest.Rule{Match: "first", Replies: []modeltest.Reply{
			{ToolCalls: []modeltest.ToolCall{
				{ID: "u", Name: "request_tool", Arguments: req("echo", false)},
				{ID: "o", Name: "request_tool", Arguments: req("rm_rf", true)},
				{ID: "e0", Name: "echo", Arguments: `{"text": "early"}`},
			}},
			{ToolCalls: []modeltest.ToolCall{{ID: "g", Name: "request_tool", Arguments: req("echo", true)}}},
			{ToolCalls: []modeltest.ToolCall{{ID: "e", Name: "echo", Arguments: `{"text": "hi"}`}}},
			{Content: "first done"},
		}},
		modeltest.Rule{Match: "second", Replies: []modeltest.Reply{
			{ToolCalls: []modeltest.ToolCall{{ID: "x", Name: "request_tool", Arguments: req("fails", true)}}},
			{Content: "second done"},
		}},
	)
	defer s.Close()
	var evs events
	res := run(t, agentTools+`
flow(tools = [echo, fails], max_grants = 1)
a = step("a", agent = "first", tools = [read_file])
b = step("b", agent = "second", tools = [read_file])
chain(START, a, b, END)
`, nil, vm.Options{Env: modelOpts(s, nil).Env, OnEvent: evs.add, Parallel: 1})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	reqs := s.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	if d := cmp.Diff([]string{"read_file", "request_tool"}, toolNames(reqs[0])); d != "" {
		t.Errorf("first offer (-want +got):\n%s", d)
	}
	r1 := toolMessages(reqs[1])
	if !strings.Contains(r1["u"], "not granted: the request was not confirmed") || !strings.Contains(r1["o"], `not granted: "rm_rf" is not among`) {
		t.Errorf("refusals: %q / %q", r1["u"], r1["o"])
	}
	if !strings.Contains(r1["e0"], `no tool "echo"`) {
		t.Errorf("a tool not granted yet ran: %q", r1["e0"])
	}
	if !strings.HasPrefix(toolMessages(reqs[2])["g"], "granted") {
		t.Errorf("grant: %q", toolMessages(reqs[2])["g"])
	}
	if d := cmp.Diff([]string{"read_file", "echo", "request_tool"}, toolNames(reqs[2])); d != "" {
		t.Errorf("offer after the grant (-want +got):\n%s", d)
	}
	if got := toolMessages(reqs[3])["e"]; got != "[hi]" {
		t.Errorf("the granted tool: %q", got)
	}
	// The later agent step has the grant too; the pool's other tool is past max_grants.
	if d := cmp.Diff([]string{"read_file", "echo", "request_tool"}, toolNames(reqs[4])); d != "" {
		t.Errorf("second step's offer (-want +got):\n%s", d)
	}
	if got := toolMessages(reqs[5])["x"]; !strings.Contains(got, "max_grants of 1") {
		t.Errorf("beyond max_grants: %q", got)
	}
	if d := cmp.Diff([]vm.Grant{{Step: "a", Tool: "echo", Reason: "need it", Turn: 2}}, res.Grants); d != "" {
		t.Errorf("grants (-want +got):\n%s", d)
	}
	if len(res.Findings) != 3 || len(res.Step("a").Agent.Findings) != 2 || len(res.Step("b").Agent.Findings) != 1 {
		t.Errorf("findings %q", res.Findings)
	}
	if g := evs.of(vm.ToolGranted); len(g) != 1 || g[0].Tool != "echo" || g[0].Step != "a" {
		t.Errorf("tool_granted events %+v", g)
	}
	if j := resultJSON(t, res); !strings.Contains(j, `"grants":[{"step":"a","tool":"echo"`) || !strings.Contains(j, `"findings":[`) {
		t.Errorf("result JSON: %s", j)
	}
}

// TestAgentFnTool: an fn= tool is a function of its validated arguments;
// what it returns goes back to the model, what it raises is its failure.
func TestAgentFnTool(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "count", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{
			{ID: "a", Name: "words", Arguments: `{"text": "one two three"}`},
			{ID: "b", Name: "words", Arguments: `{"text": ""}`},
		}},
		{Content: "3"},
	}})
	defer s.Close()
	res := run(t, `
def words(args):
    if not args.text:
        fail("empty text")
    return {"n": len(args.text.split())}
count = tool("words", fn = words, params = {"text": "string"})
a = step("a", agent = "count the words", tools = [count])
chain(START, a, END)
`, nil, modelOpts(s, nil))
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	got := toolMessages(s.Requests()[1])
	if got["a"] != `{"n":3}` || !strings.Contains(got["b"], "the tool failed") || !strings.Contains(got["b"], "empty text") {
		t.Errorf("fn tool results %q", got)
	}
}

// TestAgentFlowTool: a flow= tool runs its child flow once per call, the
// validated arguments as the child's inputs; the child's output goes back
// to the model, its failure as the tool's error; the child's steps report
// under the tool call.
func TestAgentFlowTool(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "count", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{
			{ID: "a", Name: "words", Arguments: `{"text": "one two three", "times": 2}`},
			{ID: "b", Name: "words", Arguments: `{"text": "boom", "times": 1}`},
			{ID: "c", Name: "words", Arguments: `{"text": "x", "times": "2"}`},
		}},
		{Content: "6"},
	}})
	defer s.Close()
	var evs events
	res := runFiles(t, map[string]string{
		"flow.star": `
words = tool("words", flow = "sub/count.star", params = {"text": "string", "times": "integer"}, help = "count words")
a = step("a", agent = "count the words", tools = [words])
chain(START, a, END)
`,
		"sub/count.star": `
flow(inputs = {"text": input(type = "string"), "times": input(type = "int")}, output = "count")
check = step("check", run = ["sh", "-c", 'test "$1" != boom || { echo "no booms" >&2; exit 4; }', "check", "{{ inputs.text }}"])
count = step("count", fn = lambda r: {"words": len(r.inputs.text.split()) * r.inputs.times})
chain(START, check, count, END)
`,
	}, nil, vm.Options{Env: modelOpts(s, nil).Env, OnEvent: evs.add, Parallel: 4})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	got := toolMessages(s.Requests()[1])
	if got["a"] != `{"words":6}` {
		t.Errorf("child output: %q", got["a"])
	}
	if !strings.HasPrefix(got["b"], "the tool failed (step_failed)\n") || !strings.Contains(got["b"], "child flow count failed") || !strings.Contains(got["b"], "check") {
		t.Errorf("child failure: %q", got["b"])
	}
	if !strings.HasSuffix(got["b"], "stderr of step \"check\":\nno booms\n") {
		t.Errorf("child failure lacks the failed step's stderr: %q", got["b"])
	}
	if !strings.Contains(got["c"], "do not match its parameters") {
		t.Errorf("invalid arguments: %q", got["c"])
	}
	rec := res.Step("a").Agent
	if len(rec.ToolCalls) != 3 {
		t.Fatalf("tool calls %+v", rec.ToolCalls)
	}
	var flows []string
	for _, ev := range evs.of(vm.StepFinished) {
		if ev.Step == "count" {
			flows = append(flows, strings.Join(ev.Flow, "/"))
		}
	}
	if d := cmp.Diff([]string{"a@1.1/words"}, flows); d != "" {
		t.Errorf("child step events under (-want +got):\n%s", d)
	}
	tc := evs.of(vm.ToolCalled)
	if len(tc) != 3 {
		t.Fatalf("%d tool_call events", len(tc))
	}
	for _, ev := range tc {
		if ev.Tool != "words" || len(ev.Flow) != 0 {
			t.Errorf("tool_call event %+v", ev)
		}
	}
}

// TestAgentFlowToolCycleAtRunTime: a flow= tool whose child is already
// running higher up the chain (reached through a templated child path
// the loader could not follow) stops the run with subflow_cycle, as a
// child-flow step would.
func TestAgentFlowToolCycleAtRunTime(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "loop back", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "b", Name: "back", Arguments: `{"kid": "kid"}`}}},
		{Content: "never"},
	}})
	defer s.Close()
	res := runFiles(t, map[string]string{
		"flow.star": `
flow(inputs = {"kid": "kid"})
sub = step("sub", flow = "{{ inputs.kid }}.star")
chain(START, sub, END)
`,
		"kid.star": `
back = tool("back", flow = "flow.star", params = {"kid": "string"})
a = step("a", agent = "loop back", tools = [back])
chain(START, a, END)
`,
	}, nil, modelOpts(s, nil))
	if res.Status != vm.Failed || res.Error == nil || res.Error.Code != "subflow_cycle" || !strings.Contains(res.Error.Msg, `tool "back" of step "a"`) {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d model calls after the cycle, want 1", n)
	}
}

// An agent's tool call whose arguments, and a final answer whose object,
// would be over the bound of one value (a million empty objects in 3 MB
// of JSON) are refused before they are decoded, with the size, and the
// model is told so (issue 9).
func TestAgentTooBig(t *testing.T) {
	skipBigUnderRace(t)
	pad := "[" + strings.Repeat("{},", 999999) + "{}]"
	s := modeltest.New(modeltest.Rule{Match: "go", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "a", Name: "echo", Arguments: `{"text": "x", "pad": ` + pad + `}`}}},
		{Content: `{"verdict": "fixed", "pad": ` + pad + `}`},
		{Content: `{"verdict": "fixed"}`},
	}})
	defer s.Close()
	res := run(t, agentTools+`
a = step("a", agent = "go", tools = [echo], schema = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]})
use = step("use", fn = lambda r: r.a.verdict)
chain(START, a, use, END)
`, nil, modelOpts(s, nil))
	if res.Status != vm.Succeeded || res.Output != starlark.String("fixed") {
		t.Fatalf("status %s output %v: %v", res.Status, res.Output, res.Error)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	const size = "cannot be used: decoding this JSON would make about 76.8 MiB (past the bound at byte "
	if got := toolMessages(reqs[1])["a"]; !strings.Contains(got, "error: the arguments of echo "+size) {
		t.Errorf("tool message: %.300s", got)
	}
	if got := reqs[2].LastUser(); !strings.Contains(got, "does not match the required JSON schema: the reply "+size) {
		t.Errorf("repair message: %.300s", got)
	}
	if c := res.Step("a").Agent.ToolCalls; len(c) != 1 || c[0].Code != "invalid_arguments" {
		t.Errorf("tool call records %+v", c)
	}
}

// toolDecider answers the approvals of tool calls: approved unless the
// message says "danger", or parked when park is set; everything else runs
// here. It keeps the messages it was asked.
type toolDecider struct {
	park bool
	mu   sync.Mutex
	asks []*vm.EffectRequest
}

func (d *toolDecider) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.Kind != graphir.KindApproval {
		vm.Local{}.Start(ctx, req, done)
		return
	}
	d.mu.Lock()
	d.asks = append(d.asks, req)
	d.mu.Unlock()
	switch {
	case d.park:
		done(&vm.EffectCompletion{Park: true})
	case strings.Contains(req.Message, "danger"):
		done(vm.ApprovalDecision(false, "ann", "too risky", time.Now(), nil))
	default:
		done(vm.ApprovalDecision(true, "ann", "", time.Now(), nil))
	}
}

// TestAgentToolApproval: a tool with approve= runs only once a person
// approves the call; a rejection goes back to the model as the call's
// result, with the reason, and the tool never runs; a call with no
// decision parks the run, the agent step waiting.
func TestAgentToolApproval(t *testing.T) {
	flow := `
shell_tool = tool("sh", run = ["sh", "-c", "{{ args.cmd }}"], params = {"cmd": "string"}, approve = "Run {{ args.cmd }}?")
fix = step("fix", agent = "fix it", tools = [shell_tool])
chain(START, fix, END)
`
	dir := t.TempDir()
	s := modeltest.New(modeltest.Rule{Match: "fix", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{
			{ID: "a", Name: "sh", Arguments: `{"cmd": "echo safe > ` + dir + `/safe; echo ran"}`},
			{ID: "b", Name: "sh", Arguments: `{"cmd": "echo danger > ` + dir + `/danger"}`},
		}},
		{Content: "done"},
	}})
	defer s.Close()
	d := &toolDecider{}
	opts := modelOpts(s, nil)
	opts.Effects = d
	res := run(t, flow, nil, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if len(d.asks) != 2 || d.asks[0].Message != "Run echo safe > "+dir+"/safe; echo ran?" || d.asks[0].Step != "sh" ||
		strings.Join(d.asks[0].Scope, "/") != "fix@1.1" || d.asks[1].ToolCallID != "b" {
		t.Fatalf("asked %+v", d.asks)
	}
	got := toolMessages(s.Requests()[1])
	if got["a"] != "ran\n" {
		t.Errorf("approved call's result %q", got["a"])
	}
	if got["b"] != "the call was not run: rejected by ann: too risky" {
		t.Errorf("rejected call's result %q", got["b"])
	}
	if _, err := os.Stat(filepath.Join(dir, "danger")); err == nil {
		t.Errorf("the rejected call ran")
	}
	rec := res.Step("fix").Agent
	if len(rec.ToolCalls) != 2 || rec.ToolCalls[0].ID != "b" || rec.ToolCalls[0].Code != "rejected" || rec.ToolCalls[0].OK || !rec.ToolCalls[1].OK {
		t.Errorf("tool call records %+v", rec.ToolCalls)
	}

	// Nobody decides: the run parks, the agent waiting on the call.
	s2 := modeltest.New(modeltest.Rule{Match: "fix", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "a", Name: "sh", Arguments: `{"cmd": "echo hi"}`}}},
		{Content: "done"},
	}})
	defer s2.Close()
	opts = modelOpts(s2, nil)
	opts.Effects = &toolDecider{park: true}
	res = run(t, flow, nil, opts)
	if res.Status != vm.Waiting || res.Step("fix").Status != vm.StepWaiting {
		t.Fatalf("status %s, fix %s; want waiting", res.Status, res.Step("fix").Status)
	}
	if len(res.Pending) != 1 || res.Pending[0].Step != "sh" || strings.Join(res.Pending[0].Scope, "/") != "fix@1.1" || res.Pending[0].Message != "Run echo hi?" {
		t.Errorf("pending %+v", res.Pending)
	}
	if n := len(s2.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
}

// TestAgentToolEnv: tool(env=) sets variables in the tool's process, for
// run= and shell= tools, rendered from the flow's inputs.
func TestAgentToolEnv(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Match: "show", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{
			{ID: "a", Name: "show_run", Arguments: `{}`},
			{ID: "b", Name: "show_sh", Arguments: `{"text": "hi"}`},
		}},
		{Content: "ok"},
	}})
	defer s.Close()
	res := run(t, `
flow(inputs = {"who": "ann"})
show_run = tool("show_run", run = ["sh", "-c", 'printf "[%s]" "$WHO"'], env = {"WHO": "{{ inputs.who }}"})
show_sh = tool("show_sh", shell = 'printf "[%s %s]" "$WHO" "$ARG_TEXT"', params = {"text": "string"}, env = {"WHO": "{{ inputs.who }}!"})
a = step("a", agent = "show it", tools = [show_run, show_sh])
chain(START, a, END)
`, nil, modelOpts(s, nil))
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	got := toolMessages(s.Requests()[1])
	if got["a"] != "[ann]" || got["b"] != "[ann! hi]" {
		t.Errorf("tool results %q", got)
	}
}
