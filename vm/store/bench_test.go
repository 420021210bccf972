package store_test

// Benchmarks of the run store (issue 13). None is a timed assertion: they
// measure the figures docs/store.md reports.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
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
// task, through the Recorder (its Inner completes at once): as in a chain
// of tasks, each attempt's start row commits with the completion of the
// one before.
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
		rec.Idle(nil) // as a run waiting for the completion does
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
// recorded in the store, measured side by side in paired rounds: each round
// is a run of abTasks /bin/true tasks in a loop (one task and one fn step
// per iteration) without the store, and the same run recorded, in an order
// that alternates from round to round. Pairing puts both under the same
// load, which a shared machine changes from one second to the next. The
// recorded run is timed from its start to the end of Finish (its last
// commit); Begin, the run's own row, is not a task step's cost. "ratio" is
// the recorded runs' total time over the bare ones', "round-ratio" the
// median over rounds of each round's recorded time over its bare time
// (steadier: a round's two runs share its load); the CPU time of each side
// (skein's and its tasks') is less disturbed by other work still.
func BenchmarkTaskStepAB(b *testing.B) {
	s, p, in := taskLoopBench(b)
	opts := vm.Options{Parallel: 1, MaxPath: 100}
	bare := func() time.Duration {
		t0 := time.Now()
		res := p.Run(context.Background(), in, opts)
		d := time.Since(t0)
		if res.Status != vm.Succeeded {
			b.Fatalf("run %s: %+v", res.Status, res.Error)
		}
		return d
	}
	recorded := func() time.Duration {
		id := vm.NewRunID(time.Now())
		rec, err := s.Begin(&store.NewRun{ID: id, Flow: p.Graph().Name, File: p.Graph().File, Inputs: in, Started: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		o := opts
		o.RunID, o.Effects = id, rec
		t0 := time.Now()
		res := p.Run(context.Background(), in, o)
		err = rec.Finish(res)
		d := time.Since(t0)
		if err != nil || res.Status != vm.Succeeded {
			b.Fatalf("run %s: %+v %v", res.Status, res.Error, err)
		}
		return d
	}
	var total, round [2]time.Duration
	var cpu [2]int64 // this process's CPU time and its tasks'
	side := func(k int, run func() time.Duration) {
		c0 := cpuTime() + childCPUTime()
		round[k] = run()
		total[k] += round[k]
		cpu[k] += cpuTime() + childCPUTime() - c0
	}
	ratios := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			side(0, bare)
			side(1, recorded)
		} else {
			side(1, recorded)
			side(0, bare)
		}
		ratios = append(ratios, float64(round[1])/float64(round[0]))
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "round-ratio")
	n := float64(b.N * abTasks)
	b.ReportMetric(float64(total[0].Nanoseconds())/n, "bare-ns/task")
	b.ReportMetric(float64(total[1].Nanoseconds())/n, "recorded-ns/task")
	b.ReportMetric(float64(total[1])/float64(total[0]), "ratio")
	b.ReportMetric(float64(cpu[0])/n, "bare-cpu-ns/task")
	b.ReportMetric(float64(cpu[1])/n, "recorded-cpu-ns/task")
}

// taskLoopBench is what BenchmarkTaskStepAB and BenchmarkTaskStepGap run:
// a new store (closed when b ends), the prepared loop of abTasks tasks and
// its inputs.
func taskLoopBench(b *testing.B) (*store.Store, *vm.Program, *stdlib.Map) {
	s, err := store.Open(filepath.Join(b.TempDir(), store.FileName))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	p := vm.Prepare(benchFlow(b, taskLoopSrc))
	in, err := vm.BindInputs(p.Graph(), map[string]starlark.Value{"n": starlark.MakeInt(abTasks)})
	if err != nil {
		b.Fatal(err)
	}
	return s, p, in
}

// abTasks is how many tasks each run of BenchmarkTaskStepAB runs.
const abTasks = 20

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

// BenchmarkTaskStepGap measures the store's share of a task step's
// critical path directly, in the same runs of abTasks /bin/true tasks as
// BenchmarkTaskStepAB: the time from one task's exit (its process reaped)
// to the start of the next one's process, bare and recorded (median and
// 10th percentile over every gap), and the time of the recorded run's
// Finish (its last SQLite commit), which a run pays once. Less disturbed by
// other work on the machine than the run's whole time.
func BenchmarkTaskStepGap(b *testing.B) {
	s, p, in := taskLoopBench(b)
	var err error
	var gaps [2][]time.Duration
	var fins []time.Duration
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			g := &gapTimer{}
			o := vm.Options{Parallel: 1, MaxPath: 100, Effects: g}
			var rec *store.Recorder
			if k == 1 {
				id := vm.NewRunID(time.Now())
				if rec, err = s.Begin(&store.NewRun{ID: id, Flow: p.Graph().Name, File: p.Graph().File, Inputs: in, Started: time.Now()}); err != nil {
					b.Fatal(err)
				}
				rec.Inner = g
				o.RunID, o.Effects = id, rec
			}
			res := p.Run(context.Background(), in, o)
			if res.Status != vm.Succeeded {
				b.Fatalf("run %s: %+v", res.Status, res.Error)
			}
			if rec != nil {
				t0 := time.Now()
				if err := rec.Finish(res); err != nil {
					b.Fatal(err)
				}
				fins = append(fins, time.Since(t0))
			}
			gaps[k] = append(gaps[k], g.gaps...)
		}
	}
	b.StopTimer()
	for k, side := range []string{"bare", "recorded"} {
		slices.Sort(gaps[k])
		n := len(gaps[k])
		b.ReportMetric(float64(gaps[k][n/2].Nanoseconds()), side+"-gap-ns")
		b.ReportMetric(float64(gaps[k][n/10].Nanoseconds()), side+"-gap-p10-ns")
	}
	slices.Sort(fins)
	b.ReportMetric(float64(fins[len(fins)/2].Nanoseconds()), "finish-ns")
}

// gapTimer runs tasks as vm.Local does, timing each gap between a task's
// exit and the next task's start.
type gapTimer struct {
	mu   sync.Mutex
	exit time.Time
	gaps []time.Duration
}

func (g *gapTimer) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	g.mu.Lock()
	if !g.exit.IsZero() {
		g.gaps = append(g.gaps, time.Since(g.exit))
	}
	g.mu.Unlock()
	vm.Local{}.Start(ctx, req, func(c *vm.EffectCompletion) {
		g.mu.Lock()
		g.exit = time.Now()
		g.mu.Unlock()
		done(c)
	})
}
