//go:build linux

package vm_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm"
)

// A task started through the keeper behaves as one started directly:
// input, output, exit status, signals, timeouts of a task that ignores
// SIGTERM, output held open by what it left behind, and start failures
// (issue 9).
func TestKeeperSameAsDirect(t *testing.T) {
	type outcome struct {
		Status       vm.Status
		Code, Error  string
		Output       string
		StepError    string
		StepTruncate bool
	}
	for _, tc := range []struct{ name, src string }{
		{"io", `step("a", run = ["sh", "-c", "cat; echo to-err >&2"], stdin = "in put")`},
		{"no stdin", `step("a", run = ["sh", "-c", "cat; echo end"])`},
		{"exit status", `step("a", run = ["sh", "-c", "echo partial; exit 3"])`},
		{"signal", `step("a", run = ["sh", "-c", "kill -9 $$"])`},
		// The timeout leaves the shell a wide margin to set its trap and
		// print before it is signalled, on a busy machine too.
		{"timeout ignoring TERM", `step("a", run = ["sh", "-c", "trap '' TERM; echo started; sleep 30"], timeout = "1s")`},
		{"output held open", `step("a", run = ["sh", "-c", "sleep 5 & echo done"])`},
		{"not found", `step("a", run = ["no-such-command-h9"])`},
		{"not executable", `step("a", run = ["/etc/hostname"])`},
		{"missing dir", `step("a", run = ["true"], dir = "/no/such/dir")`},
		{"bytes", `b = step("b", run = ["printf", "a\\377b"])
a = step("a", run = ["sh", "-c", "printf '%s|%s' \"$1\" \"$B\"", "x", "{{ b.stdout }}"], env = {"B": "{{ b.stdout }}"})
chain(START, b, a, END)`},
		{"env", `step("a", run = ["sh", "-c", "echo $SKEIN_STEP $SKEIN_ATTEMPT"])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := load(t, map[string]string{"flow.star": tc.src})
			got := map[string]outcome{}
			for _, mode := range []string{"direct", "keeper"} {
				restore := vm.SetReaper(true, mode == "keeper")
				if mode == "keeper" && tc.name == "timeout ignoring TERM" {
					// The timeout counts from the step's start, and a
					// keeper's first start (a re-executed, race-enabled
					// test binary) can take most of a second on a busy
					// machine: start it first, so the task is as far
					// along at its timeout as a directly started one.
					warmKeeper(t)
				}
				res, err := vm.Run(t.Context(), g, nil, vm.Options{Parallel: 1, KillGrace: 300 * time.Millisecond})
				restore()
				if err != nil {
					t.Fatal(err)
				}
				// A command not found on PATH never reaches the keeper.
				if ran := vm.StopKeeper(); ran != (mode == "keeper" && tc.name != "not found") {
					t.Fatalf("%s: a keeper ran: %v", mode, ran)
				}
				o := outcome{Status: res.Status}
				if res.Error != nil {
					o.Code, o.Error = res.Error.Code, res.Error.Msg
				}
				if s := res.Step("a"); s != nil {
					o.StepError, o.StepTruncate = s.Error, s.Truncated
					if s.Output != nil {
						o.Output = s.Output.String()
					}
				}
				got[mode] = o
			}
			if diff := cmp.Diff(got["direct"], got["keeper"]); diff != "" {
				t.Errorf("keeper differs from direct (-direct +keeper):\n%s", diff)
			}
		})
	}
}

// warmKeeper starts the keeper by running a task through it, and leaves
// it running for the next run.
func warmKeeper(t *testing.T) {
	t.Helper()
	g := load(t, map[string]string{"flow.star": `step("warm", run = ["true"])`})
	res, err := vm.Run(t.Context(), g, nil, vm.Options{Parallel: 1})
	if err != nil || res.Status != vm.Succeeded {
		t.Fatalf("warming the keeper: %v %v", res, err)
	}
}

// Cancelling a run signals a task started through the keeper and keeps
// its output.
func TestKeeperCancelled(t *testing.T) {
	defer vm.SetReaper(true, true)()
	g := load(t, map[string]string{"flow.star": `step("a", run = ["sh", "-c", "echo begun; exec sleep 30"])`})
	res := runCancelled(t, g, "", 300*time.Millisecond, vm.Options{})
	if !vm.StopKeeper() {
		t.Error("no keeper ran")
	}
	check(t, res, want{status: vm.Cancelled, code: "cancelled"})
	if s := res.Step("a"); s.Status != vm.StepCancelled || s.Output == nil {
		t.Errorf("a: %s, output %v", s.Status, s.Output)
	}
}

// WarmKeeper starts the keeper before any task asks for it, and the task
// then runs through that keeper; StopKeeper ends it. Without a subreaper
// (a library, a test), WarmKeeper starts nothing.
func TestWarmKeeper(t *testing.T) {
	vm.StopKeeper()
	restore := vm.SetReaper(false, true)
	vm.WarmKeeper()
	if vm.KeeperRunning() {
		t.Fatal("WarmKeeper started a keeper without a subreaper")
	}
	restore()
	defer vm.SetReaper(true, true)()
	vm.WarmKeeper()
	if !vm.KeeperRunning() {
		t.Fatal("WarmKeeper started no keeper")
	}
	g := load(t, map[string]string{"flow.star": `step("a", run = ["sh", "-c", "echo $PPID"])`})
	res, err := vm.Run(t.Context(), g, nil, vm.Options{Parallel: 1})
	if err != nil || res.Status != vm.Succeeded {
		t.Fatalf("run: %v %+v", err, res)
	}
	if !vm.StopKeeper() {
		t.Fatal("StopKeeper found no keeper after the task")
	}
	if vm.KeeperRunning() {
		t.Fatal("a keeper runs after StopKeeper")
	}
}
