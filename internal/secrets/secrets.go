// Package secrets masks the values of a run's secrets in what the run
// shows and keeps: a [Masker] holds registered values and replaces every
// occurrence of one, or of one of its common encodings, by [Mask]. It is
// the one masker of the VM (secret() values, secret inputs, model keys),
// the store and telemetry (docs/security.md).
//
// It finds what is written as it was registered or in an encoding it
// knows (see [Forms]); a value transformed otherwise (hashed, reversed,
// split across lines by a tool, encoded twice) is not found. It is not a
// tracker of where values flow: the checker proves that before a run.
package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Mask is what replaces a secret.
const Mask = "***"

// MinLen is the length in bytes of the shortest value a [Masker] masks.
// A shorter one would mask ordinary text ("1", "yes"), so [Masker.Add]
// refuses it: the VM refuses such a secret before a run uses it, and
// ignores such a model key (no real key is that short). Every form of a
// registered value is longer than [Mask], so masking never makes a text
// longer.
const MinLen = 4

// A Masker masks the values registered with it. The zero value masks
// nothing; a nil *Masker too. It is safe for concurrent use: values may
// be added while other goroutines mask.
type Masker struct {
	mu  sync.Mutex // serializes Add
	tab atomic.Pointer[table]
}

// table is an immutable set of needles: a Masker swaps in a new one on
// Add, so masking never takes a lock.
type table struct {
	values  map[string]bool
	needles [][]byte   // every form of every value, longest first
	first   [256][]int // indices into needles by their first byte
	maxLen  int
	// starred: a needle holds '*', so a mask next to other text could
	// make one (see mask).
	starred bool
}

// Add registers v and its encodings (see [Forms]); it reports whether v
// is masked: false when v is shorter than [MinLen]. A value of several
// lines is also masked line by line (a tool may print one line of a key
// file). Adding a value twice is harmless.
func (m *Masker) Add(v string) bool {
	if len(v) < MinLen {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.tab.Load()
	if old != nil && old.values[v] {
		return true
	}
	t := &table{values: map[string]bool{}}
	var needles []string
	if old != nil {
		for k := range old.values {
			t.values[k] = true
		}
		for _, n := range old.needles {
			needles = append(needles, string(n))
		}
	}
	t.values[v] = true
	needles = append(needles, Forms(v)...)
	if strings.ContainsAny(v, "\r\n") {
		for _, line := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
			if len(line) >= MinLen {
				needles = append(needles, Forms(line)...)
			}
		}
	}
	// Longest first, so that at one position the longest needle wins;
	// then bytewise, so that the order does not depend on the adds'.
	slices.SortFunc(needles, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	needles = slices.Compact(needles)
	for _, n := range needles {
		if len(n) <= len(Mask) {
			continue // never: every form is at least MinLen long
		}
		i := len(t.needles)
		t.needles = append(t.needles, []byte(n))
		t.first[n[0]] = append(t.first[n[0]], i)
		t.maxLen = max(t.maxLen, len(n))
		t.starred = t.starred || strings.Contains(n, "*")
	}
	m.tab.Store(t)
	return true
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool {
	if m == nil {
		return true
	}
	t := m.tab.Load()
	return t == nil || len(t.needles) == 0
}

// Mask returns s with every registered value, and every form of one,
// replaced by [Mask]. At a position where several match, the longest
// is replaced. It returns s itself when nothing matched.
func (m *Masker) Mask(s string) string {
	if m == nil || s == "" {
		return s
	}
	t := m.tab.Load()
	if t == nil || len(t.needles) == 0 {
		return s
	}
	if !t.any([]byte(s)) {
		return s
	}
	return string(t.fix([]byte(s)))
}

// MaskBytes is [Masker.Mask] on bytes; it returns b itself when nothing
// matched.
func (m *Masker) MaskBytes(b []byte) []byte {
	if m == nil || len(b) == 0 {
		return b
	}
	t := m.tab.Load()
	if t == nil || len(t.needles) == 0 || !t.any(b) {
		return b
	}
	return t.fix(b)
}

// Contains reports whether s holds a registered value or a form of one.
func (m *Masker) Contains(s string) bool {
	if m == nil {
		return false
	}
	t := m.tab.Load()
	return t != nil && t.any([]byte(s))
}

// any reports whether a needle occurs in s.
func (t *table) any(s []byte) bool {
	for i := range s {
		if t.at(s, i) >= 0 {
			return true
		}
	}
	return false
}

// at returns the index of the longest needle starting at s[i], or -1.
func (t *table) at(s []byte, i int) int {
	for _, j := range t.first[s[i]] {
		if bytes.HasPrefix(s[i:], t.needles[j]) {
			return j
		}
	}
	return -1
}

// fix masks s until no needle is left: once without a needle holding
// '*'; with one, a mask next to other text may have made a needle
// ("a***" after "a" and a secret), so it masks again. Every pass that
// masks shortens the text, so it ends.
func (t *table) fix(s []byte) []byte {
	for {
		out, _ := t.scan(s, true)
		if !t.starred || len(out) == len(s) {
			return out
		}
		s = out
	}
}

// scan masks s from the left, the longest needle at each position. When
// final is false, s may go on: scan stops at the first position whose
// needle might not be whole yet (fewer than maxLen bytes remain) and
// returns how far it read; what it returned before that is decided.
func (t *table) scan(s []byte, final bool) (out []byte, read int) {
	out = make([]byte, 0, len(s))
	i := 0
	for i < len(s) {
		if !final && len(s)-i < t.maxLen {
			break
		}
		if j := t.at(s, i); j >= 0 {
			out = append(out, Mask...)
			i += len(t.needles[j])
			continue
		}
		out = append(out, s[i])
		i++
	}
	return out, i
}

// Forms returns v and the encodings of it a [Masker] masks:
//   - base64, standard and URL alphabets, padded and not, of v alone, and
//     of v inside a longer encoded text (at each of the three alignments,
//     the characters that depend on v alone);
//   - percent-escaped, as in a URL's query (space as '+') and path, and
//     with every byte but the unreserved ones escaped, hex in upper and
//     lower case;
//   - JSON-escaped (inside a string's quotes), with and without HTML
//     characters escaped.
func Forms(v string) []string {
	forms := []string{v}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(v)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
		raw := enc.WithPadding(base64.NoPadding)
		for k := 0; k < 3; k++ {
			// v after k bytes: its bits run from 8k to 8(k+len(v)); a
			// character holds 6 bits; keep those wholly within v.
			e := raw.EncodeToString(append(make([]byte, k), v...))
			from, to := (8*k+5)/6, 8*(k+len(v))/6
			if to-from > len(Mask) {
				forms = append(forms, e[from:to])
			}
		}
	}
	forms = append(forms, url.QueryEscape(v), url.PathEscape(v))
	if s := escapeAll(v, "0123456789ABCDEF"); s != v {
		forms = append(forms, s, escapeAll(v, "0123456789abcdef"))
	}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) == nil {
			s := strings.TrimSuffix(b.String(), "\n")
			forms = append(forms, s[1:len(s)-1])
		}
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

// escapeAll percent-escapes every byte of v but the unreserved ones
// (RFC 3986: letters, digits, "-._~"), with the hex digits given.
func escapeAll(v, hex string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Writer masks a stream written in pieces (a task's live output): it
// holds back the last bytes that could be the start of a secret until
// more come or [Writer.Flush]. Values added to its Masker while it is in
// use are masked from the next write.
type Writer struct {
	m   *Masker
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer masking what is written to w.
func (m *Masker) NewWriter(w io.Writer) *Writer { return &Writer{m: m, w: w} }

// Write implements [io.Writer]: it writes what is decided of p (all of
// it, when nothing is registered) and holds back the rest.
func (w *Writer) Write(p []byte) (int, error) {
	var t *table
	if w.m != nil {
		t = w.m.tab.Load()
	}
	if t == nil || len(t.needles) == 0 {
		if err := w.Flush(); err != nil {
			return 0, err
		}
		return w.w.Write(p)
	}
	w.buf = append(w.buf, p...)
	var out []byte
	if !t.starred {
		// A match is decided once maxLen bytes follow its start; and
		// with no '*' in any needle, no mask makes a new one.
		var read int
		out, read = t.scan(w.buf, false)
		w.buf = append(w.buf[:0], w.buf[read:]...)
	} else {
		// A mask may join what comes after it into a needle that starts
		// up to maxLen before it: mask all that is held, and write only
		// what lies twice that far from the end.
		s := w.buf
		for {
			o, read := t.scan(s, false)
			o = append(o, s[read:]...)
			if len(o) == len(s) {
				break
			}
			s = o
		}
		cut := max(0, len(s)-2*t.maxLen)
		out = append([]byte(nil), s[:cut]...)
		w.buf = append(w.buf[:0], s[cut:]...)
	}
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what was held back, masked.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	out := w.m.MaskBytes(w.buf)
	out = append([]byte(nil), out...)
	w.buf = w.buf[:0]
	_, err := w.w.Write(out)
	return err
}
