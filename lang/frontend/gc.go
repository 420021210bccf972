package frontend

// This file defines the collector target a load runs under ([Options.LeanGC]).

import (
	"os"
	"runtime/debug"
	"sync"
)

// loadGCPercent is the garbage collector's target while flows load and are
// checked. A load builds one graph that only grows, so little of what it
// allocates is garbage, and the default target (100: the heap may double
// what is live before a collection) mostly decides how far the process's
// peak memory overshoots the graph. At 50, load + check of a generated
// 1,000,000-step chain peaks about 16% lower (1.06 GB -> 0.89 GB RSS) for
// about 4% more time; a small flow never grows the heap past the
// collector's 4 MB floor, so nothing changes for it.
const loadGCPercent = 50

var loadGC struct {
	sync.Mutex
	depth int // loads in progress (child flows load while a run goes on)
	prev  int // the target before the outermost one began
}

// leanGC lowers the collector's target to loadGCPercent until the
// returned function is called; loads may nest and overlap. A GOGC the user
// set, or a lower target, is left alone.
func leanGC() (done func()) {
	loadGC.Lock()
	defer loadGC.Unlock()
	if loadGC.depth == 0 {
		loadGC.prev = debug.SetGCPercent(loadGCPercent)
		if os.Getenv("GOGC") != "" || loadGC.prev < loadGCPercent { // a GOGC of off is -1
			debug.SetGCPercent(loadGC.prev)
		}
	}
	loadGC.depth++
	return func() {
		loadGC.Lock()
		defer loadGC.Unlock()
		if loadGC.depth--; loadGC.depth == 0 {
			debug.SetGCPercent(loadGC.prev)
		}
	}
}
