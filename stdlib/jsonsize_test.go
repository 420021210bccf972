package stdlib

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

var (
	plainDecode   = starjson.Module.Members["decode"].(*starlark.Builtin)
	checkedDecode = jsonModule.Members["decode"].(*starlark.Builtin)
)

func decodeWith(fn *starlark.Builtin, s string, kwargs ...starlark.Tuple) (string, error) {
	th := &starlark.Thread{}
	v, err := starlark.Call(th, fn, starlark.Tuple{starlark.String(s)}, kwargs)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s", v.Type(), v), nil
}

// list makes a JSON array of n copies of elem.
func list(elem string, n int) string {
	return "[" + strings.Repeat(elem+",", n-1) + elem + "]"
}

// A document whose decoded value would be over the bound is an error naming
// what it would make, where the estimate passed the bound, and the bound,
// before anything is decoded; for json.decode and FromJSON alike, and
// whatever default json.decode is given (issue 9).
func TestJSONTooBig(t *testing.T) {
	SkipBigUnderRace(t)
	for _, tc := range []struct {
		name, doc string
		star      string // json.decode's error, "" for none
		flow      string // FromJSON's
	}{
		// 600 KB: 200,000 dicts of 528 bytes (with their slots); as flow
		// data 80 bytes each, so 1,000,000 of them for FromJSON.
		{"empty objects", list("{}", 200000), "about 101.0 MiB (past the bound at byte 381302)", ""},
		{"more empty objects", list("{}", 1000000), "about 504.0 MiB (past the bound at byte 381302)", "about 76.8 MiB (past the bound at byte 2516582)"},
		{"small objects", list(`{"a":1}`, 200000), "about 104.2 MiB (past the bound at byte 985082)", ""},
		{"nested lists", list(list("[]", 10), 300000), "about 1", "about 1"},
		{"in an object", `{"k": ` + list("{}", 1000000) + `}`, "about 504.0 MiB (past the bound at byte 381305)", "about 76.8 MiB (past the bound at byte 2516585)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeWith(checkedDecode, tc.doc)
			wantTooBig(t, "json.decode", err, tc.star)
			_, err = decodeWith(checkedDecode, tc.doc, starlark.Tuple{starlark.String("default"), starlark.None})
			wantTooBig(t, "json.decode with default", err, tc.star)
			_, err = FromJSON([]byte(tc.doc))
			wantTooBig(t, "FromJSON", err, tc.flow)
			if tc.flow != "" && !errors.Is(err, ErrTooBig) {
				t.Errorf("FromJSON: %v is not ErrTooBig", err)
			}
			if err2 := CheckJSON([]byte(tc.doc)); fmt.Sprint(err2) != fmt.Sprint(err) {
				t.Errorf("CheckJSON: %v, want FromJSON's %v", err2, err)
			}
		})
	}
}

func wantTooBig(t *testing.T, what string, err error, frag string) {
	t.Helper()
	if frag == "" {
		if err != nil {
			t.Errorf("%s: %v, want no error", what, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "decoding this JSON would make "+frag) || !strings.HasSuffix(err.Error(), "; one value may take at most 64 MiB") {
		t.Errorf("%s: %v, want an error with %q and the bound", what, err, frag)
	}
}

// The estimate stops at the first byte the decoder refuses: a document that
// is broken before its value gets big has the decoder's own error (and
// json.decode's default), not the size error.
func TestJSONTooBigAfterAnError(t *testing.T) {
	for _, broken := range []string{`[{} {}, `, `[{}, {"a" 1}, `, `[{}, tru, `, `[{}, 01, `, `[{}, "\q", `, "[{}, \"\xc3\x01\", ", `{[1]: 2, "k": [`, `[1,]`, `[-]`} {
		doc := broken + list("{}", 300000) + "]"
		if _, err := decodeWith(checkedDecode, doc); err == nil || strings.Contains(err.Error(), "would make") {
			t.Errorf("json.decode(%q...): %v, want the decoder's error", broken, err)
		}
		got, err := decodeWith(checkedDecode, doc, starlark.Tuple{starlark.String("default"), starlark.String("dflt")})
		if err != nil || got != `string "dflt"` {
			t.Errorf("json.decode(%q..., default): %s, %v, want the default", broken, got, err)
		}
	}
}

// The estimate is about what decoding keeps in memory: for each shape it is
// within a fraction of the measured heap (BenchmarkJSONDecode reports the
// figures). This checks only its arithmetic on small documents, which the
// heap is too noisy to.
func TestEstimateJSON(t *testing.T) {
	for _, tc := range []struct {
		doc        string
		star, flow int64
	}{
		{`1`, 0, 0},
		{`1.5`, 8, 16},
		{`12345678901`, 72, 72},
		{`"abc"`, 19, 27},
		{`"\u00e9\n\ud83e\udd76"`, 16 + 2 + 1 + 4, 24 + 7},
		{`[]`, 32, 32},
		{`[1, 2, 3]`, 32 + 4*16, 32 + 4*16},
		{`{}`, 512, 64},
		{`{"a": 1}`, 512 + 17, 64 + 2*16 + 9},
		{list("0", 9), 32 + 16*16, 32 + 16*16},
		{`{"k": [{}]}`, 512 + 17 + 32 + 16 + 512, 64 + 32 + 9 + 32 + 16 + 64},
		{`[1, `, 32 + 16, 32 + 16}, // as far as it is valid
	} {
		if got, _ := estimateJSON(tc.doc, &starlarkCosts); got != tc.star {
			t.Errorf("estimate of %s for json.decode: %d, want %d", tc.doc, got, tc.star)
		}
		if got, _ := estimateJSON(tc.doc, &flowDataCosts); got != tc.flow {
			t.Errorf("estimate of %s for FromJSON: %d, want %d", tc.doc, got, tc.flow)
		}
	}
}

// jsonCorpus is JSON of every shape, valid and not, for the differential
// tests: hand-written cases, then random documents.
func jsonCorpus() []string {
	docs := []string{
		``, ` `, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.5`, `1e400`, `-1e-400`, `1.2.3`, `1e`, `+1`,
		`123456789012345678901234567890`, `-2147483648`, `2147483648`, `"abc"`, `"a\"b"`, `"\u00e9\ud83e\udd76"`, `"\ud800"`,
		`"\q"`, `"\u12"`, "\"\x01\"", "\"\x01\\n\"", "\"caf\xc3\xa9\x01\"", "\"\xff\"", `"unclosed`, `"\`,
		`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2,3]`, `[[[]]]`, `[[[`, `]`, `{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`,
		`{"a":1,"a":2}`, `{1:2}`, `{[1]:2}`, `{"a":{"b":[1,{"c":null}]}}`, `{"a":}`, `{"a"`, `[1] x`, `[1]  `, " \t\n\r[1]\r\n",
		`[1,{}]garbage`, `{"k":"v"}{"k":"v"}`, strings.Repeat("[", 64) + strings.Repeat("]", 64),
		strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64),
		`{"s": "[[[[[[[[\"[[[[[", "l": [[[1]]]}`,
	}
	r := rand.New(rand.NewPCG(1, 2))
	atoms := []string{`0`, `-1`, `3.25`, `1e5`, `99999999999`, `"s"`, `"\n\u00e9"`, `true`, `null`, `""`}
	var gen func(depth int) string
	gen = func(depth int) string {
		switch k := r.IntN(10); {
		case depth > 5 || k < 4:
			return atoms[r.IntN(len(atoms))]
		case k < 7:
			var elems []string
			for range r.IntN(12) {
				elems = append(elems, gen(depth+1))
			}
			return "[" + strings.Join(elems, ", ") + "]"
		default:
			var members []string
			for i := range r.IntN(12) {
				members = append(members, fmt.Sprintf(`"k%d": %s`, r.IntN(i+1), gen(depth+1)))
			}
			return "{" + strings.Join(members, ",") + "}"
		}
	}
	for range 300 {
		d := gen(0)
		docs = append(docs, d)
		if len(d) > 2 { // and broken somewhere
			i := r.IntN(len(d))
			docs = append(docs, d[:i], d[:i]+"x"+d[i:])
		}
	}
	return docs
}

// Below the bound, Skein's json.decode gives what go.starlark.net's does:
// the same value (type and text) or the same error, with and without a
// default.
func TestJSONDecodeDifferential(t *testing.T) {
	dflt := starlark.Tuple{starlark.String("default"), starlark.String("dflt")}
	for _, doc := range jsonCorpus() {
		if strings.Count(doc, "[")+strings.Count(doc, "{") > 64 {
			continue // go.starlark.net's has no nesting bound
		}
		want, wantErr := decodeWith(plainDecode, doc)
		got, gotErr := decodeWith(checkedDecode, doc)
		if diff := cmp.Diff(fmt.Sprint(want, wantErr), fmt.Sprint(got, gotErr)); diff != "" {
			t.Errorf("json.decode(%q) (-go.starlark.net +skein):\n%s", doc, diff)
		}
		want, wantErr = decodeWith(plainDecode, doc, dflt)
		got, gotErr = decodeWith(checkedDecode, doc, dflt)
		if diff := cmp.Diff(fmt.Sprint(want, wantErr), fmt.Sprint(got, gotErr)); diff != "" {
			t.Errorf("json.decode(%q, default) (-go.starlark.net +skein):\n%s", doc, diff)
		}
	}
}

// The walk refuses no document the decoder accepts: where it stops early,
// the decoder fails too (so a size error never replaces a value).
func TestJSONWalkNotStricter(t *testing.T) {
	SkipBigUnderRace(t)
	for _, doc := range jsonCorpus() {
		walkRefuses(t, doc)
	}
}

func walkRefuses(t *testing.T, doc string) {
	w := jsonWalk[string]{s: doc, c: &starlarkCosts, limit: 1 << 30, bound: 1 << 62, over: -1}
	w.run()
	if w.complete {
		return
	}
	if got, err := decodeWith(plainDecode, doc); err == nil {
		t.Errorf("the walk stops at byte %d of %q, which decodes to %s", w.i, doc, got)
	}
}

// FuzzJSONDecodeDifferential: for any text that Skein's json.decode does
// not refuse for its nesting or size, it gives what go.starlark.net's
// gives, value or error; and where the estimate's walk stops early, the
// decoder fails.
func FuzzJSONDecodeDifferential(f *testing.F) {
	SkipBigUnderRace(f)
	for _, doc := range jsonCorpus() {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, gotErr := decodeWith(checkedDecode, doc)
		var deep *jsonDeep
		if errors.As(gotErr, &deep) || errors.Is(gotErr, ErrTooBig) || errors.Is(gotErr, ErrIntDigits) {
			return // go.starlark.net's may not survive it
		}
		want, wantErr := decodeWith(plainDecode, doc)
		if fmt.Sprint(want, wantErr) != fmt.Sprint(got, gotErr) {
			t.Fatalf("json.decode(%q): go.starlark.net %s %v, skein %s %v", doc, want, wantErr, got, gotErr)
		}
		walkRefuses(t, doc)
	})
}

// What Skein wrote itself decodes again whatever its size once decoded:
// a fn step may return one dict shared 850,000 times, which is 2.5 MB of
// JSON and 850,000 dicts when read back from the store.
func TestFromStoredJSON(t *testing.T) {
	SkipBigUnderRace(t)
	doc := []byte(list("{}", 850000))
	if _, err := FromJSON(doc); !errors.Is(err, ErrTooBig) {
		t.Fatalf("FromJSON: %v, want the size error", err)
	}
	v, err := FromStoredJSON(doc)
	if err != nil || starlark.Len(v) != 850000 {
		t.Fatalf("FromStoredJSON: %v", err)
	}
	if _, err := FromStoredJSON([]byte(strings.Repeat("[", 100))); err == nil || !strings.Contains(err.Error(), "nested more than 64 deep") {
		t.Errorf("FromStoredJSON of deep JSON: %v", err)
	}
}

// Data's estimate of a value is at most the estimate of its JSON read back
// (which counts the slack of lists grown by append), and shared containers
// count as often as they are shared.
func TestDataSize(t *testing.T) {
	for _, doc := range jsonCorpus() {
		if strings.Contains(doc, "1e5") || strings.Contains(doc, "e-400") {
			continue // a float JSON writes as an int, which takes less
		}
		v, err := FromJSON([]byte(doc))
		if err != nil {
			continue
		}
		b, err := AppendJSON(nil, v, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		est, _ := estimateJSON(b, &flowDataCosts)
		if got := dataSize(v, 0, 1<<62); got > est {
			t.Errorf("dataSize of %s = %d, over the estimate of its JSON %d", b, got, est)
		}
	}
	m := NewMap(nil, nil)
	inner := starlark.NewList([]starlark.Value{m, m})
	outer := starlark.Tuple{inner, inner, inner}
	if got, want := dataSize(outer, 0, 1<<62), int64(32+3*16+3*(32+2*16+2*64)); got != want {
		t.Errorf("dataSize of shared lists and maps = %d, want %d", got, want)
	}
	self := starlark.NewList(nil)
	self.Append(self)
	if got := dataSize(self, 0, 1<<62); got > 100*(32+16) {
		t.Errorf("dataSize of a list inside itself = %d, want it cut at the nesting bound", got)
	}
	if _, err := Data(starlark.NewList(slicesRepeat(starlark.NewList(slicesRepeat(starlark.NewDict(0), 2000)), 4000))); err == nil ||
		err.Error() != "copying this list as flow data would make more than 64 MiB, the most one value may take" {
		t.Errorf("Data of 8 million shared dicts: %v", err)
	}
}

func slicesRepeat(v starlark.Value, n int) []starlark.Value {
	out := make([]starlark.Value, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestDataSizeContainers: every container dataSize walks counts what it
// shares as often as it is shared and stops once over the budget: a
// tuple as a list does, a dict, a Map and a struct by their values. Data
// then refuses each, naming its type, before copying anything.
func TestDataSizeContainers(t *testing.T) {
	// 2000 empty dicts shared 4000 times: 8 million dicts to copy.
	inner := starlark.NewList(slicesRepeat(starlark.NewDict(0), 2000))
	many := slicesRepeat(inner, 4000)
	keys := make([]string, len(many))
	dict := starlark.NewDict(len(many))
	kw := make(starlark.StringDict, len(many))
	for i := range many {
		keys[i] = fmt.Sprintf("k%d", i)
		dict.SetKey(starlark.String(keys[i]), inner)
		kw[keys[i]] = inner
	}
	for _, v := range []starlark.Value{
		starlark.NewList(many), starlark.Tuple(many), dict, NewMap(keys, many), starlarkstruct.FromStringDict(starlarkstruct.Default, kw),
	} {
		if got := dataSize(v, 0, MaxValueBytes); got <= MaxValueBytes {
			t.Errorf("dataSize of a %s of 8 million shared dicts = %d, want over %d", v.Type(), got, MaxValueBytes)
		}
		want := "copying this " + v.Type() + " as flow data would make more than 64 MiB, the most one value may take"
		if _, err := Data(v); err == nil || err.Error() != want {
			t.Errorf("Data of a %s of 8 million shared dicts: %v, want %q", v.Type(), err, want)
		}
	}
	// A tuple takes what the list of the same elements takes.
	elems := []starlark.Value{starlark.String("ab"), starlark.MakeInt(1 << 40), starlark.Float(0.5), NewMap([]string{"k"}, []starlark.Value{starlark.None})}
	if l, tu := dataSize(starlark.NewList(elems), 0, 1<<62), dataSize(starlark.Tuple(elems), 0, 1<<62); l != tu {
		t.Errorf("dataSize of a list = %d, of the tuple of its elements = %d", l, tu)
	}
	// What is not flow data inside a tuple is named by Data.
	if _, err := Data(starlark.Tuple{starlark.MakeInt(1), starlark.Float(math.Inf(1))}); err == nil || err.Error() != "float +inf is not representable in JSON" {
		t.Errorf("Data of a tuple holding +inf: %v", err)
	}
}

// TestSmallWithinBounds: the values Data converts without measuring them
// (at most smallNodes values, smallText bytes of strings and keys) are
// within both of its bounds, by far, however their strings escape and
// however their containers are shaped; and one just past the budget is
// measured, and refused when its text is too big though it has few values.
func TestSmallWithinBounds(t *testing.T) {
	// Every byte of every string and key escapes to 6 in JSON.
	str := func(i, n int) starlark.String {
		s := fmt.Sprintf("%d", i)
		return starlark.String(s + strings.Repeat("<", n-len(s)))
	}
	per := smallText / (2 * (smallNodes - 1))
	wide := starlark.NewDict(smallNodes - 1)
	for i := range smallNodes - 1 {
		wide.SetKey(str(i, per), str(i, per))
	}
	empties := make([]starlark.Value, smallNodes-1)
	for i := range empties {
		empties[i] = starlark.NewDict(0)
	}
	kw := starlark.StringDict{}
	for i := range (smallNodes - 1) / 2 {
		kw[string(str(i, per))] = starlark.NewList([]starlark.Value{str(i, per)})
	}
	big := starlark.MakeInt64(math.MaxInt64)
	for _, v := range []starlark.Value{
		wide,
		starlark.NewList(empties),
		starlarkstruct.FromStringDict(starlarkstruct.Default, kw),
		starlark.Tuple(slicesRepeat(big, smallNodes-1)),
		starlark.String(strings.Repeat("\x01", smallText)),
	} {
		small := smallBudget{nodes: smallNodes, text: smallText}
		got, err := data(v, 0, &small)
		if err != nil {
			t.Fatalf("data of a small %s: %v", v.Type(), err)
		}
		if size := QuotedSize(v, 1<<62, QuoteJSON); size > MaxValueBytes/8 {
			t.Errorf("a small %s writes %d bytes of JSON, near the bound", v.Type(), size)
		}
		if size := dataSize(v, 0, 1<<62); size > MaxValueBytes/8 {
			t.Errorf("a small %s takes %d bytes as flow data, near the bound", v.Type(), size)
		}
		if want, _ := data(v, 0, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("a small %s converts to %v, measured to %v", v.Type(), got, want)
		}
	}

	// Past the budget: 65 values, one 1 MiB string of escapes shared by
	// 64 of them, 384 MiB of JSON.
	shared := starlark.String(strings.Repeat("\x01", 1<<20))
	for _, v := range []starlark.Value{
		starlark.NewList(slicesRepeat(shared, 64)),
		NewMap([]string{"k"}, []starlark.Value{starlark.Tuple(slicesRepeat(shared, 64))}),
		starlark.String(strings.Repeat("\x01", MaxValueBytes/6+1)),
		starlark.Tuple(slicesRepeat(starlark.NewList(slicesRepeat(starlark.None, 1000)), smallNodes)),
	} {
		small := smallBudget{nodes: smallNodes, text: smallText}
		if _, err := data(v, 0, &small); err != errNotSmall {
			t.Errorf("data of a %s past the budget: %v, want errNotSmall", v.Type(), err)
		}
	}
	for _, v := range []starlark.Value{
		starlark.NewList(slicesRepeat(shared, 64)),
		NewMap([]string{"k"}, []starlark.Value{starlark.Tuple(slicesRepeat(shared, 64))}),
	} {
		if _, err := Data(v); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Data of a %s of 64 shared 1 MiB strings of escapes: %v, want it too large", v.Type(), err)
		}
	}
}
