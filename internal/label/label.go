// Package label is the one rule by which an LLM router's labels, and
// judge()'s verdicts, are compared with what a model answered: trimmed,
// lower-cased, surrounding punctuation and symbols removed. The checker uses
// it to reject two labels a model's answer could not tell apart, and
// vm/model uses it to read the answer; the two must agree, so the rule lives
// here, below both.
//
// It is not a parser of answers (vm/model reads JSON, quoted and plain
// answers) and knows nothing of routers or graphs.
package label

import (
	"strings"
	"unicode"
)

// Normalize is how labels and answers are compared: trimmed, lower-cased,
// surrounding punctuation and symbols removed ("Urgent." -> "urgent",
// "**routine**" -> "routine"). Punctuation inside a label is kept
// ("follow-up" stays "follow-up").
func Normalize(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r)
	})
	return strings.ToLower(s)
}
