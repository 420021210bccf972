package lang

// This file bounds the memory a load may take. The step budget counts
// Starlark steps, but one step can build a huge value (x = x + x doubles a
// string; ten more such steps and the machine is out of memory), so while a
// file runs a watchdog samples the heap and cancels the run once the heap
// has grown by more than the limit.

import (
	"fmt"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
)

// DefaultMaxMemory is the default bound on how much the heap may grow while
// one file of a flow runs, beyond what the graph it records takes. Flow
// files describe graphs; they never need this much.
const DefaultMaxMemory = stdlib.DefaultMaxMemory

// memoryPerRecord is how much heap growth each step or edge the flow records
// adds to the bound: a generous measure of what one takes while loading
// (the record, its share of the graph's indexes, garbage not yet
// collected). A huge generated flow is not a runaway value; the step
// budget still bounds how many records a load can make.
const memoryPerRecord = 2 << 10

// watchMemory cancels thread if the heap grows by more than limit bytes
// plus memoryPerRecord for each step and edge b records before stop is
// called. The heap is the process's, so the bound is loose: it is there to
// turn a runaway computation into an error, not to account.
func watchMemory(thread *starlark.Thread, limit uint64, b *graphir.Builder) (stop func()) {
	if limit == 0 {
		limit = DefaultMaxMemory
	}
	base, records := stdlib.HeapBytes(), b.Recorded()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				allowed := base + limit + memoryPerRecord*uint64(max(0, b.Recorded()-records))
				if stdlib.HeapBytes() > allowed {
					thread.Cancel(fmt.Sprintf("load-time memory limit of %d MiB exceeded (is a value growing without bound?)", limit>>20))
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
