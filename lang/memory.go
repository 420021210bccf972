package lang

// This file bounds the memory a load may take. The step budget counts
// Starlark steps, but one step can build a huge value (x = x + x doubles a
// string; ten more such steps and the machine is out of memory), so while a
// file runs a watchdog samples the heap and cancels the run once the heap
// has grown by more than the limit.

import (
	"fmt"
	"runtime/metrics"
	"time"

	"go.starlark.net/starlark"
)

// DefaultMaxMemory is the default bound on how much the heap may grow while
// one file of a flow runs. Flow files describe graphs; they never need this
// much.
const DefaultMaxMemory = 512 << 20

// watchMemory cancels thread if the heap grows by more than limit bytes
// before stop is called. The heap is the process's, so the bound is loose:
// it is there to turn a runaway computation into an error, not to account.
func watchMemory(thread *starlark.Thread, limit uint64) (stop func()) {
	if limit == 0 {
		limit = DefaultMaxMemory
	}
	base := heapBytes()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if heapBytes() > base+limit {
					thread.Cancel(fmt.Sprintf("load-time memory limit of %d MiB exceeded (is a value growing without bound?)", limit>>20))
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
