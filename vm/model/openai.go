package model

// This file defines the OpenAI-compatible side of [Client]: a [Request] as
// openai-go's chat completion parameters (the provider's rules for
// reasoning models applied), and a chat completion read back.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/skeinlang/skein/internal/jsonschema"
	"github.com/skeinlang/skein/internal/modelinfo"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// sendOpenAI sends req as a chat completion. What the server answered is
// left in the exchange mw keeps; the SDK's own reading of it is not used,
// but for a streamed reply's, which is read here into the reply returned.
func sendOpenAI(ctx context.Context, hc *http.Client, req Request, key string, mw option.Middleware) (*Reply, error) {
	params, err := openAIParams(req)
	if err != nil {
		return nil, &badRequestError{err}
	}
	base := strings.TrimRight(req.Endpoint.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, &badRequestError{fmt.Errorf("bad base_url %q: %v", base, err)}
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithMiddleware(mw),
	}
	if version, ok := azureDeployment(u); ok {
		// A classic Azure deployment URL: the API version is a query
		// parameter of every request, not part of the path the SDK adds
		// /chat/completions to, and the key goes in api-key.
		u.RawQuery = ""
		opts = append(opts, option.WithBaseURL(strings.TrimRight(u.String(), "/")), option.WithQuery("api-version", version))
		if key != "" {
			opts = append(opts, option.WithHeader("api-key", key))
		}
	} else {
		opts = append(opts, option.WithBaseURL(base))
		if key != "" {
			opts = append(opts, option.WithAPIKey(key))
		}
	}
	svc := openai.NewChatCompletionService(opts...)
	if req.Stream == nil {
		_, err = svc.New(ctx, params)
		return nil, err
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := svc.NewStreaming(ctx, params)
	defer stream.Close()
	return readOpenAIStream(req, stream)
}

// readOpenAIStream reads a streamed chat completion, telling req.Stream
// each piece of content, and returns the reply it adds up to: the chunks'
// content, refusal and tool calls (their pieces joined by index), the
// last finish reason and the usage of the last chunk, read as the
// completion a request without streaming gets (whose body is Raw).
func readOpenAIStream(req Request, stream *ssestream.Stream[openai.ChatCompletionChunk]) (*Reply, error) {
	var text, refusal strings.Builder
	var calls []ToolCall
	var usage *openai.CompletionUsage
	content, finish, id := false, "", ""
	for stream.Next() {
		ch := stream.Current()
		if ch.ID != "" {
			id = ch.ID
		}
		if ch.JSON.Usage.Valid() {
			u := ch.Usage
			usage = &u
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			d := c.Delta
			if d.JSON.Content.Valid() {
				content = true
			}
			if d.Content != "" {
				text.WriteString(d.Content)
				req.Stream(d.Content)
			}
			refusal.WriteString(d.Refusal)
			for _, tc := range d.ToolCalls {
				i := int(tc.Index)
				if i < 0 || i >= maxStreamedCalls {
					return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply's stream has a tool call of index %d", req.Model, tc.Index), Retryable: true}
				}
				for len(calls) <= i {
					calls = append(calls, ToolCall{Type: "function"})
				}
				if tc.ID != "" {
					calls[i].ID = tc.ID
				}
				if tc.Function.Name != "" {
					calls[i].Function.Name = tc.Function.Name
				}
				calls[i].Function.Arguments += tc.Function.Arguments
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if finish == "" {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply's stream ended before the reply did", req.Model), Retryable: true}
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if content || text.Len() > 0 {
		msg["content"] = text.String()
	}
	if refusal.Len() > 0 {
		msg["refusal"] = refusal.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	body := map[string]any{"id": id, "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}}
	if usage != nil {
		body["usage"] = map[string]any{"prompt_tokens": usage.PromptTokens, "completion_tokens": usage.CompletionTokens, "total_tokens": usage.TotalTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": usage.PromptTokensDetails.CachedTokens},
			"completion_tokens_details": map[string]any{"reasoning_tokens": usage.CompletionTokensDetails.ReasoningTokens}}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return ParseResponse(req.Model, raw)
}

// maxStreamedCalls bounds the index of a streamed tool call (a server
// that sends index 1e9 would have the calls take gigabytes).
const maxStreamedCalls = 1024

// azureDeployment reports whether u is a classic Azure OpenAI deployment
// URL (…/openai/deployments/NAME?api-version=V), and its API version.
func azureDeployment(u *url.URL) (string, bool) {
	v := u.Query().Get("api-version")
	return v, v != "" && strings.Contains(u.Path, "/openai/deployments/")
}

// WireBody returns the JSON body [Client] sends for req.
func WireBody(req Request) ([]byte, error) {
	if req.Provider == ProviderAnthropic {
		p, err := anthropicParams(req)
		if err != nil {
			return nil, err
		}
		return json.Marshal(p)
	}
	p, err := openAIParams(req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// openAIParams is req as a chat completion request. A reasoning model
// (modelinfo's table, or req.Reasoning) takes max_completion_tokens and
// reasoning_effort and no temperature, as OpenAI requires; any other takes
// max_tokens, which every compatible server reads, and temperature.
func openAIParams(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if req.Schema != nil && schemaInPrompt(req.Endpoint.BaseURL) {
		// The server may not tell the model the shape: say it in the
		// prompt, and validate (and repair) the reply as always.
		b, err := json.Marshal(req.Schema)
		if err != nil {
			return p, fmt.Errorf("schema: %v", err)
		}
		p.Messages = append(p.Messages, openai.SystemMessage("Reply with only a JSON value that matches this JSON schema, without a code fence: "+string(b)))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case "user":
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case "assistant":
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Function.Name, Arguments: tc.Function.Arguments}}})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case "tool":
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return p, fmt.Errorf("a message with role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		params, err := jsonObject(t.Function.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %q: parameters: %v", t.Function.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Function.Name, Parameters: params}
		if t.Function.Description != "" {
			fd.Description = openai.String(t.Function.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	reasoning := modelinfo.IsReasoning(req.Model, req.Reasoning)
	if req.MaxTokens > 0 {
		if reasoning {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil && !reasoning {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.ReasoningEffort != "" && reasoning {
		p.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
	}
	if req.Schema != nil {
		name := req.SchemaName
		if name == "" {
			name = "output"
		}
		schema, isStrict := strictSchema(req.Schema)
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: name, Strict: openai.Bool(isStrict), Schema: schema}}
	}
	return p, nil
}

// schemaInPrompt reports whether a schema goes into the prompt as well as
// response_format: for every server but those that enforce it
// (modelinfo.EnforcesSchema). Anthropic's compatibility endpoint ignores
// response_format (its documentation says so), and a local server may
// (an older Ollama, LM Studio, a server without grammar support): the
// model would never learn the shape.
func schemaInPrompt(base string) bool {
	if base == "" {
		return false
	}
	u, err := url.Parse(base)
	return err == nil && !modelinfo.EnforcesSchema(u.Hostname())
}

// strictSchema returns schema as strict mode wants it, and true; or, for a
// schema strict mode cannot take (which the checker refuses, so a graph
// built elsewhere), the schema as it is and false.
func strictSchema(schema any) (any, bool) {
	s, err := jsonschema.Strict(schema)
	if err != nil {
		return schema, false
	}
	return s, true
}

// jsonObject returns v (decoded JSON, or anything that encodes to an
// object) as a map.
func jsonObject(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

// ParseResponse reads a chat completion response body.
func ParseResponse(model string, raw []byte) (*Reply, error) {
	// A light look first: what the server sent says more than the
	// decoder's error ("invalid character 'o' in literal null"), and the
	// SDK's decoder accepts shapes that are no chat completion.
	var shape struct {
		Choices []json.RawMessage `json:"choices"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		what := "is not JSON"
		if json.Valid(raw) {
			what = "is not a chat completion"
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply %s%s", model, what, errorDetail(raw)), Retryable: true}
	}
	if len(shape.Choices) == 0 {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply has no choices%s", model, errorDetail(raw)), Retryable: true}
	}
	var cc openai.ChatCompletion
	if err := cc.UnmarshalJSON(raw); err != nil {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply is not a chat completion%s", model, errorDetail(raw)), Retryable: true}
	}
	ch := cc.Choices[0]
	m := ch.Message
	rep := &Reply{Text: m.Content, Raw: json.RawMessage(raw), Cut: ch.FinishReason == "length", Filtered: ch.FinishReason == "content_filter"}
	for _, tc := range m.ToolCalls {
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		rep.ToolCalls = append(rep.ToolCalls, ToolCall{ID: tc.ID, Type: typ, Function: FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	if !m.JSON.Content.Valid() && len(rep.ToolCalls) == 0 && !rep.Filtered {
		if m.Refusal != "" {
			return nil, &Error{Code: CodeFiltered, Msg: fmt.Sprintf("model %q refused: %s", model, m.Refusal)}
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply has no content", model), Retryable: true}
	}
	u := cc.Usage
	rep.Usage = Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens),
		CachedTokens: int(u.PromptTokensDetails.CachedTokens), ReasoningTokens: int(u.CompletionTokensDetails.ReasoningTokens)}
	return rep, nil
}
