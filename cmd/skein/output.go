package main

// This file is the buffered output of a run's progress and events. Lines
// go into one 64 KiB buffer. When the output is a file (a terminal, a
// pipe), a full buffer and the one flushed on the tick are written by a
// goroutine of their own, in order, so the run goes on while the device
// takes them: a terminal takes some tens of MB/s, about as long for the
// lines of a loop of fn steps as the run itself. What a person must see
// at once (a failure, a retry, a question, the end) is synced: written
// out, everything before it first, before the program goes on.

import (
	"bufio"
	"io"
	"os"
	"sync"
)

// runOutput buffers a run's output to w.
type runOutput struct {
	*bufio.Writer
	async *asyncWriter // nil when w is no file: written straight to w
}

func newRunOutput(w io.Writer) *runOutput {
	o := &runOutput{}
	if _, ok := w.(*os.File); ok {
		o.async = &asyncWriter{w: w}
		o.async.cond.L = &o.async.mu
		w = o.async
	}
	o.Writer = bufio.NewWriterSize(w, 64<<10)
	return o
}

// sync flushes the buffer and returns once all of it is written.
func (o *runOutput) sync() {
	o.Flush()
	if o.async != nil {
		o.async.wait()
	}
}

// asyncWriter writes what it is given to w from a goroutine of its own,
// in order: Write copies p and returns, unless maxPending writes are
// already waiting (then it waits for the device). The goroutine runs
// while there is something to write.
type asyncWriter struct {
	w       io.Writer
	mu      sync.Mutex
	cond    sync.Cond // on mu: the pending writes changed
	pending [][]byte  // oldest first
	free    [][]byte  // buffers written, for reuse
	writing bool      // the goroutine runs
	err     error     // the first error of w, returned from then on
}

// maxPending bounds the buffers an asyncWriter holds (each 64 KiB from
// runOutput): a run that prints faster than its device can take waits
// for it, as it would writing straight to it.
const maxPending = 4

func (a *asyncWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.pending) >= maxPending && a.err == nil {
		a.cond.Wait()
	}
	if a.err != nil {
		return 0, a.err
	}
	var b []byte
	if n := len(a.free); n > 0 {
		b, a.free = a.free[n-1][:0], a.free[:n-1]
	}
	a.pending = append(a.pending, append(b, p...))
	if !a.writing {
		a.writing = true
		go a.drain()
	}
	return len(p), nil
}

// drain writes the pending buffers until there are none.
func (a *asyncWriter) drain() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.pending) > 0 {
		b := a.pending[0]
		a.mu.Unlock()
		_, err := a.w.Write(b)
		a.mu.Lock()
		a.pending = append(a.pending[:0], a.pending[1:]...)
		a.free = append(a.free, b)
		if err != nil && a.err == nil {
			a.err = err
			a.pending = a.pending[:0] // what follows a failed write is lost, as with bufio
		}
		a.cond.Broadcast()
	}
	a.writing = false
	a.cond.Broadcast()
}

// wait returns once everything given is written (or failed to be).
func (a *asyncWriter) wait() {
	a.mu.Lock()
	for a.writing {
		a.cond.Wait()
	}
	a.mu.Unlock()
}
