package graphir

import (
	"testing"
	"time"
)

// Durations are printed as a flow writes them (graph --format json,
// approval timeouts in show and approve).
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour:               "24h",
		90 * time.Minute:             "1h30m",
		time.Minute + 30*time.Second: "1m30s",
		time.Hour + time.Second:      "1h0m1s",
		250 * time.Millisecond:       "250ms",
		time.Second:                  "1s",
		10 * time.Minute:             "10m",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
