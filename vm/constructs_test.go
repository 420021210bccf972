package vm_test

// Scenario tests of the constructs of docs/runs.md beyond the basics:
// maps over empty lists and timers that wait until a time.

import (
	"testing"
	"time"

	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

func TestMapEmptySkip(t *testing.T) {
	// empty = "skip": the map is skipped and what only it leads to too;
	// a join = "done" step still runs and reads why.
	res := run(t, `
flow(output = "report")
w = step("w", fn = lambda r: r.item)
m = map("m", over = "[]", body = [w], empty = "skip")
publish = step("publish", fn = lambda r: r.m)
report = step("report", fn = lambda r: [r.status("m"), r.status("publish")], join = "done")
chain(START, m, publish, report, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{"skipped", "skipped"}, path: []string{"m", "report"}})

	// Over a list with items it runs as any map.
	res = run(t, `
flow(output = "m")
w = step("w", fn = lambda r: r.item * 2)
m = map("m", over = "[1, 2]", body = [w], empty = "skip")
chain(START, m, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{2.0, 4.0}})
}

func TestWaitUntil(t *testing.T) {
	src := `
flow(inputs = {"at": None})
w = step("w", wait_until = "{{ inputs.at }}")
`
	// A time to come: the step waits until then.
	at := time.Now().Add(400 * time.Millisecond)
	res := run(t, src, map[string]any{"at": at.Format(time.RFC3339Nano)}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if now := time.Now(); now.Before(at) {
		t.Errorf("the run ended at %s, before %s", now.Format(time.StampMilli), at.Format(time.StampMilli))
	}
	// A time past: no wait.
	res = run(t, src, map[string]any{"at": "2020-01-01T00:00:00Z"}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	fast(t, res, 200*time.Millisecond)
	// Not a time: the step fails, and can be routed.
	res = run(t, src, map[string]any{"at": "soon"}, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "w", msg: `wait_until: want a time in RFC 3339 such as "2026-12-24T09:00:00Z", got "soon"`})
	// Its timeout holds.
	res = run(t, `
w = step("w", wait_until = "2999-01-01T00:00:00Z", timeout = "200ms")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "timeout", step: "w"})
}

func TestToolFinal(t *testing.T) {
	// A final tool's result is the answer: the model is not called again,
	// and a failing call of it goes back to the model as any tool's.
	s := modeltest.New(modeltest.Rule{Match: "search", Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "answer", Arguments: `{"text": ""}`}}},
		{ToolCalls: []modeltest.ToolCall{{ID: "c2", Name: "note", Arguments: `{"text": "a"}`}, {ID: "c3", Name: "answer", Arguments: `{"text": "42"}`}}},
		{Content: "never asked"},
	}})
	defer s.Close()
	res := run(t, `
def answer(args):
    if args.text == "":
        fail("empty answer")
    return {"answer": args.text}
note = tool("note", run = ["printf", "%s", "{{ args.text }}"], params = {"text": "string"})
answer_tool = tool("answer", fn = answer, params = {"text": "string"}, final = True)
a = step("a", agent = "search", tools = [note, answer_tool])
chain(START, a, END)
`, nil, modelOpts(s, nil))
	check(t, res, want{status: vm.Succeeded, output: map[string]any{"answer": "42"}})
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (the final tool ends the step)", n)
	}
	if calls := res.Step("a").Agent.ToolCalls; len(calls) != 3 || calls[0].OK || !calls[1].OK || !calls[2].OK {
		t.Errorf("tool calls %+v; want the failed answer, then note and answer", calls)
	}

	// A process tool's stdout, checked against the step's schema.
	s2 := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{
		{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "emit", Arguments: `{}`}}},
	}})
	defer s2.Close()
	res = run(t, `
emit = tool("emit", run = ["printf", '{"n": 3}'], final = True)
a = step("a", agent = "go", tools = [emit], schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
`, nil, modelOpts(s2, nil))
	check(t, res, want{status: vm.Succeeded, output: map[string]any{"n": 3.0}})
}
