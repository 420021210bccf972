package stdlib_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/stdlib"
)

func module(name, fn string) *starlark.Builtin {
	m, _ := stdlib.Modules()[name].(starlark.HasAttrs)
	v, _ := m.Attr(fn)
	return v.(*starlark.Builtin)
}

func call(t *testing.T, b *starlark.Builtin, args ...starlark.Value) (starlark.Value, error) {
	th := &starlark.Thread{}
	th.SetMaxExecutionSteps(100_000)
	return starlark.Call(th, b, args, nil)
}

// FuzzJSONModule: json.decode of any text gives a value or an error, never
// a crash or a stack overflow; what it decodes, json.encode encodes, and
// that decodes again to the same text.
func FuzzJSONModule(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x", null, true]}`, `[[[[]]]]`, `"\u00e9\\"`, strings.Repeat("[", 100), `{"a": 1, "a": 2}`, `1e400`, `-0`} {
		f.Add(s)
	}
	decode, encode := module("json", "decode"), module("json", "encode")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := call(t, decode, starlark.String(s))
		if err != nil {
			return
		}
		enc, err := call(t, encode, v)
		if err != nil {
			return // e.g. a float json cannot hold
		}
		v2, err := call(t, decode, enc)
		if err != nil {
			t.Fatalf("json.decode(json.encode(%q)) = %v", s, err)
		}
		enc2, err := call(t, encode, v2)
		if err != nil || enc2 != enc {
			t.Fatalf("encoding is not stable: %s then %s (%v)", enc, enc2, err)
		}
	})
}

// FuzzInputsFile: any bytes as an inputs file give flow data or an error;
// the data converts to JSON that reads back the same.
func FuzzInputsFile(f *testing.F) {
	for _, s := range []string{`{"a": 1, "b": [true, null], "c": {"d": "e"}}`, `{"a": 1, "a": 2}`, `[1]`, `{"n": 123456789012345678901234567890}`, `{"f": 1.5e300}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := stdlib.FromJSONUnique(data)
		if err != nil {
			return
		}
		g, err := stdlib.ToGo(v)
		if err != nil {
			t.Fatalf("decoded data does not convert back: %v", err)
		}
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatalf("decoded data does not encode: %v", err)
		}
		v2, err := stdlib.FromJSONUnique(b)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", b, err)
		}
		// Encoding is stable from then on (a float may come back as an
		// int when JSON writes it without a point: 1e17 is 100000000000000000).
		g2, err := stdlib.ToGo(v2)
		if err != nil {
			t.Fatal(err)
		}
		if b2, _ := json.Marshal(g2); string(b2) != string(b) {
			t.Fatalf("round trip changed %s into %s", b, b2)
		}
	})
}

// FuzzRe: any pattern, replacement and text give a result or an error from
// every function of re.
func FuzzRe(f *testing.F) {
	f.Add(`(\w+)@(\w+)`, `${2} at ${1}`, "me@host you@there")
	f.Add(`a*`, ``, "baaac")
	f.Add(`(`, `x`, "y")
	f.Add(`(?i)É+`, `$0$0`, "ééÉ")
	fns := []*starlark.Builtin{module("re", "match"), module("re", "search"), module("re", "findall"), module("re", "split")}
	sub := module("re", "sub")
	f.Fuzz(func(t *testing.T, pattern, repl, s string) {
		for _, fn := range fns {
			call(t, fn, starlark.String(pattern), starlark.String(s))
		}
		call(t, sub, starlark.String(pattern), starlark.String(repl), starlark.String(s))
	})
}
