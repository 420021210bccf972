package lsp

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// slowFlow is a flow whose top-level code runs until the load's time
// budget (60 s) stops it: each step sorts a list of 200,000 ints, so the
// step budget is far off.
const slowFlow = `big = list(range(200000))
for i in range(1000000):
    sorted(big, reverse = i % 2 == 0)
a = step("a")
`

// A check runs off the request path: while a buffer's slow top-level code
// is being checked, a hover is answered (before the check ends: no
// diagnostics of it come first), and a newer version cancels the check
// (its diagnostics come, within the session's hang guard of 30 s, and
// none of the older version's ever do). Before, didOpen checked on the
// request path: the hover waited the whole load budget.
func TestSlowCheckOffRequestPath(t *testing.T) {
	dir := writeFiles(t, map[string]string{"slow.star": slowFlow})
	uri := uriOf(filepath.Join(dir, "slow.star"))
	s := newSession(t)
	s.open(uri, slowFlow)
	s.nextID++
	id := s.nextID
	line := strings.Split(slowFlow, "\n")[3]
	s.send(map[string]any{"id": id, "method": "textDocument/hover", "params": map[string]any{
		"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": 3, "character": strings.Index(line, "step") + 1}}})
	for {
		m := s.next()
		if m["method"] == "textDocument/publishDiagnostics" {
			t.Fatalf("diagnostics came before the hover's answer: %v", m["params"])
		}
		if m["id"] == float64(id) {
			if hv := fmt.Sprint(m["result"]); !strings.Contains(hv, "step(name, *, run=None") {
				t.Errorf("hover on step while the buffer is checked: %s", hv)
			}
			break
		}
	}
	s.send(map[string]any{"method": "textDocument/didChange", "params": map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"text": "a = step(\"a\", run = [\"echo\", \"{{ nope.stdout }}\"])\n"}}}})
	for {
		m := s.next()
		if m["method"] != "textDocument/publishDiagnostics" {
			continue
		}
		p := m["params"].(map[string]any)
		if p["uri"] != uri {
			continue
		}
		if p["version"] != float64(2) {
			t.Fatalf("diagnostics of version %v published, want only the newest's (2): %v", p["version"], p["diagnostics"])
		}
		if ds := p["diagnostics"].([]any); len(ds) != 1 || !strings.Contains(fmt.Sprint(ds[0]), "unknown_name") {
			t.Errorf("version 2's diagnostics: %v", ds)
		}
		break
	}
}
