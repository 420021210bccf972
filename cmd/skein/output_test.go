package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// gatedWriter takes one write per token on gate, recording it, and checks
// that the asyncWriter feeding it never holds more than maxPending.
type gatedWriter struct {
	t    *testing.T
	a    *asyncWriter
	gate chan struct{}
	mu   sync.Mutex
	b    strings.Builder
	fail int // the write (1-based) that fails, 0 for none
	n    int
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	g.a.mu.Lock()
	if n := len(g.a.pending); n > maxPending {
		g.t.Errorf("%d writes pending, more than %d", n, maxPending)
	}
	g.a.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	if g.n == g.fail {
		return 0, errors.New("device gone")
	}
	g.b.Write(p)
	return len(p), nil
}

func newGated(t *testing.T, fail int) (*asyncWriter, *gatedWriter) {
	g := &gatedWriter{t: t, gate: make(chan struct{}), fail: fail}
	a := &asyncWriter{w: g}
	a.cond.L = &a.mu
	g.a = a
	return a, g
}

// The asyncWriter returns from Write before the device takes the bytes
// (the device here takes nothing until told), writes everything in
// order, holds at most maxPending writes, and wait returns once all is
// written.
func TestAsyncWriterInOrder(t *testing.T) {
	a, g := newGated(t, 0)
	a.wait() // nothing given: returns at once
	var want strings.Builder
	for i := range maxPending {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if _, err := a.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if g.b.Len() != 0 {
		t.Fatalf("written before the device took anything: %q", g.b.String())
	}
	done := make(chan struct{})
	go func() { // the device takes what it is given, one write at a time
		defer close(done)
		for range 200 + maxPending {
			g.gate <- struct{}{}
		}
	}()
	buf := make([]byte, 0, 64)
	for i := maxPending; i < 200+maxPending; i++ {
		buf = fmt.Appendf(buf[:0], "line %d\n", i) // reused: the writer keeps a copy
		want.WriteString(string(buf))
		if _, err := a.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	a.wait()
	if got := g.b.String(); got != want.String() {
		t.Errorf("written out of order or incomplete:\n%s\nwant\n%s", got, want.String())
	}
}

// A write the device fails is returned from later writes; wait still
// returns.
func TestAsyncWriterError(t *testing.T) {
	a, g := newGated(t, 2)
	close(g.gate) // the device takes writes at once
	a.Write([]byte("one\n"))
	a.wait()
	a.Write([]byte("two\n"))
	a.wait()
	if _, err := a.Write([]byte("three\n")); err == nil || err.Error() != "device gone" {
		t.Errorf("write after a failed one: %v, want the device's error", err)
	}
	a.wait()
	if got := g.b.String(); got != "one\n" {
		t.Errorf("written %q, want only what came before the failure", got)
	}
}
