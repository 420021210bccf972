package vm_test

// Benchmarks of the VM. Each measures one figure of the table in
// docs/performance.md ("In process"); none is a timed assertion.

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

func loadSrc(b *testing.B, src string) *graphir.Graph {
	b.Helper()
	g, err := lang.LoadSource(b.TempDir()+"/flow.star", []byte(src), lang.Options{MaxSteps: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func runProgram(b *testing.B, p *vm.Program, inputs map[string]starlark.Value, opts vm.Options) *vm.Result {
	in, err := vm.BindInputs(p.Graph(), inputs)
	if err != nil {
		b.Fatal(err)
	}
	res := p.Run(context.Background(), in, opts)
	if res.Status != vm.Succeeded {
		b.Fatalf("run %s: %+v", res.Status, res.Error)
	}
	return res
}

// chainSource is a flow of n steps in one chain; fn steps when fn is set,
// else noops.
func chainSource(n int, fn bool) string {
	var b strings.Builder
	b.WriteString("prev = START\n")
	if fn {
		b.WriteString("def work(r):\n    return 1\n")
	}
	fmt.Fprintf(&b, "for i in range(%d):\n", n)
	if fn {
		b.WriteString("    s = step(\"s%d\" % i, fn = work)\n")
	} else {
		b.WriteString("    s = step(\"s%d\" % i)\n")
	}
	b.WriteString("    edge(prev, s)\n    prev = s\nedge(prev, END)\n")
	return b.String()
}

// BenchmarkChainNoop measures the VM's cost per transition on a chain of
// noop steps; it should stay flat as the chain grows.
func BenchmarkChainNoop(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			p := vm.Prepare(loadSrc(b, chainSource(n, false)))
			opts := vm.Options{Parallel: 1, MaxPath: 100}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				runProgram(b, p, nil, opts)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

const loopSource = `
flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"), max_visits = 1 << 30)
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`

// BenchmarkLoopIteration measures one iteration of a draft -> critique loop:
// two fn steps and a Starlark when condition on the back-edge.
func BenchmarkLoopIteration(b *testing.B) {
	p := vm.Prepare(loadSrc(b, loopSource))
	b.ReportAllocs()
	b.ResetTimer()
	runProgram(b, p, map[string]starlark.Value{"n": starlark.MakeInt(b.N)}, vm.Options{Parallel: 1, MaxPath: 100})
}

// BenchmarkLoopUntil measures one iteration of a loop() of 2 and 4 fn
// steps whose until function reads them: each iteration builds the until
// function's argument, the body's outputs in a mapping among them.
func BenchmarkLoopUntil(b *testing.B) {
	for _, n := range []int{2, 4} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var src strings.Builder
			var body []string
			for i := range n {
				fmt.Fprintf(&src, "s%d = step(\"s%d\", fn = lambda r: %d)\n", i, i, i)
				body = append(body, fmt.Sprintf("s%d", i))
			}
			fmt.Fprintf(&src, "chain(%s)\n", strings.Join(body, ", "))
			fmt.Fprintf(&src, "l = loop(\"l\", body = [%s], until = lambda it: it.result.s0 == 1, max_iterations = %d)\n", strings.Join(body, ", "), b.N)
			src.WriteString("chain(START, l, END)\n")
			p := vm.Prepare(loadSrc(b, src.String()))
			b.ReportAllocs()
			b.ResetTimer()
			runProgram(b, p, nil, vm.Options{Parallel: 1, MaxPath: 100})
		})
	}
}

// loopDictSource is loopSource as flows are written: fn steps return small
// dicts, read back through the run view's attributes.
const loopDictSource = `
flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: {"n": r.visits("draft")}, max_visits = 1 << 30)
critique = step("critique", fn = lambda r: {"ok": r.draft.n >= r.inputs.n})
chain(START, draft, critique)
edge(critique, draft, when = "not critique.ok")
edge(critique, END, when = "critique.ok")
`

// loopStructSource is loopDictSource with struct results.
const loopStructSource = `
flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: struct(n = r.visits("draft")), max_visits = 1 << 30)
critique = step("critique", fn = lambda r: struct(ok = r.draft.n >= r.inputs.n))
chain(START, draft, critique)
edge(critique, draft, when = "not critique.ok")
edge(critique, END, when = "critique.ok")
`

// BenchmarkLoopIterationDict is BenchmarkLoopIteration with fn steps that
// return small dicts ({"n": ...} and {"ok": ...}), as most fn steps do.
func BenchmarkLoopIterationDict(b *testing.B) {
	p := vm.Prepare(loadSrc(b, loopDictSource))
	b.ReportAllocs()
	b.ResetTimer()
	runProgram(b, p, map[string]starlark.Value{"n": starlark.MakeInt(b.N)}, vm.Options{Parallel: 1, MaxPath: 100})
}

// BenchmarkLoopIterationStruct is BenchmarkLoopIterationDict with struct
// results.
func BenchmarkLoopIterationStruct(b *testing.B) {
	p := vm.Prepare(loadSrc(b, loopStructSource))
	b.ReportAllocs()
	b.ResetTimer()
	runProgram(b, p, map[string]starlark.Value{"n": starlark.MakeInt(b.N)}, vm.Options{Parallel: 1, MaxPath: 100})
}

// BenchmarkPeerLoop10k is the loop workload of bench-peers: one op is a
// whole run of 10,000 iterations.
func BenchmarkPeerLoop10k(b *testing.B) {
	p := vm.Prepare(loadSrc(b, loopSource))
	in := map[string]starlark.Value{"n": starlark.MakeInt(10_000)}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		runProgram(b, p, in, vm.Options{Parallel: 1, MaxPath: 100})
	}
}

// BenchmarkPeerChain1k is the chain workload of bench-peers: one run of a
// chain of 1,000 fn steps.
func BenchmarkPeerChain1k(b *testing.B) {
	p := vm.Prepare(loadSrc(b, chainSource(1000, true)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		runProgram(b, p, nil, vm.Options{Parallel: 1})
	}
}

func fanoutSource(n int) string {
	return fmt.Sprintf(`
src = step("src", fn = lambda r: 1)
def branch(r):
    return r.src + 1
def join_fn(r):
    return 0
join = step("join", fn = join_fn)
edge(START, src)
for i in range(%d):
    s = step("b%%d" %% i, fn = branch)
    edge(src, s)
    edge(s, join)
edge(join, END)
`, n)
}

// BenchmarkFanout1000 measures one run of a fan-out of 1,000 fn branches
// into one AND-join.
func BenchmarkFanout1000(b *testing.B) {
	p := vm.Prepare(loadSrc(b, fanoutSource(1000)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		runProgram(b, p, nil, vm.Options{Parallel: 1})
	}
}

// BenchmarkPeerFanout1k is the fan-out workload of bench-peers.
func BenchmarkPeerFanout1k(b *testing.B) { BenchmarkFanout1000(b) }

// BenchmarkMapItem measures one item of a map of 100,000 fn items.
func BenchmarkMapItem(b *testing.B) {
	const n = 100_000
	p := vm.Prepare(loadSrc(b, fmt.Sprintf(`
w = step("w", fn = lambda r: r.item + 1)
m = map("m", over = "range(%d)", body = [w], concurrency = 64)
chain(START, m, END)
`, n)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runProgram(b, p, nil, vm.Options{Parallel: 1, MaxPath: 100})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
}

// BenchmarkCondition measures one evaluation of a compiled condition, next
// to BenchmarkStarlarkCall, a bare call of the same function.
func BenchmarkCondition(b *testing.B) {
	c := graphir.NewCompiler()
	x := c.Expr("x.ok and x.n < 10", graphir.Pos{}, false)
	if x.Err != nil {
		b.Fatal(x.Err)
	}
	env := &benchEnv{x: stdlib.NewMap([]string{"ok", "n"}, []starlark.Value{starlark.True, starlark.MakeInt(3)})}
	thread := &starlark.Thread{}
	args := starlark.Tuple{env}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v, err := starlark.Call(thread, x.Func, args, nil)
		if err != nil || v != starlark.True {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkStarlarkCall is the floor for BenchmarkCondition: a frozen
// one-line Starlark function called with a value it reads directly.
func BenchmarkStarlarkCall(b *testing.B) {
	thread := &starlark.Thread{}
	globals, err := starlark.ExecFileOptions(graphir.FileOptions, thread, "f.star", "def f(x):\n    return x.ok and x.n < 10\n", nil)
	if err != nil {
		b.Fatal(err)
	}
	globals.Freeze()
	f := globals["f"]
	args := starlark.Tuple{stdlib.NewMap([]string{"ok", "n"}, []starlark.Value{starlark.True, starlark.MakeInt(3)})}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v, err := starlark.Call(thread, f, args, nil)
		if err != nil || v != starlark.True {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkStarlarkResult is the floor for a fn step's result in
// BenchmarkLoopIteration and BenchmarkLoopIterationDict: a bare Starlark
// function returning an int, and one returning the same int in a
// one-entry dict, as the loop's steps do.
func BenchmarkStarlarkResult(b *testing.B) {
	for _, tc := range []struct{ name, body string }{{"int", "x"}, {"dict", `{"n": x}`}} {
		b.Run(tc.name, func(b *testing.B) {
			thread := &starlark.Thread{}
			globals, err := starlark.ExecFileOptions(graphir.FileOptions, thread, "f.star", "def f(x):\n    return "+tc.body+"\n", nil)
			if err != nil {
				b.Fatal(err)
			}
			globals.Freeze()
			f := globals["f"]
			args := starlark.Tuple{starlark.MakeInt(3)}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := starlark.Call(thread, f, args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchEnv stands in for the run view: one attribute, x.
type benchEnv struct{ x starlark.Value }

func (e *benchEnv) String() string        { return "env" }
func (e *benchEnv) Type() string          { return "env" }
func (e *benchEnv) Freeze()               {}
func (e *benchEnv) Truth() starlark.Bool  { return true }
func (e *benchEnv) Hash() (uint32, error) { return 0, nil }
func (e *benchEnv) Attr(name string) (starlark.Value, error) {
	if name == "x" {
		return e.x, nil
	}
	return nil, nil
}
func (e *benchEnv) AttrNames() []string { return []string{"x"} }

// BenchmarkTaskStep measures a flow of one task step running /bin/true,
// next to BenchmarkBareExec, the same command run directly.
func BenchmarkTaskStep(b *testing.B) {
	p := vm.Prepare(loadSrc(b, `step("t", run = ["/bin/true"])`))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		runProgram(b, p, nil, vm.Options{Parallel: 1})
	}
}

// BenchmarkBareExec is the floor for BenchmarkTaskStep: os/exec of
// /bin/true with stdout and stderr captured.
func BenchmarkBareExec(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var out, errb strings.Builder
		cmd := exec.Command("/bin/true")
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResultJSON measures the JSON of a run of 100,000 fn steps, as
// run --json writes it (indented) and the run store records it (compact):
// its buffer is sized once, not doubled as it fills.
func BenchmarkResultJSON(b *testing.B) {
	const n = 100_000
	res := runProgram(b, vm.Prepare(loadSrc(b, chainSource(n, true))), nil, vm.Options{Parallel: 1, MaxPath: n})
	b.Run("indented", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := res.WriteJSON(io.Discard, "  "); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := res.AppendJSON(nil, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
