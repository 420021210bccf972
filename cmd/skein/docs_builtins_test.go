package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/skeinlang/skein/builtins"
)

// TestDocsBuiltins keeps docs/language.md and the builtins' doc table (the
// one skein help and the language server show) in step: every builtin
// with parameters has a section, and the section names every parameter.
func TestDocsBuiltins(t *testing.T) {
	b, err := os.ReadFile("../../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, d := range builtins.Docs() {
		if len(d.Params) == 0 {
			continue
		}
		head := "\n## " + d.Name + "()\n"
		i := strings.Index(doc, head)
		if i < 0 {
			t.Errorf("docs/language.md has no section %q", strings.TrimSpace(head))
			continue
		}
		section := doc[i+len(head):]
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
		for _, p := range d.Params {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(p.Name) + `\b`).MatchString(section) {
				t.Errorf("docs/language.md, %s(): parameter %s is not described", d.Name, p.Name)
			}
		}
	}
}
