package lang

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
)

// Integers read from text are bounded by their digits and products by
// their bits, before Go's math/big spends quadratic time on them (issue
// 26, item 7); a load whose steps each take long ends at its time budget
// (item 8).
func TestLoadIntBounds(t *testing.T) {
	long := strings.Repeat("7", 200_000)
	for _, tc := range []struct{ name, src, frag string }{
		{"literal", "x = " + long + "\n", "1:5: number literal of 200000 characters; a number may have at most 10000 digits"},
		{"hex literal", "x = 0x" + long + "\n", "1:5: number literal of 200002 characters"},
		{"int()", "x = int(\"" + long + "\")\n", "1:5: int: the text has 200000 digits; an integer read from text may have at most 10000"},
		{"json.decode", "x = json.decode(\"[" + long + "]\")\n", "1:5: json.decode: a JSON number has 200000 digits; an integer read from text may have at most 10000 (at byte 1)"},
		{"product", "x = 3\nfor i in range(40):\n    x = x * x\n", "3:9: multiplying a 830977-bit int by a 830977-bit int would make about 1661954 bits"},
		{"product", "x = 3\nfor i in range(40):\n    x *= x\n", "bits; an int made by * may have at most 1048576"},
	} {
		_, err := LoadSource("ints.star", []byte(tc.src), Options{})
		var ge *graphir.Error
		if !errors.As(err, &ge) || !strings.Contains(ge.Error(), tc.frag) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.frag)
		}
	}
	// At the bound, or in a string or a comment, a long number is fine.
	ok := strings.Repeat("7", 10_000)
	for _, src := range []string{
		"x = " + ok + "\ny = int(\"" + ok + "\")\nz = json.decode(\"" + ok + "\")\nw = 0x" + ok + "\n",
		"s = \"" + long + "\"\nt = '''\n" + long + "\n'''  # " + long + "\nu = r\"\\\"" + long + "\"\nx" + long + " = 1\n",
		"x = 1 << 500\ny = x * x * x * x\n",
	} {
		if _, err := LoadSource("ints.star", []byte(src), Options{}); err != nil {
			t.Errorf("%.60q: %v", src, err)
		}
	}
}

// A load whose every step is slow ends at its time budget: inserting
// ints that all hash alike into a set compares each with every one
// before it, so 200,000 of them took minutes within the step budget.
func TestLoadTimeBudget(t *testing.T) {
	src := "s = set()\nfor i in range(200000):\n    s.add(i << 64)\n"
	_, err := LoadSource("slow.star", []byte(src), Options{MaxTime: 50 * time.Millisecond})
	var ge *graphir.Error
	if !errors.As(err, &ge) || ge.Code != "load_error" || ge.Pos.Line != 3 || !strings.Contains(ge.Msg, "load-time budget of 50ms exceeded") {
		t.Errorf("got %v", err)
	}
	// The default follows the step budget.
	for steps, want := range map[uint64]time.Duration{0: time.Minute, 1000: 6 * time.Millisecond, 1 << 63: 1<<63 - 1} {
		if got := (&Options{MaxSteps: steps}).maxTime(); got != want {
			t.Errorf("maxTime for %d steps = %v, want %v", steps, got, want)
		}
	}
}
