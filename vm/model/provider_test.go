package model_test

// This file tests what each provider is sent and how its answers are read:
// the golden table of wire requests per provider profile, the in-process
// Anthropic server, and the answers a step must not take as they are
// (truncated, filtered, fenced, thinking aloud).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// profile is a provider as a user declares it.
type profile struct {
	name string
	decl model.Decl
}

var profiles = []profile{
	{"openai chat", model.Decl{Name: "p", Model: "gpt-4o-mini", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY"}},
	{"openai reasoning", model.Decl{Name: "p", Model: "o4-mini", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY", ReasoningEffort: "low"}},
	{"anthropic native", model.Decl{Name: "p", Model: "claude-sonnet-4-5", BaseURL: "https://api.anthropic.com/v1/", KeyEnv: "ANTHROPIC_API_KEY", ReasoningEffort: "low"}},
	{"anthropic compat", model.Decl{Name: "p", Model: "claude-sonnet-4-5", Provider: "openai", BaseURL: "https://api.anthropic.com/v1/", KeyEnv: "ANTHROPIC_API_KEY"}},
	{"ollama", model.Decl{Name: "p", Model: "llama3.2", BaseURL: "http://localhost:11434/v1"}},
	{"vllm", model.Decl{Name: "p", Model: "Qwen/Qwen3-8B", BaseURL: "http://localhost:8000/v1"}},
	{"llama.cpp", model.Decl{Name: "p", Model: "any", BaseURL: "http://localhost:8080/v1"}},
	{"azure v1", model.Decl{Name: "p", Model: "my-gpt5-deployment", BaseURL: "https://r.openai.azure.com/openai/v1", KeyEnv: "AZURE_OPENAI_API_KEY", Reasoning: ptr(true)}},
}

func ptr[T any](v T) *T { return &v }

// shapes are the kinds of call, each as the request Skein builds.
func shapes(base model.Request) map[string]model.Request {
	temp := 0.0
	base.Temperature, base.MaxTokens = &temp, 500
	plain := base
	plain.Messages = []model.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}
	schema := plain
	schema.Schema, schema.SchemaName = schemaFile(), "output"
	agent := plain
	agent.Tools = []model.ToolDef{{Type: "function", Function: model.FunctionDef{Name: "read_file", Description: "read a file",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}, "additionalProperties": false}}}}
	agent.Messages = append(append([]model.Message(nil), plain.Messages...),
		model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c1", Type: "function", Function: model.FunctionCall{Name: "read_file", Arguments: `{"path":"a.go"}`}}}},
		model.Message{Role: "tool", ToolCallID: "c1", Content: "package a"})
	return map[string]model.Request{
		"plain":  plain,
		"schema": schema,
		"router": model.RouteRequest(base, "", "ticket: down", []string{"urgent", "routine"}),
		"judge":  model.JudgeRequest(base, "short", 1, "text", ""),
		"agent":  agent,
	}
}

// TestProviderWire is the golden table: for every provider profile and
// kind of call, the wire request the SDK would send, checked field by
// field against the provider's documented rules.
func TestProviderWire(t *testing.T) {
	for _, p := range profiles {
		cfg := model.Resolve(&p.decl, env(nil))
		for kind, req := range shapes(cfg.Request()) {
			t.Run(p.name+"/"+kind, func(t *testing.T) {
				b, err := model.WireBody(req)
				if err != nil {
					t.Fatal(err)
				}
				var w map[string]any
				if err := json.Unmarshal(b, &w); err != nil {
					t.Fatal(err)
				}
				has := func(k string) bool { _, ok := w[k]; return ok }
				errorf := func(format string, args ...any) { t.Errorf(format+"\n%s", append(args, b)...) }
				if w["model"] != p.decl.Model {
					errorf("model %v, want %q", w["model"], p.decl.Model)
				}
				switch p.name {
				case "anthropic native":
					// Messages API: max_tokens required, system at the top,
					// no system role among the messages, no temperature in
					// the SDK, the schema as output_config.format.
					if w["max_tokens"] != 500.0 || has("max_completion_tokens") || has("temperature") || has("response_format") {
						errorf("limits and sampling")
					}
					if _, ok := w["system"].([]any); !ok {
						errorf("no top-level system")
					}
					for _, m := range w["messages"].([]any) {
						if r := m.(map[string]any)["role"]; r != "user" && r != "assistant" {
							errorf("role %v among the messages", r)
						}
					}
					oc, _ := w["output_config"].(map[string]any)
					if oc["effort"] != "low" {
						errorf("effort %v", oc["effort"])
					}
					if f, _ := oc["format"].(map[string]any); (kind == "schema" || kind == "router" || kind == "judge") != (f != nil && f["type"] == "json_schema" && f["schema"] != nil) {
						errorf("output_config.format %v", oc["format"])
					}
					if kind == "agent" {
						tools := w["tools"].([]any)
						tool := tools[0].(map[string]any)
						is := tool["input_schema"].(map[string]any)
						if tool["name"] != "read_file" || is["type"] != "object" || is["additionalProperties"] != false || is["properties"] == nil {
							errorf("tool %v", tool)
						}
						msgs := w["messages"].([]any)
						last := msgs[len(msgs)-1].(map[string]any)
						blk := last["content"].([]any)[0].(map[string]any)
						if last["role"] != "user" || blk["type"] != "tool_result" || blk["tool_use_id"] != "c1" {
							errorf("tool result %v", last)
						}
						use := msgs[len(msgs)-2].(map[string]any)["content"].([]any)[0].(map[string]any)
						if use["type"] != "tool_use" || use["id"] != "c1" || use["input"].(map[string]any)["path"] != "a.go" {
							errorf("tool use %v", use)
						}
					}
				case "openai reasoning", "azure v1":
					// o-series and GPT-5: max_completion_tokens, no
					// temperature (only the default is allowed).
					if w["max_completion_tokens"] != 500.0 || has("max_tokens") || has("temperature") {
						errorf("reasoning model limits and sampling")
					}
					if p.name == "openai reasoning" && w["reasoning_effort"] != "low" {
						errorf("reasoning_effort %v", w["reasoning_effort"])
					}
				default:
					if w["max_tokens"] != 500.0 || has("max_completion_tokens") || w["temperature"] != 0.0 || has("reasoning_effort") {
						errorf("chat model limits and sampling")
					}
				}
				if p.name != "anthropic native" && (kind == "schema" || kind == "router" || kind == "judge") {
					// Anthropic's compatibility endpoint ignores
					// response_format, a local server may: the schema is in
					// the prompt too, except where the server enforces it.
					first := w["messages"].([]any)[0].(map[string]any)
					c, _ := first["content"].(string)
					inPrompt := first["role"] == "system" && strings.Contains(c, "JSON schema") && strings.Contains(c, `"properties"`)
					if enforced := strings.HasPrefix(p.name, "openai") || strings.HasPrefix(p.name, "azure"); inPrompt == enforced {
						errorf("schema in the prompt: %v, want %v", inPrompt, !enforced)
					}
				}
				if p.name != "anthropic native" {
					msgs := w["messages"].([]any)
					if first := msgs[0].(map[string]any); first["role"] != "system" {
						errorf("first message %v", first)
					}
					rf, _ := w["response_format"].(map[string]any)
					if want := kind == "schema" || kind == "router" || kind == "judge"; want != (rf != nil) {
						errorf("response_format %v", rf)
					} else if want {
						js := rf["json_schema"].(map[string]any)
						if rf["type"] != "json_schema" || js["strict"] != true || js["name"] == "" || js["schema"] == nil {
							errorf("response_format %v", rf)
						}
					}
					if kind == "agent" {
						tool := w["tools"].([]any)[0].(map[string]any)
						fn := tool["function"].(map[string]any)
						if tool["type"] != "function" || fn["name"] != "read_file" || fn["parameters"] == nil {
							errorf("tool %v", tool)
						}
						call := msgs[len(msgs)-2].(map[string]any)
						if call["role"] != "assistant" || call["tool_calls"] == nil || call["content"] != nil {
							errorf("assistant tool call %v", call)
						}
						if last := msgs[len(msgs)-1].(map[string]any); last["role"] != "tool" || last["tool_call_id"] != "c1" {
							errorf("tool message %v", last)
						}
					}
				}
			})
		}
	}
}

func anthropicRequest(s *modeltest.Server, user string) model.Request {
	r := request(s, user)
	r.Provider = model.ProviderAnthropic
	r.Endpoint.BaseURL = s.URL // the SDK adds /v1/messages
	return r
}

// TestAnthropicNative: through the SDK to a Messages API server over real
// HTTP: the key, the wire, text, a schema reply, tool calls and usage.
func TestAnthropicNative(t *testing.T) {
	s := modeltest.NewAnthropic(
		modeltest.Rule{Match: "plain", Replies: []modeltest.Reply{{Content: "hello", Prompt: 9, Completion: 2}}},
		modeltest.Rule{Match: "schema", Replies: []modeltest.Reply{{Content: `{"file": "a.go"}`}}},
		modeltest.Rule{Match: "tools", Replies: []modeltest.Reply{{ToolCalls: []modeltest.ToolCall{{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"a.go"}`}}}}},
	)
	defer s.Close()
	c := &model.Client{Getenv: env(map[string]string{"TEST_KEY": secret})}
	rep, err := model.Call(context.Background(), c, anthropicRequest(s, "plain"), model.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Text != "hello" || rep.Usage != (model.Usage{PromptTokens: 9, CompletionTokens: 2}) {
		t.Errorf("reply %q, usage %+v", rep.Text, rep.Usage)
	}
	got := s.Requests()[0]
	if got.Path != "/v1/messages" || !strings.Contains(got.Header.Get("Authorization")+got.Header.Get("X-Api-Key"), secret) || got.Header.Get("Anthropic-Version") == "" {
		t.Errorf("path %q, headers %v", got.Path, got.Header)
	}
	if got.Body["system"] == nil || got.Body["max_tokens"] == nil {
		t.Errorf("body %s", got.Raw)
	}
	req := anthropicRequest(s, "schema")
	req.Schema = schemaFile()
	rep, err = model.Generate(context.Background(), c, req, model.Policy{})
	if err != nil || rep.Object.(map[string]any)["file"] != "a.go" {
		t.Fatalf("schema: %v %v", rep, err)
	}
	req = anthropicRequest(s, "tools")
	req.Tools = []model.ToolDef{{Type: "function", Function: model.FunctionDef{Name: "read_file", Parameters: map[string]any{"type": "object"}}}}
	rep, err = model.Call(context.Background(), c, req, model.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{{ID: "toolu_1", Type: "function", Function: model.FunctionCall{Name: "read_file", Arguments: `{"path":"a.go"}`}}}
	if diff := cmp.Diff(want, rep.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
}

// TestUnusableReplies: a reply cut at the token limit is model_truncated
// unless partial text is accepted; a content filter is model_filtered and
// not retried; on both wires.
func TestUnusableReplies(t *testing.T) {
	for _, srv := range []struct {
		name string
		new  func(...modeltest.Rule) *modeltest.Server
		req  func(*modeltest.Server, string) model.Request
	}{{"openai", modeltest.New, request}, {"anthropic", modeltest.NewAnthropic, anthropicRequest}} {
		t.Run(srv.name, func(t *testing.T) {
			s := srv.new(
				modeltest.Rule{Match: "cut", Replies: []modeltest.Reply{{Content: "half a sent", Finish: "length"}}},
				modeltest.Rule{Match: "filter", Replies: []modeltest.Reply{{Content: "", Finish: "content_filter"}}},
				modeltest.Rule{Match: "tool", Replies: []modeltest.Reply{{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path": "mai"}`}}, Finish: "length"}}},
			)
			defer s.Close()
			c := &model.Client{Getenv: env(nil)}
			pol := model.Policy{Retries: 2, Backoff: time.Millisecond}
			_, err := model.Call(context.Background(), c, srv.req(s, "cut"), pol)
			if code(err) != string(model.CodeTruncated) || !strings.Contains(err.Error(), "cut off at the token limit") {
				t.Errorf("cut: %v", err)
			}
			partial := srv.req(s, "cut")
			partial.Partial = true
			if rep, err := model.Call(context.Background(), c, partial, pol); err != nil || rep.Text != "half a sent" || !rep.Cut {
				t.Errorf("partial: %v %v", rep, err)
			}
			_, err = model.Call(context.Background(), c, srv.req(s, "filter"), pol)
			if code(err) != string(model.CodeFiltered) || !strings.Contains(err.Error(), "content filter") {
				t.Errorf("filter: %v", err)
			}
			// A tool call cut at the limit can parse and still be cut:
			// it never runs, partial text accepted or not.
			for _, partial := range []bool{false, true} {
				req := srv.req(s, "tool")
				req.Partial = partial
				if rep, err := model.Call(context.Background(), c, req, pol); code(err) != string(model.CodeTruncated) || !strings.Contains(err.Error(), "while it called a tool") {
					t.Errorf("tool call cut, partial %v: %v (reply %v)", partial, err, rep != nil)
				}
			}
			if n := len(s.Requests()); n != 5 {
				t.Errorf("%d requests, want 5: none is retried", n)
			}
		})
	}
}

// TestRetryAfterHeaders: retry-after-ms wins over Retry-After, on both
// wires.
func TestRetryAfterHeaders(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sec, ms  string
		want     time.Duration
		anthropc bool
	}{
		{"seconds", "0.02", "", 20 * time.Millisecond, false},
		{"milliseconds", "", "30", 30 * time.Millisecond, false},
		{"both", "5", "40", 40 * time.Millisecond, false},
		{"anthropic both", "5", "40", 40 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := []modeltest.Reply{{Status: 429, RetryAfter: tc.sec, RetryAfterMs: tc.ms}, {Content: "ok"}}
			var s *modeltest.Server
			var req model.Request
			if tc.anthropc {
				s = modeltest.NewAnthropic(modeltest.Rule{Replies: replies})
				req = anthropicRequest(s, "x")
			} else {
				s = modeltest.New(modeltest.Rule{Replies: replies})
				req = request(s, "x")
			}
			defer s.Close()
			var waits []time.Duration
			pol := model.Policy{Retries: 1, Backoff: time.Hour, OnRetry: func(_ int, _ error, d time.Duration) { waits = append(waits, d) }}
			rep, err := model.Call(context.Background(), &model.Client{Getenv: env(nil)}, req, pol)
			if err != nil || rep.Text != "ok" {
				t.Fatalf("%v %v", rep, err)
			}
			if diff := cmp.Diff([]time.Duration{tc.want}, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStepTimeoutBeyondClientDefault: a step's timeout longer than the
// client's default bound is the bound of an attempt (scaled down: a 40ms
// default stands for any fixed cap, a reply after 300ms for a long
// reasoning call).
func TestStepTimeoutBeyondClientDefault(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "slow but fine", Delay: 300 * time.Millisecond}}})
	defer s.Close()
	c := &model.Client{Getenv: env(nil), Timeout: 40 * time.Millisecond}
	rep, err := model.Call(context.Background(), c, request(s, "x"), model.Policy{Timeout: 30 * time.Second})
	if err != nil || rep.Text != "slow but fine" {
		t.Fatalf("got %v %v, want the reply within the step's timeout", rep, err)
	}
}

// TestUnwrappedAnswers: routers, judges and schema replies read answers
// inside a Markdown fence or after <think> blocks.
func TestUnwrappedAnswers(t *testing.T) {
	labels := []string{"urgent", "routine"}
	for _, a := range []string{
		"```json\n{\"label\": \"routine\"}\n```",
		"```\n{\"label\": \"routine\"}\n```",
		"<think>It is not urgent.</think>\n{\"label\": \"routine\"}",
		"<think>hmm</think><think>more</think>\n```json\n{\"label\": \"routine\"}\n```",
		"<think>\nok\n</think>\n\nroutine",
	} {
		if got, ok := model.ReadLabel(a, labels); !ok || got != "routine" {
			t.Errorf("ReadLabel(%q) = %q, %v", a, got, ok)
		}
	}
	for _, a := range []string{
		"```json\n{\"verdict\": \"STOP\", \"reason\": \"done\"}\n```",
		"<think>Is it short? Yes.</think>{\"verdict\": \"STOP\", \"reason\": \"done\"}",
		"<think>x</think>\nSTOP: done",
	} {
		if v, r, ok := model.ReadVerdict(a); !ok || v != "STOP" || r != "done" {
			t.Errorf("ReadVerdict(%q) = %q, %q, %v", a, v, r, ok)
		}
	}
	if v, err := model.DecodeValid(schemaFile(), "<think>a.go</think>\n```json\n{\"file\": \"a.go\"}\n```"); err != nil || v.(map[string]any)["file"] != "a.go" {
		t.Errorf("DecodeValid: %v %v", v, err)
	}
}

// TestNoKeyDeclared: api_key_env = "" sends no key, whatever
// $OPENAI_API_KEY holds, and needs none set.
func TestNoKeyDeclared(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "hi"}}})
	defer s.Close()
	getenv := env(map[string]string{"OPENAI_API_KEY": secret})
	cfg := model.Resolve(&model.Decl{Name: "keyless", Model: "m", BaseURL: s.BaseURL(), KeyEnv: ""}, getenv)
	if err := cfg.Usable(env(nil)); err != nil {
		t.Errorf("Usable: %v", err)
	}
	req := cfg.Request()
	req.Messages = []model.Message{{Role: "user", Content: "x"}}
	if _, err := model.Call(context.Background(), &model.Client{Getenv: getenv}, req, model.Policy{}); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].Header; got.Get("Authorization") != "" || strings.Contains(fmt.Sprint(got), secret) {
		t.Errorf("headers %v, want no key", got)
	}
}

// TestAnthropicInferred: a model at Anthropic's host speaks the Messages
// API with $ANTHROPIC_API_KEY's key unless provider = "openai" says
// otherwise.
func TestAnthropicInferred(t *testing.T) {
	for _, tc := range []struct {
		decl model.Decl
		want string
	}{
		{model.Decl{Model: "c", BaseURL: "https://api.anthropic.com/v1/"}, model.ProviderAnthropic},
		{model.Decl{Model: "c", Provider: "anthropic"}, model.ProviderAnthropic},
		{model.Decl{Model: "c", Provider: "openai", BaseURL: "https://api.anthropic.com/v1/"}, ""},
		{model.Decl{Model: "c", BaseURL: "http://localhost:11434/v1"}, ""},
	} {
		cfg := model.Resolve(&tc.decl, env(nil))
		if cfg.Provider != tc.want {
			t.Errorf("%+v: provider %q, want %q", tc.decl, cfg.Provider, tc.want)
		}
		if tc.decl.Provider == "anthropic" && cfg.BaseURL != model.AnthropicBaseURL {
			t.Errorf("base URL %q", cfg.BaseURL)
		}
	}
}

var _ = errors.New
var _ = http.StatusOK

// TestStrictSchemaOnTheWire: a schema with an optional property goes out
// strict-shaped (every property required, the optional one nullable,
// additionalProperties false), and the model's null for the optional one
// reads as absent.
func TestStrictSchemaOnTheWire(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: `{"title": "x", "note": null}`}}})
	defer s.Close()
	req := request(s, "x")
	req.Schema = map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}, "note": map[string]any{"type": "string"}}, "required": []any{"title"}}
	rep, err := model.Generate(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"title": "x"}, rep.Object); diff != "" {
		t.Errorf("object (-want +got):\n%s", diff)
	}
	js := s.Requests()[0].Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
	want := map[string]any{"type": "object", "additionalProperties": false, "required": []any{"note", "title"},
		"properties": map[string]any{"title": map[string]any{"type": "string"}, "note": map[string]any{"type": []any{"string", "null"}}}}
	if diff := cmp.Diff(want, js["schema"]); diff != "" || js["strict"] != true {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
}

// TestAnthropicDefaults: the Messages API gets max_tokens 4096 when
// neither the model nor the step gives one, and a base URL's trailing /v1
// is dropped, since the SDK adds it (docs/models.md).
func TestAnthropicDefaults(t *testing.T) {
	cfg := model.Resolve(&model.Decl{Name: "p", Model: "claude-sonnet-4-5", Provider: "anthropic"}, env(nil))
	req := cfg.Request()
	req.Messages = []model.Message{{Role: "user", Content: "hi"}}
	b, err := model.WireBody(req)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if w["max_tokens"] != 4096.0 {
		t.Errorf("max_tokens %v, want 4096", w["max_tokens"])
	}
	for base, want := range map[string]string{
		"": model.AnthropicBaseURL, "https://api.anthropic.com/v1/": "https://api.anthropic.com",
		"https://proxy.example/v1": "https://proxy.example", "https://proxy.example": "https://proxy.example",
	} {
		if got := model.AnthropicRoot(base); got != want {
			t.Errorf("AnthropicRoot(%q) = %q, want %q", base, got, want)
		}
	}
}

// A classic Azure deployment URL (…/openai/deployments/NAME?api-version=V)
// is called at …/deployments/NAME/chat/completions?api-version=V with the
// key in api-key, as Azure wants; before, the query landed inside the path
// and the key went as a Bearer token.
func TestAzureDeploymentURL(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer srv.Close()
	req := model.Request{Endpoint: model.Endpoint{BaseURL: srv.URL + "/openai/deployments/my-dep?api-version=2024-10-21", KeyEnv: "AZURE_OPENAI_API_KEY"},
		Model: "my-dep", Messages: []model.Message{{Role: "user", Content: "hello"}}}
	c := &model.Client{Getenv: env(map[string]string{"AZURE_OPENAI_API_KEY": "az-key"})}
	rep, err := c.Complete(context.Background(), req)
	if err != nil || rep.Text != "hi" {
		t.Fatalf("%v, %v", rep, err)
	}
	if got.URL.Path != "/openai/deployments/my-dep/chat/completions" || got.URL.RawQuery != "api-version=2024-10-21" {
		t.Errorf("sent to %s?%s", got.URL.Path, got.URL.RawQuery)
	}
	if got.Header.Get("api-key") != "az-key" || got.Header.Get("Authorization") != "" {
		t.Errorf("api-key %q, Authorization %q", got.Header.Get("api-key"), got.Header.Get("Authorization"))
	}
}
