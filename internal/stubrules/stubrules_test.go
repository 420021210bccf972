package stubrules

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	rules, err := Parse([]byte(`[{"match": "a", "reply": {"x": 1}}, {"turns": [{"tool_calls": [{"name": "ls", "arguments": "{}"}]}, {"reply": "done"}]}]`))
	if err != nil || len(rules) != 2 || rules[0].Match != "a" || len(rules[1].Turns) != 2 || rules[1].Turns[0].ToolCalls[0].Name != "ls" {
		t.Fatalf("%+v, %v", rules, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{}`, "want a list of rules"},
		{`[{"reply": "x"}] []`, "more after the list"},
		{`[{"reply": "x", "turns": [{"reply": "y"}]}]`, "rule 1: give reply/tool_calls or turns, not both"},
		{`[{"turns": [{"reply": "y"}, {}]}]`, "rule 1: turn 2 has no reply or tool_calls"},
		{`[{"match": "m", "tool_calls": [{"arguments": {}}]}]`, `rule 1 ("m"): a tool call without a name`},
		{`[{"match": 3}]`, "not a list of rules"},
	} {
		if _, err := Parse([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParse: any file of rules parses or is an error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`[{"match": "a", "turns": [{"tool_calls": [{"name": "x"}]}]}]`))
	f.Add([]byte(`[{"reply": null}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if rules, err := Parse(b); err == nil {
			if Check(rules) != nil {
				t.Fatal("Parse returned rules Check refuses")
			}
		}
	})
}
