package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skeinlang/skein/check"
)

// FuzzLoad feeds arbitrary bytes to the loader as a flow file: it must
// return a graph or a positioned error, never panic or hang (the step
// budget bounds execution).
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("../examples/*.star")
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("step(\"a\")\nstep(\"a\")\n"))
	f.Add([]byte("for i in range(10):\n  step('s%d' % i)\n"))
	f.Add([]byte("x = step('x', run=['echo', '{{ x.stdout'])\nedge(x, END, when='x.')\n"))
	f.Add([]byte("loop('l', body=[step('b')], until='nope', max_iterations=2)\n"))
	f.Add([]byte("def f(r):\n  return r.a.stdout + helper(r) + r.nope['k']\nflow(inputs={'n': input(3, type='int', choices=[1, 3]), 'm': input('x', type='int')})\na = step('a', run=['x'])\nb = step('b', fn=f)\nm = map('m', over='[1]', body=[step('c', fn=lambda r: r.item)])\nl = loop('l', body=[step('d')], until=lambda it: it.d or it.result['d'] or it.result.e, max_iterations=2)\nedge(b, l, when=lambda r: r.c)\nchain(START, a, tset)\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		// A hang guard, generous for a busy machine: the step budget, not
		// this, bounds a load; a panic here is recorded as a crasher.
		timer := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("load hangs (no result after 30s) on %q", src)) })
		defer timer.Stop()
		g, err := LoadSource("fuzz/flow.star", src, Options{MaxSteps: 100_000, ReadFile: func(string) ([]byte, error) {
			return nil, os.ErrNotExist
		}})
		if err != nil {
			if e := asGraphError(err); e == nil || e.Code == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		check.Graph(g)
		g.DOT()
		g.Mermaid()
		if _, err := g.MarshalJSON(); err != nil {
			t.Fatalf("graph does not encode: %v", err)
		}
	})
}
