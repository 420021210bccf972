package lang_test

// Benchmarks of loading and checking: load + check of generated flows
// next to plain Starlark execution of the same file, whose ratio is the
// figure docs/performance.md reports ("In process").

import (
	"fmt"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

// genFlow is a flow of n steps: a chain of tasks with templates, every
// tenth step also reachable through a conditional edge, and a bounded
// back-edge.
func genFlow(n int) []byte {
	return []byte(fmt.Sprintf(`
flow(name = "gen", inputs = {"x": "hi"}, max_visits = 3)
prev = START
first = None
for i in range(%d):
    s = step("s%%d" %% i, run = ["echo", "{{ inputs.x }}", "step %%d" %% i])
    edge(prev, s)
    if i %% 10 == 9:
        edge(prev, s, when = "inputs.x == 'skip'")
    if first == None:
        first = s
    prev = s
edge(prev, first, when = "inputs.x == 'again'")
edge(prev, END, when = "inputs.x != 'again'")
`, n))
}

var sizes = []int{1_000, 10_000, 100_000}

func loadCheck(b *testing.B, src []byte) *graphir.Graph {
	g, err := lang.LoadSource("gen.star", src, lang.Options{MaxSteps: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	if ds := check.Graph(g); len(ds) > 0 {
		b.Fatalf("generated flow has diagnostics: %v", ds[0])
	}
	return g
}

// BenchmarkLoadCheck measures load + freeze + check of a generated flow.
func BenchmarkLoadCheck(b *testing.B) {
	for _, n := range sizes {
		src := genFlow(n)
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				loadCheck(b, src)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

// BenchmarkPlainStarlark executes the same files with builtins that do
// nothing: the floor BenchmarkLoadCheck is compared with.
func BenchmarkPlainStarlark(b *testing.B) {
	noop := func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
		return starlark.None, nil
	}
	stub := starlark.StringDict{}
	for name, v := range builtins.Predeclared() {
		if _, ok := v.(*starlark.Builtin); ok {
			stub[name] = starlark.NewBuiltin(name, noop)
		} else {
			stub[name] = v
		}
	}
	stub["range"] = starlark.Universe["range"]
	for _, n := range sizes {
		src := genFlow(n)
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := starlark.ExecFileOptions(graphir.FileOptions, &starlark.Thread{}, "gen.star", src, stub); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

// BenchmarkPeerBuild10k is the build workload of bench-peers: load + check
// of a generated 10,000-step flow from source text.
func BenchmarkPeerBuild10k(b *testing.B) {
	src := genFlow(10_000)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		loadCheck(b, src)
	}
}
