// Package heapwatch turns a runaway Starlark computation into an error. The
// step budget counts Starlark steps, but one step can build a huge value
// (x = x + x doubles a string; thirty more such steps and the machine is
// out of memory), so one watchdog goroutine for the process samples the
// heap every few milliseconds and cancels the thread of a computation once
// the heap has grown by more than its limit since the computation began.
// The loader watches each file of a flow as it runs ([Thread]); the VM
// watches each runtime evaluation of a run (a fn step, a condition, a
// template: [Start] and [Watch.Begin]).
//
// The heap is the process's, so the bound is loose: it turns a runaway
// computation into an error, it does not account what one computation
// took. It does not stop one operation that asks for gigabytes at once
// ("a" * 999999999): stdlib bounds the size of such values before they are
// made. The watchdog's goroutine runs only while something is watched.
package heapwatch

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/starlark"
)

// DefaultLimit is the default bound on how much the heap may grow while one
// flow file loads, or one runtime evaluation runs. Flows describe graphs
// and evaluations compute small values; neither needs this much.
const DefaultLimit = 512 << 20

// interval is how often the watchdog samples the heap.
const interval = 5 * time.Millisecond

// HeapBytes is the heap's live and not yet collected objects, in bytes.
func HeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// A Watch bounds the heap's growth during each of a series of computations
// that run one at a time on Starlark threads (a run's evaluations). Begin
// and End only store atomics, so a hot loop of evaluations stays cheap: the
// heap each computation starts from is read at the watchdog's next sample.
type Watch struct {
	limit uint64
	what  string        // "runtime", "load-time": in the message
	extra func() uint64 // more room as the work grows (nil: none)

	seq    atomic.Uint64                   // the computation under way, 0 for none
	thread atomic.Pointer[starlark.Thread] // its thread
	hit    atomic.Uint64                   // the computation the watchdog cancelled

	// The watchdog's own state, under watchdog.mu.
	seen uint64 // the computation base was read for
	base uint64
}

// watchdog is the registry of watches; its goroutine runs while there are
// any.
var watchdog struct {
	mu      sync.Mutex
	watches map[*Watch]struct{}
	running bool
}

// Start registers a watch whose computations may each grow the heap by
// limit bytes (0 means [DefaultLimit]); what names the bound in the message
// ("runtime" memory limit). Call stop when no more computations will run.
func Start(limit uint64, what string) (w *Watch, stop func()) {
	if limit == 0 {
		limit = DefaultLimit
	}
	w = &Watch{limit: limit, what: what}
	return w, register(w)
}

// Thread cancels thread if the heap grows by more than limit bytes (0 means
// [DefaultLimit]) plus extra() (when not nil) from now until stop is
// called. Unlike [Watch.Begin], it reads the heap it starts from at once:
// it is for one long computation (a file being loaded), not many short
// ones. what names the bound in the message ("load-time" memory limit).
// The computation may move to another thread ([Watch.SetThread]).
func Thread(thread *starlark.Thread, limit uint64, what string, extra func() uint64) (w *Watch, stop func()) {
	if limit == 0 {
		limit = DefaultLimit
	}
	w = &Watch{limit: limit, what: what, extra: extra, seen: 1, base: HeapBytes()}
	w.thread.Store(thread)
	w.seq.Store(1)
	return w, register(w)
}

// SetThread says that the computation of a [Thread] watch goes on on th
// (a module a file loads runs on a thread of its own, then the file's
// resumes): th is the thread cancelled if the heap grows too much.
func (w *Watch) SetThread(th *starlark.Thread) { w.thread.Store(th) }

func register(w *Watch) (stop func()) {
	watchdog.mu.Lock()
	if watchdog.watches == nil {
		watchdog.watches = map[*Watch]struct{}{}
	}
	watchdog.watches[w] = struct{}{}
	if !watchdog.running {
		watchdog.running = true
		go sample()
	}
	watchdog.mu.Unlock()
	return func() {
		watchdog.mu.Lock()
		delete(watchdog.watches, w)
		watchdog.mu.Unlock()
	}
}

// Watches returns how many watches are registered: what each sample of
// the watchdog walks.
func Watches() int {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	return len(watchdog.watches)
}

// Begin says that computation seq (non-zero, and different from the one
// before) now runs on thread th.
func (w *Watch) Begin(seq uint64, th *starlark.Thread) {
	w.thread.Store(th)
	w.seq.Store(seq)
}

// End says that no computation runs.
func (w *Watch) End() { w.seq.Store(0) }

// Cancelled reports whether the watchdog cancelled computation seq's
// thread. A cancelled thread stays cancelled: the next computation needs a
// fresh one.
func (w *Watch) Cancelled(seq uint64) bool { return w.hit.Load() == seq }

// Message is what a cancelled thread is told, and the error of its
// computation: "runtime memory limit of 16 MiB exceeded (...)".
func (w *Watch) Message() string {
	return fmt.Sprintf("%s memory limit of %d MiB exceeded (is a value growing without bound?)", w.what, w.limit>>20)
}

// sample is the watchdog's goroutine: it reads the heap once a tick, at
// most, and only while a computation is under way.
func sample() {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range tick.C {
		watchdog.mu.Lock()
		if len(watchdog.watches) == 0 {
			watchdog.running = false
			watchdog.mu.Unlock()
			return
		}
		var heap uint64
		for w := range watchdog.watches {
			seq := w.seq.Load()
			if seq == 0 {
				continue
			}
			if heap == 0 {
				heap = HeapBytes()
			}
			if seq != w.seen {
				w.seen, w.base = seq, heap
				continue
			}
			allowed := w.base + w.limit
			if w.extra != nil {
				allowed += w.extra()
			}
			if heap > allowed && w.hit.Load() != seq {
				if th := w.thread.Load(); th != nil && w.seq.Load() == seq {
					w.hit.Store(seq)
					th.Cancel(w.Message())
				}
			}
		}
		watchdog.mu.Unlock()
	}
}
