package secrets

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

func TestMask(t *testing.T) {
	const v = "s3cr3t/T0ken+=&?"
	var m Masker
	if !m.Add(v) {
		t.Fatal("Add refused a 16-byte value")
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	js, _ := json.Marshal("x<" + v + ">")
	for _, tc := range []struct{ in, want string }{
		{"token=" + v + "\n", "token=***\n"},
		{v + v, "******"},
		{b64(v), "***"},
		{base64.RawURLEncoding.EncodeToString([]byte(v)), "***"},
		{url.QueryEscape(v), "***"},
		{"https://h/p?t=" + url.QueryEscape(v) + "&x=1", "https://h/p?t=***&x=1"},
		{url.PathEscape(v), "***"},
		{strings.ToLower(url.QueryEscape(v)), "s3cr3t%2ft0ken%2b%3d%26%3f"}, // lower-cased letters too: not an escape of v
		{string(js), `"x\u003c***\u003e"`},
		{"nothing here", "nothing here"},
	} {
		if got := m.Mask(tc.in); got != tc.want {
			t.Errorf("Mask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Inside a longer base64 text, at every alignment, no more than the
	// characters that also encode the neighbouring bytes are left.
	for pre := 0; pre < 3; pre++ {
		enc := b64(strings.Repeat("a", pre) + "user:" + v + ":tail")
		got := m.Mask(enc)
		if !strings.Contains(got, Mask) {
			t.Errorf("base64 at alignment %d: %q not masked: %q", pre, enc, got)
		}
		if len(enc)-len(got) < len(b64(v))-4-len(Mask) {
			t.Errorf("base64 at alignment %d: only %d bytes masked of %q", pre, len(enc)-len(got), enc)
		}
	}
}

// A value under MinLen is refused; a value of several lines is masked
// whole and line by line.
func TestMaskShortAndLines(t *testing.T) {
	var m Masker
	if m.Add("abc") || !m.Empty() {
		t.Fatal("Add accepted a 3-byte value")
	}
	if got := m.Mask("abc"); got != "abc" {
		t.Fatalf("Mask = %q", got)
	}
	m.Add("-----BEGIN-----\nline-one\nline-two\n-----END-----")
	if got := m.Mask("got line-two here"); got != "got *** here" {
		t.Fatalf("Mask = %q", got)
	}
	var nilM *Masker
	if nilM.Mask("x") != "x" || !nilM.Empty() || nilM.Contains("x") {
		t.Fatal("a nil Masker masks")
	}
}

// A secret next to a mask may make another one: masking goes on until
// none is left.
func TestMaskStarred(t *testing.T) {
	var m Masker
	m.Add("x***")
	m.Add("SECRET")
	if got := m.Mask("xSECRET"); got != Mask {
		t.Fatalf("Mask = %q, want %q", got, Mask)
	}
	var n Masker
	n.Add("****")
	if got := n.Mask(strings.Repeat("*", 11)); got != Mask {
		t.Fatalf("Mask = %q", got)
	}
}

// A secret written in pieces, split anywhere, is masked whole in a
// stream; what cannot be the start of one is not held back; Flush
// writes the rest.
func TestWriterPieces(t *testing.T) {
	var m Masker
	m.Add("sk-LIVE-SECRET")
	m.Add("other-KEY-9")
	text := "a sk-LIVE-SECRET b other-KEY-9 c " + base64.StdEncoding.EncodeToString([]byte("sk-LIVE-SECRET")) + " sk-LIVE-SECRE"
	want := "a *** b *** c *** sk-LIVE-SECRE"
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for cut2 := cut1; cut2 <= len(text); cut2 += 3 {
			var out strings.Builder
			w := m.NewWriter(&out)
			for _, p := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
				if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if strings.Contains(out.String(), "SECRET") {
				t.Fatalf("cuts %d, %d: a secret leaked before the flush: %q", cut1, cut2, out.String())
			}
			w.Flush()
			if out.String() != want {
				t.Fatalf("cuts %d, %d: got %q, want %q", cut1, cut2, out.String(), want)
			}
		}
	}
	// With nothing registered, a write passes straight through.
	var none Masker
	var out strings.Builder
	w := none.NewWriter(&out)
	w.Write([]byte("abc"))
	if out.String() != "abc" {
		t.Fatalf("got %q", out.String())
	}
}

// Values added while a writer is in use are masked from the next write.
func TestWriterLateAdd(t *testing.T) {
	var m Masker
	var out strings.Builder
	w := m.NewWriter(&out)
	w.Write([]byte("before LATE-SECRET "))
	m.Add("LATE-SECRET")
	w.Write([]byte("after LATE-SECRET"))
	w.Flush()
	if want := "before LATE-SECRET after ***"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func BenchmarkMaskNoMatch(b *testing.B) {
	var m Masker
	m.Add("sk-proj-0123456789abcdef")
	m.Add("ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	s := strings.Repeat("an ordinary line of a task's output, nothing secret in it\n", 1000)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		m.Mask(s)
	}
}
