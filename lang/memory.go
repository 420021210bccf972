package lang

// This file bounds the memory a load may take (internal/heapwatch says
// why a step budget is not enough).

import (
	"go.starlark.net/starlark"

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

// push makes thread the running one of l's flow: the threads before it
// are paused in a load(). The flow's files share one memory watch, on the
// running thread: a module's growth is its importer's too, so one watch
// serves them all (a watch per file made each sample of the watchdog cost
// as much as the chain of load()s was long). pop undoes push.
func (l *loader) push(thread *starlark.Thread) (pop func()) {
	var paused uint64
	if n := len(l.active); n > 0 {
		paused = l.paused[n-1] + l.active[n-1].ExecutionSteps()
	}
	l.active = append(l.active, thread)
	l.paused = append(l.paused, paused)
	if l.mem == nil {
		records := l.b.Recorded()
		l.mem, l.memStop = heapwatch.Thread(thread, l.s.opts.MaxMemory, "load-time", func() uint64 {
			return memoryPerRecord * uint64(max(0, l.b.Recorded()-records))
		})
	} else {
		l.mem.SetThread(thread)
	}
	return func() {
		n := len(l.active) - 1
		l.active, l.paused = l.active[:n], l.paused[:n]
		if n == 0 {
			l.memStop()
			l.mem, l.memStop = nil, nil
		} else {
			l.mem.SetThread(l.active[n-1])
		}
	}
}
