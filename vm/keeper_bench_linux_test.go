//go:build linux

package vm_test

import (
	"testing"

	"github.com/skeinlang/skein/vm"
)

// BenchmarkTaskStepKeeper is BenchmarkTaskStep as skein runs it: tasks
// counted for orphan cleanup, started directly (before the keeper) and
// through the keeper (the first start, the keeper's own, is not timed).
func BenchmarkTaskStepKeeper(b *testing.B) {
	p := vm.Prepare(loadSrc(b, `step("t", run = ["/bin/true"])`))
	for _, mode := range []string{"direct", "keeper"} {
		b.Run(mode, func(b *testing.B) {
			defer vm.SetReaper(true, mode == "keeper")()
			runProgram(b, p, nil, vm.Options{Parallel: 1})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				runProgram(b, p, nil, vm.Options{Parallel: 1})
			}
			b.StopTimer()
			vm.StopKeeper()
		})
	}
}
