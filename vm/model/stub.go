package model

// This file defines Skein's built-in offline model (provider "stub"): it
// answers from rules (docs/models.md#the-offline-stub-model), without a
// network, a key or a server, so that model and agent flows can be
// written, run and tested before any provider is set up.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skeinlang/skein/internal/jsonschema"
	"github.com/skeinlang/skein/internal/stubrules"
)

// ProviderStub is Skein's built-in offline model: [Stub] answers.
const ProviderStub = "stub"

// maxAnswersFile bounds a file of stub rules.
const maxAnswersFile = 4 << 20

// Stub is a [Provider] that answers every request from Rules, whatever
// provider the request names (skein run --model stub); [Client] answers a
// request for [ProviderStub] with the rules its endpoint carries. It is
// safe for concurrent use: an answer depends on the request only, so a
// replayed or resumed run gets the same one.
type Stub struct {
	Rules []stubrules.Rule
}

// Complete answers req: the first rule whose match the request's system
// or user messages contain gives its turn (the n-th turn of a rule with
// turns for a conversation with n assistant messages already); without
// one, the stub answers a schema with the plainest object it accepts
// ([jsonschema.Example]: a router's first label, a judge's STOP) and
// anything else with a line quoting the prompt. The reply is a chat
// completion, as a server's, so cassettes and the record see one.
func (s Stub) Complete(ctx context.Context, req Request) (*Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	turn, ok := pickTurn(s.Rules, req)
	content := ""
	var calls []map[string]any
	switch {
	case !ok && req.Schema != nil:
		b, _ := json.Marshal(jsonschema.Example(req.Schema))
		content = string(b)
	case !ok:
		content = "stub answer to: " + clip(firstLine(lastUser(req)), 80)
	default:
		var err error
		if content, err = ruleText(turn.Reply, ""); err != nil {
			return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: stub reply: %v", req.Model, err)}
		}
		for i, c := range turn.ToolCalls {
			args, _ := ruleText(c.Arguments, "{}")
			calls = append(calls, map[string]any{"id": fmt.Sprintf("stub_call_%d_%d", assistantTurns(req)+1, i+1), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": args}})
		}
	}
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": content}
	if len(calls) > 0 {
		finish, msg["tool_calls"] = "tool_calls", calls
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content)
	}
	body, err := json.Marshal(map[string]any{
		"id": "stub", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		// A rough count, four bytes a token, so that budgets can be tried.
		"usage": map[string]any{"prompt_tokens": tokens(prompt), "completion_tokens": tokens(len(content)), "total_tokens": tokens(prompt) + tokens(len(content))},
	})
	if err != nil {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: stub: %v", req.Model, err)}
	}
	return ParseResponse(req.Model, body)
}

func tokens(bytes int) int { return (bytes + 3) / 4 }

// pickTurn returns the turn of the first rule req matches.
func pickTurn(rules []stubrules.Rule, req Request) (stubrules.Turn, bool) {
	var text strings.Builder
	for _, m := range req.Messages {
		if m.Role == "system" || m.Role == "user" {
			text.WriteString(m.Content)
			text.WriteByte('\n')
		}
	}
	for _, r := range rules {
		if !strings.Contains(text.String(), r.Match) {
			continue
		}
		if len(r.Turns) == 0 {
			return r.Turn, true
		}
		return r.Turns[min(assistantTurns(req), len(r.Turns)-1)], true
	}
	return stubrules.Turn{}, false
}

// assistantTurns counts the assistant messages of req: how many answers
// its conversation has had.
func assistantTurns(req Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

func lastUser(req Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ReadAnswers reads a file of stub rules (a JSON list, see
// docs/models.md), refusing what is not a regular file of at most 4 MiB.
func ReadAnswers(path string) ([]stubrules.Rule, error) {
	b, err := readFile(path, maxAnswersFile)
	if err != nil {
		return nil, fmt.Errorf("answers: %v", err)
	}
	rules, err := stubrules.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("answers %s: %v", path, err)
	}
	return rules, nil
}

// stubRules are the rules of a request for [ProviderStub]: its
// endpoint's, and those of its file, read at each call (a small file; an
// engine's worker reads it where it runs).
func stubRules(ep Endpoint) ([]stubrules.Rule, error) {
	rules := ep.Answers
	if ep.AnswersFile != "" {
		more, err := ReadAnswers(ep.AnswersFile)
		if err != nil {
			return nil, err
		}
		rules = append(append([]stubrules.Rule(nil), rules...), more...)
	}
	return rules, nil
}

// completeStub answers a request for [ProviderStub].
func completeStub(ctx context.Context, req Request) (*Reply, error) {
	rules, err := stubRules(req.Endpoint)
	if err != nil {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: %v", req.Model, err)}
	}
	return Stub{Rules: rules}.Complete(ctx, req)
}

// ruleText is a rule's reply or arguments as the text a server sends:
// none is empty, a string is itself, anything else its JSON.
func ruleText(v any, empty string) (string, error) {
	switch v := v.(type) {
	case nil:
		return empty, nil
	case string:
		return v, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}
