package main

import (
	"context"
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

const benchLoopFlow = `flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"), max_visits = 1 << 30)
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`

// benchLoop runs b.N iterations of a draft -> critique loop with opts
// completed by setup, whose function is called with the result when the
// run ends (inside the timing: skein run does it before it exits).
func benchLoop(b *testing.B, setup func(*vm.Options) func(*vm.Result)) {
	g, err := lang.LoadSource("loop.star", []byte(benchLoopFlow), lang.Options{})
	if err != nil {
		b.Fatal(err)
	}
	in, err := vm.BindInputs(g, map[string]starlark.Value{"n": starlark.MakeInt(b.N)})
	if err != nil {
		b.Fatal(err)
	}
	opts := vm.Options{Parallel: 1}
	done := setup(&opts)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	res := vm.Prepare(g).Run(context.Background(), in, opts)
	done(res)
	b.StopTimer()
	// The process's CPU time (all threads: the run, the flusher, the
	// collector) per iteration: on a shared machine it varies less than
	// the wall-clock ns/op, which counts the time other processes took.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if res.Status != vm.Succeeded {
		b.Fatal(res.Status)
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLoopPiped is a loop iteration with the progress of piped output.
func BenchmarkLoopPiped(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func(*vm.Result) {
		p := newProgress(io.Discard, false)
		o.OnEvent = p.event
		p.start()
		return func(*vm.Result) { p.stop() }
	})
}

// BenchmarkLoopTerminal is a loop iteration with a terminal's progress.
func BenchmarkLoopTerminal(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func(*vm.Result) {
		p := newProgress(io.Discard, true)
		o.OnEvent = p.event
		p.start()
		return func(*vm.Result) { p.stop() }
	})
}

// BenchmarkLoopEvents is a loop iteration with --events.
func BenchmarkLoopEvents(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func(*vm.Result) {
		e := newEventWriter(io.Discard)
		o.OnEvent = e.write
		return func(*vm.Result) { e.close() }
	})
}

// BenchmarkLoopQuiet is a loop iteration with no events (--json).
func BenchmarkLoopQuiet(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func(*vm.Result) { return func(*vm.Result) {} })
}

// benchStore completes setup with a run recorded in a store of b's, as
// skein run records it (events routed through the recorder): a loop of fn
// steps records nothing, so each of these should match its --no-store
// counterpart, but for the run's end (its result written, the store
// closed), a cost per run, which b.N iterations spread.
func benchStore(b *testing.B, setup func(*vm.Options) func(*vm.Result)) func(*vm.Options) func(*vm.Result) {
	return func(o *vm.Options) func(*vm.Result) {
		st, err := store.Open(filepath.Join(b.TempDir(), store.FileName))
		if err != nil {
			b.Fatal(err)
		}
		id := vm.NewRunID(time.Now())
		rec, err := st.Begin(&store.NewRun{ID: id, Flow: "loop", File: "loop.star", Started: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		done := setup(o)
		o.RunID, o.Effects = id, rec
		o.OnEvent = rec.Events(o.OnEvent)
		return func(res *vm.Result) {
			if err := rec.Finish(res); err != nil {
				b.Fatal(err)
			}
			done(res)
			st.Close()
		}
	}
}

// BenchmarkLoopPipedStore is BenchmarkLoopPiped with the run store.
func BenchmarkLoopPipedStore(b *testing.B) {
	benchLoop(b, benchStore(b, func(o *vm.Options) func(*vm.Result) {
		p := newProgress(io.Discard, false)
		o.OnEvent = p.event
		p.start()
		return func(*vm.Result) { p.stop() }
	}))
}

// BenchmarkLoopQuietStore is BenchmarkLoopQuiet with the run store.
func BenchmarkLoopQuietStore(b *testing.B) {
	benchLoop(b, benchStore(b, func(o *vm.Options) func(*vm.Result) { return func(*vm.Result) {} }))
}
