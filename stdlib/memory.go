package stdlib

// This file measures the heap for the memory bounds of loading (lang) and
// of runtime evaluations (vm). The step budget counts Starlark steps, but
// one step can build a huge value (x = x + x doubles a string), so a
// watchdog samples the heap while Starlark runs and cancels the thread once
// the heap has grown by more than a limit. The heap is the process's, so
// the bound is loose: it turns a runaway computation into an error, it does
// not account.

import "runtime/metrics"

// DefaultMaxMemory is the default bound on how much the heap may grow while
// one flow file loads, or one runtime evaluation runs.
const DefaultMaxMemory = 512 << 20

// HeapBytes is the heap's live and not yet collected objects, in bytes.
func HeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
