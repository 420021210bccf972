package model_test

// The opt-in test against a real inference engine: llama.cpp's CPU build
// through node-llama-cpp, serving a tiny random-weight model (make
// test-llm-engine starts it; see test/llm-engine). The model knows
// nothing: the test proves the wire format and JSON-schema-constrained
// decoding against a real engine, not answer quality.

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

const engineFlow = `
flow(name = "engine", inputs = {"ticket": "the checkout page is down"})
a = step("a", llm = "Is this urgent? {{ inputs.ticket }}", max_tokens = 40, schema = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "level": {"type": "string", "enum": ["low", "high"]}},
    "required": ["ok", "level"],
    "additionalProperties": False,
})
b = step("b", fn = lambda r: "routine")
pick = router("pick", llm = "Route this ticket: {{ inputs.ticket }}", routes = {"urgent": a, "routine": b})
draft = step("draft", llm = "Write one word.", max_tokens = 8)
polish = loop("polish", body = [draft], until = judge("the word is short"), max_iterations = 2)
edge(START, pick)
edge(a, polish)
edge(b, polish)
edge(polish, END)
`

func TestRealEngine(t *testing.T) {
	url := os.Getenv("SKEIN_LLM_ENGINE_URL")
	if url == "" {
		t.Skip("set SKEIN_LLM_ENGINE_URL (make test-llm-engine does) to run against a real engine")
	}
	g, err := lang.LoadSource("engine.star", []byte(engineFlow), lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"SKEIN_MODEL=tiny", "SKEIN_BASE_URL=" + url}
	if err := vm.CheckModels(g, env); err != nil {
		t.Fatalf("a server on this machine needs no key: %v", err)
	}
	res, err := vm.Run(context.Background(), g, nil, vm.Options{Parallel: 1, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != vm.Succeeded {
		t.Fatalf("%s: %v", res.Status, res.Error)
	}
	// The router's answer is the schema's JSON, constrained to the labels.
	pick := res.Step("pick")
	var ans struct{ Label string }
	if err := json.Unmarshal([]byte(pick.Answer), &ans); err != nil || (ans.Label != "urgent" && ans.Label != "routine") {
		t.Errorf("router answer %q is not {\"label\": one of the labels}", pick.Answer)
	}
	if got := string(pick.Output.(starlark.String)); got != ans.Label {
		t.Errorf("router output %q, answer %q", got, ans.Label)
	}
	if ans.Label == "urgent" {
		out, err := stdlib.ToGo(res.Step("a").Output)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		var obj map[string]any
		json.Unmarshal(b, &obj)
		if _, ok := obj["ok"].(bool); !ok || (obj["level"] != "low" && obj["level"] != "high") {
			t.Errorf("llm step output %s does not match its schema", b)
		}
	}
	l := res.Step("polish")
	if l.Iterations < 1 || l.Model != "tiny" || l.Usage.Total() == 0 {
		t.Errorf("loop: %d iterations, model %q, usage %+v", l.Iterations, l.Model, l.Usage)
	}
	if res.ModelCalls < 3 || res.Usage.PromptTokens == 0 {
		t.Errorf("%d model calls, usage %+v", res.ModelCalls, res.Usage)
	}
	t.Logf("router answered %s; %d calls, %+v; loop: %d iterations, stopped: %s", pick.Answer, res.ModelCalls, res.Usage, l.Iterations, l.StoppedReason)
}
