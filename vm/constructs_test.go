package vm_test

// Scenario tests of the constructs of docs/runs.md beyond the basics:
// maps over empty lists and timers that wait until a time.

import (
	"testing"

	"github.com/skeinlang/skein/vm"
)

func TestMapEmptySkip(t *testing.T) {
	// empty = "skip": the map is skipped and what only it leads to too;
	// a join = "done" step still runs and reads why.
	res := run(t, `
flow(output = "report")
w = step("w", fn = lambda r: r.item)
m = map("m", over = "[]", body = [w], empty = "skip")
publish = step("publish", fn = lambda r: r.m)
report = step("report", fn = lambda r: [r.status("m"), r.status("publish")], join = "done")
chain(START, m, publish, report, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{"skipped", "skipped"}, path: []string{"m", "report"}})

	// Over a list with items it runs as any map.
	res = run(t, `
flow(output = "m")
w = step("w", fn = lambda r: r.item * 2)
m = map("m", over = "[1, 2]", body = [w], empty = "skip")
chain(START, m, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, output: []any{2.0, 4.0}})
}
