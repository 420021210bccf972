package store_test

// Benchmarks of the run store (issue 13). None is a timed assertion: they
// measure the figures docs/store.md reports.

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

const loopSource = `
flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"), max_visits = 1 << 30)
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`

func benchFlow(b *testing.B, src string) *graphir.Graph {
	b.Helper()
	g, err := lang.LoadSource(filepath.Join(b.TempDir(), "flow.star"), []byte(src), lang.Options{MaxSteps: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// benchRun runs g once, recorded in s unless s is nil.
func benchRun(b *testing.B, s *store.Store, p *vm.Program, in map[string]int, opts vm.Options) {
	b.Helper()
	given := map[string]starlark.Value{}
	for k, v := range in {
		given[k] = starlark.MakeInt(v)
	}
	bound, err := vm.BindInputs(p.Graph(), given)
	if err != nil {
		b.Fatal(err)
	}
	var rec *store.Recorder
	if s != nil {
		id := vm.NewRunID(time.Now())
		if rec, err = s.Begin(&store.NewRun{ID: id, Flow: p.Graph().Name, File: p.Graph().File, Inputs: bound, Started: time.Now()}); err != nil {
			b.Fatal(err)
		}
		if opts.Effects != nil {
			rec.Inner = opts.Effects
		}
		opts.RunID, opts.Effects = id, rec
	}
	res := p.Run(context.Background(), bound, opts)
	if res.Status != vm.Succeeded {
		b.Fatalf("run %s: %+v", res.Status, res.Error)
	}
	if rec != nil {
		if err := rec.Finish(res); err != nil {
			b.Fatal(err)
		}
	}
}

func withAndWithout(b *testing.B, f func(b *testing.B, s *store.Store)) {
	b.Run("no-store", func(b *testing.B) { f(b, nil) })
	b.Run("store", func(b *testing.B) {
		s, err := store.Open(filepath.Join(b.TempDir(), store.FileName))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		f(b, s)
	})
}

// BenchmarkLoopIteration is vm's loop benchmark (two fn steps and a
// condition per iteration) with and without the store: fn steps are not
// recorded, so the two should match.
func BenchmarkLoopIteration(b *testing.B) {
	withAndWithout(b, func(b *testing.B, s *store.Store) {
		p := vm.Prepare(benchFlow(b, loopSource))
		b.ReportAllocs()
		b.ResetTimer()
		benchRun(b, s, p, map[string]int{"n": b.N}, vm.Options{Parallel: 1, MaxPath: 100})
	})
}

// BenchmarkTaskStep is a run of one /bin/true task with and without the
// store: the store's cost is the start row, the commit, and the run's own
// two writes.
func BenchmarkTaskStep(b *testing.B) {
	withAndWithout(b, func(b *testing.B, s *store.Store) {
		p := vm.Prepare(benchFlow(b, `step("t", run = ["/bin/true"])`))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchRun(b, s, p, nil, vm.Options{Parallel: 1})
		}
	})
}

// taskLoopSrc is a loop whose body is one /bin/true task, run inputs.n times.
const taskLoopSrc = `
flow(inputs = {"n": 10})
t = step("t", run = ["/bin/true"], max_visits = 1 << 30)
c = step("c", fn = lambda r: r.visits("t"))
chain(START, t, c)
edge(c, t, when = "c < inputs.n")
edge(c, END, when = "c >= inputs.n")
`

// BenchmarkTaskLoopIteration is one iteration of a loop whose body is one
// task, with and without the store: per iteration the store records one
// completion. It reports the store's growth per iteration.
func BenchmarkTaskLoopIteration(b *testing.B) {
	withAndWithout(b, func(b *testing.B, s *store.Store) {
		p := vm.Prepare(benchFlow(b, taskLoopSrc))
		var before int64
		if s != nil {
			before = dbSize(s.Path())
		}
		b.ResetTimer()
		cpu0 := cpuTime() + childCPUTime()
		benchRun(b, s, p, map[string]int{"n": b.N}, vm.Options{Parallel: 1, MaxPath: 100})
		b.StopTimer()
		b.ReportMetric(float64(cpuTime()+childCPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		if s != nil {
			s.Checkpoint()
			b.ReportMetric(float64(dbSize(s.Path())-before)/float64(b.N), "store-B/iter")
		}
	})
}

// BenchmarkFnLoopGrowth runs a loop of 100,000 fn-step iterations recorded
// in the store and reports what the store grew by per iteration: nothing
// beyond the run's own row and result.
func BenchmarkFnLoopGrowth(b *testing.B) {
	s, err := store.Open(filepath.Join(b.TempDir(), store.FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := vm.Prepare(benchFlow(b, loopSource))
	const n = 100_000
	for i := 0; i < b.N; i++ {
		before := dbSize(s.Path())
		benchRun(b, s, p, map[string]int{"n": n}, vm.Options{Parallel: 1, MaxPath: 100})
		s.Checkpoint()
		b.ReportMetric(float64(dbSize(s.Path())-before)/n, "store-B/iter")
	}
}

// BenchmarkRuns10k lists the newest 20 runs of a store of 10,000, as
// skein runs does (open, query, close).
func BenchmarkRuns10k(b *testing.B) {
	if runs10k == "" {
		dir, err := os.MkdirTemp("", "skein-bench-")
		if err != nil {
			b.Fatal(err)
		}
		runs10k = filepath.Join(dir, store.FileName)
		s, err := store.Open(runs10k)
		if err != nil {
			b.Fatal(err)
		}
		p := vm.Prepare(benchFlow(b, `step("a", shell = "true")`))
		for i := 0; i < 10_000; i++ {
			benchRun(b, s, p, nil, vm.Options{Parallel: 1, Effects: noProcess{}})
		}
		s.Close()
	}
	path := runs10k
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := store.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		runs, err := s.Runs(store.Filter{Limit: 20})
		if err != nil || len(runs) != 20 {
			b.Fatal(len(runs), err)
		}
		s.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(dbSize(path))/10_000, "store-B/run")
}

// runs10k is the store BenchmarkRuns10k builds once per process (the
// benchmark function is called once per b.N tried).
var runs10k string

// noProcess completes every task at once, so that building a store of
// 10,000 runs does not start 10,000 processes.
type noProcess struct{}

func (noProcess) Start(_ context.Context, _ *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	done(&vm.EffectCompletion{OK: true, Stdout: "ok\n"})
}

// dbSize is the size of the database file (after a checkpoint, the
// write-ahead log is only reused space).
func dbSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// BenchmarkJournal is the store's own cost per task attempt, without the
// task: the start row and the completion's commit, through the Recorder
// (its Inner completes at once).
func BenchmarkJournal(b *testing.B) {
	s, err := store.Open(filepath.Join(b.TempDir(), store.FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Begin(&store.NewRun{ID: vm.NewRunID(time.Now()), Flow: "f", File: "f.star", Started: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	rec.Inner = noProcess{}
	ch := make(chan *vm.EffectCompletion, 1)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; i < b.N; i++ {
		req := &vm.EffectRequest{Kind: graphir.KindTask, Step: "t", Visit: i + 1, Attempt: 1}
		rec.Start(context.Background(), req, func(c *vm.EffectCompletion) { ch <- c })
		if c := <-ch; c.Stop != nil {
			b.Fatal(c.Stop)
		}
	}
}

// cpuTime is the CPU time (user and system) this process has used, in
// nanoseconds: less disturbed than wall time by other work on the machine.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkTaskStepAB is a task step's own cost against the same step
// recorded in the store, measured side by side: one loop of /bin/true tasks
// whose effects go alternately straight to vm.Local and through the
// Recorder, each timed from Start to its completion. Alternating task by
// task puts both under the same load, which a shared machine changes from
// one second to the next; "ratio" is the recorded step's time over the bare
// one's.
func BenchmarkTaskStepAB(b *testing.B) {
	s, err := store.Open(filepath.Join(b.TempDir(), store.FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := vm.Prepare(benchFlow(b, taskLoopSrc))
	in, err := vm.BindInputs(p.Graph(), map[string]starlark.Value{"n": starlark.MakeInt(2 * b.N)})
	if err != nil {
		b.Fatal(err)
	}
	id := vm.NewRunID(time.Now())
	rec, err := s.Begin(&store.NewRun{ID: id, Flow: p.Graph().Name, File: p.Graph().File, Inputs: in, Started: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	ab := &abProducer{rec: rec, marks: map[*vm.EffectRequest]time.Time{}}
	rec.Inner = abTask{ab}
	b.ResetTimer()
	res := p.Run(context.Background(), in, vm.Options{Parallel: 1, MaxPath: 100, RunID: id, Effects: ab})
	b.StopTimer()
	if res.Status != vm.Succeeded {
		b.Fatalf("run %s: %+v", res.Status, res.Error)
	}
	bare, recorded := ab.mean(0), ab.mean(1)
	b.ReportMetric(float64(bare.Nanoseconds()), "bare-ns/task")
	b.ReportMetric(float64(recorded.Nanoseconds()), "recorded-ns/task")
	b.ReportMetric(float64(recorded)/float64(bare), "ratio")
	// Where the recorded step's time goes besides the task itself.
	n := time.Duration(max(ab.count[1], 1))
	b.ReportMetric(float64((ab.startRow / n).Nanoseconds()), "start-row-ns/task")
	b.ReportMetric(float64((ab.completion / n).Nanoseconds()), "completion-ns/task")
}

// abProducer is the producer of BenchmarkTaskStepAB: every other effect
// goes through the run's Recorder (whose Inner is vm.Local, through
// abTask), the others straight to vm.Local.
type abProducer struct {
	mu    sync.Mutex
	rec   *store.Recorder
	n     int
	total [2]time.Duration
	count [2]int
	// The recorded side's time apart from its task: from Start until the
	// Recorder hands the task on (its start row committed), and from the
	// task's end until the run is told (its completion committed).
	startRow, completion time.Duration
	marks                map[*vm.EffectRequest]time.Time // Start, then the task's end
}

// abTask is the Recorder's Inner in BenchmarkTaskStepAB: vm.Local, timed.
type abTask struct{ p *abProducer }

func (t abTask) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	p := t.p
	p.mu.Lock()
	p.startRow += time.Since(p.marks[req])
	p.mu.Unlock()
	vm.Local{}.Start(ctx, req, func(c *vm.EffectCompletion) {
		p.mu.Lock()
		p.marks[req] = time.Now()
		p.mu.Unlock()
		done(c)
	})
}

func (p *abProducer) mean(side int) time.Duration {
	return p.total[side] / time.Duration(max(p.count[side], 1))
}

func (p *abProducer) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	p.mu.Lock()
	side := p.n % 2
	p.n++
	p.mu.Unlock()
	t0 := time.Now()
	fin := func(c *vm.EffectCompletion) {
		d := time.Since(t0)
		p.mu.Lock()
		p.total[side] += d
		p.count[side]++
		p.mu.Unlock()
		done(c)
	}
	if side == 0 {
		vm.Local{}.Start(ctx, req, fin)
		return
	}
	p.mu.Lock()
	p.marks[req] = t0
	p.mu.Unlock()
	p.rec.Start(ctx, req, func(c *vm.EffectCompletion) {
		p.mu.Lock()
		p.completion += time.Since(p.marks[req])
		delete(p.marks, req)
		p.mu.Unlock()
		fin(c)
	})
}

// childCPUTime is the CPU time the process's waited-for children (tasks)
// have used, in nanoseconds.
func childCPUTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkParallelTasks is a run of 64 /bin/true tasks started at once,
// with and without the store: the store's commits from many goroutines at
// a time.
func BenchmarkParallelTasks(b *testing.B) {
	src := `
for i in range(64):
    t = step("t%d" % i, run = ["/bin/true"])
    edge(START, t)
    edge(t, END)
`
	withAndWithout(b, func(b *testing.B, s *store.Store) {
		p := vm.Prepare(benchFlow(b, src))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchRun(b, s, p, nil, vm.Options{Parallel: 64})
		}
	})
}
