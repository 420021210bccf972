package vm

import (
	"strings"
	"testing"
)

// A key written in pieces, split anywhere, is masked whole in the live
// output; what cannot be the start of a key is not held back longer than
// needed, and flush writes the rest.
func TestMaskWriterPieces(t *testing.T) {
	pairs := []string{"sk-LIVE-SECRET", "[masked $K]", "other-KEY-9", "[masked $O]"}
	text := "a sk-LIVE-SECRET b other-KEY-9 c sk-LIVE-SECRE"
	want := "a [masked $K] b [masked $O] c sk-LIVE-SECRE"
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for cut2 := cut1; cut2 <= len(text); cut2 += 3 {
			var out strings.Builder
			m := newMaskWriter(&out, pairs)
			for _, p := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
				if n, err := m.Write([]byte(p)); n != len(p) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if strings.Contains(out.String(), "SECRET") && !strings.HasSuffix(out.String(), "SECRE") {
				t.Fatalf("cuts %d, %d: a key leaked before the flush: %q", cut1, cut2, out.String())
			}
			m.flush()
			if out.String() != want {
				t.Fatalf("cuts %d, %d: got %q, want %q", cut1, cut2, out.String(), want)
			}
		}
	}
}
