package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
)

// envQuery queries the test environment's workflows.
func envQuery(env *testsuite.TestWorkflowEnvironment) QueryFunc {
	return func(_ context.Context, id, name string, arg any, out any) error {
		v, err := env.QueryWorkflowByID(id, name, arg)
		if err != nil {
			return err
		}
		return v.Get(out)
	}
}

// eventLine is what both engines must agree on of an event.
func eventLine(ev vm.Event) string {
	s := fmt.Sprintf("%s %s", ev.Type, ev.Where())
	if ev.Status != "" {
		s += " " + ev.Status
	}
	if ev.Visit > 0 {
		s += fmt.Sprintf(" visit %d", ev.Visit)
	}
	return s
}

func TestFollowerEventsAsLocal(t *testing.T) {
	// The events read from the logs of a run and its child workflows come
	// in the order a local run gives them, with the same contents.
	sc := temporaltest.Scenario{Files: map[string]string{
		"flow.star": `
flow(output = "use")
prep = step("prep", fn = lambda r: ["a", "bb"])
child = step("child", flow = "child.star", inputs = {"words": "{{ prep }}"})
b = step("b", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [b], until = lambda it: it.iteration == 2, max_iterations = 3)
pause = step("pause", wait = "10ms")
use = step("use", fn = lambda r: r.child)
chain(START, prep, child, l, pause, use, END)
`,
		"child.star": `
flow(inputs = {"words": None}, output = "out")
t = step("t", run = ["echo", "hi"])
out = step("out", fn = lambda r: "/".join(r.inputs.words) + " " + r.t.stdout.strip())
`}}
	g, sources, given := setup(t, sc)
	var local []string
	_, err := vm.Run(context.Background(), g, given, vm.Options{Parallel: 1,
		OnEvent: func(ev *vm.Event) { local = append(local, eventLine(*ev)) },
		LoadFlow: func(_ context.Context, path, root string) (*graphir.Graph, error) {
			return lang.Load(path, lang.Options{Root: root})
		}})
	if err != nil {
		t.Fatal(err)
	}

	env := newEnv(t)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	result(t, env)
	var remote []string
	var raw []string
	f := NewFollower("default-test-workflow-id", envQuery(env))
	f.OnEvent = func(b json.RawMessage, ev vm.Event) {
		remote = append(remote, eventLine(ev))
		raw = append(raw, string(b))
	}
	if err := f.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.Done() {
		t.Error("the follower did not see the run finish")
	}
	if diff := cmp.Diff(local, remote); diff != "" {
		t.Errorf("local (-) and temporal (+) events differ:\n%s", diff)
	}
	// The raw events are the --events format, decoded and encoded again
	// to the same bytes.
	for _, b := range raw {
		ev, err := vm.DecodeEvent([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		if again := string(ev.AppendJSON(nil)); again != b {
			t.Errorf("event does not encode back:\n got %s\nwant %s", again, b)
		}
	}
}

func TestEventLogBounded(t *testing.T) {
	// A run with more events than the log keeps: a follower reading after
	// the run is told how many it missed and reads the rest.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
b = step("b", fn = lambda r: 1)
l = loop("l", body = [b], until = lambda it: False, max_iterations = 100)
chain(START, l, END)
`}})
	env := newEnv(t)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, EventLog: 50})
	result(t, env)
	n, dropped := 0, 0
	f := NewFollower("default-test-workflow-id", envQuery(env))
	f.OnEvent = func(json.RawMessage, vm.Event) { n++ }
	f.OnDropped = func(_ string, k int) { dropped += k }
	if err := f.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n > 50 || n < 25 || dropped == 0 || !f.Done() {
		t.Errorf("read %d events, told of %d dropped, done %v; want 25 to 50 read, some dropped, done", n, dropped, f.Done())
	}
}

// recordThenApprove has env, a minute in, read the record so far into
// rec and then approve the step deploy, by ann.
func recordThenApprove(t *testing.T, env *testsuite.TestWorkflowEnvironment, rec *map[string]any) {
	t.Helper()
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(StatusQuery)
		if err != nil {
			t.Errorf("query: %v", err)
			return
		}
		var raw json.RawMessage
		v.Get(&raw)
		json.Unmarshal(raw, rec)
		env.SignalWorkflow(ApproveSignal, Decision{Step: "deploy", By: "ann"})
	}, time.Minute)
}

func TestStatusQuery(t *testing.T) {
	// While the run waits, the record so far has the steps that ran and
	// the approval it waits for.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
a = step("a", run = ["echo", "hi"])
deploy = step("deploy", approve = "Ship {{ a.stdout.strip() }}?")
chain(START, a, deploy, END)
`}})
	env := newEnv(t)
	var rec map[string]any
	recordThenApprove(t, env, &rec)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	result(t, env)
	want := map[string]any{
		"run_id": "default-test-workflow-id", "flow": "flow", "file": g.File, "status": "running", "error": nil, "output": nil,
		"path": []any{"a", "deploy"}, "path_total": 2.0,
		"approvals": []any{map[string]any{"step": "deploy", "scope": []any{}, "visit": 1.0, "message": "Ship hi?"}},
		"steps": map[string]any{
			"a":      map[string]any{"status": "succeeded", "visits": 1.0, "output": map[string]any{"stdout": "hi\n", "stderr": "", "exit_code": 0.0, "code": nil, "error": nil, "text": "hi"}, "error": nil},
			"deploy": map[string]any{"status": "running", "visits": 1.0, "output": nil, "error": nil},
		},
	}
	for _, s := range rec["steps"].(map[string]any) {
		delete(s.(map[string]any), "duration_ms")
	}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("record so far (-want +got):\n%s", diff)
	}
}

func TestContinueAsNewCarriesLogAndApprovals(t *testing.T) {
	// A run that continues as new numbers its event log on and keeps its
	// approvals and record so far: the executions' logs together are the
	// local run's events, and the last execution still knows the decision
	// made in the first.
	g, sources, given := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
deploy = step("deploy", approve = "Deploy?")
t = step("t", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [t], until = lambda it: it.iteration == 8, max_iterations = 10)
chain(START, deploy, l, END)
`}})
	var local []string
	if _, err := vm.Run(context.Background(), g, given, vm.Options{Parallel: 1, Effects: decider{by: "ann"},
		OnEvent: func(ev *vm.Event) { local = append(local, eventLine(*ev)) }}); err != nil {
		t.Fatal(err)
	}
	in := RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, ContinueEvery: 3}
	var remote []string
	var last *Approvals
	var record map[string]any
	seq := 0
	for n := 0; ; n++ {
		env := newEnv(t)
		if n == 0 {
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(ApproveSignal, Decision{Step: "deploy", By: "ann"}) }, time.Minute)
		}
		final := false
		env.ExecuteWorkflow(WorkflowName, in)
		if err := env.GetWorkflowError(); !continued(t, err, &in) {
			if err != nil {
				t.Fatalf("workflow: %v", err)
			}
			final = true
		}
		v, err := env.QueryWorkflow(EventsQuery, 0)
		if err != nil {
			t.Fatal(err)
		}
		var p EventsPage
		v.Get(&p)
		if p.First != seq {
			t.Errorf("execution %d's log starts at %d, want %d", n, p.First, seq)
		}
		for _, e := range p.Entries {
			if e.Seq != seq {
				t.Fatalf("execution %d: entry %d, want %d", n, e.Seq, seq)
			}
			seq++
			if e.Event != nil {
				ev, err := vm.DecodeEvent(e.Event)
				if err != nil {
					t.Fatal(err)
				}
				remote = append(remote, eventLine(ev))
			}
		}
		if final {
			last = queryApprovals(t, env)
			v, _ := env.QueryWorkflow(StatusQuery)
			var raw json.RawMessage
			v.Get(&raw)
			json.Unmarshal(raw, &record)
			if n < 2 {
				t.Fatalf("the run continued as new %d times, want several", n)
			}
			break
		}
	}
	if diff := cmp.Diff(local, remote); diff != "" {
		t.Errorf("local (-) and temporal (+) events differ:\n%s", diff)
	}
	if len(last.Approvals) != 1 || last.Approvals[0].State != ApprovalApproved || last.Approvals[0].By != "ann" {
		t.Errorf("the last execution's approvals: %+v, want deploy approved by ann", last.Approvals)
	}
	steps, _ := record["steps"].(map[string]any)
	if d, _ := steps["deploy"].(map[string]any); d["status"] != "succeeded" {
		t.Errorf("the record so far lost deploy: %v", record)
	}
}

// fakeLogs are the logs of a workflow's executions, for a follower.
type fakeLogs struct {
	runs    map[string][]Entry
	current string
}

func (l *fakeLogs) page(run string, after int) EventsPage {
	es := l.runs[run]
	p := EventsPage{Run: run, First: es[0].Seq, Next: es[len(es)-1].Seq + 1}
	for _, e := range es {
		if e.Seq >= after {
			p.Entries = append(p.Entries, e)
		}
	}
	return p
}

func (l *fakeLogs) add(run string, seq int) {
	ev := vm.Event{Type: vm.StepStarted, Step: fmt.Sprintf("s%d", seq), Kind: "task", Visit: 1}
	l.runs[run] = append(l.runs[run], Entry{Seq: seq, Event: ev.AppendJSON(nil)})
}

func TestFollowerAcrossContinueAsNew(t *testing.T) {
	// The rest of an execution that continued as new is read from it
	// before the next execution's log.
	l := &fakeLogs{runs: map[string][]Entry{}, current: "r1"}
	for i := range 3 {
		l.add("r1", i)
	}
	f := NewFollower("wf", func(_ context.Context, id, name string, arg any, out any) error {
		*out.(*EventsPage) = l.page(l.current, arg.(int))
		return nil
	})
	f.QueryRun = func(_ context.Context, id, run, name string, arg any, out any) error {
		*out.(*EventsPage) = l.page(run, arg.(int))
		return nil
	}
	var got []string
	f.OnEvent = func(_ json.RawMessage, ev vm.Event) { got = append(got, ev.Step) }
	// Told between the old execution's last event and the new one's
	// first (the run's span marks it: docs/observability.md).
	f.OnContinued = func(id, from, to string) { got = append(got, id+" "+from+"→"+to) }
	if err := f.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.add("r1", 3)
	l.add("r1", 4)
	l.current = "r2"
	for i := 5; i < 8; i++ {
		l.add("r2", i)
	}
	if err := f.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"s0", "s1", "s2", "s3", "s4", "wf r1→r2", "s5", "s6", "s7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestStatusQueryPathAfterContinueAsNew(t *testing.T) {
	// The record so far of a running run names its path as the result
	// does ("l#2.t"), before and after the run continued as new: here
	// the record of the last execution, waiting for an approval, against
	// the local run's path, and that of the first execution, still in the
	// loop.
	g, sources, given := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
flow(on_exit = "bye")
t = step("t", run = ["echo", "{{ loop.iteration }}"])
l = loop("l", body = [t], until = lambda it: it.iteration == 5, max_iterations = 10)
deploy = step("deploy", approve = "Deploy?")
bye = step("bye", run = ["true"])
chain(START, l, deploy, END)
`}})
	res, err := vm.Run(context.Background(), g, given, vm.Options{Parallel: 1, Effects: decider{by: "ann"}})
	if err != nil {
		t.Fatal(err)
	}
	in := RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1, ContinueEvery: 3}
	var first, waiting []string
	for n := 0; ; n++ {
		env := newEnv(t)
		if n == 0 {
			env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
				if first == nil { // the first task: the loop and its first iteration
					first = statusPath(t, env)
				}
			})
		}
		// Once the run waits for the approval, read its record and decide.
		var poll func()
		poll = func() {
			v, err := env.QueryWorkflow(ApprovalsQuery)
			var as Approvals
			if err == nil && v.Get(&as) == nil && len(as.Waiting()) > 0 {
				waiting = statusPath(t, env)
				env.SignalWorkflow(ApproveSignal, Decision{Step: "deploy", By: "ann"})
				return
			}
			env.RegisterDelayedCallback(poll, time.Minute)
		}
		env.RegisterDelayedCallback(poll, time.Minute)
		env.ExecuteWorkflow(WorkflowName, in)
		if err := env.GetWorkflowError(); continued(t, err, &in) {
			continue
		} else if err != nil {
			t.Fatalf("workflow: %v", err)
		}
		if n == 0 {
			t.Fatal("the run never continued as new")
		}
		// Ended, the exit handler (bye) ran and is not on the path.
		if diff := cmp.Diff(res.Path, statusPath(t, env)); diff != "" {
			t.Errorf("the path of the ended run: local (-) and temporal (+) differ:\n%s", diff)
		}
		break
	}
	if diff := cmp.Diff([]string{"l", "l#1.t"}, first); diff != "" {
		t.Errorf("the first execution's path (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(res.Path, waiting); diff != "" {
		t.Errorf("the path while waiting, after continuing as new: local (-) and temporal (+) differ:\n%s", diff)
	}
}

// statusPath is the path of the run's record so far.
func statusPath(t *testing.T, env *testsuite.TestWorkflowEnvironment) []string {
	t.Helper()
	v, err := env.QueryWorkflow(StatusQuery)
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	var rec struct{ Path []string }
	var raw json.RawMessage
	if err := v.Get(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Path
}

func TestEventLogKeepsFailedAttempts(t *testing.T) {
	// The log keeps what a failed task attempt printed, before the event
	// of its retry (which does not carry it), for skein logs.
	g, sources, _ := setup(t, temporaltest.Scenario{Files: map[string]string{"flow.star": `
flaky = step("flaky", run = ["sh", "-c", 'echo "try $SKEIN_ATTEMPT"; echo oops >&2; test "$SKEIN_ATTEMPT" -ge 2'], retries = 1, backoff = "1s")
`}})
	env := newEnv(t)
	env.ExecuteWorkflow(WorkflowName, RunInput{Flow: g.File, Root: g.Root, Sources: sources, Parallel: 1})
	result(t, env)
	v, err := env.QueryWorkflow(EventsQuery, 0)
	if err != nil {
		t.Fatal(err)
	}
	var p EventsPage
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range p.Entries {
		switch {
		case e.Failed != nil:
			got = append(got, fmt.Sprintf("failed %s visit %d attempt %d: %q %q", e.Failed.Where(), e.Failed.Visit, e.Failed.Attempt, e.Failed.Stdout, e.Failed.Stderr))
		case e.Event != nil:
			ev, err := vm.DecodeEvent(e.Event)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(ev.Type))
		}
	}
	want := []string{"run_started", "step_started", `failed flaky visit 1 attempt 1: "try 1\n" "oops\n"`, "step_retrying", "step_finished", "run_finished"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the event log (-want +got):\n%s", diff)
	}
}

// A step_retrying event keeps its backoff through the --events format.
func TestRetryEventBackoff(t *testing.T) {
	ev := vm.Event{Type: vm.StepRetrying, Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Step: "fetch", Kind: "task", Attempt: 2,
		Error: "exit status 1", Duration: 1500 * time.Millisecond}
	b := ev.AppendJSON(nil)
	if !strings.Contains(string(b), `"backoff_ms":1500.000`) {
		t.Errorf("encoded without its backoff: %s", b)
	}
	got, err := vm.DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Duration != ev.Duration {
		t.Errorf("decoded backoff %s, want %s", got.Duration, ev.Duration)
	}
}

// TestFollowerNoRepeatAfterFailedQuery: a query that fails part way
// through a page (a child workflow not started yet, which cannot answer)
// leaves the cursor after the last entry handed on, so the next poll
// hands on none of them again.
func TestFollowerNoRepeatAfterFailedQuery(t *testing.T) {
	var enc vm.EventEncoder
	ev := func(typ vm.EventType, step string) json.RawMessage {
		return enc.Append(nil, &vm.Event{Type: typ, Step: step, Kind: "task", Visit: 1})
	}
	logs := map[string][]Entry{
		"top": {
			{Seq: 0, Event: ev(vm.StepStarted, "a")},
			{Seq: 1, Child: &ChildRun{ID: "top/kid#1.1", Step: "kid", Visit: 1}},
			{Seq: 2, Event: ev(vm.StepStarted, "b")},
		},
		"top/kid#1.1": {{Seq: 0, Event: ev(vm.StepStarted, "inner")}},
	}
	childUp := false
	query := func(_ context.Context, id, name string, arg any, out any) error {
		if id == "top/kid#1.1" && !childUp {
			childUp = true // it answers from the next poll on
			return fmt.Errorf("workflow %s not found", id)
		}
		after := arg.(int)
		p := out.(*EventsPage)
		*p = EventsPage{Run: "r-" + id, Next: len(logs[id])}
		for _, e := range logs[id] {
			if e.Seq >= after {
				p.Entries = append(p.Entries, e)
			}
		}
		return nil
	}
	var lines []string
	f := NewFollower("top", query)
	f.OnEvent = func(_ json.RawMessage, ev vm.Event) { lines = append(lines, eventLine(ev)) }
	if err := f.Poll(context.Background()); err == nil {
		t.Fatal("the first poll did not fail with the child's query")
	}
	if err := f.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"step_started a visit 1", "step_started inner visit 1", "step_started b visit 1"}
	if !cmp.Equal(lines, want) {
		t.Errorf("events handed on:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestFollowerChildEndsBeforeRetrying: the events of a child flow that
// failed come before its step's step_retrying (which names the step's
// visit, as the VM emits it), though the child was read only in part
// before (it failed on a
// real server in about one run in two, the child's end read after the
// retry).
func TestFollowerChildEndsBeforeRetrying(t *testing.T) {
	var enc vm.EventEncoder
	ev := func(e vm.Event) json.RawMessage { return enc.Append(nil, &e) }
	logs := map[string][]Entry{
		"top": {
			{Seq: 0, Event: ev(vm.Event{Type: vm.StepStarted, Step: "kid", Kind: "subflow", Visit: 1})},
			{Seq: 1, Child: &ChildRun{ID: "top/kid#1.1", Step: "kid", Visit: 1}},
			{Seq: 2, Event: ev(vm.Event{Type: vm.StepRetrying, Step: "kid", Kind: "subflow", Visit: 1, Attempt: 2})},
		},
		"top/kid#1.1": {
			{Seq: 0, Event: ev(vm.Event{Type: vm.StepStarted, Step: "boom", Kind: "task", Visit: 1})},
			{Seq: 1, Event: ev(vm.Event{Type: vm.StepFinished, Step: "boom", Kind: "task", Visit: 1, Status: "failed"})},
		},
	}
	// Until the run's log is asked a second time, it holds two entries
	// and the child's one: the child ends with the retry.
	asked := 0
	query := func(_ context.Context, id, _ string, arg any, out any) error {
		p := out.(*EventsPage)
		if id == "top" {
			asked++
		}
		n := len(logs[id])
		if asked < 2 {
			n--
		}
		*p = EventsPage{Run: "r-" + id, Next: n}
		for _, e := range logs[id][:n] {
			if e.Seq >= arg.(int) {
				p.Entries = append(p.Entries, e)
			}
		}
		return nil
	}
	var lines []string
	f := NewFollower("top", query)
	f.OnEvent = func(_ json.RawMessage, ev vm.Event) { lines = append(lines, eventLine(ev)) }
	for range 2 {
		if err := f.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"step_started kid visit 1", "step_started boom visit 1", "step_finished boom failed visit 1", "step_retrying kid visit 1"}
	if !cmp.Equal(lines, want) {
		t.Errorf("events handed on:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// A child flow's workflow that continues as new, followed by a client
// making the run's spans, is marked on the child's run span, not on the
// run's.
func TestFollowerMarksChildContinued(t *testing.T) {
	ev := func(seq int, e vm.Event) Entry { return Entry{Seq: seq, Event: e.AppendJSON(nil)} }
	kid := []string{"kid"}
	logs := map[string]*fakeLogs{
		"wf": {current: "a1", runs: map[string][]Entry{"a1": {
			ev(0, vm.Event{Type: vm.RunStarted, RunID: "wf", FlowName: "top"}),
			ev(1, vm.Event{Type: vm.StepStarted, Step: "kid", Kind: "subflow", Visit: 1}),
			{Seq: 2, Child: &ChildRun{ID: "wf/kid#1.1", Step: "kid", Visit: 1}},
		}}},
		"wf/kid#1.1": {current: "k1", runs: map[string][]Entry{"k1": {
			ev(0, vm.Event{Type: vm.RunStarted, RunID: "wf/kid#1.1", FlowName: "child", Flow: kid}),
			ev(1, vm.Event{Type: vm.StepStarted, Step: "t", Kind: "task", Visit: 1, Flow: kid}),
		}}},
	}
	f := NewFollower("wf", func(_ context.Context, id, _ string, arg any, out any) error {
		*out.(*EventsPage) = logs[id].page(logs[id].current, arg.(int))
		return nil
	})
	f.QueryRun = func(_ context.Context, id, run, _ string, arg any, out any) error {
		*out.(*EventsPage) = logs[id].page(run, arg.(int))
		return nil
	}
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.New(context.Background(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	tel := p.Start(nil, telemetry.RunInfo{Engine: "temporal"})
	f.OnEvent = func(_ json.RawMessage, ev vm.Event) { tel.Event(&ev) }
	f.OnContinued = markContinued(f, tel, "wf")
	if err := f.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	k := logs["wf/kid#1.1"]
	k.current = "k2"
	k.runs["k2"] = []Entry{
		ev(2, vm.Event{Type: vm.StepFinished, Step: "t", Kind: "task", Visit: 1, Flow: kid, Status: "succeeded"}),
		ev(3, vm.Event{Type: vm.RunFinished, RunID: "wf/kid#1.1", FlowName: "child", Flow: kid, Status: "succeeded"}),
	}
	w := logs["wf"]
	w.runs["a1"] = append(w.runs["a1"],
		ev(3, vm.Event{Type: vm.StepFinished, Step: "kid", Kind: "subflow", Visit: 1, Status: "succeeded"}),
		ev(4, vm.Event{Type: vm.RunFinished, RunID: "wf", FlowName: "top", Status: "succeeded"}))
	if err := f.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	marks := map[string][]string{}
	for _, s := range exp.GetSpans() {
		for _, e := range s.Events {
			for _, a := range e.Attributes {
				if a.Key == "temporal.workflow.previous_run_id" {
					marks[s.Name] = append(marks[s.Name], e.Name+" from "+a.Value.AsString())
				}
			}
		}
	}
	if d := cmp.Diff(map[string][]string{"run child": {"continued_as_new from k1"}}, marks); d != "" {
		t.Errorf("continuations marked, by span (-want +got):\n%s", d)
	}
}
