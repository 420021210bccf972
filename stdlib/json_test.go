package stdlib_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/skeinlang/skein/stdlib"
)

// hostile are strings that JSON encoders get wrong: control characters,
// quotes and backslashes, HTML characters, line and paragraph separators,
// invalid UTF-8 and astral runes.
var hostile = []string{
	"", "plain", `"quoted"`, `back\slash`, "\x00\x01\x1f\x7f", "\b\f\n\r\t",
	"<script>&amp;</script>", "\u2028\u2029", "\xff\xfe", "a\xc3", "\xed\xa0\x80",
	"日本語", "🧶 skein", "\ufffd", "mixed \x00 \u2028 \xff < é",
}

// TestAppendJSON checks that AppendJSON writes the very bytes of
// json.Marshal and json.MarshalIndent of ToGo, for data of every kind.
func TestAppendJSON(t *testing.T) {
	var values []starlark.Value
	for _, s := range hostile {
		values = append(values, starlark.String(s))
	}
	big := starlark.MakeInt64(math.MaxInt64)
	big = big.Mul(starlark.MakeInt(1000))
	d := starlark.NewDict(2)
	d.SetKey(starlark.String("z<"), starlark.MakeInt(1))
	d.SetKey(starlark.String("a\xff"), starlark.NewList([]starlark.Value{starlark.None, starlark.True}))
	values = append(values,
		starlark.None, starlark.True, starlark.False, starlark.MakeInt(0), starlark.MakeInt(-42), big,
		starlark.Float(0), starlark.Float(1.5), starlark.Float(-1e-7), starlark.Float(1e21), starlark.Float(123456789.125),
		starlark.Float(1e-6), starlark.Float(math.SmallestNonzeroFloat64), starlark.Float(math.MaxFloat64),
		starlark.NewList(nil), starlark.Tuple{}, starlark.NewDict(0), stdlib.NewMap(nil, nil),
		starlark.NewList([]starlark.Value{starlark.MakeInt(1), starlark.String("\n"), starlark.NewList(nil)}),
		starlark.Tuple{starlark.Tuple{starlark.Float(2.5)}, d},
		d,
		stdlib.NewMap([]string{"b", "a", "&"}, []starlark.Value{starlark.MakeInt(2), d, starlark.NewList([]starlark.Value{stdlib.NewMap(nil, nil)})}),
		starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{"x": starlark.MakeInt(1), "y": starlark.String("\u2028")}),
		starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{}),
	)
	for _, v := range values {
		g, err := stdlib.ToGo(v)
		if err != nil {
			t.Fatalf("ToGo(%s): %v", v, err)
		}
		want, _ := json.Marshal(g)
		got, err := stdlib.AppendJSON([]byte("prefix"), v, "", 0)
		if err != nil {
			t.Fatalf("AppendJSON(%s): %v", v, err)
		}
		if diff := cmp.Diff(string(want), strings.TrimPrefix(string(got), "prefix")); diff != "" {
			t.Errorf("AppendJSON(%s) compact (-json.Marshal +AppendJSON):\n%s", v, diff)
		}
		want, _ = json.MarshalIndent(g, "", "  ")
		got, _ = stdlib.AppendJSON(nil, v, "  ", 0)
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("AppendJSON(%s) indented (-json.MarshalIndent +AppendJSON):\n%s", v, diff)
		}
		// Nested one level deep, as in a member of an indented object.
		want, _ = json.MarshalIndent(stdlib.Object{{Name: "v", Value: g}}, "", "  ")
		got = append([]byte("{\n  \"v\": "), nil...)
		got, _ = stdlib.AppendJSON(got, v, "  ", 1)
		got = append(got, "\n}"...)
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("AppendJSON(%s) at level 1 (-json.MarshalIndent +AppendJSON):\n%s", v, diff)
		}
	}
}

// TestAppendJSONErrors checks that what ToGo refuses, AppendJSON refuses
// with the same error, leaving dst as it was.
func TestAppendJSONErrors(t *testing.T) {
	self := starlark.NewList(nil)
	self.Append(self)
	for _, v := range []starlark.Value{
		starlark.Float(math.Inf(1)),
		starlark.NewList([]starlark.Value{starlark.Float(math.NaN())}),
		self,
		starlark.NewBuiltin("f", nil),
	} {
		_, want := stdlib.ToGo(v)
		got, err := stdlib.AppendJSON([]byte("x"), v, "", 0)
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("AppendJSON(%s): error %v, want %v", v.Type(), err, want)
		}
		if string(got) != "x" {
			t.Errorf("AppendJSON(%s) left %q, want dst unchanged", v.Type(), got)
		}
	}
	d := starlark.NewDict(1)
	d.SetKey(starlark.MakeInt(1), starlark.None)
	if _, err := stdlib.AppendJSON(nil, d, "", 0); err == nil {
		t.Error("AppendJSON of a dict with an int key: no error")
	}
}

// FuzzAppendJSONString checks string escaping against encoding/json on
// arbitrary bytes; the result must also decode back to what json.Marshal
// makes of the string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got := stdlib.AppendJSONString(nil, s)
		if string(got) != string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("AppendJSONString(%q) = %s: not valid JSON", s, got)
		}
	})
}
