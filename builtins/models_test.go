package builtins_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
)

func TestModelBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `model("fast")`, frag: `model "fast": missing model=, the provider's model id`},
		{src: `model("", model = "m")`, frag: `model: name must be a non-empty string, got string ""`},
		{src: `model("fast", model = "m", temperature = 3)`, frag: `model "fast": temperature must be a number from 0 to 2, got int 3`},
		// NaN compares false with every bound (issue 26).
		{src: `model("fast", model = "m", temperature = float("nan"))`, frag: `model "fast": temperature must be a number from 0 to 2, got float nan`},
		{src: `model("fast", model = "m", temperature = float("-inf"))`, frag: `model "fast": temperature must be a number from 0 to 2, got float -inf`},
		{src: `model("fast", model = "m", max_tokens = 0)`, frag: `model "fast": max_tokens must be at least 1, got 0`},
		{src: `model("fast", model = "m", max_tokens = 1 << 40)`, frag: `model "fast": max_tokens is too large: 1099511627776`},
		{src: `model("fast", model = "m", bse_url = "x")`, frag: `model: unexpected keyword argument "bse_url"`, hint: `did you mean "base_url"?`},
		{src: `model("fast", model = "m"); model("fast", model = "n")`, frag: `model "fast": model "fast" was already declared at flow.star:4:1`, at: "4:29"},
		{src: `step("x", llm = "hi", run = ["echo"])`, frag: `step "x": give at most one of run, shell, fn, flow, llm, agent, wait, wait_until, approve; got run and llm`},
		{src: `step("x", llm = 3)`, frag: `step "x": llm must be a string, got int 3`},
		{src: `step("x", run = ["echo"], schema = {})`, frag: `step "x": schema applies only to llm= and agent= steps`},
		{src: `step("x", fn = len, system = "s")`, frag: `step "x": system applies only to llm= and agent= steps`},
		{src: `step("x", llm = "p", model = "")`, frag: `step "x": model must name a model() declaration, got string ""`},
		{src: `step("x", llm = "p", max_tokens = 0)`, frag: `step "x": max_tokens must be at least 1, got 0`},
		{src: `step("x", llm = "p", schema = {"type": len})`, frag: `step "x": schema: a builtin_function_or_method is not JSON-representable`},
		{src: `router("r", llm = "p", by = "x", routes = {"a": a})`, frag: `router "r": give by= (an expression) or llm= (a prompt), not both`},
		{src: `router("r", by = "x", routes = {"a": a}, model = "m")`, frag: `router "r": model applies only to routers given llm=`},
		{src: `judge(3)`, frag: `judge: condition must be a non-empty string, got int 3`},
		{src: `flow(max_tokens = -1)`, frag: `flow: max_tokens must be at least 1, got -1`},
		{src: `model("fast", model = "m", rpm = 0)`, frag: `model "fast": rpm must be at least 1, got 0`},
		{src: `model("fast", model = "m", tpm = 1.5)`, frag: `model "fast": tpm must be an int, got float 1.5`},
		{src: `model("fast", model = "m", price = 2.5)`, frag: `model "fast": price must be a dict of US dollars per million tokens`},
		{src: `model("fast", model = "m", price = {"input": "2.5"})`, frag: `model "fast": price: "input" must be a number, got string "2.5"`},
		{src: `model("fast", model = "m", price = {1: 2.5})`, frag: `model "fast": price: keys must be strings, got int 1`},
	})
}

func TestModelParams(t *testing.T) {
	g := mustLoad(t, `
flow(max_tokens = 5000)
model("fast", model = "gpt-4o-mini", base_url = "http://localhost:11434/v1", api_key_env = "", temperature = 0.5, max_tokens = 300)
model("default_key", model = "m2")
fix = step("fix", llm = "fix {{ inputs }}", system = "you fix", model = "fast", schema = {"type": "object", "properties": {"file": {"type": "string"}}}, max_tokens = 100)
again = step("again", llm = "p", retries = 0)
pick = router("pick", llm = "route", routes = {"a": fix, "b": again}, model = "fast")
body = step("body", llm = "draft")
l = loop("l", body = [body], until = judge("the draft is good", model = "fast"), max_iterations = 3)
chain(START, pick)
chain(fix, l, END)
chain(again, END)
`)
	half := 0.5
	want := []graphir.ModelDecl{
		{Name: "fast", Model: "gpt-4o-mini", BaseURL: "http://localhost:11434/v1", KeyEnv: "", Temperature: &half, MaxTokens: 300},
		{Name: "default_key", Model: "m2", KeyEnv: "OPENAI_API_KEY"},
	}
	if diff := cmp.Diff(want, g.Models, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Pos" }, cmp.Ignore())); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	if g.MaxTokens != 5000 {
		t.Errorf("max_tokens %d", g.MaxTokens)
	}
	fix := g.Node("fix")
	type llm struct {
		Kind                  graphir.Kind
		Prompt, System, Model string
		Schema                any
		MaxTokens, Retries    int
	}
	got := llm{fix.Kind, fix.Call.Prompt.Src, fix.Call.System.Src, fix.Call.Model, fix.Call.Schema, fix.Call.MaxTokens, fix.Retries}
	wantFix := llm{graphir.KindLLM, "fix {{ inputs }}", "you fix", "fast",
		map[string]any{"type": "object", "properties": map[string]any{"file": map[string]any{"type": "string"}}}, 100, 2}
	if diff := cmp.Diff(wantFix, got); diff != "" {
		t.Errorf("fix (-want +got):\n%s", diff)
	}
	if n := g.Node("again"); n.Retries != 0 {
		t.Errorf("again: retries %d, want 0 as given", n.Retries)
	}
	pick := g.Node("pick")
	if pick.Call.Prompt == nil || pick.Call.Prompt.Src != "route" || pick.Router.By != nil || pick.Call.Model != "fast" || len(pick.Router.Routes) != 2 || pick.Retries != 2 {
		t.Errorf("pick: %+v", pick)
	}
	if l := g.Node("l"); l.Loop.Judge == nil || l.Loop.Judge.Condition != "the draft is good" || l.Loop.Judge.Model != "fast" || l.Loop.Until != nil {
		t.Errorf("loop: judge %+v", l.Loop.Judge)
	}
	for _, n := range []string{"fix", "pick", "l"} {
		if !g.Node(n).IsModelCall() {
			t.Errorf("%s: not a model call", n)
		}
	}
}
