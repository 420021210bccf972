package heapwatch

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// spin runs Starlark that only counts until its thread is cancelled (or
// the test's deadline) and returns the error it stopped with.
func spin(t *testing.T, th *starlark.Thread) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := starlark.ExecFileOptions(&syntax.FileOptions{}, th, "spin.star", "def f():\n    for i in range(1 << 40):\n        pass\nf()\n", nil)
		done <- err
	}()
	return done
}

// grow holds n bytes live until the test ends (the heap counts what is
// allocated, touched or not).
func grow(t *testing.T, n int) {
	b := make([]byte, n)
	t.Cleanup(func() { runtime.KeepAlive(b) })
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the thread was not cancelled within 10s")
		return nil
	}
}

// The heap a watch starts from counts garbage not yet collected, and a
// collection while it watches could hide the growth a test makes: each
// test starts from a collected heap.

func TestThreadCancelsOnGrowth(t *testing.T) {
	runtime.GC()
	th := &starlark.Thread{Name: "load"}
	_, stop := Thread(th, 8<<20, "load-time", nil)
	defer stop()
	done := spin(t, th)
	grow(t, 64<<20)
	err := wait(t, done)
	if err == nil || !strings.Contains(err.Error(), "load-time memory limit of 8 MiB exceeded (is a value growing without bound?)") {
		t.Fatalf("err = %v", err)
	}
}

func TestThreadExtraAllowance(t *testing.T) {
	runtime.GC()
	// The allowance that grows with the work keeps a thread going that the
	// limit alone would stop.
	th := &starlark.Thread{Name: "load"}
	_, stop := Thread(th, 8<<20, "load-time", func() uint64 { return 1 << 40 })
	done := spin(t, th)
	grow(t, 64<<20)
	time.Sleep(20 * interval)
	select {
	case err := <-done:
		t.Fatalf("cancelled within its allowance: %v", err)
	default:
	}
	stop()
	th.Cancel("test over")
	if err := wait(t, done); err == nil || !strings.Contains(err.Error(), "test over") {
		t.Fatalf("err = %v, want the test's own cancellation", err)
	}
}

func TestWatchComputations(t *testing.T) {
	runtime.GC()
	w, stop := Start(8<<20, "runtime")
	defer stop()
	if got, want := w.Message(), "runtime memory limit of 8 MiB exceeded (is a value growing without bound?)"; got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}

	// A computation that stays small is not cancelled.
	quiet := &starlark.Thread{Name: "quiet"}
	w.Begin(1, quiet)
	time.Sleep(10 * interval)
	w.End()
	if w.Cancelled(1) {
		t.Fatal("a quiet computation was cancelled")
	}

	// Growth while no computation runs is nobody's: the next one starts
	// from the heap as it is then.
	grow(t, 64<<20)
	time.Sleep(4 * interval)
	calm := &starlark.Thread{Name: "calm"}
	w.Begin(2, calm)
	time.Sleep(10 * interval)
	w.End()
	if w.Cancelled(2) {
		t.Fatal("a computation was cancelled for growth before it began")
	}

	// A computation that grows the heap is cancelled, and only it.
	runtime.GC()
	th := &starlark.Thread{Name: "runaway"}
	w.Begin(3, th)
	done := spin(t, th)
	time.Sleep(4 * interval) // the watchdog reads the heap it starts from
	grow(t, 64<<20)
	err := wait(t, done)
	w.End()
	if err == nil || !strings.Contains(err.Error(), w.Message()) {
		t.Fatalf("err = %v", err)
	}
	if !w.Cancelled(3) || w.Cancelled(2) {
		t.Errorf("Cancelled(3) = %v, Cancelled(2) = %v; want true, false", w.Cancelled(3), w.Cancelled(2))
	}
}

func TestWatchdogStopsWhenIdle(t *testing.T) {
	_, stop := Start(0, "runtime")
	stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		watchdog.mu.Lock()
		running := watchdog.running
		watchdog.mu.Unlock()
		if !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the watchdog's goroutine still runs with nothing to watch")
		}
		time.Sleep(interval)
	}
}

func TestHeapBytes(t *testing.T) {
	runtime.GC()
	before := HeapBytes()
	if before == 0 {
		t.Fatal("HeapBytes() = 0")
	}
	grow(t, 32<<20)
	if after := HeapBytes(); after < before+16<<20 {
		t.Errorf("HeapBytes() grew from %d to %d after 32 MiB were made live", before, after)
	}
}
