package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/store"
)

// TestMain doubles as a helper process: with STORE_TEST_OPEN set it opens
// that store and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv("STORE_TEST_OPEN"); path != "" {
		s, err := store.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := s.Runs(store.Filter{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		s.Close()
		os.Exit(0)
	}
	code := m.Run()
	if runs10k != "" {
		os.RemoveAll(filepath.Dir(runs10k)) // BenchmarkRuns10k's store
	}
	os.Exit(code)
}

func open(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), ".skein", store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func loadFlow(t testing.TB, src string) *graphir.Graph {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "flow.star")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := lang.Load(path, lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// record runs g with its effects journaled in s and the run recorded.
func record(t testing.TB, s *store.Store, g *graphir.Graph, src string, opts vm.Options) (*vm.Result, *store.Recorder) {
	t.Helper()
	in, err := vm.BindInputs(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := vm.NewRunID(time.Now())
	rec, err := s.Begin(&store.NewRun{ID: id, Flow: g.Name, File: g.File, Root: g.Root, Inputs: in, Started: time.Now(),
		Sources: []store.Source{{Path: g.File, Text: []byte(src)}}})
	if err != nil {
		t.Fatal(err)
	}
	opts.RunID, opts.Effects = id, rec
	res := vm.Prepare(g).Run(context.Background(), in, opts)
	if err := rec.Finish(res); err != nil {
		t.Fatal(err)
	}
	return res, rec
}

func TestRecordRun(t *testing.T) {
	s := open(t)
	src := `
a = step("a", shell = "echo one; echo two >&2")
n = step("n", fn = lambda r: len(r.a.stdout))
b = step("b", shell = "exit 3")
fix = step("fix", shell = "echo fixed $SKEIN_STEP")
chain(START, a, n, b, END)
edge(b, fix, on = "failure")
edge(fix, END)
`
	g := loadFlow(t, src)
	res, rec := record(t, s, g, src, vm.Options{Parallel: 1})
	if res.Status != vm.Succeeded {
		t.Fatalf("run: %s %+v", res.Status, res.Error)
	}
	r, err := s.Get("last")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != rec.ID() || r.Status != "succeeded" || r.Flow != g.Name || r.Ended.IsZero() {
		t.Errorf("run = %+v", r)
	}
	var obj map[string]any
	if err := json.Unmarshal(r.Result, &obj); err != nil || obj["run_id"] != r.ID {
		t.Errorf("result %s: %v", r.Result, err)
	}
	effects, err := s.Effects(r.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Step, Status, Stdout, Stderr string
		Exit                         int
		Done                         int64
	}
	var got []row
	for _, e := range effects {
		got = append(got, row{e.Step, e.Status, e.Stdout, e.Stderr, e.ExitCode, e.Done})
	}
	want := []row{
		{"a", "succeeded", "one\n", "two\n", 0, 1},
		{"b", "failed", "", "", 3, 2},
		{"fix", "succeeded", "fixed fix\n", "", 0, 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	srcs, err := s.Sources(r.ID)
	if err != nil || len(srcs) != 1 || string(srcs[0].Text) != src {
		t.Errorf("sources = %v, %v", srcs, err)
	}
}

// What each attempt ran is recorded with it, after its templates: a
// task's argv, a shell's, a model call's messages; an fn step records
// nothing, and an effect with nothing rendered has none.
func TestRecordRendered(t *testing.T) {
	s := open(t)
	src := `
model("m", provider = "stub", answers = [{"reply": "fine"}])
flow(inputs = {"who": input(type = "string", default = "Ann")})
a = step("a", run = ["echo", "hi {{ inputs.who }}"])
b = step("b", shell = "echo two")
c = step("c", llm = "ask {{ inputs.who }}", system = "be brief", model = "m")
w = step("w", wait = "1ms")
chain(START, a, b, c, w, END)
`
	g := loadFlow(t, src)
	res, rec := record(t, s, g, src, vm.Options{Parallel: 1})
	if res.Status != vm.Succeeded {
		t.Fatalf("run: %s %+v", res.Status, res.Error)
	}
	effects, err := s.Effects(rec.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*vm.Rendered{}
	for _, e := range effects {
		got[e.Step] = e.Rendered
	}
	want := map[string]*vm.Rendered{
		"a": {Argv: []string{"echo", "hi Ann"}},
		"b": {Argv: []string{"/bin/sh", "-c", "echo two"}},
		"c": {Messages: []vm.RenderedMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "ask Ann"}}},
		"w": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
}

// Run references: exact ids, unique prefixes, last; ambiguity and misses
// are errors naming the candidates.
func TestResolve(t *testing.T) {
	s := open(t)
	g := loadFlow(t, `step("a")`)
	ids := []string{"20260101T000000.000Z-aaaa0001", "20260101T000000.000Z-aaaa0002", "20260102T000000.000Z-bbbb0001"}
	for _, id := range ids {
		if _, err := s.Begin(&store.NewRun{ID: id, Flow: g.Name, File: g.File, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for ref, want := range map[string]string{"last": ids[2], "20260102": ids[2], ids[0]: ids[0], "20260101T000000.000Z-aaaa0002": ids[1]} {
		if got, err := s.Resolve(ref); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := s.Resolve("20260101"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := s.Resolve("2027"); err == nil || !strings.Contains(err.Error(), "no such run") {
		t.Errorf("missing: %v", err)
	}
}

// A loop of fn steps adds nothing to the store; a task costs one row.
func TestFnStepsNotRecorded(t *testing.T) {
	s := open(t)
	src := `
flow(output = "c")
d = step("d", fn = lambda r: r.visits("d"), max_visits = 1 << 30)
c = step("c", fn = lambda r: r.d)
chain(START, d, c)
edge(c, d, when = "c < 1000")
edge(c, END, when = "c >= 1000")
`
	g := loadFlow(t, src)
	res, _ := record(t, s, g, src, vm.Options{Parallel: 1, MaxPath: 10})
	if res.Status != vm.Succeeded {
		t.Fatalf("run: %s %+v", res.Status, res.Error)
	}
	effects, err := s.Effects(res.RunID, 0)
	if err != nil || len(effects) != 0 {
		t.Errorf("effects = %d, %v; want none", len(effects), err)
	}
}

// Two processes opening a new store at once both succeed, and the schema
// is made once.
func TestConcurrentOpen(t *testing.T) {
	for round := 0; round < 3; round++ {
		path := filepath.Join(t.TempDir(), "new", store.FileName)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		out := make([][]byte, 4)
		for i := range errs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "STORE_TEST_OPEN="+path)
				out[i], errs[i] = cmd.CombinedOutput()
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d process %d: %v\n%s", round, i, err, out[i])
			}
		}
	}
}

// Two runs writing one store at once (one process each would do the same:
// the lock is SQLite's) both record every completion.
func TestConcurrentRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	src := `
t = step("t", shell = "echo $SKEIN_STEP", max_visits = 50)
c = step("c", fn = lambda r: r.visits("t"))
chain(START, t, c)
edge(c, t, when = "c < 20")
edge(c, END, when = "c >= 20")
`
	g := loadFlow(t, src)
	var wg sync.WaitGroup
	ids := make([]string, 2)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := store.Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			res, _ := record(t, s, g, src, vm.Options{})
			if res.Status != vm.Succeeded {
				t.Errorf("run %d: %s %+v", i, res.Status, res.Error)
			}
			ids[i] = res.RunID
		}(i)
	}
	wg.Wait()
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range ids {
		effects, err := s.Effects(id, 0)
		if err != nil || len(effects) != 20 {
			t.Errorf("run %s: %d effects, %v", id, len(effects), err)
		}
	}
	runs, err := s.Runs(store.Filter{})
	if err != nil || len(runs) != 2 {
		t.Errorf("runs = %d, %v", len(runs), err)
	}
}

// A store in a directory that cannot be written fails at Open, before any
// run starts.
func TestReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o755)
	_, err := store.Open(filepath.Join(dir, ".skein", store.FileName))
	if err == nil || !strings.Contains(err.Error(), "run store") {
		t.Fatalf("err = %v", err)
	}
}

func TestGC(t *testing.T) {
	s := open(t)
	src := `step("a", shell = "true")`
	g := loadFlow(t, src)
	var last string
	for i := 0; i < 5; i++ {
		res, _ := record(t, s, g, src, vm.Options{})
		last = res.RunID
	}
	// One run still going is never collected.
	if _, err := s.Begin(&store.NewRun{ID: vm.NewRunID(time.Now()), Flow: g.Name, File: g.File, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	n, err := s.GC(2, 0)
	if err != nil || n != 3 {
		t.Fatalf("GC = %d, %v", n, err)
	}
	runs, _ := s.Runs(store.Filter{})
	if len(runs) != 3 || runs[1].ID != last {
		t.Errorf("left %d runs", len(runs))
	}
	if n, _ := s.GC(0, time.Hour); n != 0 {
		t.Errorf("older-than an hour deleted %d", n)
	}
}

type producerFunc func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion))

func (f producerFunc) Start(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	f(ctx, q, done)
}

// A model call's completion is journaled whole (output, model, answer,
// tokens, cached and reasoning tokens, attempts, cost) and replayed whole; the record's attempts carry over to the
// first re-execution.
func TestReplayModelCall(t *testing.T) {
	s := open(t)
	g := loadFlow(t, `step("a")`)
	id := vm.NewRunID(time.Now())
	rec, err := s.Begin(&store.NewRun{ID: id, Flow: g.Name, File: g.File, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	want := &vm.EffectCompletion{OK: true, Output: starlark.String("yes"), Model: "m1", Answer: "yes",
		Usage: model.Usage{PromptTokens: 7, CompletionTokens: 2, CachedTokens: 4, ReasoningTokens: 1, Attempts: 3, Cost: 0.00125}}
	rec.Inner = producerFunc(func(_ context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		if q.Step == "ask" {
			done(want)
		} else {
			done(&vm.EffectCompletion{Code: "step_failed", Error: "boom", ExitCode: 1})
		}
	})
	ask := &vm.EffectRequest{RunID: id, Step: "ask", Kind: graphir.KindLLM, Visit: 1, Attempt: 1, Scope: []string{"l#2"}}
	task := &vm.EffectRequest{RunID: id, Step: "t", Kind: graphir.KindTask, Visit: 1, Attempt: 1}
	for _, q := range []*vm.EffectRequest{ask, task} {
		ch := make(chan *vm.EffectCompletion, 1)
		rec.Start(context.Background(), q, func(c *vm.EffectCompletion) { ch <- c })
		<-ch
	}
	// (The run goes on; its record reaches SQLite within 10 ms.)
	if err := rec.Sync(); err != nil {
		t.Fatal(err)
	}
	p, err := s.Replay(id, "")
	if err != nil {
		t.Fatal(err)
	}
	var inner []*vm.EffectRequest
	p.Inner = producerFunc(func(_ context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		inner = append(inner, q)
		done(&vm.EffectCompletion{OK: true})
	})
	var got *vm.EffectCompletion
	p.Start(context.Background(), ask, func(c *vm.EffectCompletion) { got = c })
	if got == nil || !got.OK || got.Output != starlark.String("yes") || got.Model != "m1" || got.Answer != "yes" || got.Usage != want.Usage {
		t.Errorf("replayed %+v", got)
	}
	p.Start(context.Background(), task, func(c *vm.EffectCompletion) { got = c })
	if len(inner) != 1 || inner[0].Attempt != 2 || inner[0].Step != "t" {
		t.Errorf("the failed task went to Inner as %+v", inner)
	}
	if p.Replayed() != 1 {
		t.Errorf("replayed %d", p.Replayed())
	}
}

// A wait's due time is recorded when it is first asked for: the run that
// continues it after a crash waits only for what is left.
func TestDurableWait(t *testing.T) {
	s := open(t)
	g := loadFlow(t, `step("a")`)
	id := vm.NewRunID(time.Now())
	rec, err := s.Begin(&store.NewRun{ID: id, Flow: g.Name, File: g.File, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var asked []time.Duration
	inner := producerFunc(func(ctx context.Context, q *vm.EffectRequest, done func(*vm.EffectCompletion)) {
		asked = append(asked, q.Wait)
		done(&vm.EffectCompletion{Cancelled: true}) // the process died mid-wait
	})
	rec.Inner = inner
	req := &vm.EffectRequest{RunID: id, Step: "w", Kind: graphir.KindWait, Visit: 1, Attempt: 1, Wait: time.Hour}
	wait := func(r *store.Recorder) {
		ch := make(chan struct{})
		r.Start(context.Background(), req, func(*vm.EffectCompletion) { close(ch) })
		<-ch
	}
	wait(rec)
	waits, err := s.Waits(id)
	due := waits["/w#1"]
	if err != nil || due.IsZero() {
		t.Fatalf("waits = %v, %v", waits, err)
	}
	time.Sleep(10 * time.Millisecond)
	rec2, err := s.Continue(id, store.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec2.Inner = inner
	wait(rec2)
	if waits, _ := s.Waits(id); !waits["/w#1"].Equal(due) {
		t.Errorf("due moved from %v to %v", due, waits["/w#1"])
	}
	if len(asked) != 2 || asked[0] > time.Hour || asked[1] >= asked[0] {
		t.Errorf("waited %v; due in %v", asked, time.Until(due))
	}
}

// The options a run was started with are recorded with it, and a run taken
// over by a resume gets the options it continues with.
func TestRunOptionsRecorded(t *testing.T) {
	s := open(t)
	want := store.RunOptions{Parallel: 3, Timeout: time.Minute, MaxLoadSteps: 123456, MaxTokens: 99, Cassette: "/tmp/tape.json", ReplayOnly: true}
	id := vm.NewRunID(time.Now())
	if _, err := s.Begin(&store.NewRun{ID: id, Flow: "f", File: "f.star", Started: time.Now(), Options: want}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, r.Options); diff != "" {
		t.Errorf("recorded options (-want +got):\n%s", diff)
	}
	want.MaxLoadSteps, want.ReplayOnly = 0, false
	if _, err := s.Continue(id, want); err != nil {
		t.Fatal(err)
	}
	if r, err = s.Get(id); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, r.Options); diff != "" {
		t.Errorf("options after Continue (-want +got):\n%s", diff)
	}
}

// Filter's Text keeps the runs whose id, flow, file or error holds it,
// ignoring case; Before keeps the runs that sort before an id (the next
// page).
func TestRunsTextAndBefore(t *testing.T) {
	s, err := store.Open(filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, r := range []struct{ id, flow, file, errMsg string }{
		{"r1", "build", "/a/build.star", ""},
		{"r2", "deploy", "/a/Deploy.star", "Exit Status 2"},
		{"r3", "triage", "/b/triage.star", ""},
	} {
		rec, err := s.Begin(&store.NewRun{ID: r.id, Flow: r.flow, File: r.file, Started: time.Unix(int64(i), 0)})
		if err != nil {
			t.Fatal(err)
		}
		res := &vm.Result{RunID: r.id, Status: vm.Succeeded, Started: time.Unix(int64(i), 0)}
		if r.errMsg != "" {
			res.Status, res.Error = vm.Failed, &graphir.Error{Code: "step_failed", Msg: r.errMsg}
		}
		if err := rec.Finish(res); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		f    store.Filter
		want string
	}{
		{store.Filter{Text: "DEPLOY"}, "r2"},
		{store.Filter{Text: "exit status"}, "r2"},
		{store.Filter{Text: "/a/"}, "r2 r1"},
		{store.Filter{Text: "r3"}, "r3"},
		{store.Filter{Text: "nothing"}, ""},
		{store.Filter{Before: "r3"}, "r2 r1"},
		{store.Filter{Before: "r2", Limit: 1}, "r1"},
		{store.Filter{Before: "r3", Text: "a", Status: "failed"}, "r2"},
		{store.Filter{Before: "r1"}, ""},
	} {
		runs, err := s.Runs(c.f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if got := strings.Join(ids, " "); got != c.want {
			t.Errorf("%+v: %q, want %q", c.f, got, c.want)
		}
	}
}
