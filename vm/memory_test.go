package vm_test

// Tests of what a run's values may cost in memory once written out
// (issue 26, item 9): escaping multiplies a string of control characters
// six times as JSON, so a fn step's result is bounded as JSON, and the
// result's encoder escapes each output once into a buffer of its size.

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/vm"
)

func TestFnResultBoundedAsJSON(t *testing.T) {
	// 12 MB of control characters is 72 MB of JSON: refused before the
	// store, the events or the terminal write it out.
	res := run(t, `def dump(r):
    return "\x01" * 12000000
step("dump", fn = dump)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Failed, code: "output_too_large", step: "dump", msg: "as JSON (its escapes counted) would make 68.7 MiB"})

	// The same length of plain text is 12 MB of JSON: a result like any.
	res = run(t, `def dump(r):
    return "a" * 12000000
step("dump", fn = dump)
`, nil, vm.Options{})
	check(t, res, want{status: vm.Succeeded})
}

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestResultJSONEscapesOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("counts bytes allocated, which the race detector's runtime doubles; make test runs this file's tests without it too")
	}
	// A result whose output (and its step's) is 4 MB of control
	// characters: 24 MB of JSON each. Escaped into a buffer grown as it
	// went, encoding allocated three to five times the text (each growth
	// copies it); sized first, about the text.
	big := starlark.String(strings.Repeat("\x01", 4<<20))
	res := &vm.Result{Status: vm.Succeeded, Output: big,
		Steps: []*vm.StepRecord{{Name: "dump", Status: vm.StepSucceeded, Visits: 1, Output: big}}}
	var n int
	alloc := allocated(func() {
		b, err := res.AppendJSON(nil, "")
		if err != nil {
			t.Fatal(err)
		}
		n = len(b)
	})
	if n < 48<<20 {
		t.Fatalf("the result's JSON is %d bytes, want the two outputs' 48 MiB at least", n)
	}
	if limit := uint64(n) + uint64(n)/8; alloc > limit {
		t.Errorf("encoding a %d-byte result allocated %d bytes, want at most %d (its text and an eighth)", n, alloc, limit)
	}
}

func TestResultJSONSizedOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("counts bytes allocated, which the race detector's runtime doubles; make test runs this file's tests without it too")
	}
	// A result of 100,000 steps, as run --json writes it (indented) and
	// the run store records it (compact): 15 and 9 MB of JSON. Grown as
	// it filled, the buffer doubled its way there, allocating two to
	// three times the text; sized first, about the text.
	const n = 100_000
	res := &vm.Result{Status: vm.Succeeded, Output: starlark.String("done")}
	for i := range n {
		name := "s" + strconv.Itoa(i)
		res.Steps = append(res.Steps, &vm.StepRecord{Name: name, Status: vm.StepSucceeded, Visits: 1, Output: starlark.String("ok")})
		res.Path = append(res.Path, name)
	}
	for _, indent := range []string{"  ", ""} {
		var size int
		alloc := allocated(func() {
			b, err := res.AppendJSON(nil, indent)
			if err != nil {
				t.Fatal(err)
			}
			size = len(b)
		})
		// Besides the text, JSONSize's measure of each output.
		if limit := uint64(size) + uint64(size)/2; alloc > limit {
			t.Errorf("encoding a %d-byte result (indent %q) allocated %d bytes, want at most %d (its text and a half)", size, indent, alloc, limit)
		}
	}
}

func TestMessagesBounded(t *testing.T) {
	// A fail() or a print() of a megabyte: the record, the events and the
	// terminal keep its first 16 KiB (a 60 MB one was 360 MB of JSON in
	// the record and 240 MB of escapes on the terminal).
	var events []string
	res := run(t, `def gen(r):
    print("p" * 1000000)
    fail("\x01" * 1000000)
step("g", fn = gen, retries = 1, backoff = "1ms")
`, nil, vm.Options{OnEvent: func(ev *vm.Event) {
		if ev.Error != "" || ev.Message != "" {
			events = append(events, ev.Error+ev.Message)
		}
	}})
	check(t, res, want{status: vm.Failed, code: "step_failed", step: "g", msg: "bytes cut) …"})
	rec := res.Step("g")
	if len(rec.Error) > 17<<10 || len(res.Error.Msg) > 17<<10 {
		t.Errorf("the step's error is %d bytes and the run's %d, want at most 16 KiB and a note", len(rec.Error), len(res.Error.Msg))
	}
	if len(rec.Log) == 0 || len(rec.Log[0]) > 17<<10 || !strings.HasPrefix(rec.Log[0], "ppp") {
		t.Errorf("the step's print() lines: %d, the first of %d bytes, want it cut to 16 KiB", len(rec.Log), len(rec.Log[0]))
	}
	if len(events) == 0 {
		t.Fatal("no event carried the error or the printed line")
	}
	for _, e := range events {
		if len(e) > 17<<10 {
			t.Errorf("an event carries %d bytes of message, want at most 16 KiB and a note", len(e))
		}
	}
}
