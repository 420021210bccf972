package vm_test

import (
	"strings"
	"testing"

	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/vm"
)

// A map over more items than its max_items fails with map_too_many_items
// at over='s position, before any item runs.
func TestMapMaxItems(t *testing.T) {
	res := runFiles(t, map[string]string{"flow.star": `
s = step("s", fn = lambda r: r.item)
each = map("each", over = "range(1000000000)", body = [s], max_items = 3)
chain(START, each, END)
`}, nil, vm.Options{})
	if res.Status != vm.Failed || res.Error == nil || res.Error.Code != codes.MapTooManyItems {
		t.Fatalf("status %s, error %v; want map_too_many_items", res.Status, res.Error)
	}
	if !strings.Contains(res.Error.Msg, "flow.star:3:") || !strings.Contains(res.Error.Msg, "more than max_items 3") {
		t.Errorf("message %q lacks the position or the bound", res.Error.Msg)
	}
	if n := res.Step("s").Visits; n != 0 {
		t.Errorf("an item ran: %d visits", n)
	}
	ok := runFiles(t, map[string]string{"flow.star": `
s = step("s", fn = lambda r: r.item)
each = map("each", over = "range(3)", body = [s], max_items = 3)
chain(START, each, END)
`}, nil, vm.Options{})
	if ok.Status != vm.Succeeded {
		t.Fatalf("a map of exactly max_items: status %s, error %v", ok.Status, ok.Error)
	}
}

// flow(max_cost=) stops the run once its priced replies cost more.
func TestMaxCost(t *testing.T) {
	res := runFiles(t, map[string]string{"flow.star": `
model("m", provider = "stub", price = {"input": 100000, "output": 100000})
flow(max_cost = 0.5)
a = step("a", llm = "one", model = "m")
b = step("b", llm = "two", model = "m")
chain(START, a, b, END)
`}, nil, vm.Options{})
	if res.Status != vm.Failed || res.Error == nil || res.Error.Code != codes.BudgetExceeded {
		t.Fatalf("status %s, error %v; want budget_exceeded", res.Status, res.Error)
	}
	if !strings.Contains(res.Error.Msg, "cost budget of $0.5") {
		t.Errorf("message %q does not name the cost budget", res.Error.Msg)
	}
	if res.Step("b").Visits != 0 && res.Step("b").Status == vm.StepSucceeded {
		t.Errorf("step b ran past the budget")
	}
}
