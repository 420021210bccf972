//go:build linux

package proc_test

import (
	"context"
	"testing"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/proc"
)

// BenchmarkTaskStepKeeper is vm's BenchmarkTaskStep as skein runs it: a
// one-task flow, tasks counted for orphan cleanup, started directly
// (before the keeper) and through the keeper (the first start, the
// keeper's own, is not timed).
func BenchmarkTaskStepKeeper(b *testing.B) {
	g, err := lang.LoadSource(b.TempDir()+"/flow.star", []byte(`step("t", run = ["/bin/true"])`), lang.Options{})
	if err != nil {
		b.Fatal(err)
	}
	p := vm.Prepare(g)
	run := func(b *testing.B) {
		in, err := vm.BindInputs(g, nil)
		if err != nil {
			b.Fatal(err)
		}
		if res := p.Run(context.Background(), in, vm.Options{Parallel: 1}); res.Status != vm.Succeeded {
			b.Fatalf("run %s: %+v", res.Status, res.Error)
		}
	}
	for _, mode := range []string{"direct", "keeper"} {
		b.Run(mode, func(b *testing.B) {
			defer proc.SetReaper(true, mode == "keeper")()
			run(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run(b)
			}
			b.StopTimer()
			proc.StopKeeper()
		})
	}
}
