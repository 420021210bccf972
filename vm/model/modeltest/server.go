// Package modeltest provides in-process model servers for tests: an
// OpenAI-compatible chat completions server ([New]) and an Anthropic
// Messages API server ([NewAnthropic]), with real HTTP and JSON on the
// wire, answers from a table, and faults on demand (429 with Retry-After
// or retry-after-ms, 5xx, slow replies, malformed bodies, replies cut at
// the token limit or stopped by a content filter). A request with
// "stream": true is answered with server-sent events, piece by piece. Each
// records every request it receives.
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
	Content    string // the message content
	Status     int    // 0: 200
	RetryAfter string // the Retry-After header, if any
	// RetryAfterMs is the retry-after-ms header, if any.
	RetryAfterMs string
	Raw          string        // a body sent verbatim instead of a completion (malformed JSON)
	Delay        time.Duration // wait before answering (the client may give up first)
	Prompt       int           // usage.prompt_tokens; 0: a count derived from the request
	Completion   int           // usage.completion_tokens; 0: a count derived from the content
	// ToolCalls are tool calls the reply makes (content may then be "").
	ToolCalls []ToolCall
	// Finish is why the reply ended, in OpenAI's words: "" (stop, or
	// tool_calls with ToolCalls), "length" or "content_filter". The
	// Anthropic server says max_tokens and refusal.
	Finish string
	// Cached and Reasoning are usage's cached prompt tokens and
	// reasoning tokens (OpenAI's prompt_tokens_details and
	// completion_tokens_details, Anthropic's cache_read_input_tokens).
	Cached, Reasoning int
	// Chunks are the pieces a streamed reply (a request with "stream":
	// true) sends its content in; nil: the content's words.
	Chunks []string
	// ChunkDelay is the wait before each piece of a streamed reply.
	ChunkDelay time.Duration
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
	Header        http.Header
	Body          map[string]any // the decoded JSON body
	Raw           string
}

// FirstUser returns the text of the request's first user message.
func (r Request) FirstUser() string {
	msgs, _ := r.Body["messages"].([]any)
	for _, x := range msgs {
		m, _ := x.(map[string]any)
		if m["role"] == "user" {
			return text(m["content"])
		}
	}
	return ""
}

// LastUser returns the text of the request's last user message.
func (r Request) LastUser() string {
	msgs, _ := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "user" {
			return text(m["content"])
		}
	}
	return ""
}

// text is a message's content as text: a string (OpenAI) or the text of
// its content blocks (Anthropic; a user message of tool results has none).
func text(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, x := range c {
			if blk, ok := x.(map[string]any); ok && blk["type"] == "text" {
				s, _ := blk["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// Server is the fake. Rules are tried in order.
type Server struct {
	*httptest.Server
	anthropic bool
	mu        sync.Mutex
	rules     []*Rule
	requests  []Request
}

// New starts an OpenAI-compatible server answering from rules. Close it
// when done.
func New(rules ...Rule) *Server { return start(false, rules) }

// NewAnthropic starts a server of Anthropic's Messages API (POST
// /v1/messages) answering from rules. Close it when done.
func NewAnthropic(rules ...Rule) *Server { return start(true, rules) }

func start(anthropic bool, rules []Rule) *Server {
	s := &Server{anthropic: anthropic}
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
	req := Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Header: r.Header.Clone(), Raw: string(raw)}
	path := "/v1/chat/completions"
	if s.anthropic {
		path = "/v1/messages"
	}
	if err := json.Unmarshal(raw, &req.Body); err != nil || r.URL.Path != path || r.Method != http.MethodPost {
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
	if rep.RetryAfterMs != "" {
		w.Header().Set("Retry-After-Ms", rep.RetryAfterMs)
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
	if stream, _ := req.Body["stream"].(bool); stream {
		if s.anthropic {
			streamAnthropic(w, r, rep, model, prompt, completion)
		} else {
			streamOpenAI(w, r, rep, req, model, prompt, completion)
		}
		return
	}
	if s.anthropic {
		json.NewEncoder(w).Encode(anthropicMessage(rep, model, prompt, completion))
		return
	}
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
		"usage": usage(rep, prompt, completion),
	})
}

// usage is rep's usage in OpenAI's words.
func usage(rep *Reply, prompt, completion int) map[string]any {
	u := map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	if rep.Cached > 0 {
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": rep.Cached}
	}
	if rep.Reasoning > 0 {
		u["completion_tokens_details"] = map[string]any{"reasoning_tokens": rep.Reasoning}
	}
	return u
}

// chunks is the pieces rep's content is streamed in.
func chunks(rep *Reply) []string {
	if rep.Chunks != nil {
		return rep.Chunks
	}
	if rep.Content == "" {
		return nil
	}
	return strings.SplitAfter(rep.Content, " ")
}

// sse writes server-sent events, one flushed at a time, each after rep's
// ChunkDelay; false once the client has gone.
type sse struct {
	w     http.ResponseWriter
	r     *http.Request
	delay time.Duration
}

func (e sse) send(event string, data any) bool {
	if e.delay > 0 {
		select {
		case <-time.After(e.delay):
		case <-e.r.Context().Done():
			return false
		}
	}
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(e.w, "event: %s\n", event)
	}
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return false
	}
	e.w.(http.Flusher).Flush()
	return e.r.Context().Err() == nil
}

// streamOpenAI sends rep as chat completion chunks: the role, the content
// piece by piece, each tool call's name and then its arguments in two
// pieces, the finish reason, the usage (when stream_options.include_usage
// asks for it) and [DONE].
func streamOpenAI(w http.ResponseWriter, r *http.Request, rep *Reply, req Request, model string, prompt, completion int) {
	w.Header().Set("Content-Type", "text/event-stream")
	e := sse{w, r, rep.ChunkDelay}
	chunk := func(delta map[string]any, finish any) map[string]any {
		choices := []any{}
		if delta != nil {
			choices = append(choices, map[string]any{"index": 0, "delta": delta, "finish_reason": finish})
		}
		return map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": choices}
	}
	if !e.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, c := range chunks(rep) {
		if !e.send("", chunk(map[string]any{"content": c}, nil)) {
			return
		}
	}
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		half := len(c.Arguments) / 2
		for _, d := range []map[string]any{
			{"index": i, "id": id, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments[:half]}},
			{"index": i, "function": map[string]any{"arguments": c.Arguments[half:]}},
		} {
			if !e.send("", chunk(map[string]any{"tool_calls": []any{d}}, nil)) {
				return
			}
		}
	}
	if !e.send("", chunk(map[string]any{}, finish(rep))) {
		return
	}
	if opts, _ := req.Body["stream_options"].(map[string]any); opts["include_usage"] == true {
		u := chunk(nil, nil)
		u["usage"] = usage(rep, prompt, completion)
		if !e.send("", u) {
			return
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// streamAnthropic sends rep as Messages API stream events.
func streamAnthropic(w http.ResponseWriter, r *http.Request, rep *Reply, model string, prompt, completion int) {
	w.Header().Set("Content-Type", "text/event-stream")
	e := sse{w, r, rep.ChunkDelay}
	msg := anthropicMessage(rep, model, prompt, 1)
	msg["content"], msg["stop_reason"] = []any{}, nil
	if !e.send("message_start", map[string]any{"type": "message_start", "message": msg}) {
		return
	}
	block := 0
	if rep.Content != "" || len(rep.ToolCalls) == 0 {
		e.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(rep) {
			if !e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": c}}) {
				return
			}
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		block++
	}
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d", i+1)
		}
		e.send("content_block_start", map[string]any{"type": "content_block_start", "index": block,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}})
		if !e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": block, "delta": map[string]any{"type": "input_json_delta", "partial_json": c.Arguments}}) {
			return
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": block})
		block++
	}
	final := anthropicMessage(rep, model, prompt, completion)
	if !e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": final["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": completion}}) {
		return
	}
	e.send("message_stop", map[string]any{"type": "message_stop"})
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
	switch {
	case rep.Finish != "":
		return rep.Finish
	case len(rep.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// anthropicMessage is rep as a Messages API response.
func anthropicMessage(rep *Reply, model string, prompt, completion int) map[string]any {
	var content []any
	if rep.Content != "" || len(rep.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": rep.Content})
	}
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d", i+1)
		}
		var input any
		if err := json.Unmarshal([]byte(c.Arguments), &input); err != nil {
			input = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
	}
	stop := map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}[finish(rep)]
	return map[string]any{
		"id":            "msg_test",
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         map[string]any{"input_tokens": prompt - rep.Cached, "output_tokens": completion, "cache_read_input_tokens": rep.Cached},
	}
}
