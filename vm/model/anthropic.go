package model

// This file defines the Anthropic side of [Client]: a [Request] as
// anthropic-sdk-go's Messages parameters, and a message read back.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// AnthropicBaseURL is Anthropic's API, the base URL of a model with
// provider = "anthropic" and no base_url.
const AnthropicBaseURL = "https://api.anthropic.com"

// anthropicMaxTokens is max_tokens when the model gives none: the
// Messages API requires one.
const anthropicMaxTokens = 4096

// sendAnthropic sends req to the Messages API. What the server answered is
// left in the exchange mw keeps; a streamed reply is read here into the
// reply returned.
func sendAnthropic(ctx context.Context, hc *http.Client, req Request, key string, mw option.Middleware) (*Reply, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return nil, &badRequestError{err}
	}
	base := AnthropicRoot(req.Endpoint.BaseURL)
	if _, err := url.Parse(base); err != nil {
		return nil, &badRequestError{fmt.Errorf("bad base_url %q: %v", base, err)}
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
		option.WithMiddleware(mw),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	svc := anthropic.NewMessageService(opts...)
	if req.Stream == nil {
		_, err = svc.New(ctx, params)
		return nil, err
	}
	stream := svc.NewStreaming(ctx, params)
	defer stream.Close()
	// The SDK's accumulator adds the events up to the message a request
	// without streaming gets, its JSON included.
	var msg anthropic.Message
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply's stream: %v", req.Model, err), Retryable: true}
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			req.Stream(ev.Delta.Text)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if msg.StopReason == "" {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply's stream ended before the reply did", req.Model), Retryable: true}
	}
	return ParseAnthropic(req.Model, []byte(msg.RawJSON()))
}

// AnthropicRoot is the root the SDK adds /v1/messages to: base without a
// trailing /v1, so that the base URL of Anthropic's OpenAI-compatible
// endpoint (https://api.anthropic.com/v1/) also names the native API.
func AnthropicRoot(base string) string {
	base = strings.TrimRight(base, "/")
	if base == "" {
		return AnthropicBaseURL
	}
	return strings.TrimSuffix(base, "/v1")
}

// anthropicParams is req as a Messages request. System messages become
// the system prompt; tool results following an assistant's tool calls are
// one user message of tool_result blocks, as the API requires. A schema is
// asked for with output_config.format, the SDK's structured outputs; the
// SDK has no temperature, so none is sent.
func anthropicParams(req Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: anthropicMaxTokens}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	var results []anthropic.ContentBlockParamUnion
	flush := func() {
		if len(results) > 0 {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(results...))
			results = nil
		}
	}
	for _, m := range req.Messages {
		if m.Role != "tool" {
			flush()
		}
		switch m.Role {
		case "system":
			p.System = append(p.System, anthropic.TextBlockParam{Text: m.Content})
		case "user":
			p.Messages = append(p.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		case "assistant":
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" || len(m.ToolCalls) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				var input any = map[string]any{}
				if json.Valid([]byte(tc.Function.Arguments)) {
					input = json.RawMessage(tc.Function.Arguments)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Function.Name))
			}
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		case "tool":
			results = append(results, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false))
		default:
			return p, fmt.Errorf("a message with role %q", m.Role)
		}
	}
	flush()
	for _, t := range req.Tools {
		params, err := jsonObject(t.Function.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %q: parameters: %v", t.Function.Name, err)
		}
		schema := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range params {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				for _, r := range asList(v) {
					if s, ok := r.(string); ok {
						schema.Required = append(schema.Required, s)
					}
				}
			default:
				schema.ExtraFields[k] = v
			}
		}
		tool := anthropic.ToolParam{Name: t.Function.Name, InputSchema: schema}
		if t.Function.Description != "" {
			tool.Description = anthropic.String(t.Function.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	if req.ReasoningEffort != "" {
		p.OutputConfig.Effort = anthropic.OutputConfigEffort(req.ReasoningEffort)
	}
	if req.Schema != nil {
		schema, _ := strictSchema(req.Schema)
		s, err := jsonObject(schema)
		if err != nil {
			return p, fmt.Errorf("schema: %v", err)
		}
		p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: s}
	}
	return p, nil
}

func asList(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out
	}
	return nil
}

// ParseAnthropic reads a Messages API response body: the text blocks are
// the reply's text (thinking blocks are not), tool_use blocks its tool
// calls.
func ParseAnthropic(model string, raw []byte) (*Reply, error) {
	var shape struct {
		Type    string            `json:"type"`
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil || shape.Type != "message" {
		what := "is not JSON"
		if json.Valid(raw) {
			what = "is not a message"
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply %s%s", model, what, errorDetail(raw)), Retryable: true}
	}
	var msg anthropic.Message
	if err := msg.UnmarshalJSON(raw); err != nil {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply is not a message%s", model, errorDetail(raw)), Retryable: true}
	}
	rep := &Reply{Raw: json.RawMessage(raw), Cut: msg.StopReason == anthropic.StopReasonMaxTokens, Filtered: msg.StopReason == anthropic.StopReasonRefusal}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			rep.ToolCalls = append(rep.ToolCalls, ToolCall{ID: b.ID, Type: "function", Function: FunctionCall{Name: b.Name, Arguments: args}})
		}
	}
	rep.Text = text.String()
	u := msg.Usage
	// Anthropic counts cached prompt tokens apart from input_tokens;
	// Skein's prompt tokens are all of them, as OpenAI counts.
	rep.Usage = Usage{PromptTokens: int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens), CompletionTokens: int(u.OutputTokens),
		CachedTokens: int(u.CacheReadInputTokens), ReasoningTokens: int(u.OutputTokensDetails.ThinkingTokens)}
	return rep, nil
}
