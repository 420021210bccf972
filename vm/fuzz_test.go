package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.starlark.net/starlark"

	checker "github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// hugeCount matches what can ask for gigabytes in one Starlark operation
// ('a' * 999999999, [0] * (1 << 29)). go.starlark.net allocates such a
// repeat before anything can stop it, so the fuzzers leave those inputs
// out: a known limit, said in docs/security.md.
var hugeCount = regexp.MustCompile(`[0-9]{7,}|<<|0x|0o|0b|e[0-9]`)

// FuzzEval runs a flow whose fn step returns a fuzzed expression, whose
// condition and template are fuzzed expressions, through the VM: the run
// ends (within its timeout) and its result and events encode as JSON.
func FuzzEval(f *testing.F) {
	f.Add(`r.a.n + 1`, `b != None`, `inputs.v.a[1]`)
	f.Add(`[x * 2 for x in r.a.l]`, `visits("b") > 0 and status("a") == "succeeded"`, `json.encode(a)`)
	f.Add(`str(r.inputs)`, `re.match("t", a.s) != None`, `str(self)`)
	f.Add(`fail("no")`, `b.error`, `b`)
	f.Add(`{"k": r.b}`, `1/0`, `math.sqrt(2)`)
	f.Fuzz(func(t *testing.T, fnExpr, cond, tmpl string) {
		for _, s := range []string{fnExpr, cond, tmpl} {
			if len(s) > 200 || hugeCount.MatchString(s) || strings.ContainsAny(s, "\n\r#\\") {
				return
			}
		}
		src := fmt.Sprintf(`flow(inputs = {"v": {"a": [1, "x"], "b": None}})
a = step("a", fn = lambda r: {"n": 1, "s": "t", "l": [1, 2, 3]})
b = step("b", fn = lambda r: (%s))
c = step("c", flow = %s)
d = step("d")
chain(START, a, b)
edge(b, c, when = %s)
edge(b, d, on = "failure")
edge(b, END, when = "not (" + %s + ")")
edge(c, END, on = "always")
edge(d, END)
`, fnExpr, strconv.Quote("{{ "+tmpl+" }}.star"), strconv.Quote(cond), strconv.Quote(cond))
		g, err := lang.LoadSource(t.TempDir()+"/flow.star", []byte(src), lang.Options{MaxSteps: 100_000, MaxMemory: 64 << 20})
		if err != nil {
			return
		}
		if errs, _ := checker.Count(checker.Graph(g)); errs > 0 {
			return
		}
		var mu sync.Mutex
		var events [][]byte
		res, err := vm.Run(context.Background(), g, nil, vm.Options{Parallel: 1, EvalSteps: 10_000, Timeout: 5 * time.Second,
			OnEvent: func(ev *vm.Event) {
				b, err := ev.MarshalJSON()
				if err != nil {
					t.Errorf("event %s: %v", ev.Type, err)
				}
				mu.Lock()
				events = append(events, b)
				mu.Unlock()
			}})
		if err != nil {
			t.Fatalf("inputs: %v", err)
		}
		b, err := res.MarshalJSON()
		if err != nil || !json.Valid(b) {
			t.Fatalf("result does not encode: %v\n%s", err, b)
		}
		for _, e := range events {
			if !json.Valid(e) {
				t.Fatalf("event is not JSON: %s", e)
			}
		}
	})
}

var negZero = regexp.MustCompile(`-0([^.0-9]|$)`)

// FuzzResultJSON: any flow data, and any text in names and messages, in a
// result and an event encodes as valid JSON, and the result reads back.
func FuzzResultJSON(f *testing.F) {
	f.Add([]byte(`{"a": [1, 2.5, "\u2028", null], "b": {"c": true}}`), "step", "error \x1b[2J \"quoted\"")
	f.Add([]byte(`123456789012345678901234567890`), "名前", "\xff\xfe")
	f.Fuzz(func(t *testing.T, data []byte, name, msg string) {
		v, err := stdlib.FromJSON(data)
		if err != nil {
			v = starlark.String(data)
		}
		res := &vm.Result{RunID: name, Flow: name, File: msg, Status: vm.Failed, Output: v,
			Steps: []*vm.StepRecord{{Name: name, Status: vm.StepFailed, Output: v, Error: msg, Log: []string{msg}}}}
		b, err := res.MarshalJSON()
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("result is not JSON: %s", b)
		}
		// It reads back as the result it was: encoded again, the same
		// bytes (but where invalid UTF-8 became an escaped U+FFFD, which
		// reads back as the character itself, and a float -0, written
		// -0, which reads back as the int 0).
		back, err := vm.DecodeResult(b)
		if err != nil {
			t.Fatalf("DecodeResult(%s): %v", b, err)
		}
		again, err := back.MarshalJSON()
		if err != nil {
			t.Fatalf("the result read back does not encode: %v", err)
		}
		exact := utf8.Valid(data) && utf8.ValidString(name) && utf8.ValidString(msg) && !negZero.Match(b)
		if exact && !bytes.Equal(again, b) {
			t.Fatalf("read back and encoded again:\n%s\nwant\n%s", again, b)
		}
		ev := vm.Event{Type: vm.StepFinished, Step: name, Error: msg, Output: v, Message: msg}
		if b, err := ev.MarshalJSON(); err == nil && !json.Valid(b) {
			t.Fatalf("event is not JSON: %s", b)
		}
	})
}
