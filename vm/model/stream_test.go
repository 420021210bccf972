package model_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// providers are the in-process servers and the requests for them, by the
// API they speak.
var providers = []struct {
	name    string
	server  func(...modeltest.Rule) *modeltest.Server
	request func(*modeltest.Server, string) model.Request
}{{"openai", modeltest.New, request}, {"anthropic", modeltest.NewAnthropic, anthropicRequest}}

// A streamed reply is told piece by piece, in order, and adds up to the
// reply a request without streaming gets: its text, tool calls and whole
// usage (cached and reasoning tokens included, OpenAI's through
// stream_options.include_usage).
func TestStreamPieces(t *testing.T) {
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			rep := modeltest.Reply{Content: "one two three", Chunks: []string{"one ", "two ", "three"}, Prompt: 20, Completion: 3, Cached: 8}
			if pv.name == "openai" {
				rep.Reasoning = 2
			}
			s := pv.server(modeltest.Rule{Replies: []modeltest.Reply{rep}})
			defer s.Close()
			c := &model.Client{Getenv: env(nil)}
			plain, err := model.Call(context.Background(), c, pv.request(s, "x"), model.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			var pieces []string
			req := pv.request(s, "x")
			req.Stream = func(text string) { pieces = append(pieces, text) }
			got, err := model.Call(context.Background(), c, req, model.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"one ", "two ", "three"}, pieces); diff != "" {
				t.Errorf("pieces (-want +got):\n%s", diff)
			}
			if got.Text != "one two three" || got.Cut || got.Filtered {
				t.Errorf("streamed reply %+v", got)
			}
			if got.Usage != plain.Usage || got.Usage.CachedTokens != 8 || got.Usage.PromptTokens != 20 {
				t.Errorf("streamed usage %+v, without streaming %+v", got.Usage, plain.Usage)
			}
			if pv.name == "openai" && got.Usage.ReasoningTokens != 2 {
				t.Errorf("reasoning tokens %d, want 2", got.Usage.ReasoningTokens)
			}
			body := s.Requests()[1].Body
			if pv.name == "openai" && !strings.Contains(s.Requests()[1].Raw, `"include_usage":true`) {
				t.Errorf("streamed request without include_usage: %s", s.Requests()[1].Raw)
			}
			if body["stream"] != true {
				t.Errorf("request not streamed: %v", body["stream"])
			}
			// The recorded body reads back as the same reply.
			parse := model.ParseResponse
			if pv.name == "anthropic" {
				parse = model.ParseAnthropic
			}
			again, err := parse(req.Model, got.Raw)
			if err != nil || again.Text != got.Text || again.Usage != got.Usage {
				t.Errorf("Raw reads back as %+v, %v", again, err)
			}
		})
	}
}

// Tool calls streamed in pieces come back whole.
func TestStreamToolCalls(t *testing.T) {
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			s := pv.server(modeltest.Rule{Replies: []modeltest.Reply{{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path": "a.go"}`}}}}})
			defer s.Close()
			req := pv.request(s, "x")
			req.Stream = func(string) {}
			got, err := model.Call(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.ToolCalls) != 1 || got.ToolCalls[0].ID != "c1" || got.ToolCalls[0].Function.Name != "read" ||
				strings.ReplaceAll(got.ToolCalls[0].Function.Arguments, " ", "") != `{"path":"a.go"}` {
				t.Errorf("tool calls %+v", got.ToolCalls)
			}
		})
	}
}

// A streamed reply cut at the token limit fails model_truncated, one the
// content filter stopped model_filtered, as unstreamed ones do.
func TestStreamFinishReasons(t *testing.T) {
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			s := pv.server(
				modeltest.Rule{Match: "long", Replies: []modeltest.Reply{{Content: "half a", Finish: "length"}}},
				modeltest.Rule{Match: "bad", Replies: []modeltest.Reply{{Content: "no", Finish: "content_filter"}}})
			defer s.Close()
			c := &model.Client{Getenv: env(nil)}
			for user, want := range map[string]string{"long": "model_truncated", "bad": "model_filtered"} {
				var told strings.Builder
				req := pv.request(s, user)
				req.Stream = func(text string) { told.WriteString(text) }
				_, err := model.Call(context.Background(), c, req, model.Policy{Retries: 2})
				if code(err) != want {
					t.Errorf("%s: %v (%s), want %s", user, err, code(err), want)
				}
				if told.Len() == 0 {
					t.Errorf("%s: nothing told before the reply ended", user)
				}
			}
			if n := len(s.Requests()); n != 2 {
				t.Errorf("%d requests, want 2 (neither retried)", n)
			}
			req := pv.request(s, "long")
			req.Partial, req.Stream = true, func(string) {}
			if rep, err := model.Call(context.Background(), c, req, model.Policy{}); err != nil || rep.Text != "half a" || !rep.Cut {
				t.Errorf("partial: %+v, %v", rep, err)
			}
		})
	}
}

// Cancelling a call mid-stream ends it at once, while the server goes on
// streaming slowly, and leaves no goroutine behind.
func TestStreamCancelled(t *testing.T) {
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			words := strings.Split(strings.Repeat("word ", 1000), " ")
			s := pv.server(modeltest.Rule{Replies: []modeltest.Reply{{Content: strings.Join(words, " "), Chunks: words, ChunkDelay: 20 * time.Millisecond}}})
			defer s.Close()
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			req := pv.request(s, "x")
			req.Stream = func(string) {
				if n++; n == 3 {
					cancel()
				}
			}
			tr := &http.Transport{}
			c := &model.Client{Getenv: env(nil), HTTP: &http.Client{Transport: tr}}
			_, err := model.Call(ctx, c, req, model.Policy{Retries: 3})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled mid-stream: %v", err)
			}
			if n > 10 {
				t.Errorf("told %d pieces after the cancel", n-3)
			}
			if len(s.Requests()) != 1 {
				t.Errorf("%d requests, want 1 (a cancel is not retried)", len(s.Requests()))
			}
			tr.CloseIdleConnections()
			s.CloseClientConnections()
			waitGoroutines(t, before)
		})
	}
}

// A step's timeout ends a stream that is still going, as a timeout.
func TestStreamTimeout(t *testing.T) {
	words := strings.Split(strings.Repeat("word ", 1000), " ")
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: strings.Join(words, " "), Chunks: words, ChunkDelay: 20 * time.Millisecond}}})
	defer s.Close()
	req := request(s, "x")
	told := 0
	req.Stream = func(string) { told++ }
	_, err := model.Call(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{Timeout: 200 * time.Millisecond})
	if code(err) != "timeout" || told == 0 {
		t.Errorf("%v (%s) after %d pieces, want a timeout mid-stream", err, code(err), told)
	}
}

// waitGoroutines waits for the goroutines to be back to before (the
// server's handler and the transport's end as their connections close).
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	for i := 0; ; i++ {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if i == 200 {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A cassette records a streamed reply as the whole reply, and its replay
// tells the text whole, once; the reply is the same.
func TestStreamCassette(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "a b c", Prompt: 5, Completion: 3}}})
	defer s.Close()
	path := filepath.Join(t.TempDir(), "tape.json")
	rec, err := model.OpenCassette(path, false, &model.Client{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	req := request(s, "x")
	req.Stream = func(text string) { live = append(live, text) }
	first, err := model.Call(context.Background(), rec, req, model.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	play, err := model.OpenCassette(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	req.Stream = func(text string) { replayed = append(replayed, text) }
	again, err := model.Call(context.Background(), play, req, model.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 3 || !cmp.Equal(replayed, []string{"a b c"}) {
		t.Errorf("told %q live, %q replayed", live, replayed)
	}
	if again.Text != first.Text || again.Usage != first.Usage {
		t.Errorf("replayed %+v, recorded %+v", again, first)
	}
	// A request without streaming matches the same recording.
	play, err = model.OpenCassette(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Stream = nil
	if _, err := model.Call(context.Background(), play, req, model.Policy{}); err != nil {
		t.Errorf("unstreamed request of a streamed recording: %v", err)
	}
}

// A server that answers a streamed request whole (it ignores "stream") is
// read as without streaming, and its text told as one piece.
func TestStreamAnsweredWhole(t *testing.T) {
	s := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Raw: `{"id":"x","object":"chat.completion","model":"m1","choices":[{"index":0,"message":{"role":"assistant","content":"all at once"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`}}})
	defer s.Close()
	var told []string
	req := request(s, "x")
	req.Stream = func(text string) { told = append(told, text) }
	rep, err := model.Call(context.Background(), &model.Client{Getenv: env(nil)}, req, model.Policy{})
	if err != nil || rep.Text != "all at once" || !cmp.Equal(told, []string{"all at once"}) {
		t.Errorf("%+v, %v; told %q", rep, err, told)
	}
}
