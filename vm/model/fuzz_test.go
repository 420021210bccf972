package model_test

import (
	"testing"

	"github.com/skeinlang/skein/vm/model"
)

// FuzzReplies: whatever a server sends, reading it as a completion, a
// router's label or a judge's verdict never panics, and a label read is
// always one of the labels.
func FuzzReplies(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"message":{"content":"{\"label\": \"urgent\"}"}}],"usage":{"prompt_tokens":1}}`,
		`{"choices":[]}`, `{"choices":[{"message":{"content":null,"refusal":"no"}}]}`, `[`, ``,
		`{"verdict": "STOP", "reason": 3}`, "CONTINUE: again", "**Urgent.**", `"routine"`,
	} {
		f.Add(s)
	}
	labels := []string{"urgent", "routine", "Needs Info"}
	f.Fuzz(func(t *testing.T, s string) {
		model.ParseResponse("m", []byte(s))
		if l, ok := model.ReadLabel(s, labels); ok {
			found := false
			for _, x := range labels {
				found = found || x == l
			}
			if !found {
				t.Fatalf("ReadLabel(%q) = %q, not a label", s, l)
			}
		}
		if v, _, ok := model.ReadVerdict(s); ok && v != model.Stop && v != model.Continue && v != model.Unrelated {
			t.Fatalf("ReadVerdict(%q) = %q", s, v)
		}
	})
}
