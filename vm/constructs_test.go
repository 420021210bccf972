package vm_test

// Scenario tests of the constructs of docs/runs.md beyond the basics:
// maps over empty lists and timers that wait until a time.

import (
	"testing"
	"time"

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

func TestWaitUntil(t *testing.T) {
	src := `
flow(inputs = {"at": None})
w = step("w", wait_until = "{{ inputs.at }}")
`
	// A time to come: the step waits until then.
	at := time.Now().Add(400 * time.Millisecond)
	res := run(t, src, map[string]any{"at": at.Format(time.RFC3339Nano)}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if now := time.Now(); now.Before(at) {
		t.Errorf("the run ended at %s, before %s", now.Format(time.StampMilli), at.Format(time.StampMilli))
	}
	// A time past: no wait.
	res = run(t, src, map[string]any{"at": "2020-01-01T00:00:00Z"}, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	fast(t, res, 200*time.Millisecond)
	// Not a time: the step fails, and can be routed.
	res = run(t, src, map[string]any{"at": "soon"}, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "w", msg: `wait_until: want a time in RFC 3339 such as "2026-12-24T09:00:00Z", got "soon"`})
	// Its timeout holds.
	res = run(t, `
w = step("w", wait_until = "2999-01-01T00:00:00Z", timeout = "200ms")
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "timeout", step: "w"})
}
