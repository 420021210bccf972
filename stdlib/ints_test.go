package stdlib

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// FuzzIntText: int() of any text, bounded, is what the universe's int()
// makes of it, or the digits error when the text has more than
// MaxIntDigits digits; json.decode of it likewise.
func FuzzIntText(f *testing.F) {
	for _, s := range []string{"123", "-0x1f", "0b101", "  42 ", "1_000", "0o17", "+7", "abc", strings.Repeat("9", MaxIntDigits), strings.Repeat("9", MaxIntDigits+1), "1e5", "-" + strings.Repeat("1", MaxIntDigits+1)} {
		f.Add(s)
	}
	universe := starlark.Universe["int"].(*starlark.Builtin)
	f.Fuzz(func(t *testing.T, s string) {
		th := &starlark.Thread{}
		got, err := starlark.Call(th, boundedInt, starlark.Tuple{starlark.String(s)}, nil)
		if intDigits(s) > MaxIntDigits {
			if !errors.Is(err, ErrIntDigits) {
				t.Fatalf("int(%.40q…) of %d digits: %v, want the digits error", s, intDigits(s), err)
			}
		} else {
			want, werr := starlark.Call(th, universe, starlark.Tuple{starlark.String(s)}, nil)
			if fmt.Sprint(got, err) != fmt.Sprint(want, werr) {
				t.Fatalf("int(%q) = %v %v, the universe's %v %v", s, got, err, want, werr)
			}
		}
		if err := checkJSON(s, &flowDataCosts); errors.Is(err, ErrIntDigits) && len(strings.TrimSpace(s)) <= MaxIntDigits {
			t.Fatalf("JSON %q refused for its digits: %v", s, err)
		}
	})
}

// An int input, --inputs-file and json.decode read at most MaxIntDigits
// digits (issue 26, item 7: 1.6 million took 5.6 s each).
func TestIntDigits(t *testing.T) {
	long := strings.Repeat("7", 200_000)
	if _, err := FromJSONUnique([]byte(`{"n": ` + long + `}`)); !errors.Is(err, ErrIntDigits) || !strings.Contains(err.Error(), "a JSON number has 200000 digits; an integer read from text may have at most 10000 (at byte 6)") {
		t.Errorf("FromJSONUnique: %v", err)
	}
	if v, err := FromJSONUnique([]byte(`{"n": ` + long[:MaxIntDigits] + `}`)); err != nil || v == nil {
		t.Errorf("FromJSONUnique at the bound: %v", err)
	}
	// What Skein wrote itself reads back whatever its digits.
	if _, err := FromStoredJSON([]byte(long[:20_000])); err != nil {
		t.Errorf("FromStoredJSON: %v", err)
	}
}
