package vm_test

import (
	"strings"
	"testing"

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
	if !strings.Contains(all, "the key is [masked $OTHER_KEY]") || !strings.Contains(all, "[masked $OPENAI_API_KEY]") {
		t.Errorf("a printed key was not masked:\n%s", all)
	}
	if !strings.Contains(all, "KEEP=kept") || !strings.Contains(all, `"given`) {
		t.Errorf("the environment, or env=, did not reach the tasks:\n%s", all)
	}
}
