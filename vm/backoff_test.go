package vm

import (
	"testing"
	"time"
)

// Retries wait base, then twice as long after each failure, capped at an
// hour (docs/language.md: exponential backoff).
func TestBackoffDoubles(t *testing.T) {
	for attempt, want := range map[int]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 40: time.Hour,
	} {
		if got := backoff(time.Second, attempt); got != want {
			t.Errorf("backoff(1s, %d) = %s, want %s", attempt, got, want)
		}
	}
}
