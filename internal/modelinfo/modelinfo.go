// Package modelinfo is what Skein knows of model ids without asking a
// provider: which models reason (OpenAI's o-series and GPT-5), and so take
// max_completion_tokens and reasoning_effort and refuse a temperature. Both
// the checker (to warn when a declared parameter cannot apply) and the
// model client (to build the wire request) read it, so they never disagree.
//
// It is a table of name patterns, not a catalogue: a model it does not know
// is a chat model, and model(reasoning = ...) overrides it either way.
package modelinfo

import "strings"

// reasoningPrefixes are the families of OpenAI reasoning models, matched
// on the id without a router's "vendor/" prefix (OpenRouter's
// "openai/o4-mini"), up to a "-" or the end ("o3" and "o3-mini", never
// "o30b").
var reasoningPrefixes = []string{"o1", "o3", "o4", "gpt-5", "codex-mini"}

// chatExceptions are members of a reasoning family that are chat models
// (they take temperature and max_tokens).
var chatExceptions = []string{"gpt-5-chat"}

// Reasoning reports whether model is a reasoning model by the table.
func Reasoning(model string) bool {
	id := strings.ToLower(model)
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	for _, e := range chatExceptions {
		if strings.HasPrefix(id, e) {
			return false
		}
	}
	for _, p := range reasoningPrefixes {
		if id == p || strings.HasPrefix(id, p+"-") || strings.HasPrefix(id, p+".") {
			return true
		}
	}
	return false
}

// IsReasoning resolves the override: override when set, else the table.
func IsReasoning(model string, override *bool) bool {
	if override != nil {
		return *override
	}
	return Reasoning(model)
}

// AnthropicHost reports whether host is Anthropic's API, where a model()
// without provider= speaks the native Messages API.
func AnthropicHost(host string) bool {
	return strings.EqualFold(host, "api.anthropic.com")
}

// EnforcesSchema reports whether the OpenAI-compatible server at host
// enforces response_format's strict JSON schema: OpenAI's API and Azure
// OpenAI. Others (Anthropic's compatibility endpoint, which ignores it,
// and local or self-hosted servers, which may) are told the schema in the
// prompt as well.
func EnforcesSchema(host string) bool {
	host = strings.ToLower(host)
	return host == "api.openai.com" || strings.HasSuffix(host, ".openai.azure.com") || strings.HasSuffix(host, ".cognitiveservices.azure.com")
}
