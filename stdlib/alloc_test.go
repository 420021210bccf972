package stdlib

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// TextSize measures a shared value as str writes it, in time linear in the
// value: a million references to one string count a million times.
func TestTextSize(t *testing.T) {
	s := starlark.String(strings.Repeat("x", 1000))
	elems := make([]starlark.Value, 1_000_000)
	for i := range elems {
		elems[i] = s
	}
	shared := starlark.NewList(elems)
	if got := TextSize(shared, 1<<62); got < 1_000_000_000 {
		t.Errorf("TextSize of a million shared 1000-byte strings = %d, want at least 1e9", got)
	}
	// A set is measured as a list is (str of a list sharing it a
	// million times writes it a million times).
	set := new(starlark.Set)
	_ = set.Insert(s)
	if got := TextSize(starlark.NewList(slices.Repeat([]starlark.Value{set}, 1_000_000)), 1<<62); got < 1_000_000_000 {
		t.Errorf("TextSize of a million references to a set of a 1000-byte string = %d, want at least 1e9", got)
	}
	// Over the limit is all it says once it knows.
	if got := TextSize(shared, 10); got <= 10 {
		t.Errorf("TextSize with limit 10 = %d, want over 10", got)
	}
	// A list inside itself counts once, as "[...]".
	self := starlark.NewList(nil)
	self.Append(self)
	if got := TextSize(self, 1<<20); got > 100 {
		t.Errorf("TextSize of a list inside itself = %d", got)
	}
	// Against the real text of a small value, it is at least as big.
	v := starlark.NewList([]starlark.Value{starlark.String("ab"), starlark.MakeInt(12), starlark.Tuple{starlark.None, starlark.True}})
	d := starlark.NewDict(1)
	_ = d.SetKey(starlark.String("k"), v)
	for _, x := range []starlark.Value{v, d} {
		if got, text := TextSize(x, 1<<20), len(x.String()); got < int64(text) {
			t.Errorf("TextSize(%s) = %d, less than its text (%d bytes)", x, got, text)
		}
	}
}

// re.sub replaces all matches with ReplaceAllString and some with its own
// loop: both agree with the loop over every match it replaced.
func TestReSubSameAsBefore(t *testing.T) {
	old := func(re *regexp.Regexp, repl, s string, count int) string {
		var out []byte
		last := 0
		for _, loc := range re.FindAllStringSubmatchIndex(s, count) {
			out = append(out, s[last:loc[0]]...)
			out = re.ExpandString(out, repl, s, loc)
			last = loc[1]
		}
		return string(append(out, s[last:]...))
	}
	for _, pattern := range []string{"", "a*", "a", "(a)(b)?", `\b`, "^", "$", "(?m)^x", "é|", "x*?"} {
		for _, s := range []string{"", "abab", "banana", "xaax\nxa", "éaé"} {
			for _, repl := range []string{"", "-", "<$1>", "$$", "${2}${1}"} {
				re := regexp.MustCompile(pattern)
				for _, count := range []int{0, 1, 2} {
					args := starlark.Tuple{starlark.String(pattern), starlark.String(repl), starlark.String(s), starlark.MakeInt(count)}
					v, err := reSub(nil, starlark.NewBuiltin("re.sub", reSub), args, nil)
					if err != nil {
						t.Fatal(err)
					}
					n := count
					if n <= 0 {
						n = -1
					}
					if want := old(re, repl, s, n); string(v.(starlark.String)) != want {
						t.Errorf("re.sub(%q, %q, %q, %d) = %q, want %q", pattern, repl, s, count, v, want)
					}
				}
			}
		}
	}
}

// checkRepeat's arithmetic cannot overflow: a count beyond int64 and one
// that makes int64 overflow when multiplied are both too big.
func TestCheckRepeatOverflow(t *testing.T) {
	big := starlark.MakeInt(1).Lsh(80)
	for _, tc := range []struct {
		x, n starlark.Value
	}{
		{starlark.String("ab"), big},
		{starlark.String("ab"), starlark.MakeInt64(1 << 62)},
		{starlark.NewList([]starlark.Value{starlark.None}), starlark.MakeInt64(1 << 60)},
	} {
		if err := checkRepeat(tc.x, tc.n); err == nil || !strings.Contains(err.Error(), "at most 64 MiB") {
			t.Errorf("%s * %s: %v", tc.x, tc.n, err)
		}
	}
	if err := checkRepeat(starlark.String(strings.Repeat("x", 1024)), starlark.MakeInt(MaxValueBytes/1024)); err != nil {
		t.Errorf("exactly the bound: %v", err)
	}
	if err := checkRepeat(starlark.String(strings.Repeat("x", 1024)), starlark.MakeInt(MaxValueBytes/1024+1)); err == nil {
		t.Error("one over the bound: no error")
	}
}

// Below the bound the length-bounded builtins give what the universe's do,
// of codepoints and of lists too; codepoints counts codepoints, not bytes.
func TestLengthBoundedAllows(t *testing.T) {
	src := `
s = "é" * 300000
out = [list("éa".codepoints()), tuple("éa".codepoint_ords()), sorted("ba".codepoints()), enumerate([7, 8]), zip([1], (2, 3)),
       len(list(s.codepoints())), len(enumerate([0] * 100000)), len(zip([0] * 100000, range(200000)))]
`
	pre := starlark.StringDict{}
	for k, v := range SafeBuiltins() {
		pre[k] = v
	}
	g, err := starlark.ExecFileOptions(&syntax.FileOptions{}, &starlark.Thread{}, "t.star", src, pre)
	if err != nil {
		t.Fatal(err)
	}
	want := `[["é", "a"], (233, 97), ["a", "b"], [(0, 7), (1, 8)], [(1, 2)], 300000, 100000, 100000]`
	if got := g["out"].String(); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if n := codepoints(starlark.String("é")); n != -1 {
		t.Errorf("codepoints of a string = %d, want -1", n)
	}
	// codepoints reads go.starlark.net's unexported field by reflection:
	// if an upgrade renames it, this fails here rather than the bound
	// quietly not applying.
	for _, method := range []string{"codepoints", "codepoint_ords"} {
		m, err := starlark.String("é𝄞a").Attr(method)
		if err != nil {
			t.Fatal(err)
		}
		v, err := starlark.Call(&starlark.Thread{}, m, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := codepoints(v); n != 3 {
			t.Errorf("codepoints of s.%s() = %d, want 3", method, n)
		}
	}
}

// quotedString is at least what each quoting writes, for strings of every
// kind of character, and exact for what it counts exactly (all but
// non-printable characters beyond ASCII in repr).
func TestQuotedString(t *testing.T) {
	encode := jsonModule.Members["encode"].(*starlark.Builtin)
	for _, s := range []string{
		"", "plain", `"quoted" \back\`, "<a href='x'>&amp;</a>", "\x00\x01\x07\x0b\x1f\x7f", "\b\f\n\r\t",
		"\u2028\u2029", "\xff\xfe", "a\xc3", "日本語 🧶", "é<\x00", strings.Repeat("<", 100), "mixed \x00 \u2028 \xff < é \\ \"",
	} {
		v := starlark.String(s)
		starJSON, err := starlark.Call(&starlark.Thread{}, encode, starlark.Tuple{v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			quote int
			text  string
		}{
			{QuoteRepr, v.String()},
			{QuoteStarJSON, string(starJSON.(starlark.String))},
			{QuoteJSON, string(AppendJSONString(nil, s))},
		} {
			if got := quotedString(s, tc.quote); got != int64(len(tc.text)) {
				t.Errorf("quotedString(%q, %d) = %d, want %d (%s)", s, tc.quote, got, len(tc.text), tc.text)
			}
		}
	}
}

// FuzzQuotedString: for any string, quotedString is exactly what
// encoding/json (AppendJSONString) and go.starlark.net's json.encode write,
// and what repr writes when every character beyond ASCII is printable
// (else at most that).
func FuzzQuotedString(f *testing.F) {
	for _, s := range []string{"", "a<b", "\x00\x7f", "\u2028", "\xff", "é\t", "\U000e0001", `"\`} {
		f.Add(s)
	}
	encode := jsonModule.Members["encode"].(*starlark.Builtin)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := quotedString(s, QuoteJSON), len(AppendJSONString(nil, s)); got != int64(want) {
			t.Fatalf("QuoteJSON of %q: %d, want %d", s, got, want)
		}
		v, err := starlark.Call(&starlark.Thread{}, encode, starlark.Tuple{starlark.String(s)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := quotedString(s, QuoteStarJSON), len(v.(starlark.String)); got != int64(want) {
			t.Fatalf("QuoteStarJSON of %q: %d, want %d (%s)", s, got, want, v)
		}
		repr := int64(len(starlark.String(s).String()))
		got := quotedString(s, QuoteRepr)
		printable := true
		for _, r := range s {
			if r >= utf8.RuneSelf && r != utf8.RuneError && !unicode.IsPrint(r) && r != '\u2028' && r != '\u2029' {
				printable = false
			}
		}
		if printable && got != repr || !printable && got > repr {
			t.Fatalf("QuoteRepr of %q: %d, repr writes %d", s, got, repr)
		}
	})
}
