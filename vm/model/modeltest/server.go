// Package modeltest provides an in-process OpenAI-compatible chat
// completions server for tests: real HTTP and JSON on the wire, answers
// from a table, and faults on demand (429 with Retry-After, 5xx, slow
// replies, malformed bodies). It records every request it receives.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	Content    string        // the message content
	Status     int           // 0: 200
	RetryAfter string        // the Retry-After header, if any
	Raw        string        // a body sent verbatim instead of a completion (malformed JSON)
	Delay      time.Duration // wait before answering (the client may give up first)
	Prompt     int           // usage.prompt_tokens; 0: a count derived from the request
	Completion int           // usage.completion_tokens; 0: a count derived from the content
	// ToolCalls are tool calls the reply makes (content may then be "").
	ToolCalls []ToolCall
}

// ToolCall is one scripted tool call: the function's name and its
// arguments as the model would write them (JSON text, or anything else to
// test invalid arguments). ID defaults to call_N.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Rule answers requests whose first user message contains Match ("" matches
// everything), so a repair request (the same conversation, continued) meets
// the same rule. Replies are used in order, the last one repeating.
type Rule struct {
	Match   string
	Replies []Reply
	n       int
}

// Request is one request the server received.
type Request struct {
	Path          string
	Authorization string
	Body          map[string]any // the decoded JSON body
	Raw           string
}

// FirstUser returns the content of the request's first user message.
func (r Request) FirstUser() string {
	msgs, _ := r.Body["messages"].([]any)
	for _, x := range msgs {
		m, _ := x.(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// LastUser returns the content of the request's last user message.
func (r Request) LastUser() string {
	msgs, _ := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// Server is the fake. Rules are tried in order.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	rules    []*Rule
	requests []Request
}

// New starts a server answering from rules. Close it when done.
func New(rules ...Rule) *Server {
	s := &Server{}
	for i := range rules {
		r := rules[i]
		s.rules = append(s.rules, &r)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL returns the base URL to configure (ending in /v1).
func (s *Server) BaseURL() string { return s.Server.URL + "/v1" }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Raw: string(raw)}
	if err := json.Unmarshal(raw, &req.Body); err != nil || r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var rep *Reply
	user := req.FirstUser()
	for _, rule := range s.rules {
		if strings.Contains(user, rule.Match) && len(rule.Replies) > 0 {
			i := min(rule.n, len(rule.Replies)-1)
			rule.n++
			rep = &rule.Replies[i]
			break
		}
	}
	s.mu.Unlock()
	if rep == nil {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"no rule for %q"}}`, user), http.StatusNotFound)
		return
	}
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.WriteHeader(rep.Status)
		body := rep.Raw
		if body == "" {
			body = fmt.Sprintf(`{"error":{"message":"scripted status %d"}}`, rep.Status)
		}
		io.WriteString(w, body)
		return
	}
	if rep.Raw != "" {
		io.WriteString(w, rep.Raw)
		return
	}
	prompt, completion := rep.Prompt, rep.Completion
	if prompt == 0 {
		prompt = len(raw)/16 + 1
	}
	if completion == 0 {
		completion = len(rep.Content)/4 + 1
	}
	model, _ := req.Body["model"].(string)
	json.NewEncoder(w).Encode(map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion",
		"created": 0,
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       message(rep),
			"finish_reason": finish(rep),
		}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
}

func message(rep *Reply) map[string]any {
	m := map[string]any{"role": "assistant", "content": rep.Content}
	if len(rep.ToolCalls) == 0 {
		return m
	}
	if rep.Content == "" {
		m["content"] = nil
	}
	var calls []any
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		calls = append(calls, map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
	}
	m["tool_calls"] = calls
	return m
}

func finish(rep *Reply) string {
	if len(rep.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}
