package stdlib

import (
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// BenchmarkRewrite runs a loop of *, % and join as go.starlark.net compiles
// it (plain) and as Rewrite leaves it (checked): the cost of the size
// checks on code that does nothing else.
func BenchmarkRewrite(b *testing.B) {
	const src = `
def f():
    n = 0
    for i in range(10000):
        n += (i * 3) % 7
        s = "-" * 3
        t = ",".join([s, s])
    return n
f()
`
	for _, mode := range []string{"plain", "checked"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				f, err := (&syntax.FileOptions{}).Parse("bench.star", src, 0)
				if err != nil {
					b.Fatal(err)
				}
				if mode == "checked" {
					Rewrite(f)
				}
				prog, err := starlark.FileProgram(f, CheckedOps().Has)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := prog.Init(&starlark.Thread{}, CheckedOps()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
