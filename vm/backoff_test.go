package vm

import (
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
)

// Retries wait backoff=, then twice as long after each failure, capped at
// an hour (docs/runs.md#retry-shapes).
func TestBackoffDoubles(t *testing.T) {
	n := &graphir.Node{Backoff: time.Second}
	for attempt, want := range map[int]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 40: time.Hour,
	} {
		if got := backoff(n, attempt, 0); got != want {
			t.Errorf("backoff(1s, %d) = %s, want %s", attempt, got, want)
		}
	}
}

// backoff_factor = 1.0 is a constant interval; another factor grows by
// it; max_backoff caps it.
func TestBackoffShapes(t *testing.T) {
	constant := &graphir.Node{Backoff: 10 * time.Second, RetryShape: &graphir.RetryShape{Factor: 1, Max: time.Hour}}
	grow := &graphir.Node{Backoff: time.Second, RetryShape: &graphir.RetryShape{Factor: 3, Max: 20 * time.Second}}
	for _, tc := range []struct {
		n       *graphir.Node
		attempt int
		want    time.Duration
	}{
		{constant, 1, 10 * time.Second}, {constant, 7, 10 * time.Second}, {constant, 100, 10 * time.Second},
		{grow, 1, time.Second}, {grow, 2, 3 * time.Second}, {grow, 3, 9 * time.Second}, {grow, 4, 20 * time.Second}, {grow, 9, 20 * time.Second},
	} {
		if got := backoff(tc.n, tc.attempt, 0); got != tc.want {
			t.Errorf("backoff(%v, %d) = %s, want %s", *tc.n.RetryShape, tc.attempt, got, tc.want)
		}
	}
}

// With jitter each delay falls in [d/2, d], where the seed says.
func TestBackoffJitter(t *testing.T) {
	n := &graphir.Node{Backoff: 8 * time.Second, RetryShape: &graphir.RetryShape{Factor: 1, Max: time.Hour, Jitter: true}}
	if got := backoff(n, 1, 0); got != 4*time.Second {
		t.Errorf("seed 0: %s, want 4s (the bottom of the range)", got)
	}
	if got := backoff(n, 1, ^uint64(0)); got <= 7900*time.Millisecond || got > 8*time.Second {
		t.Errorf("the largest seed: %s, want just under 8s", got)
	}
	if got := backoff(n, 1, 1<<63); got != 6*time.Second {
		t.Errorf("the middle seed: %s, want 6s", got)
	}
}
