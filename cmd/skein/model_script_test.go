package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/skeinlang/skein/vm/model/modeltest"
)

// TestModelScripts runs the scripts in testdata/model against an
// in-process OpenAI-compatible server ($SKEIN_BASE_URL): configuration
// refusals, cassettes, --replay-only and --max-tokens.
func TestModelScripts(t *testing.T) {
	p := scriptParams("testdata/model")
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		s := modeltest.New(
			modeltest.Rule{Match: "Route", Replies: []modeltest.Reply{{Content: "Urgent.", Prompt: 30, Completion: 2}}},
			modeltest.Rule{Match: "Take notes", Replies: []modeltest.Reply{
				{ToolCalls: []modeltest.ToolCall{{ID: "n1", Name: "note", Arguments: `{"text": "hi"}`}}},
				{Content: "noted"}}},
			modeltest.Rule{Match: "Delegate", Replies: []modeltest.Reply{
				{ToolCalls: []modeltest.ToolCall{{ID: "d1", Name: "tally", Arguments: `{"item": "apples"}`}}},
				{Content: "tallied"}}},
			modeltest.Rule{Match: "Tally twice", Replies: []modeltest.Reply{
				{ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "tally", Arguments: `{"item": "pears"}`}}},
				{Content: "first"},
				{ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "tally", Arguments: `{"item": "plums"}`}}},
				{Content: "second"}}},
			modeltest.Rule{Match: "Clean up", Replies: []modeltest.Reply{
				{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "sh", Arguments: `{"cmd": "echo cleaned >> ran.txt"}`}}},
				{Content: "cleaned"},
				{ToolCalls: []modeltest.ToolCall{{ID: "c2", Name: "sh", Arguments: `{"cmd": "rm -rf ran.txt"}`}}},
				{Content: "gave up"}}},
			modeltest.Rule{Match: "Tell a story", Replies: []modeltest.Reply{{Content: "Once upon a time", Prompt: 40, Completion: 4, Cached: 8, Reasoning: 2}}},
			modeltest.Rule{Match: "slow", Replies: []modeltest.Reply{{Content: "late", Delay: time.Hour}}},
			modeltest.Rule{Replies: []modeltest.Reply{{Content: "fine", Prompt: 10, Completion: 5}}},
		)
		env.Defer(s.Close)
		env.Setenv("SKEIN_BASE_URL", s.BaseURL())
		env.Values[serverKey{}] = s
		return setup(env)
	}
	p.Cmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){"modelwait": cmdModelWait}
	testscript.Run(t, p)
}

type serverKey struct{}

// modelwait TEXT: wait (up to hangGuard) until the model server has received a
// request whose first user message contains TEXT.
func cmdModelWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: modelwait TEXT")
	}
	s := ts.Value(serverKey{}).(*modeltest.Server)
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		for _, r := range s.Requests() {
			if strings.Contains(r.FirstUser(), args[0]) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("no request for %q reached the model server", args[0])
}
