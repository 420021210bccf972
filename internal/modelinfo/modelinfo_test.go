package modelinfo

import "testing"

func TestReasoning(t *testing.T) {
	for model, want := range map[string]bool{
		"o1": true, "o1-mini": true, "o3": true, "o3-mini": true, "o4-mini": true, "o3-pro-2025-06-10": true,
		"gpt-5": true, "gpt-5-mini": true, "gpt-5-nano": true, "gpt-5.1": true, "openai/o4-mini": true, "GPT-5": true,
		"gpt-5-chat-latest": false, "gpt-4o": false, "gpt-4o-mini": false, "gpt-4.1": false,
		"o30b": false, "llama3.2": false, "claude-sonnet-4-5": false, "qwen3:0.6b": false, "": false,
	} {
		if got := Reasoning(model); got != want {
			t.Errorf("Reasoning(%q) = %v, want %v", model, got, want)
		}
	}
	yes, no := true, false
	if !IsReasoning("gpt-4o", &yes) || IsReasoning("o3", &no) || !IsReasoning("o3", nil) {
		t.Error("the override does not win over the table")
	}
}
