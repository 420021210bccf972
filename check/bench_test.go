package check_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

// benchFlow is a flow of n steps: a chain of fn, task and noop steps where
// each task reads the step before it in a template, every tenth step is
// also reached by a conditional edge skipping one step (an AND-join), and
// a failure back-edge from the end returns to a bounded step in the middle.
func benchFlow(n int) string {
	return fmt.Sprintf(`
flow(name = "bench")
N = %d
steps = []
for i in range(N):
    name = "s%%d" %% i
    if i %% 3 == 0 and i > 0:
        s = step(name, run = ["echo", "{{ s%%d.stdout }}" %% (i - 1)], max_visits = 3 if i == N // 2 + 1 else None)
    elif i %% 3 == 1:
        s = step(name, fn = lambda r: 1, max_visits = 3 if i == N // 2 + 1 else None)
    else:
        s = step(name, max_visits = 3 if i == N // 2 + 1 else None)
    if i == 0:
        edge(START, s)
    else:
        edge(steps[i - 1], s)
    if i %% 10 == 0 and i >= 2:
        edge(steps[i - 2], s, when = "s%%d.exit_code == 0" %% (i - 2))
    steps.append(s)
edge(steps[N - 1], END)
edge(steps[N - 1], steps[N // 2 + 1], on = "failure")
`, n)
}

var benchGraphs sync.Map // size -> *graphir.Graph

func benchGraph(b *testing.B, n int) *graphir.Graph {
	if g, ok := benchGraphs.Load(n); ok {
		return g.(*graphir.Graph)
	}
	g, err := lang.LoadSource("bench.star", []byte(benchFlow(n)), lang.Options{MaxSteps: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	// Its fn steps' results are never read: a warning each
	// (unused_result), part of the work measured. No errors.
	for _, d := range check.Graph(g) {
		if d.Severity == check.Error {
			b.Fatalf("the benchmark flow should check without errors, got: %s", d)
		}
	}
	benchGraphs.Store(n, g)
	return g
}

func benchmarkCheck(b *testing.B, n int) {
	g := benchGraph(b, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		check.Graph(g)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
}

// The checker is near-linear: ns/step stays about flat from 1k to 100k.
func BenchmarkCheck1k(b *testing.B)   { benchmarkCheck(b, 1_000) }
func BenchmarkCheck10k(b *testing.B)  { benchmarkCheck(b, 10_000) }
func BenchmarkCheck100k(b *testing.B) { benchmarkCheck(b, 100_000) }

// BenchmarkLoadCheck10k times what `skein check` does for a 10k-step flow:
// load it, then check it. Compare with BenchmarkLoad10k, the load alone.
func BenchmarkLoadCheck10k(b *testing.B) {
	src := []byte(benchFlow(10_000))
	for i := 0; i < b.N; i++ {
		g, err := lang.LoadSource("bench.star", src, lang.Options{MaxSteps: 1 << 40})
		if err != nil {
			b.Fatal(err)
		}
		check.Graph(g)
	}
}

func BenchmarkLoad10k(b *testing.B) {
	src := []byte(benchFlow(10_000))
	for i := 0; i < b.N; i++ {
		if _, err := lang.LoadSource("bench.star", src, lang.Options{MaxSteps: 1 << 40}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvelope100k times `skein check --envelope`'s own part for a
// 100k-step flow: the envelope, with its entry for every step.
func BenchmarkEnvelope100k(b *testing.B) {
	const n = 100_000
	g := benchGraph(b, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if fe := check.ComputeEnvelope(g); len(fe.Steps) != n {
			b.Fatalf("the envelope has %d steps, want %d", len(fe.Steps), n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
}
