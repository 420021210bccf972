package model_test

// The opt-in test against a real inference engine: llama.cpp's own
// llama-server, built from the source node-llama-cpp ships, serving a tiny
// random-weight model with --jinja and a chat template that has tools
// (make test-llm-engine starts it; see test/llm-engine). The model knows
// nothing, so every shape an assertion relies on is forced: a grammar
// (response_format's schema), tool_choice, or max_tokens. make_gguf.py
// makes it so that a free-text reply always runs to its limit and a
// constrained one ends where its grammar does.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// engineExchange is one request to the engine and, for a reply that is not
// streamed, its answer as the server sent it.
type engineExchange struct {
	req   map[string]any
	reply map[string]any
}

// text is the request's messages, joined: what an exchange is found by.
func (x engineExchange) text() string {
	b, _ := json.Marshal(x.req["messages"])
	return string(b)
}

// finish is the reply's finish_reason.
func (x engineExchange) finish() string {
	ch, _ := x.reply["choices"].([]any)
	if len(ch) == 0 {
		return ""
	}
	s, _ := ch[0].(map[string]any)["finish_reason"].(string)
	return s
}

// verbose is llama-server's debug report of the request (__verbose): the
// prompt its chat template rendered and the generation settings it used.
func (x engineExchange) verbose(t *testing.T) (prompt string, settings map[string]any) {
	t.Helper()
	v, ok := x.reply["__verbose"].(map[string]any)
	if !ok {
		t.Fatalf("the reply has no __verbose: is this llama-server? %v", x.reply)
	}
	prompt, _ = v["prompt"].(string)
	settings, _ = v["generation_settings"].(map[string]any)
	return prompt, settings
}

// engineProxy stands between Skein and the engine. It asks llama-server
// for its debug report (verbose: true) on every request and keeps the
// exchanges. With forceTools, an agent's first turn (tools offered, the
// last message the user's) is sent with tool_choice "required" (a grammar
// that ends in a call), one call at most, and logit_bias raising the
// "<tool_call>" token (so the call comes at once rather than after text):
// the random model never calls a tool by itself, and Skein's agent steps
// send no tool_choice.
type engineProxy struct {
	upstream   string
	forceTools bool
	mu         sync.Mutex
	log        []engineExchange
}

func (p *engineProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body["verbose"] = true
	msgs, _ := body["messages"].([]any)
	if p.forceTools && body["tools"] != nil && len(msgs) > 0 {
		if last, _ := msgs[len(msgs)-1].(map[string]any); last["role"] == "user" {
			body["tool_choice"] = "required"
			body["parallel_tool_calls"] = false
			body["logit_bias"] = map[string]any{"<tool_call>": 100}
		}
	}
	raw, _ = json.Marshal(body)
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+strings.TrimPrefix(r.URL.Path, "/v1"), bytes.NewReader(raw))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	// Kept before the reply goes back, which the run may outlive.
	p.mu.Lock()
	i := len(p.log)
	p.log = append(p.log, engineExchange{req: body})
	p.mu.Unlock()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Pass a stream on as it comes.
		f, _ := w.(http.Flusher)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				if f != nil {
					f.Flush()
				}
			}
			if err != nil {
				break
			}
		}
	} else {
		raw, _ := io.ReadAll(resp.Body)
		var reply map[string]any
		json.Unmarshal(raw, &reply)
		p.mu.Lock()
		p.log[i].reply = reply
		p.mu.Unlock()
		w.Write(raw)
	}
}

// find returns the exchanges whose messages contain s.
func (p *engineProxy) find(s string) []engineExchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []engineExchange
	for _, x := range p.log {
		if strings.Contains(x.text(), s) {
			out = append(out, x)
		}
	}
	return out
}

// runEngine loads src (with %[1]s the proxy's base URL) and runs it against
// the engine behind p.
func runEngine(t *testing.T, p *engineProxy, src string, opts vm.Options) *vm.Result {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	url := srv.URL + "/v1"
	g, err := lang.LoadSource("engine.star", []byte(fmt.Sprintf(src, url)), lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"SKEIN_MODEL=tiny", "SKEIN_BASE_URL=" + url}
	if err := vm.CheckModels(g, env); err != nil {
		t.Fatalf("a server on this machine needs no key: %v", err)
	}
	opts.Parallel, opts.Env = 1, env
	res, err := vm.Run(context.Background(), g, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func near(v any, want float64) bool {
	f, ok := v.(float64)
	return ok && math.Abs(f-want) < 1e-4
}

const engineDecideFlow = `
flow(name = "engine", inputs = {"ticket": "the checkout page is down"})
model("warm", model = "tiny", base_url = "%[1]s", api_key_env = "", temperature = 0.7)
a = step("a", llm = "Is this urgent? {{ inputs.ticket }}", model = "warm", max_tokens = 60, schema = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "level": {"type": "string", "enum": ["low", "high"]},
        "page": {"type": "boolean"},
    },
    "required": ["ok", "level"],
    "additionalProperties": False,
})
u = step("u", fn = lambda r: "urgent")
r = step("r", fn = lambda r: "routine")
pick = router("pick", llm = "Route this ticket: {{ inputs.ticket }}", routes = {"urgent": u, "routine": r})
draft = step("draft", llm = "Write one word.", max_tokens = 8, partial = True)
polish = loop("polish", body = [draft], until = judge("the word is short"), max_iterations = 2)
edge(START, a)
edge(a, pick)
edge(u, polish)
edge(r, polish)
edge(polish, END)
`

const engineAgentFlow = `
flow(name = "engine_agent")
model("tiny", model = "tiny", base_url = "%[1]s", api_key_env = "")
lookup = tool("lookup", fn = lambda args: "LOOKUP-RESULT-42 " + str(args.flag), params = {"flag": "boolean"}, help = "Look the ticket up.")
ask = step("ask", agent = "Look the ticket up, then answer.", model = "tiny", tools = [lookup], max_tokens = 80, partial = True, max_turns = 3)
chain(START, ask, END)
`

const engineLimitsFlow = `
flow(name = "engine_limits")
model("hot", model = "tiny", base_url = "%[1]s", api_key_env = "", temperature = 1.5, max_tokens = 6)
model("r", model = "tiny", base_url = "%[1]s", api_key_env = "", reasoning = True, reasoning_effort = "low", max_tokens = 5)
keep = step("keep", llm = "Tell a long story.", model = "hot", partial = True)
cut = step("cut", llm = "Tell another long story.", model = "r")
chain(START, keep, cut, END)
`

func TestRealEngine(t *testing.T) {
	url := os.Getenv("SKEIN_LLM_ENGINE_URL")
	if url == "" {
		t.Skip("set SKEIN_LLM_ENGINE_URL (make test-llm-engine does) to run against a real engine")
	}
	url = strings.TrimRight(url, "/")

	// A schema step, a router and a judged loop: llama-server turns each
	// response_format schema into a grammar, so the random model's
	// answers parse and fit.
	t.Run("decide", func(t *testing.T) {
		p := &engineProxy{upstream: url}
		res := runEngine(t, p, engineDecideFlow, vm.Options{})
		if res.Status != vm.Succeeded {
			t.Fatalf("%s: %v", res.Status, res.Error)
		}
		out, err := stdlib.ToGo(res.Step("a").Output)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		var obj map[string]any
		json.Unmarshal(b, &obj)
		// page is optional: Skein sends it required and nullable, which
		// llama.cpp's schema-to-grammar must take as a type list.
		page, hasPage := obj["page"]
		if _, ok := obj["ok"].(bool); !ok || (obj["level"] != "low" && obj["level"] != "high") || !hasPage {
			t.Errorf("llm step output %s does not match its schema", b)
		} else if _, isBool := page.(bool); page != nil && !isBool {
			t.Errorf("llm step output %s: page is neither a boolean nor null", b)
		}
		// The step's model parameters reached the sampler (the old Node
		// wrapper sampled at 0.8 whatever was asked, and had no report).
		xs := p.find("Is this urgent?")
		if len(xs) != 1 {
			t.Fatalf("%d requests of step a", len(xs))
		}
		prompt, set := xs[0].verbose(t)
		if !near(set["temperature"], 0.7) || !near(set["n_predict"], 60) || xs[0].finish() != "stop" {
			t.Errorf("step a: server used temperature %v, n_predict %v; finish_reason %q", set["temperature"], set["n_predict"], xs[0].finish())
		}
		if !strings.Contains(prompt, "<|im_start|>user\nIs this urgent?") {
			t.Errorf("step a: the template rendered %q", prompt)
		}

		pick := res.Step("pick")
		var ans struct{ Label string }
		if err := json.Unmarshal([]byte(pick.Answer), &ans); err != nil || (ans.Label != "urgent" && ans.Label != "routine") {
			t.Errorf("router answer %q is not {\"label\": one of the labels}", pick.Answer)
		}
		if ans.Label != "" {
			if got := res.Step(ans.Label[:1]); got.Status != vm.StepSucceeded {
				t.Errorf("router answered %q but step %q is %s", ans.Label, ans.Label[:1], got.Status)
			}
		}
		l := res.Step("polish")
		if l.Iterations < 1 || l.Model != "tiny" || l.Usage.Total() == 0 {
			t.Errorf("loop: %d iterations, model %q, usage %+v", l.Iterations, l.Model, l.Usage)
		}
		// The draft is cut at its 8 tokens and kept (partial = True): the
		// server said "length", which the old wrapper never did.
		for _, x := range p.find("Write one word.") {
			if x.finish() != "length" {
				t.Errorf("draft: finish_reason %q, want length", x.finish())
			}
		}
		if res.ModelCalls < 4 || res.Usage.PromptTokens == 0 {
			t.Errorf("%d model calls, usage %+v", res.ModelCalls, res.Usage)
		}
		t.Logf("a: %s; router answered %s; %d calls, %+v; loop: %d iterations, stopped: %s", b, pick.Answer, res.ModelCalls, res.Usage, l.Iterations, l.StoppedReason)
	})

	// An agent's tool round trip: the first turn must call the tool
	// (tool_choice "required"); llama-server parses the call out of the
	// template's <tool_call> form; Skein runs the tool and sends its result
	// back, which the template renders as a <tool_response>; the next turn
	// (free to answer) is the answer, cut at max_tokens and kept.
	agent := func(t *testing.T, stream bool) {
		p := &engineProxy{upstream: url, forceTools: true}
		var mu sync.Mutex
		var deltas []string
		opts := vm.Options{Stream: stream, OnEvent: func(ev *vm.Event) {
			if ev.Type == vm.ModelDelta && ev.Step == "ask" && ev.Index == 2 {
				mu.Lock()
				deltas = append(deltas, ev.Message)
				mu.Unlock()
			}
		}}
		res := runEngine(t, p, engineAgentFlow, opts)
		if res.Status != vm.Succeeded {
			t.Fatalf("%s: %v", res.Status, res.Error)
		}
		ask := res.Step("ask")
		if ask.Agent == nil || ask.Agent.Turns != 2 || len(ask.Agent.ToolCalls) != 1 {
			t.Fatalf("agent record %+v", ask.Agent)
		}
		call := ask.Agent.ToolCalls[0]
		var args map[string]any
		if err := json.Unmarshal([]byte(call.Args), &args); err != nil || call.Tool != "lookup" || !call.OK || len(args) != 1 {
			t.Fatalf("tool call %+v", call)
		}
		flag, ok := args["flag"].(bool)
		if !ok {
			t.Fatalf("tool call arguments %s", call.Args)
		}
		result := "LOOKUP-RESULT-42 " + map[bool]string{true: "True", false: "False"}[flag]
		if call.Result != result {
			t.Errorf("tool result %q, want %q", call.Result, result)
		}
		answer, _ := ask.Output.(starlark.String)
		if answer == "" {
			t.Errorf("agent output %v, want the second turn's text", ask.Output)
		}
		xs := p.find("Look the ticket up")
		if len(xs) != 2 {
			t.Fatalf("%d requests of the agent, want 2", len(xs))
		}
		if xs[0].req["tool_choice"] != "required" || xs[1].req["tool_choice"] != nil {
			t.Errorf("tool_choice %v, then %v", xs[0].req["tool_choice"], xs[1].req["tool_choice"])
		}
		if stream {
			// Streamed: the reply arrives in pieces, which add up to the
			// answer (a server that answers whole is told as one piece).
			if len(deltas) < 2 || strings.Join(deltas, "") != string(answer) {
				t.Errorf("turn 2 streamed %d pieces %q, answer %q", len(deltas), deltas, answer)
			}
			t.Logf("agent called lookup(%s), answered %q in %d pieces", call.Args, answer.GoString(), len(deltas))
			return
		}
		// The template listed the tool and rendered its result: the server
		// read the tools and the tool message (the old wrapper dropped both).
		first, _ := xs[0].verbose(t)
		second, _ := xs[1].verbose(t)
		if !strings.Contains(first, "<tools>\n{") || !strings.Contains(first, `"lookup"`) {
			t.Errorf("turn 1 prompt does not list the tool: %q", first)
		}
		if !strings.Contains(second, "<tool_response>\n"+result+"\n</tool_response>") || !strings.Contains(second, `<tool_call>`+"\n"+`{"name": "lookup"`) {
			t.Errorf("turn 2 prompt lacks the call and its result: %q", second)
		}
		if xs[0].finish() != "tool_calls" || xs[1].finish() != "length" {
			t.Errorf("finish reasons %q, %q; want tool_calls, length", xs[0].finish(), xs[1].finish())
		}
		t.Logf("agent called lookup(%s), got %q, answered %q", call.Args, call.Result, answer.GoString())
	}
	t.Run("agent", func(t *testing.T) { agent(t, false) })
	t.Run("agent-stream", func(t *testing.T) { agent(t, true) })

	// Token limits and parameters: a reply cut at max_tokens is kept with
	// partial = True and otherwise fails model_truncated; a reasoning
	// model's limit goes as max_completion_tokens, which llama-server
	// honours too.
	t.Run("limits", func(t *testing.T) {
		p := &engineProxy{upstream: url}
		res := runEngine(t, p, engineLimitsFlow, vm.Options{})
		keep, cut := res.Step("keep"), res.Step("cut")
		if keep.Status != vm.StepSucceeded || keep.Usage.CompletionTokens != 6 {
			t.Errorf("keep: %s, %d completion tokens (%s)", keep.Status, keep.Usage.CompletionTokens, keep.Error)
		}
		if res.Status != vm.Failed || cut.Code != model.CodeTruncated {
			t.Fatalf("run %s, cut %s %s: %s", res.Status, cut.Status, cut.Code, cut.Error)
		}
		hot := p.find("Tell a long story.")
		if len(hot) != 1 {
			t.Fatalf("%d requests of keep", len(hot))
		}
		_, set := hot[0].verbose(t)
		if !near(set["temperature"], 1.5) || !near(set["n_predict"], 6) || hot[0].finish() != "length" {
			t.Errorf("keep: server used temperature %v, n_predict %v; finish_reason %q", set["temperature"], set["n_predict"], hot[0].finish())
		}
		rs := p.find("Tell another long story.")
		if len(rs) != 1 {
			t.Fatalf("%d requests of cut (a truncated reply is not retried)", len(rs))
		}
		r := rs[0]
		_, set = r.verbose(t)
		if !near(r.req["max_completion_tokens"], 5) || r.req["max_tokens"] != nil || r.req["temperature"] != nil ||
			!near(set["n_predict"], 5) || r.finish() != "length" {
			t.Errorf("cut: sent %v, server used n_predict %v; finish_reason %q", r.req, set["n_predict"], r.finish())
		}
		t.Logf("keep: %s; cut: %s", keep.Output, cut.Error)
	})
}
