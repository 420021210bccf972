package model

// This file defines the OpenAI-compatible chat completions client.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultTimeout bounds one request when [Client.Timeout] is zero.
const DefaultTimeout = 2 * time.Minute

// maxBody bounds a response body read into memory.
const maxBody = 8 << 20

// Client speaks POST {base_url}/chat/completions. The zero value is ready to
// use; it is safe for concurrent use.
type Client struct {
	HTTP    *http.Client            // nil: a client with no overall timeout (Timeout bounds each request)
	Timeout time.Duration           // per request; 0: DefaultTimeout
	Getenv  func(key string) string // nil: os.Getenv; read at each request, never kept
}

type wireRequest struct {
	Model          string          `json:"model"`
	Messages       []wireMessage   `json:"messages"`
	Tools          []ToolDef       `json:"tools,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

// wireMessage is a message as sent: an assistant message that only calls
// tools has null content.
type wireMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string `json:"name"`
	Strict bool   `json:"strict"`
	Schema any    `json:"schema"`
}

type wireResponse struct {
	Choices []struct {
		Message struct {
			Content   *string    `json:"content"`
			Refusal   *string    `json:"refusal"`
			ToolCalls []ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// WireBody returns the JSON body [Client] sends for req.
func WireBody(req Request) ([]byte, error) {
	w := wireRequest{Model: req.Model, Temperature: req.Temperature, MaxTokens: req.MaxTokens, Tools: req.Tools}
	w.Messages = make([]wireMessage, len(req.Messages))
	for i, m := range req.Messages {
		wm := wireMessage{Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			c := m.Content
			wm.Content = &c
		}
		w.Messages[i] = wm
	}
	if req.Schema != nil {
		name := req.SchemaName
		if name == "" {
			name = "output"
		}
		w.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: name, Strict: true, Schema: req.Schema}}
	}
	return json.Marshal(w)
}

// Complete sends one request.
func (c *Client) Complete(ctx context.Context, req Request) (*Reply, error) {
	body, err := WireBody(req)
	if err != nil {
		return nil, &Error{Code: CodeModel, Msg: "encoding the request: " + err.Error()}
	}
	base := strings.TrimRight(req.Endpoint.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: bad base_url %q: %v", req.Model, base, err)}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if req.Endpoint.KeyEnv != "" {
		getenv := c.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if key := getenv(req.Endpoint.KeyEnv); key != "" {
			hr.Header.Set("Authorization", "Bearer "+key)
		}
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		if parent.Err() != nil {
			return nil, parent.Err()
		}
		if ctx.Err() != nil {
			return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: no reply within %s", req.Model, timeout), Retryable: true}
		}
		// The URL error names the URL, never the key (it is in a header).
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: %v", req.Model, err), Retryable: true}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if parent.Err() != nil {
			return nil, parent.Err()
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: reading the reply: %v", req.Model, err), Retryable: true}
	}
	if len(raw) > maxBody {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: reply larger than %d bytes", req.Model, maxBody)}
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Code: CodeModel, Status: resp.StatusCode,
			Retryable:  resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		e.Msg = fmt.Sprintf("model %q: HTTP %d%s", req.Model, resp.StatusCode, errorDetail(raw))
		return nil, e
	}
	return ParseResponse(req.Model, raw)
}

// ParseResponse reads a chat completion response body.
func ParseResponse(model string, raw []byte) (*Reply, error) {
	var w wireResponse
	if err := json.Unmarshal(raw, &w); err != nil {
		// What the server sent says more than the decoder's error
		// ("invalid character 'o' in literal null").
		what := "is not JSON"
		if json.Valid(raw) {
			what = "is not a chat completion"
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply %s%s", model, what, errorDetail(raw)), Retryable: true}
	}
	if len(w.Choices) == 0 {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply has no choices%s", model, errorDetail(raw)), Retryable: true}
	}
	m := w.Choices[0].Message
	if m.Content == nil && len(m.ToolCalls) > 0 {
		empty := ""
		m.Content = &empty
	}
	if m.Content == nil {
		if m.Refusal != nil {
			return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q refused: %s", model, *m.Refusal)}
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply has no content", model), Retryable: true}
	}
	rep := &Reply{Text: *m.Content, ToolCalls: m.ToolCalls, Raw: json.RawMessage(raw), Cut: w.Choices[0].FinishReason == "length"}
	for i := range rep.ToolCalls {
		if rep.ToolCalls[i].Type == "" {
			rep.ToolCalls[i].Type = "function"
		}
	}
	if w.Usage != nil {
		rep.Usage = *w.Usage
	}
	return rep, nil
}

// errorDetail extracts an API error message from a body, briefly.
func errorDetail(raw []byte) string {
	var w struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &w) == nil && w.Error != nil && w.Error.Message != "" {
		return ": " + clip(w.Error.Message, 300)
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return ""
	}
	return ": " + clip(s, 200)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
