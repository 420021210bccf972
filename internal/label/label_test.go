package label

import "testing"

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"urgent":         "urgent",
		"Urgent.":        "urgent",
		"**routine**":    "routine",
		"  \"Spam\"\n":   "spam",
		"follow-up":      "follow-up",
		"¡Sí!":           "sí",
		"...":            "",
		"":               "",
		"`STOP` ✅":       "stop",
		"needs review?!": "needs review",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}
