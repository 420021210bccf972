package lang

// This file bounds the memory a load may take (internal/heapwatch says
// why a step budget is not enough).

import (
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/heapwatch"
)

// DefaultMaxMemory is the default bound on how much the heap may grow while
// one file of a flow runs, beyond what the graph it records takes. Flow
// files describe graphs; they never need this much.
const DefaultMaxMemory = heapwatch.DefaultLimit

// memoryPerRecord is how much heap growth each step or edge the flow records
// adds to the bound: a generous measure of what one takes while loading
// (the record, its share of the graph's indexes, garbage not yet
// collected). A huge generated flow is not a runaway value; the step
// budget still bounds how many records a load can make.
const memoryPerRecord = 2 << 10

// watchMemory cancels thread if the heap grows by more than limit bytes
// plus memoryPerRecord for each step and edge b records before stop is
// called.
func watchMemory(thread *starlark.Thread, limit uint64, b *graphir.Builder) (stop func()) {
	records := b.Recorded()
	return heapwatch.Thread(thread, limit, "load-time", func() uint64 {
		return memoryPerRecord * uint64(max(0, b.Recorded()-records))
	})
}
