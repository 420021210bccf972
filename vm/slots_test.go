package vm_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// --parallel is one budget for the whole run tree: maps over child flows
// whose own maps run tasks never have more than N tasks at once, and a
// child-flow step waiting for its child holds no slot (with N = 1 the tasks
// inside children still run).
func TestParallelIsOneBudgetForTheRunTree(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"flow.star": `
flow(inputs = {"dir": None}, output = "outer")
child = step("child", flow = "child.star", inputs = {"dir": "{{ inputs.dir }}", "n": "{{ item }}"})
outer = map("outer", over = "[1, 2, 3, 4]", body = [child], concurrency = 4)
chain(START, outer, END)
`,
		"child.star": `
flow(inputs = {"dir": None, "n": None}, output = "inner")
# Each task counts the tasks running (itself included) while it runs.
task = step("task", run = ["sh", "-c", 'f="$1/$2.$3"; : > "$f"; ls "$1" | wc -l; sleep 0.2; rm "$f"', "task", "{{ inputs.dir }}", "{{ inputs.n }}", "{{ item }}"])
inner = map("inner", over = "[1, 2, 3]", body = [task], concurrency = 3)
chain(START, inner, END)
`,
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("parallel=%d", n), func(t *testing.T) {
			res := runFiles(t, files, map[string]any{"dir": dir}, vm.Options{Parallel: n})
			if res.Status != vm.Succeeded {
				t.Fatalf("status %s: %v", res.Status, res.Error)
			}
			most, tasks := 0, 0
			for _, child := range goValue(t, res.Output).([]any) {
				for _, out := range child.([]any) {
					c, err := strconv.Atoi(strings.TrimSpace(out.(map[string]any)["stdout"].(string)))
					if err != nil {
						t.Fatal(err)
					}
					most, tasks = max(most, c), tasks+1
				}
			}
			if tasks != 12 {
				t.Fatalf("%d tasks ran, want 12", tasks)
			}
			if most > n {
				t.Errorf("--parallel %d: %d tasks ran at once across the child flows", n, most)
			}
		})
	}
}

// overlapTools: busy records how many busy calls run at once (itself
// included) through files in $OVERLAP_DIR; all3 waits (up to 10 s) until
// three calls have started, and prints how many it saw.
const overlapTools = `
busy = tool("busy", shell = 'd="$OVERLAP_DIR"; : > "$d/$ARG_ID"; a=$(ls "$d" | wc -l); sleep 0.1; b=$(ls "$d" | wc -l); rm "$d/$ARG_ID"; echo $(( a > b ? a : b ))', params = {"id": "string"})
all3 = tool("all3", shell = 'd="$OVERLAP_DIR"; : > "$d/$ARG_ID"; i=0; while [ "$(ls "$d" | wc -l)" -lt 3 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; ls "$d" | wc -l', params = {"id": "string"})
`

func calls(tool string, ids ...string) []modeltest.ToolCall {
	var out []modeltest.ToolCall
	for _, id := range ids {
		out = append(out, modeltest.ToolCall{ID: id, Name: tool, Arguments: `{"id": "` + id + `"}`})
	}
	return out
}

// The tool calls of one model reply take slots of the run tree's
// --parallel budget like any other work: with --parallel 1 they run one
// after another, with a budget of 3 all at once.
func TestAgentToolCallsTakeParallelSlots(t *testing.T) {
	for _, tc := range []struct {
		parallel int
		tool     string
	}{{1, "busy"}, {3, "all3"}} {
		t.Run(fmt.Sprintf("parallel=%d", tc.parallel), func(t *testing.T) {
			s := modeltest.New(modeltest.Rule{Match: "go", Replies: []modeltest.Reply{
				{ToolCalls: calls(tc.tool, "a", "b", "c")},
				{Content: "done"},
			}})
			defer s.Close()
			dir := t.TempDir()
			opts := modelOpts(s, nil)
			opts.Env = append(opts.Env, "OVERLAP_DIR="+dir)
			opts.Parallel = tc.parallel
			res := run(t, overlapTools+`
a = step("a", agent = "go", tools = [busy, all3])
chain(START, a, END)
`, nil, opts)
			if res.Status != vm.Succeeded {
				t.Fatalf("status %s: %v", res.Status, res.Error)
			}
			got := toolMessages(s.Requests()[1])
			for _, id := range []string{"a", "b", "c"} {
				n, err := strconv.Atoi(strings.TrimSpace(got[id]))
				if err != nil {
					t.Fatalf("call %s: %q", id, got[id])
				}
				switch {
				case tc.parallel == 1 && n != 1:
					t.Errorf("--parallel 1: call %s saw %d calls running at once", id, n)
				case tc.parallel == 3 && n != 3:
					t.Errorf("--parallel 3: call %s saw only %d of the 3 calls started before it ended", id, n)
				}
			}
		})
	}
}

// With --parallel 1 an agent whose reply calls a plain tool and a flow=
// tool, whose child runs an agent of its own calling tools too, finishes:
// an agent step holds no slot while its calls wait for one, and the flow=
// call holds none while its child works; still one thing at a time.
func TestAgentNestedToolsWithOneSlot(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "outer", Replies: []modeltest.Reply{
			{ToolCalls: append(calls("busy", "o1"), modeltest.ToolCall{ID: "o2", Name: "inner", Arguments: `{"id": "i"}`}, calls("busy", "o3")[0])},
			{Content: "outer done"},
		}},
		modeltest.Rule{Match: "inner", Replies: []modeltest.Reply{
			{ToolCalls: calls("busy", "i1", "i2")},
			{Content: "inner done"},
		}},
	)
	defer s.Close()
	dir := t.TempDir()
	opts := modelOpts(s, nil)
	opts.Env = append(opts.Env, "OVERLAP_DIR="+dir)
	opts.Parallel = 1
	res := runFiles(t, map[string]string{
		"flow.star": overlapTools + `
inner = tool("inner", flow = "inner.star", params = {"id": "string"})
a = step("a", agent = "outer", tools = [busy, inner])
chain(START, a, END)
`,
		"inner.star": overlapTools + `
flow(inputs = {"id": input(type = "string")}, output = "b")
b = step("b", agent = "inner {{ inputs.id }}", tools = [busy])
chain(START, b, END)
`,
	}, nil, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if got := toolMessages(s.Requests()[len(s.Requests())-1]); got["o2"] != "inner done" || got["o1"] != "1\n" || got["o3"] != "1\n" {
		t.Errorf("outer results %q", got)
	}
	for _, r := range s.Requests() {
		for id, m := range toolMessages(r) {
			if id[0] == 'i' && m != "1\n" {
				t.Errorf("inner call %s saw %q calls at once", id, m)
			}
		}
	}
}
