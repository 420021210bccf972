package trigger

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/store"
)

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// fakeRunner starts runs that hold until released, and records what it
// was asked.
type fakeRunner struct {
	mu        sync.Mutex
	started   []int64  // queue items, in the order started
	resumed   []string // runs
	cancelled []string
	release   map[string]chan struct{}
	hold      bool
}

func (r *fakeRunner) Start(it *store.QueueItem) (string, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, it.N)
	id := fmt.Sprintf("run-%d", it.N)
	return id, r.runner(id), nil
}

func (r *fakeRunner) runner(id string) func() {
	if r.release == nil {
		r.release = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	r.release[id] = ch
	if !r.hold {
		close(ch)
	}
	return func() { <-ch }
}

func (r *fakeRunner) Resume(it *store.QueueItem) (func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resumed = append(r.resumed, it.Run)
	return r.runner(it.Run + "'"), nil
}

func (r *fakeRunner) Cancel(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancelled = append(r.cancelled, id)
	if ch := r.release[id]; ch != nil {
		close(ch)
		delete(r.release, id)
	}
}

func (r *fakeRunner) releaseAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, ch := range r.release {
		select {
		case <-ch:
		default:
			close(ch)
		}
		delete(r.release, id)
	}
}

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// loadFlow writes src as name in dir and loads it.
func loadFlow(t *testing.T, dir, name, src string) Flow {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f := frontend.Load(file, frontend.Options{Root: dir})
	if err := f.Err(); err != nil {
		t.Fatalf("%s does not check: %v", name, err)
	}
	return Flow{File: file, Root: dir, Graph: f.Graph}
}

// items returns the queue, oldest first.
func items(t *testing.T, st *store.Store) []*store.QueueItem {
	t.Helper()
	q, err := st.Queue(0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(q)
	return q
}

func fired(q []*store.QueueItem) []string {
	var out []string
	for _, it := range q {
		out = append(out, it.Fired.UTC().Format(time.RFC3339)+" "+it.State)
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestCronAcrossDST: a daily cron in Europe/Berlin fires at its local
// time before and after clocks go forward and back, each firing once,
// the scheduler woken when Tick says: 03:00 is 02:00 UTC, then 01:00
// UTC; 02:30 does not exist the day clocks go forward, and happens
// twice the day they go back.
func TestCronAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		cron, from, to string
		want           []string
	}{
		{"0 3 * * *", "2026-03-27T12:00:00Z", "2026-03-31T00:00:00Z",
			[]string{"2026-03-28T02:00:00Z", "2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"}},
		{"30 2 * * *", "2026-03-27T12:00:00Z", "2026-03-31T00:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"}},
		{"30 2 * * *", "2026-10-23T12:00:00Z", "2026-10-27T00:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
	} {
		t.Run(tc.cron+" from "+tc.from, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, dir)
			f := loadFlow(t, dir, "nightly.star", fmt.Sprintf(`
trigger(cron = %q, tz = "Europe/Berlin")
a = step("a", run = ["true"])
chain(START, a, END)
`, tc.cron))
			c := &clock{t: utc(tc.from)}
			s := &Scheduler{Store: st, Runner: &fakeRunner{}, Flows: func() []Flow { return []Flow{f} }, Now: c.Now}
			next := s.Tick()
			for next.Before(utc(tc.to)) {
				c.Set(next)
				next = s.Tick()
				s.Tick() // the same instant again: nothing more
			}
			s.Wait()
			var got []string
			for _, it := range items(t, st) {
				got = append(got, it.Fired.UTC().Format(time.RFC3339))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("fired %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOverlap: a firing while the flow's run is running is skipped,
// waits, or replaces that run, per overlap=.
func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		policy string
		want   []string // states after three firings, the first run still running
		cancel bool
	}{
		{"skip", []string{"running", "skipped", "skipped"}, false},
		{"queue", []string{"running", "queued", "queued"}, false},
		{"replace", []string{"replaced", "replaced", "running"}, true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, dir)
			f := loadFlow(t, dir, "tick.star", fmt.Sprintf(`
trigger(every = "10m", overlap = %q)
a = step("a", run = ["true"])
chain(START, a, END)
`, tc.policy))
			c := &clock{t: utc("2026-01-01T00:00:00Z")}
			r := &fakeRunner{hold: true}
			s := &Scheduler{Store: st, Runner: r, Flows: func() []Flow { return []Flow{f} }, Now: c.Now}
			s.Tick()
			for i := 1; i <= 3; i++ {
				c.Set(utc("2026-01-01T00:00:00Z").Add(time.Duration(i) * 10 * time.Minute))
				s.Tick()
			}
			var states []string
			for _, it := range items(t, st) {
				states = append(states, it.State)
			}
			if !slices.Equal(states, tc.want) {
				t.Errorf("states %q, want %q", states, tc.want)
			}
			r.mu.Lock()
			cancelled := len(r.cancelled)
			r.mu.Unlock()
			if tc.cancel != (cancelled > 0) {
				t.Errorf("cancelled %d runs", cancelled)
			}
			r.releaseAll()
			s.Wait()
			if tc.policy == "queue" { // the queued ones run, one after the other
				for range 2 {
					s.Dispatch()
					r.releaseAll()
					s.Wait()
				}
				r.releaseAll()
				s.Wait()
				if q := items(t, st); q[1].State != store.QueueDone || q[2].State != store.QueueDone {
					t.Errorf("queued firings did not run: %q", fired(q))
				}
			}
		})
	}
}

// TestCatchUp: after a downtime, the firings missed within catch_up are
// made; without catch_up, none; and a restart finds them made.
func TestCatchUp(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	up := loadFlow(t, dir, "up.star", `
trigger(every = "10m", catch_up = "30m", overlap = "queue")
a = step("a", run = ["true"])
chain(START, a, END)
`)
	none := loadFlow(t, dir, "none.star", `
trigger(every = "10m", overlap = "queue")
a = step("a", run = ["true"])
chain(START, a, END)
`)
	c := &clock{t: utc("2026-01-01T00:00:00Z")}
	flows := func() []Flow { return []Flow{up, none} }
	s := &Scheduler{Store: st, Runner: &fakeRunner{}, Flows: flows, Now: c.Now}
	s.Tick()
	s.Wait()
	// Down for two hours and five minutes.
	c.Set(utc("2026-01-01T02:05:00Z"))
	s2 := &Scheduler{Store: st, Runner: &fakeRunner{}, Flows: flows, Now: c.Now}
	s2.Recover()
	s2.Tick()
	s2.Tick()
	s2.Wait()
	var got []string
	for _, it := range items(t, st) {
		got = append(got, filepath.Base(it.File)+" "+it.Fired.UTC().Format("15:04"))
	}
	want := []string{"up.star 01:40", "up.star 01:50", "up.star 02:00"}
	if !slices.Equal(got, want) {
		t.Errorf("caught up %q, want %q", got, want)
	}
}

// TestNeverTwiceAfterRestart: a firing recorded by a server that then
// died before its run started is run once by the next server, and not
// fired again.
func TestNeverTwiceAfterRestart(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	f := loadFlow(t, dir, "tick.star", `
trigger(every = "10m", overlap = "queue")
a = step("a", run = ["true"])
chain(START, a, END)
`)
	c := &clock{t: utc("2026-01-01T00:00:00Z")}
	flows := func() []Flow { return []Flow{f} }
	// The first server fires and claims the item, then dies before the
	// run starts (no Runner is reached).
	a := &Scheduler{Store: st, Flows: flows, Now: c.Now, Runner: &fakeRunner{}}
	a.Tick()
	c.Set(utc("2026-01-01T00:10:00Z"))
	if _, err := a.fireDue(f, &f.Graph.Triggers[0], c.Now()); err != nil {
		t.Fatal(err)
	}
	q := items(t, st)
	if len(q) != 1 {
		t.Fatalf("fired %d, want 1", len(q))
	}
	if ok, err := st.Claim(q[0].N, c.Now()); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	// The next server, at the same instant and after.
	r := &fakeRunner{}
	b := &Scheduler{Store: st, Flows: flows, Now: c.Now, Runner: r}
	b.Recover()
	b.Tick()
	c.Set(utc("2026-01-01T00:10:30Z"))
	b.Tick()
	b.Wait()
	q = items(t, st)
	if len(q) != 1 || q[0].State != store.QueueDone || q[0].Run == "" {
		t.Fatalf("queue %q, want one firing at 00:10, done", fired(q))
	}
	if len(r.started) != 1 {
		t.Errorf("started %d runs, want 1", len(r.started))
	}
}

// TestRecoverResumes: an item whose run a stopped server left
// interrupted is resumed, not started again.
func TestRecoverResumes(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	f := loadFlow(t, dir, "a.star", `
a = step("a", run = ["true"])
chain(START, a, END)
`)
	svc := &runs.Service{Store: st}
	spec := &runs.Spec{Graph: f.Graph, Inputs: nil}
	given := &frontend.Inputs{}
	in, err := given.Bind(f.Graph)
	if err != nil {
		t.Fatal(err)
	}
	spec.Inputs = in
	run, err := svc.Start(spec) // recorded as running, by this process
	if err != nil {
		t.Fatal(err)
	}
	it := &store.QueueItem{File: f.File, Root: dir, Name: "a", Trigger: "api", Enqueued: time.Now()}
	if err := st.Enqueue(it); err != nil {
		t.Fatal(err)
	}
	st.Claim(it.N, time.Now())
	st.Started(it.N, run.ID)
	// This process is alive: the run is not interrupted, and is left.
	r := &fakeRunner{}
	s := &Scheduler{Store: st, Runner: r, Flows: func() []Flow { return nil }}
	s.Recover()
	if len(r.resumed)+len(r.started) != 0 {
		t.Fatalf("a live run was resumed or started: %v %v", r.resumed, r.started)
	}
	run.Run(context.Background())
	s.Tick() // its run ended: the item is done
	if q := items(t, st); q[0].State != store.QueueDone {
		t.Errorf("item %s, want done", q[0].State)
	}
}

// startSignal is a Runner that sends each queue item it starts on
// started; its runs end when hold is closed.
type startSignal struct {
	started chan int64
	hold    chan struct{}
}

func (r *startSignal) Start(it *store.QueueItem) (string, func(), error) {
	r.started <- it.N
	return fmt.Sprintf("run-%d", it.N), func() { <-r.hold }, nil
}
func (r *startSignal) Resume(*store.QueueItem) (func(), error) { return func() {}, nil }
func (r *startSignal) Cancel(string)                           {}

// Poke makes a waiting Run look at the queue at once: an item queued
// behind the scheduler's back (what a run started from the page emitted)
// is started without waiting for Run's next tick, here an hour away.
//
// Run's first tick starts a first item, whose run goes on until the
// test ends (a run that ends pokes Run itself). The emitted item is
// queued once that tick has read the queue, so only the Poke can start
// it within the hour; the guard, far longer than the start takes, is
// there so that a Poke that does nothing fails the test, not hangs it.
func TestPokeWakesRun(t *testing.T) {
	const guard = 10 * time.Second
	st := openStore(t, t.TempDir())
	enqueue := func(name string) *store.QueueItem {
		t.Helper()
		it := &store.QueueItem{File: name + ".star", Name: name, Trigger: "emit", Inputs: json.RawMessage(`{}`), Enqueued: time.Now()}
		if err := st.Enqueue(it); err != nil {
			t.Fatal(err)
		}
		return it
	}
	runner := &startSignal{started: make(chan int64, 8), hold: make(chan struct{})}
	started := func(want *store.QueueItem, why string) {
		t.Helper()
		select {
		case n := <-runner.started:
			if n != want.N {
				t.Fatalf("started item %d, want %d", n, want.N)
			}
		case <-time.After(guard):
			t.Fatal(why)
		}
	}
	s := &Scheduler{Store: st, Runner: runner, idle: time.Hour}
	first := enqueue("first")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { close(runner.hold); cancel(); <-done; s.Wait() }()
	started(first, "Run's first tick did not start the queued item")

	emitted := enqueue("emitted")
	s.Poke()
	started(emitted, "Run did not look at the queue after Poke")
}
