package store

import (
	"errors"
	"testing"
)

// Of two processes continuing one interrupted run at once, one takes it
// over; the other is told which process holds it (issue 26: both ran the
// interrupted step).
func TestContinueOneAtATime(t *testing.T) {
	s, _ := beginRun(t) // run r1, owned by this process
	t.Cleanup(func() { s.Close() })
	const other = 1 << 22 // the first resume's process: alive, not this one
	isAlive = func(pid int, _, _ string) bool { return pid == other }
	t.Cleanup(func() { isAlive = alive })
	owner = func() (int, string, string) { _, start, host := thisProcess(); return other, start, host }
	t.Cleanup(func() { owner = thisProcess })
	if _, err := s.Continue("r1", RunOptions{}); err != nil {
		t.Fatalf("first resume: %v", err)
	}
	owner = thisProcess
	_, err := s.Continue("r1", RunOptions{})
	var held *HeldError
	if !errors.As(err, &held) || held.PID != other || held.Run != "r1" {
		t.Fatalf("second resume: %v, want the run held by process %d", err, other)
	}
}
