package vm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// scripted is a producer that answers every effect from a script, keyed by
// "flow/scope/step#visit.attempt", and records the requests it saw. It
// starts no process: every argv in the flows below would fail if run.
type scripted struct {
	mu     sync.Mutex
	script map[string]*vm.EffectCompletion
	seen   []string
	reqs   []*vm.EffectRequest
	inner  vm.EffectProducer // falls through to it for unscripted effects
}

func effectKey(q *vm.EffectRequest) string {
	return fmt.Sprintf("%s/%s/%s#%d.%d", strings.Join(q.Flow, ">"), strings.Join(q.Scope, ">"), q.Step, q.Visit, q.Attempt)
}

func (s *scripted) Start(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	k := effectKey(q)
	s.mu.Lock()
	s.seen = append(s.seen, k)
	s.reqs = append(s.reqs, q)
	c, ok := s.script[k]
	s.mu.Unlock()
	if !ok && s.inner != nil {
		s.inner.Start(ctx, q, done)
		return
	}
	if !ok {
		c = &vm.EffectCompletion{Code: "step_failed", Error: "unscripted " + k}
	}
	done(c)
}

func TestScriptedProducerDrivesRun(t *testing.T) {
	src := `
flow(inputs = {"who": "world"}, output = "shout")
hello = step("hello", run = ["/nonexistent/echo", "hello {{ inputs.who }}"], retries = 1)
count = step("count", fn = lambda r: len(r.hello.stdout))
sh = step("sh", shell = "/nonexistent/sh", env = {"N": "{{ count }}"})
shout = step("shout", fn = lambda r: r.hello.stdout.upper() + r.sh.stdout)
chain(START, hello, count, sh, shout, END)
`
	p := &scripted{script: map[string]*vm.EffectCompletion{
		// The first attempt fails; the retry succeeds.
		"//hello#1.1": {Code: "step_failed", Error: "exit status 1", ExitCode: 1, Stderr: "flaky"},
		"//hello#1.2": {OK: true, Stdout: "hello world"},
		"//sh#1.1":    {OK: true, Stdout: "!"},
	}}
	res := run(t, src, nil, vm.Options{Effects: p, Parallel: 2})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	if got := goValue(t, res.Output); got != "HELLO WORLD!" {
		t.Errorf("output = %v", got)
	}
	if diff := cmp.Diff([]string{"//hello#1.1", "//hello#1.2", "//sh#1.1"}, p.seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	// The requests carry the rendered process.
	if got := p.reqs[0].Argv; !cmp.Equal(got, []string{"/nonexistent/echo", "hello world"}) {
		t.Errorf("argv = %q", got)
	}
	if p.reqs[0].Kind != graphir.KindTask || p.reqs[2].Kind != graphir.KindShell || p.reqs[0].RunID != res.RunID {
		t.Errorf("kinds/run id: %v %v %q", p.reqs[0].Kind, p.reqs[2].Kind, p.reqs[0].RunID)
	}
	if got := p.reqs[2].Env[len(p.reqs[2].Env)-1]; got != "N=11" {
		t.Errorf("sh env ends with %q, want N=11", got)
	}
	if res.Step("hello").Visits != 1 {
		t.Errorf("hello visits = %d", res.Step("hello").Visits)
	}
}

// A task's text is its stdout without the last line ending, in templates
// and fn steps alike; stdout stays as printed. vm.TaskStdout knows the
// record for what it is.
func TestTaskText(t *testing.T) {
	src := `
flow(output = "show")
a = step("a", run = ["/nonexistent/a"])
b = step("b", shell = "/nonexistent/b")
c = step("c", run = ["/nonexistent/c"])
e = step("e", run = ["/nonexistent/e", "[{{ a.text }}]", "[{{ b.text }}]", "[{{ c.text }}]"])
show = step("show", fn = lambda r: [r.a.text, r.b.text, r.c.text, r.a.stdout, r.e])
chain(START, a, b, c, e, show, END)
`
	p := &scripted{script: map[string]*vm.EffectCompletion{
		"//a#1.1": {OK: true, Stdout: "v1.2\n"},
		"//b#1.1": {OK: true, Stdout: "two\r\nlines\r\n\n"},
		"//c#1.1": {OK: true},
		"//e#1.1": {OK: true, Stdout: "done\n"},
	}}
	res := run(t, src, nil, vm.Options{Effects: p})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	if got, want := p.reqs[3].Argv, []string{"/nonexistent/e", "[v1.2]", "[two\r\nlines\r\n]", "[]"}; !cmp.Equal(got, want) {
		t.Errorf("argv = %q, want %q", got, want)
	}
	out := goValue(t, res.Output).([]any)
	if diff := cmp.Diff([]any{"v1.2", "two\r\nlines\r\n", "", "v1.2\n"}, out[:4]); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	if s, ok := vm.TaskStdout(res.Step("e").Output); !ok || s != "done\n" {
		t.Errorf("TaskStdout(e) = %q, %v", s, ok)
	}
	if _, ok := vm.TaskStdout(res.Output); ok {
		t.Error("TaskStdout took a list for a task's record")
	}
}

// Effects inside loops, maps and child flows carry their scope and flow
// chain, and a failed scripted completion routes like a real failure.
func TestScriptedProducerScopes(t *testing.T) {
	files := map[string]string{
		"flow.star": `
t = step("t", run = ["/nonexistent/t", "{{ item }}"])
m = map("m", over = "[1, 2]", body = [t])
body = step("b", run = ["/nonexistent/b"])
l = loop("l", body = [body], until = lambda it: it.iteration == 2, max_iterations = 5)
sub = step("sub", flow = "child.star")
fix = step("fix", run = ["/nonexistent/fix"])
chain(START, m, l, sub, END)
edge(sub, fix, on = "failure")
edge(fix, END)
`,
		"child.star": `
c = step("c", run = ["/nonexistent/c"])
chain(START, c, END)
`,
	}
	p := &scripted{script: map[string]*vm.EffectCompletion{
		"/m[0]/t#1.1": {OK: true, Stdout: "0"},
		"/m[1]/t#1.1": {OK: true, Stdout: "1"},
		"/l#1/b#1.1":  {OK: true},
		"/l#2/b#1.1":  {OK: true},
		"sub//c#1.1":  {Code: "step_failed", Error: "exit status 2", ExitCode: 2},
		"//fix#1.1":   {OK: true, Stdout: "fixed"},
	}}
	// sub is not scripted: it falls through to Local, which runs the child
	// flow, whose effects come back to the scripted producer.
	p.inner = vm.Local{}
	res := runFiles(t, files, nil, vm.Options{Effects: p})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	want := []string{"/m[0]/t#1.1", "/m[1]/t#1.1", "/l#1/b#1.1", "/l#2/b#1.1", "//sub#1.1", "sub//c#1.1", "//fix#1.1"}
	if diff := cmp.Diff(want, p.seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if s := res.Step("sub"); s.Status != vm.StepFailed || s.Child == nil || s.Child.Step("c").Status != vm.StepFailed {
		t.Errorf("sub = %+v", s)
	}
	if diff := cmp.Diff(map[string]any{"stdout": "fixed", "text": "fixed", "stderr": "", "exit_code": 0.0, "error": nil, "code": nil}, goValue(t, res.Output)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if s := res.Step("fix"); s.Status != vm.StepSucceeded {
		t.Errorf("fix = %s", s.Status)
	}
}

// A producer that answers synchronously and one that answers from another
// goroutine give the same run.
func TestProducerAsync(t *testing.T) {
	src := `
a = step("a", run = ["/nonexistent/a"])
b = step("b", run = ["/nonexistent/b"])
j = step("j", fn = lambda r: r.a.stdout + r.b.stdout)
edge(START, a)
edge(START, b)
edge(a, j)
edge(b, j)
edge(j, END)
`
	script := map[string]*vm.EffectCompletion{"//a#1.1": {OK: true, Stdout: "A"}, "//b#1.1": {OK: true, Stdout: "B"}}
	async := producerFunc(func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		go done(script[effectKey(q)])
	})
	for _, par := range []int{1, 4} {
		res := run(t, src, nil, vm.Options{Effects: async, Parallel: par})
		if res.Status != vm.Succeeded || goValue(t, res.Output) != "AB" {
			t.Errorf("parallel %d: %s %v %+v", par, res.Status, res.Output, res.Error)
		}
	}
}

type producerFunc func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion))

func (f producerFunc) Start(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	f(ctx, q, done)
}

// A producer that holds an effect until it is cancelled sees the
// cancellation, and the run ends cancelled.
func TestProducerCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	hold := producerFunc(func(ectx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		go func() {
			close(started)
			<-ectx.Done()
			done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		}()
	})
	g := load(t, map[string]string{"flow.star": `step("t", run = ["/nonexistent"])`})
	in, _ := vm.BindInputs(g, nil)
	go func() { <-started; cancel() }()
	res := vm.Prepare(g).Run(ctx, in, vm.Options{Effects: hold})
	if res.Status != vm.Cancelled || res.Step("t").Status != vm.StepCancelled {
		t.Errorf("status %s, t %s", res.Status, res.Step("t").Status)
	}
}

// Every task sees its run, step, visit and attempt in its environment.
func TestTaskEnvironment(t *testing.T) {
	src := `
t = step("t", shell = "echo $SKEIN_RUN_ID $SKEIN_STEP $SKEIN_VISIT $SKEIN_ATTEMPT; test $SKEIN_ATTEMPT = 2", retries = 1)
chain(START, t, END)
`
	res := run(t, src, nil, vm.Options{RunID: "r-1"})
	if res.Status != vm.Succeeded || res.RunID != "r-1" {
		t.Fatalf("status %s %q: %+v", res.Status, res.RunID, res.Error)
	}
	out, _ := res.Step("t").Output.(interface {
		Attr(string) (starlark.Value, error)
	}).Attr("stdout")
	if got := string(out.(starlark.String)); got != "r-1 t 1 2\n" {
		t.Errorf("stdout = %q", got)
	}
}

// An approval nobody can decide here parks: the other branch still runs,
// then the run ends waiting, listing the approval; the exit handler does
// not run. A producer that decides completes it.
func TestApprovalParks(t *testing.T) {
	src := `
flow(inputs = {"v": "1.4"}, on_exit = "bye")
deploy = step("deploy", approve = "Deploy {{ inputs.v }}?")
other = step("other", fn = lambda r: 1)
after = step("after", fn = lambda r: r.deploy.approved)
bye = step("bye", fn = lambda r: 0)
edge(START, deploy)
edge(START, other)
edge(deploy, after)
edge(after, END)
edge(other, END)
`
	res := run(t, src, nil, vm.Options{})
	if res.Status != vm.Waiting || res.Error != nil {
		t.Fatalf("status %s %+v", res.Status, res.Error)
	}
	if got := stepStatus(res); got["deploy"] != vm.StepWaiting || got["other"] != vm.StepSucceeded || got["after"] != vm.StepNotRun {
		t.Errorf("steps = %v", got)
	}
	if len(res.Pending) != 1 || res.Pending[0].Step != "deploy" || res.Pending[0].Message != "Deploy 1.4?" {
		t.Errorf("pending = %+v", res.Pending)
	}
	if res.OnExit != nil && res.OnExit.Status != vm.StepNotRun {
		t.Errorf("exit handler ran: %+v", res.OnExit)
	}
	b, err := res.MarshalJSON()
	var obj map[string]any
	if err != nil || json.Unmarshal(b, &obj) != nil {
		t.Fatalf("json %s: %v", b, err)
	}
	if diff := cmp.Diff([]any{map[string]any{"step": "deploy", "scope": []any{}, "visit": 1.0, "message": "Deploy 1.4?"}}, obj["approvals"]); diff != "" {
		t.Errorf("approvals (-want +got):\n%s", diff)
	}

	approve := producerFunc(func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		done(&vm.EffectCompletion{OK: true, Output: stdlib.NewMap([]string{"approved"}, []starlark.Value{starlark.True})})
	})
	res = run(t, src, nil, vm.Options{Effects: approve})
	if res.Status != vm.Succeeded || goValue(t, res.Output) != true {
		t.Errorf("approved: %s %v %+v", res.Status, res.Output, res.Error)
	}
}

// holdingProducer holds approvals back until, at an Idle, Outstanding
// says nothing but them is left in their run; tasks run as scripted.
type holdingProducer struct {
	mu    sync.Mutex
	held  []func()
	reqs  []*vm.EffectRequest
	seen  []int // Outstanding at each Idle with something held
	tasks producerFunc
}

func (p *holdingProducer) Start(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if q.Kind != graphir.KindApproval {
		p.tasks(ctx, q, done)
		return
	}
	go func() {
		p.mu.Lock()
		p.held = append(p.held, func() { done(&vm.EffectCompletion{Park: true}) })
		p.reqs = append(p.reqs, q)
		p.mu.Unlock()
		q.Nudge()
	}()
}

func (p *holdingProducer) Idle([]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.reqs) == 0 {
		return
	}
	n := p.reqs[0].Outstanding()
	p.seen = append(p.seen, n)
	if n == len(p.held) {
		for _, park := range p.held {
			park()
		}
		p.held, p.reqs = nil, nil
	}
}

// Outstanding counts a retry waiting out its backoff with the effects in
// flight, so a producer holding an approval does not take the run as idle
// then; Nudge has a run that already waits look at a newly held approval.
func TestOutstandingCountsRetries(t *testing.T) {
	src := `
g = step("g", approve = "Go?")
flaky = step("flaky", shell = "x", retries = 1, backoff = "50ms")
edge(START, g)
edge(START, flaky)
edge(g, END)
edge(flaky, END)
`
	p := &holdingProducer{tasks: func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		go done(&vm.EffectCompletion{OK: q.Attempt == 2, ExitCode: 2 - q.Attempt})
	}}
	res := run(t, src, nil, vm.Options{Effects: p, Parallel: 2})
	if got := stepStatus(res); res.Status != vm.Waiting || got["g"] != vm.StepWaiting || got["flaky"] != vm.StepSucceeded {
		t.Fatalf("status %s, steps %v", res.Status, got)
	}
	// The approval parked only once flaky's retry had run: every Idle
	// before saw more outstanding than the approval.
	if len(p.seen) == 0 || p.seen[len(p.seen)-1] != 1 || slices.Contains(p.seen[:len(p.seen)-1], 1) {
		t.Errorf("Outstanding at each Idle: %v", p.seen)
	}
	if !slices.Contains(p.seen, 2) {
		t.Errorf("Outstanding never counted the retry beside the approval: %v", p.seen)
	}
}

// teeing wraps Local, teeing every task's output into out and errw.
type teeing struct{ out, errw io.Writer }

func (p teeing) Start(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	c := *q
	c.Tee = &vm.Tee{Stdout: p.out, Stderr: p.errw}
	vm.Local{}.Start(ctx, &c, done)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A request's Tee is given what a task prints, as it prints it, and a
// writer that fails does not stop the task's output being read: the
// step's output has all of it.
func TestTaskTee(t *testing.T) {
	src := `
t = step("t", shell = "echo one; echo two >&2; echo three")
chain(START, t, END)
`
	var out strings.Builder
	res := run(t, src, nil, vm.Options{Effects: teeing{&out, failingWriter{}}})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	if out.String() != "one\nthree\n" {
		t.Errorf("the tee got %q on stdout", out.String())
	}
	o := res.Step("t").Output.(interface {
		Attr(string) (starlark.Value, error)
	})
	stdout, _ := o.Attr("stdout")
	stderr, _ := o.Attr("stderr")
	if stdout != starlark.String("one\nthree\n") || stderr != starlark.String("two\n") {
		t.Errorf("output stdout %v, stderr %v", stdout, stderr)
	}
}
