package trigger

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/store"
)

// serviceRunner runs queued items through the run service, as skein
// serve does.
type serviceRunner struct {
	svc *runs.Service
}

func (r *serviceRunner) Start(it *store.QueueItem) (string, func(), error) {
	f := frontend.Load(it.File, frontend.Options{Root: it.Root})
	if err := f.Err(); err != nil {
		return "", nil, err
	}
	given := &frontend.Inputs{}
	if err := given.SetJSON(it.Inputs); err != nil {
		return "", nil, err
	}
	in, err := given.Bind(f.Graph)
	if err != nil {
		return "", nil, err
	}
	run, err := r.svc.Start(&runs.Spec{Graph: f.Graph, Inputs: in, Sources: f.Sources.List()})
	if err != nil {
		return "", nil, err
	}
	return run.ID, func() { run.Run(context.Background()) }, nil
}

func (r *serviceRunner) Resume(it *store.QueueItem) (func(), error) {
	rec, err := r.svc.Store.Get(it.Run)
	if err != nil {
		return nil, err
	}
	run, _, err := r.svc.Resume(&runs.ResumeSpec{Run: rec, Options: rec.Options})
	if err != nil {
		return nil, err
	}
	return func() { run.Run(context.Background()) }, nil
}

func (r *serviceRunner) Cancel(string) {}

// runUntilDrained runs s until st's queue has nothing pending, then stops
// it and waits for its runs to finish.
func runUntilDrained(t *testing.T, s *Scheduler, st *store.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() {
		cancel()
		<-done
		s.Wait()
	}()
	for {
		changed := s.Changed()
		pending, err := st.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			return
		}
		<-changed
	}
}

// TestConcurrencyKeys: 20 runs queued over 3 keys with concurrency = 1
// per key all run, and no two runs of one key overlap: each appends its
// start and end to a file, which must read start, end, start, end... per
// key.
func TestConcurrencyKeys(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	marks := filepath.Join(dir, "marks")
	f := loadFlow(t, dir, "build.star", `
flow(inputs = {"repo": input(type = "string"), "n": 0, "marks": ""}, concurrency = 1, concurrency_key = "inputs.repo")
work = step("work", shell = "echo start $REPO $N >> $MARKS; sleep 0.05; echo end $REPO $N >> $MARKS",
            env = {"REPO": "{{ inputs.repo }}", "N": "{{ inputs.n }}", "MARKS": "{{ inputs.marks }}"})
chain(START, work, END)
`)
	s := &Scheduler{Store: st, Runner: &serviceRunner{svc: &runs.Service{Store: st}}, MaxRuns: 8}
	repos := []string{"a", "b", "c"}
	for i := range 20 {
		in, _ := json.Marshal(map[string]any{"repo": repos[i%3], "n": i, "marks": marks})
		if _, err := s.Enqueue(f, "api", "", in, ""); err != nil {
			t.Fatal(err)
		}
	}
	runUntilDrained(t, s, st)
	b, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]string{}
	starts := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var what, repo, n string
		fmt.Sscan(line, &what, &repo, &n)
		switch what {
		case "start":
			if o := open[repo]; o != "" {
				t.Errorf("run %s of %s started while run %s of it ran", n, repo, o)
			}
			open[repo] = n
			starts++
		case "end":
			if open[repo] != n {
				t.Errorf("run %s of %s ended, but %q was running", n, repo, open[repo])
			}
			open[repo] = ""
		}
	}
	if starts != 20 {
		t.Errorf("%d runs started, want 20:\n%s", starts, b)
	}
	for _, it := range items(t, st) {
		if it.State != store.QueueDone {
			t.Errorf("item %d: %s %s", it.N, it.State, it.Error)
		}
	}
}

// TestRetain: with Keep, the runs and queue items that ended longer ago
// are deleted; those still queued, and newer ones, are kept.
func TestRetain(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	f := loadFlow(t, dir, "a.star", `
a = step("a", run = ["true"])
chain(START, a, END)
`)
	s := &Scheduler{Store: st, Runner: &serviceRunner{svc: &runs.Service{Store: st}}}
	if _, err := s.Enqueue(f, "api", "", nil, ""); err != nil {
		t.Fatal(err)
	}
	s.Dispatch()
	s.Wait()
	old, _ := st.QueueOf(items(t, st)[0].Run)
	if old == nil || old.State != store.QueueDone {
		t.Fatalf("the first run did not end: %+v", old)
	}
	s.MaxRuns = 1
	s.Runner = &fakeRunner{hold: true}
	waiting, _ := s.Enqueue(f, "api", "", nil, "")
	held, _ := s.Enqueue(f, "api", "", nil, "")
	s.Dispatch() // waiting runs (held), held stays queued
	s.Keep = time.Nanosecond
	s.Retain()
	q := items(t, st)
	if len(q) != 2 || q[0].N != waiting.N || q[1].N != held.N {
		t.Errorf("queue after Retain: %v", fired(q))
	}
	if _, err := st.Get(old.Run); err == nil {
		t.Errorf("run %s that ended is still there", old.Run)
	}
	s.Runner.(*fakeRunner).releaseAll()
	s.Wait()
}

// TestHopper: a research flow whose runs emit two subquestions each, with
// max_depth = 2, expands two levels below the question queued from
// outside and stops there: 1 + 2 + 4 runs, and the 8 items of the third
// level are recorded as skipped, each linked to the run that emitted it.
func TestHopper(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	log := filepath.Join(dir, "asked")
	f := loadFlow(t, dir, "research.star", `
flow(name = "research", inputs = {"question": "q", "log": ""}, emit = "research.star", max_depth = 2, output = "split")

def subquestions(r):
    return {"emit": [{"question": r.inputs.question + "." + str(i), "log": r.inputs.log} for i in [1, 2]]}

ask = step("ask", shell = "echo $Q >> $LOG", env = {"Q": "{{ inputs.question }}", "LOG": "{{ inputs.log }}"})
split = step("split", fn = subquestions)
chain(START, ask, split, END)
`)
	s := &Scheduler{Store: st, Runner: &serviceRunner{svc: &runs.Service{Store: st}}}
	in, _ := json.Marshal(map[string]any{"question": "q", "log": log})
	if _, err := s.Enqueue(f, "api", "", in, ""); err != nil {
		t.Fatal(err)
	}
	runUntilDrained(t, s, st)
	b, _ := os.ReadFile(log)
	asked := strings.Fields(string(b))
	slices.Sort(asked)
	want := []string{"q", "q.1", "q.1.1", "q.1.2", "q.2", "q.2.1", "q.2.2"}
	if !slices.Equal(asked, want) {
		t.Errorf("asked %q, want %q", asked, want)
	}
	byState := map[string]int{}
	runsOf := map[string]bool{}
	for _, it := range items(t, st) {
		byState[it.State]++
		if it.Run != "" {
			runsOf[it.Run] = true
		}
	}
	if byState[store.QueueDone] != 7 || byState[store.QueueSkipped] != 8 || len(byState) != 2 {
		t.Errorf("queue states %v, want 7 done and 8 skipped", byState)
	}
	for _, it := range items(t, st) {
		if it.Depth > 0 && !runsOf[it.Parent] {
			t.Errorf("item %d at depth %d names parent %q, not a run of the queue", it.N, it.Depth, it.Parent)
		}
		if it.State == store.QueueSkipped && it.Depth != 3 {
			t.Errorf("item %d skipped at depth %d", it.N, it.Depth)
		}
	}
}

// TestRetainPerFlow: flow(keep=) deletes that flow's ended runs, and no
// other flow's.
func TestRetainPerFlow(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	short := loadFlow(t, dir, "short.star", `
flow(keep = "1ms")
a = step("a", run = ["true"])
chain(START, a, END)
`)
	long := loadFlow(t, dir, "long.star", `
a = step("a", run = ["true"])
chain(START, a, END)
`)
	s := &Scheduler{Store: st, Runner: &serviceRunner{svc: &runs.Service{Store: st}}, Flows: func() []Flow { return []Flow{short, long} }}
	for _, f := range []Flow{short, long} {
		if _, err := s.Enqueue(f, "api", "", nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	s.Dispatch()
	s.Wait()
	q := items(t, st)
	// The run's end reaches SQLite through its journal, and keep counts
	// from it: retain until it goes (a loaded machine may take a while).
	gone := false
	for deadline := time.Now().Add(20 * time.Second); !gone && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.Retain()
		_, err := st.Get(q[0].Run)
		gone = err != nil
	}
	if !gone {
		t.Errorf("the run of short.star (keep = 1ms) is still there")
	}
	if _, err := st.Get(q[1].Run); err != nil {
		t.Errorf("the run of long.star is gone: %v", err)
	}
}
