package vm

// This file bounds the memory of runtime evaluations, as loading does
// (stdlib.HeapBytes): one watchdog for the process samples the heap every
// few milliseconds and, while a run evaluates, cancels the evaluation's
// thread once the heap has grown by more than Options.MaxMemory since the
// evaluation began. The evaluation then fails with a clear error (a fn step
// fails; a condition or template is an expr_error). Evaluations only store
// two atomics; runs register once.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/stdlib"
)

// memWatch is what the watchdog reads of one run.
type memWatch struct {
	limit  uint64
	seq    atomic.Uint64                   // the evaluation under way, 0 for none
	thread atomic.Pointer[starlark.Thread] // its thread
	hit    atomic.Uint64                   // the evaluation the watchdog cancelled

	// The watchdog's own state.
	seen uint64
	base uint64
}

// watchdog is the registry of runs; its goroutine runs while there are any.
var watchdog struct {
	mu      sync.Mutex
	runs    map[*memWatch]struct{}
	running bool
}

func watchRun(limit uint64) (w *memWatch, stop func()) {
	w = &memWatch{limit: limit}
	watchdog.mu.Lock()
	if watchdog.runs == nil {
		watchdog.runs = map[*memWatch]struct{}{}
	}
	watchdog.runs[w] = struct{}{}
	if !watchdog.running {
		watchdog.running = true
		go sampleHeap()
	}
	watchdog.mu.Unlock()
	return w, func() {
		watchdog.mu.Lock()
		delete(watchdog.runs, w)
		watchdog.mu.Unlock()
	}
}

func sampleHeap() {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		watchdog.mu.Lock()
		if len(watchdog.runs) == 0 {
			watchdog.running = false
			watchdog.mu.Unlock()
			return
		}
		var heap uint64
		for w := range watchdog.runs {
			seq := w.seq.Load()
			if seq == 0 {
				continue
			}
			if heap == 0 {
				heap = stdlib.HeapBytes()
			}
			if seq != w.seen {
				w.seen, w.base = seq, heap
				continue
			}
			if heap > w.base+w.limit && w.hit.Load() != seq {
				if th := w.thread.Load(); th != nil && w.seq.Load() == seq {
					w.hit.Store(seq)
					th.Cancel(memoryMessage(w.limit))
				}
			}
		}
		watchdog.mu.Unlock()
	}
}

func memoryMessage(limit uint64) string {
	return fmt.Sprintf("runtime memory limit of %d MiB exceeded (is a value growing without bound?)", limit>>20)
}
