package vm_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// A run's usage counts the HTTP attempts next to the model calls (a 429
// retried is two attempts, one call) and prices the replies of a model
// with price=; a replay from the cassette the run recorded counts the
// same attempts and cost, and the result's JSON carries both.
func TestUsageAttemptsAndCost(t *testing.T) {
	srv := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{
		{Status: 429, RetryAfterMs: "1"},
		{Content: "fine", Prompt: 1000, Completion: 500},
	}})
	defer srv.Close()
	src := `
model("m", model = "gpt-4o", base_url = "` + srv.BaseURL() + `", api_key_env = "", price = {"input": 2.5, "output": 10.0, "cached_input": 1.25})
s = step("s", llm = "hello", model = "m")
chain(START, s, END)
`
	tape := filepath.Join(t.TempDir(), "tape.json")
	cas, err := model.OpenCassette(tape, false, &model.Client{})
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string, res *vm.Result) {
		t.Helper()
		if res.Status != vm.Succeeded {
			t.Fatalf("%s: %s", what, res.Status)
		}
		// 1000 prompt tokens at $2.5 and 500 completion tokens at $10
		// per million.
		u := res.Usage
		if res.ModelCalls != 1 || u.Attempts != 2 || u.Cost != 0.0075 || u.Total() != 1500 {
			t.Errorf("%s: %d calls, usage %+v", what, res.ModelCalls, u)
		}
		if s := res.Step("s"); s.Usage.Attempts != 2 || s.Usage.Cost != 0.0075 {
			t.Errorf("%s: step usage %+v", what, s.Usage)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		back, err := vm.DecodeResult(b)
		if err != nil {
			t.Fatal(err)
		}
		if back.Usage.Attempts != 2 || back.Usage.Cost != 0.0075 {
			t.Errorf("%s: the result's JSON gives usage %+v", what, back.Usage)
		}
	}
	want("recorded", run(t, src, nil, vm.Options{Models: cas}))
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("the server had %d requests, want 2", n)
	}

	replay, err := model.OpenCassette(tape, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want("replayed", run(t, src, nil, vm.Options{Models: replay}))
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the replay sent %d more requests", n-2)
	}
}

// Cached prompt tokens are priced at cached_input, or at input when the
// price gives none.
func TestPriceCost(t *testing.T) {
	half := 1.0
	u := model.Usage{PromptTokens: 3000, CachedTokens: 2000, CompletionTokens: 1000}
	if got := (&model.Price{Input: 2, Output: 8, CachedInput: &half}).Cost(u); got != (1000*2+2000*1+1000*8)/1e6 {
		t.Errorf("cost %v", got)
	}
	if got := (&model.Price{Input: 2, Output: 8}).Cost(u); got != (3000*2+1000*8)/1e6 {
		t.Errorf("cost without cached_input %v", got)
	}
	if got := (*model.Price)(nil).Cost(u); got != 0 {
		t.Errorf("no price: %v", got)
	}
}
