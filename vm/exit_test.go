package vm_test

// Scenario tests of exit handlers (flow(on_exit=)).

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/vm"
)

// The handler of exitFlow returns the run's status, its error code and
// the status of step "work".
const exitFlow = `
flow(inputs = {"fail": False}, on_exit = "cleanup")
work = step("work", run = ["sh", "-c", "if [ $1 = true ]; then exit 3; fi; echo ok", "work", "{{ inputs.fail }}"])
cleanup = step("cleanup", fn = lambda r: [r.run.status, r.run.error.code if r.run.error else None, r.status("work")])
chain(START, work, END)
`

func TestExitHandlerAfterSuccess(t *testing.T) {
	res := run(t, exitFlow, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"work"}})
	h := res.OnExit
	if h == nil || h.Name != "cleanup" || h.Status != vm.StepSucceeded || h.Visits != 1 {
		t.Fatalf("on_exit record %+v", h)
	}
	if diff := cmp.Diff([]any{"succeeded", nil, "succeeded"}, goValue(t, h.Output)); diff != "" {
		t.Errorf("handler saw (-want +got):\n%s", diff)
	}
	if res.Step("cleanup") != nil {
		t.Error("the handler's record is also among the steps")
	}
	// The JSON has it under on_exit.
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf, ""); err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Steps  map[string]any `json:"steps"`
		OnExit struct {
			Status string `json:"status"`
			Output []any  `json:"output"`
		} `json:"on_exit"`
	}
	if err := json.Unmarshal(buf.Bytes(), &obj); err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.Steps["cleanup"]; ok || obj.OnExit.Status != "succeeded" || len(obj.OnExit.Output) != 3 {
		t.Errorf("json: %s", buf.String())
	}
}

func TestExitHandlerAfterFailure(t *testing.T) {
	res := run(t, exitFlow, map[string]any{"fail": true}, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "work"})
	if diff := cmp.Diff([]any{"failed", "step_failed", "failed"}, goValue(t, res.OnExit.Output)); diff != "" {
		t.Errorf("handler saw (-want +got):\n%s", diff)
	}
}

// A failing handler is reported in its record; the run's status stays.
func TestExitHandlerFailureKeepsStatus(t *testing.T) {
	res := run(t, `
flow(on_exit = "cleanup")
a = step("a")
cleanup = step("cleanup", run = ["sh", "-c", "echo gone >&2; exit 9"])
chain(START, a, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if h := res.OnExit; h.Status != vm.StepFailed || h.Code != "step_failed" || h.Error != "exit status 9" {
		t.Errorf("on_exit %+v", h)
	}
	// A runtime error in the handler too.
	res = run(t, `
flow(on_exit = "cleanup")
a = step("a")
cleanup = step("cleanup", fn = lambda r: r.never)
never = step("never")
edge(START, a)
edge(a, END)
edge(a, never, when = "False")
edge(never, END)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
	if h := res.OnExit; h.Status != vm.StepFailed || h.Code != "dependency_unmet" || !strings.Contains(h.Error, `reads "never"`) {
		t.Errorf("on_exit %+v", h)
	}
}

// After Ctrl-C the handler still runs (with its grace) and sees the run
// cancelled and its step cancelled.
func TestExitHandlerAfterCancel(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `
flow(on_exit = "cleanup")
work = step("work", run = ["sleep", "30"])
cleanup = step("cleanup", run = ["sh", "-c", "sleep 0.1; echo $0 $1", "{{ run.status }}", "{{ status('work') }}"])
chain(START, work, END)
`})
	res := runCancelled(t, g, "work", 50*time.Millisecond, vm.Options{KillGrace: 100 * time.Millisecond})
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	if h := res.OnExit; h.Status != vm.StepSucceeded || goValue(t, h.Output).(map[string]any)["stdout"] != "cancelled cancelled\n" {
		t.Errorf("on_exit %+v output %v", h, goValue(t, h.Output))
	}
}

func runCtx(t *testing.T, ctx context.Context, g *graphir.Graph, opts vm.Options) *vm.Result {
	t.Helper()
	res, err := vm.Run(ctx, g, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// After the flow's timeout the handler runs too, and sees flow_timeout.
func TestExitHandlerAfterFlowTimeout(t *testing.T) {
	res := run(t, `
flow(timeout = "200ms", on_exit = "cleanup")
work = step("work", run = ["sleep", "30"])
cleanup = step("cleanup", fn = lambda r: [r.run.status, r.run.error.code, r.status("work")])
chain(START, work, END)
`, nil, vm.Options{KillGrace: 100 * time.Millisecond})
	check(t, res, want{status: vm.Failed, code: "flow_timeout"})
	if diff := cmp.Diff([]any{"failed", "flow_timeout", "cancelled"}, goValue(t, res.OnExit.Output)); diff != "" {
		t.Errorf("handler saw (-want +got):\n%s", diff)
	}
}

// The grace period bounds a handler after a cancellation, and the exit
// context (a second Ctrl-C) ends it at once.
func TestExitHandlerGraceAndSecondCancel(t *testing.T) {
	g := load(t, map[string]string{"flow.star": `
flow(on_exit = "cleanup")
work = step("work", run = ["sleep", "30"])
cleanup = step("cleanup", run = ["sleep", "30"])
chain(START, work, END)
`})
	// Grace over.
	res := runCancelled(t, g, "work", 50*time.Millisecond, vm.Options{KillGrace: 100 * time.Millisecond, ExitGrace: 200 * time.Millisecond})
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	if h := res.OnExit; h.Status != vm.StepCancelled || h.Code != "cancelled" || !strings.Contains(h.Error, "grace period of 200ms") {
		t.Errorf("on_exit %+v", h)
	}
	// A second cancellation, with an hour of grace left.
	ctx, cancel := context.WithCancel(context.Background())
	exit, stopExit := context.WithCancel(context.Background())
	var once2 sync.Once
	res = runCtx(t, ctx, g, vm.Options{KillGrace: 100 * time.Millisecond, ExitGrace: time.Hour, ExitCtx: exit, OnEvent: func(ev *vm.Event) {
		switch {
		case ev.Type == vm.StepStarted && ev.Step == "work":
			time.AfterFunc(50*time.Millisecond, cancel)
		case ev.Type == vm.StepStarted && ev.Step == "cleanup":
			once2.Do(func() { time.AfterFunc(50*time.Millisecond, stopExit) })
		}
	}})
	cancel()
	stopExit()
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	if h := res.OnExit; h.Status != vm.StepCancelled || h.Error != "the exit handler was stopped" {
		t.Errorf("on_exit %+v", h)
	}
}

// A handler may be any kind: here a child flow, whose own steps run.
func TestExitHandlerChildFlow(t *testing.T) {
	res := runFiles(t, map[string]string{
		"flow.star": `
flow(on_exit = "cleanup")
a = step("a", fn = lambda r: 1)
cleanup = step("cleanup", flow = "cleanup.star", inputs = {"why": "{{ run.status }}"})
chain(START, a, END)
`,
		"cleanup.star": `
flow(inputs = {"why": None}, output = "say")
say = step("say", fn = lambda r: "cleaned after " + r.inputs.why)
`,
	}, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded, path: []string{"a"}, output: 1.0})
	if h := res.OnExit; h.Status != vm.StepSucceeded || goValue(t, h.Output) != "cleaned after succeeded" {
		t.Errorf("on_exit %+v", h)
	}
}

// run is only defined in the exit handler.
func TestRunOutsideExitHandler(t *testing.T) {
	res := run(t, `a = step("a", fn = lambda r: r.run.status)`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, step: "a", code: "step_failed", msg: "run is only defined in the exit handler"})
}
