package model_test

// The examples' cassettes: recorded against the in-process fake server with
// UPDATE=1 go test ./vm/model -run TestExampleCassettes, and replayed (with
// no server and no key) by the same test otherwise.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

type exampleRun struct {
	inputs map[string]string
	path   []string
	output string // a fragment of the output's text
}

var exampleCassettes = []struct {
	name  string
	needs string // a program the example's own steps run, which must be on PATH
	rules []modeltest.Rule
	runs  []exampleRun
}{
	{
		name: "llm_triage",
		rules: []modeltest.Rule{
			{Match: "Checkout is down", Replies: []modeltest.Reply{{Content: `{"label": "urgent"}`, Prompt: 92, Completion: 6}}},
			// A server that ignores the schema and answers in prose: no
			// label matches, so the keyword fallback decides.
			{Match: "refund", Replies: []modeltest.Reply{{Content: "This looks like a payment question.", Prompt: 90, Completion: 8}}},
		},
		runs: []exampleRun{
			{path: []string{"triage", "escalate", "record"}, output: "escalated: paging on-call: Checkout is down"},
			{inputs: map[string]string{"ticket": "I want a refund for order 1234"}, path: []string{"triage", "fallback", "billing", "record"}, output: "forwarded to billing"},
		},
	},
	{
		name: "llm_draft_critique",
		rules: []modeltest.Rule{
			{Match: "Write a three-sentence paragraph", Replies: []modeltest.Reply{
				{Content: "Checking a flow before it runs is good practice. It helps in many ways. Teams benefit from it.", Prompt: 41, Completion: 22},
				{Content: "A checker rejects a flow whose step reads a misspelled name before any process starts. It reports the file, line and column with a did-you-mean. The run that would have failed an hour in never begins.", Prompt: 58, Completion: 44},
			}},
			{Match: "Critique this paragraph", Replies: []modeltest.Reply{
				{Content: "It is vague: it names no concrete failure that checking prevents.", Prompt: 50, Completion: 14},
				{Content: "Concrete (a misspelled name caught with its position) and under 80 words.", Prompt: 72, Completion: 16},
			}},
			{Match: "Condition: the critique says", Replies: []modeltest.Reply{
				{Content: `{"verdict": "CONTINUE", "reason": "name one concrete failure the checker catches and what it reports"}`, Prompt: 160, Completion: 21},
				{Content: `{"verdict": "STOP", "reason": "the critique approves"}`, Prompt: 170, Completion: 12},
			}},
		},
		runs: []exampleRun{{path: []string{"polish", "polish#1.draft", "polish#1.critique", "polish#1.both", "polish#2.draft", "polish#2.critique", "polish#2.both", "publish"}, output: "A checker rejects a flow"}},
	},
	{
		name: "llm_build_fix",
		rules: []modeltest.Rule{
			{Match: "The build of app failed", Replies: []modeltest.Reply{{
				Content: `{"file": "main.go", "patch": "--- a/main.go\n+++ b/main.go\n@@ -1,2 +1,4 @@\n package main\n+\n+func helper() {}\n", "summary": "define the missing helper function"}`,
				Prompt:  120, Completion: 48}}},
		},
		runs: []exampleRun{{path: []string{"build", "fix", "apply", "build", "commit"}, output: "commit: built app with: define the missing helper function"}},
	},
	{
		name:  "agent_build_fix",
		needs: "go",
		rules: []modeltest.Rule{
			{Match: "The build of the Go package failed", Replies: []modeltest.Reply{
				{ToolCalls: []modeltest.ToolCall{
					{ID: "call_1", Name: "read_file", Arguments: `{"path": "sum.go"}`},
					{ID: "call_2", Name: "read_file", Arguments: `{"path": "go.mod"}`},
				}, Completion: 30},
				{Content: "Sum returns totl, which is undefined; the loop adds into total.", ToolCalls: []modeltest.ToolCall{
					{ID: "call_3", Name: "request_tool", Arguments: `{"name": "list_files", "reason": "make sure no other file declares totl", "confirmed": true}`},
					{ID: "call_4", Name: "write_file", Arguments: `{"path": "sum.go", "text": "// Package sum adds numbers.\npackage sum\n\n// Sum returns the sum of xs.\nfunc Sum(xs ...int) int {\n    total := 0\n    for _, x := range xs {\n        total += x\n    }\n    return total\n}\n"}`},
				}, Completion: 60},
				{ToolCalls: []modeltest.ToolCall{
					{ID: "call_5", Name: "list_files", Arguments: `{}`},
					{ID: "call_6", Name: "run_build", Arguments: `{}`},
				}, Completion: 20},
				{Content: `{"file": "sum.go", "summary": "return total, the sum the loop builds (totl was a typo)"}`, Completion: 25},
			}},
		},
		runs: []exampleRun{{path: []string{"setup", "build", "fix", "build", "done"}, output: "ok: package sum builds (fixed sum.go: return total, the sum the loop builds (totl was a typo))"}},
	},
}

func TestExampleCassettes(t *testing.T) {
	update := os.Getenv("UPDATE") != ""
	for _, ex := range exampleCassettes {
		t.Run(ex.name, func(t *testing.T) {
			if ex.needs != "" {
				if _, err := exec.LookPath(ex.needs); err != nil {
					t.Skipf("the example runs %s, which is not on PATH", ex.needs)
				}
			}
			flow := filepath.Join("..", "..", "examples", ex.name+".star")
			path := filepath.Join("..", "..", "examples", "cassettes", ex.name+".json")
			g, err := lang.Load(flow, lang.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var p *model.Cassette
			env := []string{"PATH=" + os.Getenv("PATH")}
			if update {
				s := modeltest.New(ex.rules...)
				defer s.Close()
				os.Remove(path)
				env = append(env, "SKEIN_BASE_URL="+s.BaseURL(), "OPENAI_API_KEY="+secret)
				p, err = model.OpenCassette(path, false, &model.Client{Getenv: func(k string) string {
					if k == "OPENAI_API_KEY" {
						return secret
					}
					return ""
				}})
			} else {
				p, err = model.OpenCassette(path, true, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, er := range ex.runs {
				given := map[string]starlark.Value{}
				for k, v := range er.inputs {
					given[k] = starlark.String(v)
				}
				res, err := vm.Run(context.Background(), g, given, vm.Options{Parallel: 1, Models: p, Env: env})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != vm.Succeeded {
					t.Fatalf("run %d: %s: %v", i, res.Status, res.Error)
				}
				if diff := cmp.Diff(er.path, res.Path); diff != "" {
					t.Errorf("run %d: path (-want +got):\n%s", i, diff)
				}
				if out := res.Output.String(); !strings.Contains(out, er.output) {
					t.Errorf("run %d: output %s, want it to contain %q", i, out, er.output)
				}
				if res.ModelCalls == 0 || res.Usage.Total() == 0 {
					t.Errorf("run %d: %d model calls, usage %+v", i, res.ModelCalls, res.Usage)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), secret) || strings.Contains(string(data), "127.0.0.1") {
				t.Errorf("%s holds the key or the server's address", path)
			}
		})
	}
}
