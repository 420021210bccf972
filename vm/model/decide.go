package model

// This file defines the requests and readers of the two model calls that
// decide rather than produce: an LLM router's pick of a label and judge()'s
// verdict on a loop iteration.

import (
	"encoding/json"
	"strings"

	"github.com/skeinlang/skein/internal/label"
)

// Normalize is how labels and answers are compared: trimmed, lower-cased,
// surrounding punctuation and symbols removed ("Urgent." -> "urgent",
// "**routine**" -> "routine").
func Normalize(s string) string { return label.Normalize(s) }

// RouteSchema is the schema of a router's answer: {"label": one of labels}.
func RouteSchema(labels []string) map[string]any {
	enum := make([]any, len(labels))
	for i, l := range labels {
		enum[i] = l
	}
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"label": map[string]any{"type": "string", "enum": enum}},
		"required":             []any{"label"},
		"additionalProperties": false,
	}
}

// routeSystem is the system message of an LLM router.
const routeSystem = "You are a router. Read the request and choose exactly one of these labels: %s. " +
	`Answer with a JSON object {"label": "<one of the labels>"} and nothing else.`

// RouteRequest builds a router's request for prompt and labels; system, if
// not empty, comes before the router's own instructions.
func RouteRequest(m Request, system, prompt string, labels []string) Request {
	quoted := make([]string, len(labels))
	for i, l := range labels {
		quoted[i] = `"` + l + `"`
	}
	sys := strings.Replace(routeSystem, "%s", strings.Join(quoted, ", "), 1)
	if system != "" {
		sys = system + "\n\n" + sys
	}
	m.Messages = []Message{{Role: "system", Content: sys}, {Role: "user", Content: prompt}}
	m.Schema = RouteSchema(labels)
	m.SchemaName = "route"
	return m
}

// ReadLabel reads a router's answer: {"label": "x"} as the schema asks, or
// for a server that ignores schemas a JSON string or plain text. It returns
// the matching label (as declared) and whether one matched.
func ReadLabel(answer string, labels []string) (string, bool) {
	answer = Unwrap(answer)
	text := answer
	var obj struct {
		Label *string `json:"label"`
	}
	var s string
	if json.Unmarshal([]byte(answer), &obj) == nil && obj.Label != nil {
		text = *obj.Label
	} else if json.Unmarshal([]byte(answer), &s) == nil {
		text = s
	}
	want := Normalize(text)
	for _, l := range labels {
		if Normalize(l) == want {
			return l, true
		}
	}
	return "", false
}

// Verdicts of judge().
const (
	Stop      = "STOP"
	Continue  = "CONTINUE"
	Unrelated = "UNRELATED"
)

// JudgeSchema is the schema of a judge's answer.
func JudgeSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"verdict": map[string]any{"type": "string", "enum": []any{Stop, Continue, Unrelated}},
			"reason":  map[string]any{"type": "string"},
		},
		"required":             []any{"verdict", "reason"},
		"additionalProperties": false,
	}
}

const judgeSystem = `You judge whether a loop has reached its goal. You are given a condition in plain English, the output of the iteration that just finished, and the feedback you gave after the previous iteration. Answer with a JSON object {"verdict": "STOP" | "CONTINUE" | "UNRELATED", "reason": "..."}: STOP when the output satisfies the condition; CONTINUE when it does not yet, with a reason that says what to change; UNRELATED when nothing the loop could produce would satisfy the condition.`

// JudgeRequest builds a judge's request: the condition, the iteration's
// output (as JSON) and the previous feedback ("" if none).
func JudgeRequest(m Request, condition string, iteration int, output any, feedback string) Request {
	out, err := json.MarshalIndent(output, "", "  ")
	if err != nil {
		out = []byte("null")
	}
	if s, ok := output.(string); ok {
		out = []byte(s)
	}
	var b strings.Builder
	b.WriteString("Condition: ")
	b.WriteString(condition)
	b.WriteString("\n\nOutput of iteration ")
	b.WriteString(itoa(iteration))
	b.WriteString(":\n")
	b.Write(out)
	b.WriteString("\n\nPrevious feedback: ")
	if feedback == "" {
		b.WriteString("(none)")
	} else {
		b.WriteString(feedback)
	}
	m.Messages = []Message{{Role: "system", Content: judgeSystem}, {Role: "user", Content: b.String()}}
	m.Schema = JudgeSchema()
	m.SchemaName = "verdict"
	return m
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// ReadVerdict reads a judge's answer: the JSON the schema asks for, or for a
// server that ignores schemas text starting with a verdict word. ok is false
// when no verdict can be read (the caller treats that as CONTINUE).
func ReadVerdict(answer string) (verdict, reason string, ok bool) {
	var obj struct {
		Verdict string `json:"verdict"`
		Reason  any    `json:"reason"`
	}
	t := Unwrap(answer)
	if json.Unmarshal([]byte(t), &obj) == nil {
		v := strings.ToUpper(Normalize(obj.Verdict))
		if v == Stop || v == Continue || v == Unrelated {
			r, _ := obj.Reason.(string)
			return v, r, true
		}
		return "", "", false
	}
	word, rest, _ := strings.Cut(t, "\n")
	if f := strings.Fields(word); len(f) > 0 {
		v := strings.ToUpper(Normalize(f[0]))
		if v == Stop || v == Continue || v == Unrelated {
			reason := strings.TrimSpace(strings.TrimSpace(strings.TrimPrefix(word, f[0])) + "\n" + rest)
			return v, strings.TrimLeft(reason, ":-– "), true
		}
	}
	return "", "", false
}

// Unwrap returns a model's answer without what surrounds the answer
// itself: leading <think>...</think> blocks (reasoning models served by
// Ollama, vLLM or llama.cpp write their thoughts into the content) and a
// Markdown code fence around it (```json ... ```), trimmed. Schema
// replies, routers and judges all read answers through it.
func Unwrap(answer string) string {
	t := strings.TrimSpace(answer)
	for strings.HasPrefix(t, "<think>") {
		end := strings.Index(t, "</think>")
		if end < 0 {
			break
		}
		t = strings.TrimSpace(t[end+len("</think>"):])
	}
	if strings.HasPrefix(t, "```") && strings.HasSuffix(t, "```") && len(t) >= 6 {
		body := t[3 : len(t)-3]
		// The fence's info string ("json") runs to the end of its line.
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
			body = body[nl+1:]
		} else {
			body = strings.TrimPrefix(body, "json")
		}
		t = strings.TrimSpace(body)
	}
	return t
}
