package lang

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/heapwatch"
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
	for steps, want := range map[uint64]time.Duration{0: time.Minute, 1000: 10 * time.Second, 5_000_000: 30 * time.Second, 1 << 63: 1<<63 - 1} {
		if got := (&Options{MaxSteps: steps}).maxTime(); got != want {
			t.Errorf("maxTime for %d steps = %v, want %v", steps, got, want)
		}
	}
}

// A chain of modules, each loading the next, loads in time linear in its
// length: each file had a memory watch of its own, which every sample of
// the watchdog walked (10,000 modules took 48 s), and each load() summed
// the steps of every thread paused in the chain (issue 26, item 8).
func TestLoadChain(t *testing.T) {
	const n = 2000
	files := map[string]string{"/chain/flow.star": "load(\"m0.star\", \"x\")\nstep(\"a\")\n"}
	for i := range n {
		src := fmt.Sprintf("load(\"m%d.star\", z = \"x\")\nx = z + 1\n", i+1)
		if i == n-1 {
			src = "print(\"deepest\")\nx = 0\n"
		}
		files[fmt.Sprintf("/chain/m%d.star", i)] = src
	}
	watches := -1
	g, err := Load("/chain/flow.star", Options{
		ReadFile: func(name string) ([]byte, error) {
			if src, ok := files[name]; ok {
				return []byte(src), nil
			}
			return nil, os.ErrNotExist
		},
		Print: func(graphir.Pos, string) { watches = heapwatch.Watches() },
	})
	if err != nil || g.Node("a") == nil {
		t.Fatal(err)
	}
	if watches < 1 || watches > 10 { // 1, and a few of tests running in parallel
		t.Errorf("%d memory watches at the end of a chain of %d modules, want 1", watches, n)
	}
}

// A load() or literal flow= path longer than a path may be is refused at
// once: the flow root check resolved it once per missing part, each time
// the whole path (a 6 MB load() path kept check busy past 120 s).
func TestLoadLongPath(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a/", 100_000) + "x.star"
	for _, src := range []string{"load(\"" + long + "\", \"x\")\n", "step(\"s\", flow = \"" + long + "\")\n"} {
		g, err := LoadSource(dir+"/flow.star", []byte(src), Options{})
		if err == nil {
			err = g.Node("s").Subflow.ChildErr
		}
		if err == nil || !strings.Contains(err.Error(), "bytes is longer than the 4096 a path may have") {
			t.Errorf("%.20q: %v", src, err)
		}
	}
}

// A load whose context is done stops: a child flow a run loads while it
// is cancelled does not run on to its budget.
func TestLoadContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := LoadSource("slow.star", []byte("s = set()\nfor i in range(200000):\n    s.add(i << 64)\n"), Options{Context: ctx})
	var ge *graphir.Error
	if !errors.As(err, &ge) || ge.Code != "load_error" || ge.Msg != "cancelled" {
		t.Errorf("got %v", err)
	}
}
