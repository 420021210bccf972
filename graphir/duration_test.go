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

// A flow's durations take days too: "30d", "1d12h".
func TestParseDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"30d":   30 * 24 * time.Hour,
		"1d12h": 36 * time.Hour,
		"0d":    0,
		"1h30m": 90 * time.Minute,
		"250ms": 250 * time.Millisecond,
		"2d30s": 48*time.Hour + 30*time.Second,
	} {
		if got, err := ParseDuration(s); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"d", "1.5d", "-1d", "30 d", "1d-1h", "200000d", "1dd", "", "x"} {
		if got, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", s, got)
		}
	}
}
