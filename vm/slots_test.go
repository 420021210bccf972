package vm_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm"
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
