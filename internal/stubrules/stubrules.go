// Package stubrules is the format of the answers of Skein's built-in
// offline model (model(provider = "stub"), skein run --model stub:FILE):
// a list of rules, each naming text the request contains and the reply
// to give, read from a flow's answers= or a small JSON file and checked.
// It only reads and checks them: vm/model answers from them. It is apart
// so that builtins can refuse bad inline answers when the flow loads.
package stubrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Rule answers the requests whose system or user messages contain Match
// ("" matches every request). It gives one turn, or Turns in order: the
// n-th answer of one conversation (an agent's n-th turn, a schema's
// repair) is Turns[n], the last one repeating.
type Rule struct {
	Match string `json:"match,omitempty"`
	Turn
	Turns []Turn `json:"turns,omitempty"`
}

// Turn is one answer: a reply, or tool calls (an agent's turn), or both.
type Turn struct {
	// Reply is the answer's text: a string as it is, any other value as
	// its JSON (what a schema= step validates).
	Reply any `json:"reply,omitempty"`
	// ToolCalls call tools of an agent step.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one call of a tool: its name and arguments (an object, or
// JSON text as a model would write it).
type ToolCall struct {
	Name      string `json:"name"`
	Arguments any    `json:"arguments,omitempty"`
}

// Empty reports whether t says nothing (the default answer is given).
func (t Turn) Empty() bool { return t.Reply == nil && len(t.ToolCalls) == 0 }

// Parse reads rules from JSON text: a list of rules.
func Parse(data []byte) ([]Rule, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rules []Rule
	if err := dec.Decode(&rules); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field == "" {
			return nil, fmt.Errorf(`want a list of rules ([{"match": "...", "reply": "..."}, ...]), got a JSON %s`, ute.Value)
		}
		return nil, fmt.Errorf("not a list of rules: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a list of rules: more after the list")
	}
	return rules, Check(rules)
}

// Decode reads rules from decoded JSON (a flow's answers= list).
func Decode(v any) ([]Rule, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Check reports the first rule that says nothing, or both a turn and
// turns, or calls a tool without a name.
func Check(rules []Rule) error {
	for i, r := range rules {
		at := fmt.Sprintf("rule %d", i+1)
		if r.Match != "" {
			at = fmt.Sprintf("rule %d (%q)", i+1, r.Match)
		}
		switch {
		case len(r.Turns) > 0 && !r.Turn.Empty():
			return fmt.Errorf("%s: give reply/tool_calls or turns, not both", at)
		case len(r.Turns) == 0 && r.Turn.Empty():
			return fmt.Errorf("%s: no reply, tool_calls or turns", at)
		}
		for j, t := range append([]Turn{r.Turn}, r.Turns...) {
			if j > 0 && t.Empty() {
				return fmt.Errorf("%s: turn %d has no reply or tool_calls", at, j)
			}
			for _, c := range t.ToolCalls {
				if c.Name == "" {
					return fmt.Errorf("%s: a tool call without a name", at)
				}
			}
		}
	}
	return nil
}
