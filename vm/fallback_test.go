package vm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// A model that fails with a provider error falls back to the models its
// fallbacks= names, in order; the record names the model that answered,
// and a replay-only cassette of that run replays it. A bad answer (cut at
// the token limit) does not fall back.
func TestModelFallbacks(t *testing.T) {
	down := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Status: 503, Raw: `{"error":{"message":"overloaded"}}`}}})
	defer down.Close()
	cut := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "half", Finish: "length"}}})
	defer cut.Close()
	up := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "from the backup", Prompt: 4, Completion: 3}}})
	defer up.Close()
	src := `
model("main", model = "big", base_url = "` + down.BaseURL() + `", api_key_env = "", fallbacks = ["second", "backup"])
model("second", model = "mid", base_url = "` + down.BaseURL() + `", api_key_env = "")
model("backup", model = "small", base_url = "` + up.BaseURL() + `", api_key_env = "")
model("cutter", model = "cut", base_url = "` + cut.BaseURL() + `", api_key_env = "", fallbacks = ["backup"])
s = step("s", llm = "hello", model = "main", retries = 0, max_tokens = 50)
c = step("c", llm = "hello", model = "cutter", retries = 0)
chain(START, s, c, END)
`
	tape := filepath.Join(t.TempDir(), "tape.json")
	cas, err := model.OpenCassette(tape, false, &model.Client{})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, src, nil, vm.Options{Models: cas})
	if s := res.Step("s"); s.Output.String() != `"from the backup"` || s.Model != "small" {
		t.Errorf("s: %v from %q (%s)", s.Output, s.Model, s.Error)
	}
	if len(down.Requests()) != 2 || len(up.Requests()) != 1 {
		t.Errorf("requests: %d to the failing server, %d to the backup", len(down.Requests()), len(up.Requests()))
	}
	if got := up.Requests()[0].Body["max_tokens"]; got != 50.0 {
		t.Errorf("the fallback's max_tokens %v, want the step's 50", got)
	}
	if c := res.Step("c"); res.Status != vm.Failed || c.Code != "model_truncated" || len(up.Requests()) != 1 {
		t.Errorf("c: %s %q; the backup asked %d times", c.Code, c.Error, len(up.Requests()))
	}

	// Replayed: the primary's request is not on the tape (it failed), the
	// backup's is.
	replay, err := model.OpenCassette(tape, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	res = run(t, src, nil, vm.Options{Models: replay})
	if s := res.Step("s"); s.Output.String() != `"from the backup"` || s.Model != "small" {
		t.Errorf("replayed s: %v from %q (%s)", s.Output, s.Model, s.Error)
	}
}

// Every fallback is checked before the run, as the model itself is.
func TestCheckModelsFallbacks(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `
model("main", model = "big", base_url = "http://127.0.0.1:9/v1", api_key_env = "", fallbacks = ["backup"])
model("backup", model = "small", api_key_env = "BACKUP_KEY")
s = step("s", llm = "hello", model = "main")
chain(START, s, END)
`})
	err := vm.CheckModels(g, nil)
	if err == nil || !strings.Contains(err.Error(), `step "s": fallback model "backup" (small) at https://api.openai.com/v1: set BACKUP_KEY to its API key`) {
		t.Errorf("got %v", err)
	}
}

// A fallback's reply that does not match the schema is repaired by that
// fallback, not by the model that was down; the record names the fallback.
func TestFallbackRepairGoesToFallback(t *testing.T) {
	down := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Status: 503, Raw: `{"error":{"message":"overloaded"}}`}}})
	defer down.Close()
	up := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{
		{Content: `{"label": 7}`, Prompt: 4, Completion: 3},
		{Content: `{"label": "ok"}`, Prompt: 5, Completion: 2},
	}})
	defer up.Close()
	src := `
model("main", model = "big", base_url = "` + down.BaseURL() + `", api_key_env = "", fallbacks = ["backup"])
model("backup", model = "small", base_url = "` + up.BaseURL() + `", api_key_env = "")
s = step("s", llm = "hello", model = "main", retries = 0, schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"], "additionalProperties": False})
chain(START, s, END)
`
	res := run(t, src, nil, vm.Options{Models: &model.Client{}})
	s := res.Step("s")
	if res.Status != vm.Succeeded || s.Model != "small" || !strings.Contains(s.Output.String(), `"ok"`) {
		t.Errorf("s: %v from %q (%s %s)", s.Output, s.Model, s.Code, s.Error)
	}
	if n := len(down.Requests()); n != 1 {
		t.Errorf("the failing primary was asked %d times, want 1 (the repair went back to it)", n)
	}
	if n := len(up.Requests()); n != 2 {
		t.Fatalf("the fallback was asked %d times, want 2 (answer and repair)", n)
	}
	if got := up.Requests()[1].Body["model"]; got != "small" {
		t.Errorf("the repair named model %v, want the fallback's small", got)
	}
}
