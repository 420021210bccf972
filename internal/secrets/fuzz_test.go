package secrets

import (
	"strings"
	"testing"
)

// FuzzMask: whatever the secrets and the text, and however the text is
// cut into writes, no registered secret or form of one survives, in
// Mask's result or a Writer's output, and neither is longer than the
// text. Mask leaves a text with no secret unchanged.
func FuzzMask(f *testing.F) {
	f.Add("SECRET123", "pw=é", "token SECRET123 and U0VDUkVUMTIz and SECRET%31%32%33", 3, 7)
	f.Add("x***", "SECRET", "xSECRET", 1, 2)
	f.Add("****", "a\nbcde", "***********", 2, 5)
	f.Add("p@ss w/rd&", "<tag>", `{"a":"p@ss w\/rd\u0026"} p%40ss+w%2Frd%26 p@ss%20w%2Frd%26`, 10, 30)
	f.Add("abcdefgh", "abcd", "abcdabcdefghabc", 4, 8)
	f.Fuzz(func(t *testing.T, s1, s2, text string, cut1, cut2 int) {
		var m Masker
		m.Add(s1)
		m.Add(s2)
		var values []string
		for _, v := range []string{s1, s2} {
			if len(v) >= MinLen {
				values = append(values, Forms(v)...)
			}
		}
		leaked := func(where, out string) {
			for _, v := range values {
				if len(v) > len(Mask) && strings.Contains(out, v) {
					t.Fatalf("%s: %q survives in %q (text %q)", where, v, out, text)
				}
			}
			if len(out) > len(text) {
				t.Fatalf("%s: %q is longer than the text %q", where, out, text)
			}
		}
		got := m.Mask(text)
		leaked("Mask", got)
		if !m.Contains(text) && got != text {
			t.Fatalf("Mask changed %q, which holds no secret, to %q", text, got)
		}
		if again := m.Mask(got); again != got {
			t.Fatalf("Mask is not idempotent: %q then %q", got, again)
		}

		n := len(text) + 1
		c1 := ((cut1 % n) + n) % n
		c2 := ((cut2 % n) + n) % n
		if c1 > c2 {
			c1, c2 = c2, c1
		}
		var out strings.Builder
		w := m.NewWriter(&out)
		for _, p := range []string{text[:c1], text[c1:c2], text[c2:]} {
			w.Write([]byte(p))
		}
		w.Flush()
		leaked("Writer", out.String())
	})
}
