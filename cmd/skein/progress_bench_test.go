package main

import (
	"context"
	"io"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
)

const benchLoopFlow = `flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"), max_visits = 1 << 30)
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`

// benchLoop runs b.N iterations of a draft -> critique loop with opts
// completed by setup.
func benchLoop(b *testing.B, setup func(*vm.Options) func()) {
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
	res := vm.Prepare(g).Run(context.Background(), in, opts)
	done()
	if res.Status != vm.Succeeded {
		b.Fatal(res.Status)
	}
}

// BenchmarkLoopPiped is a loop iteration with the progress of piped output.
func BenchmarkLoopPiped(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func() {
		p := newProgress(io.Discard, false)
		o.OnEvent = p.event
		p.start()
		return p.stop
	})
}

// BenchmarkLoopTerminal is a loop iteration with a terminal's progress.
func BenchmarkLoopTerminal(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func() {
		p := newProgress(io.Discard, true)
		o.OnEvent = p.event
		p.start()
		return p.stop
	})
}

// BenchmarkLoopEvents is a loop iteration with --events.
func BenchmarkLoopEvents(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func() {
		e := newEventWriter(io.Discard)
		o.OnEvent = e.write
		return e.close
	})
}

// BenchmarkLoopQuiet is a loop iteration with no events (--json).
func BenchmarkLoopQuiet(b *testing.B) {
	benchLoop(b, func(o *vm.Options) func() { return func() {} })
}
