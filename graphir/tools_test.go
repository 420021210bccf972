package graphir_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolsInGraph: tool() declarations, an agent step's tools and the
// flow's pool are part of the graph and of its JSON form.
func TestToolsInGraph(t *testing.T) {
	g := load(t, `
flow(tools = ["run_build"], max_grants = 1)
read_file = tool("read_file", run = ["cat", "--", "{{ args.path }}"], params = {"path": "string", "n": "integer"}, help = "print a file")
run_build = tool("run_build", shell = "go build ./... 2>&1")
fix = step("fix", agent = "fix the build", tools = [read_file], max_turns = 3)
chain(START, fix, END)
`)
	rf := g.Tool("read_file")
	if rf == nil || len(rf.Argv) != 3 || rf.Argv[2].Src != "{{ args.path }}" || rf.Help != "print a file" {
		t.Fatalf("read_file = %+v", rf)
	}
	if got := rf.ParamNames(); !cmp.Equal(got, []string{"path", "n"}) {
		t.Errorf("params %v", got)
	}
	want := map[string]any{"type": "object", "additionalProperties": false, "required": []any{"path", "n"},
		"properties": map[string]any{"path": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}}}
	if d := cmp.Diff(want, rf.Schema()); d != "" {
		t.Errorf("schema (-want +got):\n%s", d)
	}
	fix := g.Node("fix")
	if fix.Kind.String() != "agent" || fix.Call.MaxTurns != 3 || len(fix.Call.Tools) != 1 || fix.Call.Tools[0].Name != "read_file" {
		t.Errorf("fix = kind %s, max_turns %d, tools %v", fix.Kind, fix.Call.MaxTurns, fix.Call.Tools)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tools []struct {
			Name   string            `json:"name"`
			Kind   string            `json:"kind"`
			Params map[string]string `json:"params"`
		} `json:"tools"`
		Pool      []string `json:"tool_pool"`
		MaxGrants int      `json:"max_grants"`
		Nodes     []struct {
			ID       string   `json:"id"`
			Agent    string   `json:"agent"`
			Tools    []string `json:"tools"`
			MaxTurns int      `json:"max_turns"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Tools) != 2 || j.Tools[1].Kind != "shell" || j.Tools[0].Params["n"] != "integer" || !cmp.Equal(j.Pool, []string{"run_build"}) || j.MaxGrants != 1 {
		t.Errorf("json tools %+v pool %v max_grants %d", j.Tools, j.Pool, j.MaxGrants)
	}
	if n := j.Nodes[len(j.Nodes)-1]; n.ID != "fix" || n.Agent != "fix the build" || !cmp.Equal(n.Tools, []string{"read_file"}) || n.MaxTurns != 3 {
		t.Errorf("json node %+v", n)
	}
}
