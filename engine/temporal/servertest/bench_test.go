package servertest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.starlark.net/starlark"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/engine/temporal/limits"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm"
)

// The per-step overhead of the Temporal engine, side by side in one run:
// a chain of benchSteps steps on the local engine (the VM in this
// process), on Temporal through Skein's workflow, and on Temporal through
// a hand-written workflow doing the same work, both served by one worker
// in this process on the dev server. Each op is one whole run of each;
// the metrics are each one's time over its steps, and the ratios. By
// hand, not in CI:
//
//	cd engine/temporal/servertest && go test -run '^$' -bench . -benchtime 20x .
//
// noop: fn steps (no activity: the deciding half alone; the hand-written
// workflow computes the same values inline). task: steps running `true`,
// one activity each (the hand-written activity runs it with os/exec).
const benchSteps = 20

func noopFlow(n int) string {
	var b strings.Builder
	b.WriteString("s0 = step(\"s0\", fn = lambda r: 0)\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "s%d = step(\"s%d\", fn = lambda r: r.s%d + 1)\n", i, i, i-1)
	}
	return b.String()
}

func taskFlow(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "s%d = step(\"s%d\", run = [\"true\"])\n", i, i)
	}
	return b.String()
}

// handNoop is the hand-written counterpart of the noop chain.
func handNoop(ctx workflow.Context, n int) (int, error) {
	v := 0
	for i := 1; i < n; i++ {
		v++
	}
	return v, nil
}

// handTask is the hand-written counterpart of the task chain: n
// activities, one after the other, with the options Skein's gives its
// task activities.
func handTask(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    limits.DefaultHeartbeatTimeout,
		RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: temporal.LostWorkerAttempts},
	})
	for i := range n {
		var code int
		if err := workflow.ExecuteActivity(ctx, "hand.exec", []string{"true"}).Get(ctx, &code); err != nil {
			return i, err
		}
	}
	return n, nil
}

// handExec runs argv as a plain hand-written activity would.
func handExec(ctx context.Context, argv []string) (int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return 0, err
}

func BenchmarkChain(b *testing.B) {
	c, err := dial(10 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q := queue(b)
	// The options skein worker gives its worker.
	w := sdkworker.New(c, q, sdkworker.Options{MaxConcurrentActivityExecutionSize: vm.DefaultParallel, MaxHeartbeatThrottleInterval: time.Second})
	temporal.Register(w, &temporal.Activities{})
	w.RegisterWorkflowWithOptions(handNoop, workflow.RegisterOptions{Name: "hand.noop"})
	w.RegisterWorkflowWithOptions(handTask, workflow.RegisterOptions{Name: "hand.task"})
	w.RegisterActivityWithOptions(handExec, activity.RegisterOptions{Name: "hand.exec"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	for _, kind := range []struct {
		name, flow, hand string
	}{
		{"noop", noopFlow(benchSteps), "hand.noop"},
		{"task", taskFlow(benchSteps), "hand.task"},
	} {
		dir := b.TempDir()
		file, err := (&temporaltest.Scenario{Files: map[string]string{"flow.star": kind.flow}}).Write(dir)
		if err != nil {
			b.Fatal(err)
		}
		f := frontend.Load(file, frontend.Options{})
		if f.Graph == nil {
			b.Fatalf("load: %v", f.Err())
		}
		g, sources := f.Graph, f.Sources.ByName()
		in := temporal.RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1}
		// The three run in turn in every iteration, so a busy machine
		// slows all three alike and the ratios hold.
		b.Run(kind.name, func(b *testing.B) {
			var local, skein, hand time.Duration
			var skeinID, handID string
			for b.Loop() {
				t0 := time.Now()
				localRun(b, g)
				t1 := time.Now()
				var out temporal.RunOutput
				skeinID = execute(b, c, q, temporal.WorkflowName, in, &out)
				if out.Status != "succeeded" {
					b.Fatalf("status %s\n%s", out.Status, out.Result)
				}
				t2 := time.Now()
				var n int
				handID = execute(b, c, q, kind.hand, benchSteps, &n)
				t3 := time.Now()
				local, skein, hand = local+t1.Sub(t0), skein+t2.Sub(t1), hand+t3.Sub(t2)
			}
			steps := float64(b.N * benchSteps)
			b.ReportMetric(float64(local.Nanoseconds())/steps, "local-ns/step")
			b.ReportMetric(float64(skein.Nanoseconds())/steps, "skein-ns/step")
			b.ReportMetric(float64(hand.Nanoseconds())/steps, "hand-ns/step")
			b.ReportMetric(float64(skein)/float64(hand), "skein/hand")
			b.ReportMetric(float64(skein)/float64(local), "skein/local")
			b.ReportMetric(float64(historyLen(b, c, skeinID)), "skein-events/run")
			b.ReportMetric(float64(historyLen(b, c, handID)), "hand-events/run")
		})
	}
}

func localRun(b *testing.B, g *graphir.Graph) {
	res, err := vm.Run(context.Background(), g, map[string]starlark.Value{}, vm.Options{Parallel: 1})
	if err != nil || res.Status != vm.Succeeded {
		b.Fatalf("local run: %v %v", err, res)
	}
}

// execute starts a workflow and waits for its result; it returns the
// workflow id.
func execute(b *testing.B, c client.Client, q, name string, arg, out any) string {
	ctx := context.Background()
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: q}, name, arg)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Get(ctx, out); err != nil {
		b.Fatal(err)
	}
	return r.GetID()
}

// historyLen is the length of workflow id's history.
func historyLen(b *testing.B, c client.Client, id string) int {
	n := 0
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// BenchmarkMap compares a map of benchMapItems items, a task (`true`)
// each, on Skein's workflow with a hand-written workflow that runs the
// same activities with as many at once (vm.DefaultParallel), to tell
// Temporal's cost of that many activities from Skein's. By hand:
//
//	cd engine/temporal/servertest && go test -run '^$' -bench Map -benchtime 1x .
const benchMapItems = 1000

// handMap runs args[0] activities, at most args[1] at once.
func handMap(ctx workflow.Context, args []int) (int, error) {
	n, parallel := args[0], args[1]
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    limits.DefaultHeartbeatTimeout,
		RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: temporal.LostWorkerAttempts},
	})
	sel := workflow.NewSelector(ctx)
	running, done := 0, 0
	var err error
	for started := 0; started < n || running > 0; {
		for ; started < n && running < parallel; started++ {
			running++
			sel.AddFuture(workflow.ExecuteActivity(ctx, "hand.exec", []string{"true"}), func(f workflow.Future) {
				running--
				done++
				if e := f.Get(ctx, nil); e != nil && err == nil {
					err = e
				}
			})
		}
		sel.Select(ctx)
	}
	return done, err
}

func BenchmarkMap(b *testing.B) {
	c, err := dial(10 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q := queue(b)
	w := sdkworker.New(c, q, sdkworker.Options{MaxConcurrentActivityExecutionSize: vm.DefaultParallel, MaxHeartbeatThrottleInterval: time.Second,
		DeadlockDetectionTimeout: 5 * time.Second})
	temporal.Register(w, &temporal.Activities{})
	w.RegisterWorkflowWithOptions(handMap, workflow.RegisterOptions{Name: "hand.map"})
	w.RegisterActivityWithOptions(handExec, activity.RegisterOptions{Name: "hand.exec"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	dir := b.TempDir()
	file, err := (&temporaltest.Scenario{Files: map[string]string{"flow.star": fmt.Sprintf(`
flow(inputs = {"xs": list(range(%d))})
m = map("m", over = "inputs.xs", body = [step("t", run = ["true"])])
chain(START, m, END)
`, benchMapItems)}}).Write(dir)
	if err != nil {
		b.Fatal(err)
	}
	f := frontend.Load(file, frontend.Options{})
	if f.Graph == nil {
		b.Fatalf("load: %v", f.Err())
	}
	g, sources := f.Graph, f.Sources.ByName()
	in := temporal.RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: vm.DefaultParallel}
	var skein, hand time.Duration
	var skeinID, handID string
	for b.Loop() {
		t0 := time.Now()
		var out temporal.RunOutput
		skeinID = execute(b, c, q, temporal.WorkflowName, in, &out)
		if out.Status != "succeeded" {
			b.Fatalf("status %s\n%s", out.Status, out.Result)
		}
		t1 := time.Now()
		var n int
		handID = execute(b, c, q, "hand.map", []int{benchMapItems, vm.DefaultParallel}, &n)
		t2 := time.Now()
		skein, hand = skein+t1.Sub(t0), hand+t2.Sub(t1)
	}
	items := float64(b.N * benchMapItems)
	b.ReportMetric(float64(skein.Nanoseconds())/items, "skein-ns/item")
	b.ReportMetric(float64(hand.Nanoseconds())/items, "hand-ns/item")
	b.ReportMetric(float64(skein)/float64(hand), "skein/hand")
	b.ReportMetric(float64(historyLen(b, c, skeinID)), "skein-events/run")
	b.ReportMetric(float64(historyLen(b, c, handID)), "hand-events/run")
}
