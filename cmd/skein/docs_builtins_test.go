package main

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/skeinlang/skein/builtins"
)

// TestDocsBuiltins keeps docs/language.md and the builtins' doc table (the
// one skein help and the language server show) in step: every builtin
// with parameters has a section, and the section names every parameter.
func TestDocsBuiltins(t *testing.T) {
	doc := languageDoc(t)
	for _, d := range builtins.Docs() {
		if len(d.Params) == 0 {
			continue
		}
		section, ok := builtinSection(doc, d.Name)
		if !ok {
			t.Errorf("docs/language.md has no section \"## %s()\"", d.Name)
			continue
		}
		for _, p := range d.Params {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(p.Name) + `\b`).MatchString(section) {
				t.Errorf("docs/language.md, %s(): parameter %s is not described", d.Name, p.Name)
			}
		}
	}
}

// languageDoc is docs/language.md.
func languageDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// builtinSection is the section "## name()" of doc, up to the next one.
func builtinSection(doc, name string) (string, bool) {
	head := "\n## " + name + "()\n"
	i := strings.Index(doc, head)
	if i < 0 {
		return "", false
	}
	section := doc[i+len(head):]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	return section, true
}

// TestDocsSignatures keeps the signature each section of docs/language.md
// opens with true to the builtin: the same positional parameters in order,
// the same keyword-only ones (in any order) with the same defaults.
func TestDocsSignatures(t *testing.T) {
	doc := languageDoc(t)
	// split parses "f(a, b=1, *, c=None) -> X" into its positional part
	// (through "*" or a *args) and the sorted keyword-only part.
	split := func(sig string) (pos, kw []string) {
		sig = sig[strings.Index(sig, "(")+1 : strings.LastIndex(sig, ")")]
		star := false
		for _, p := range strings.Split(sig, ",") {
			p = strings.TrimSpace(p)
			switch {
			case p == "":
			case p == "*":
				star = true
			case strings.HasPrefix(p, "*"):
				pos = append(pos, p)
				star = true
			case star:
				kw = append(kw, p)
			default:
				pos = append(pos, p)
			}
		}
		sort.Strings(kw)
		return pos, kw
	}
	for _, d := range builtins.Docs() {
		if len(d.Params) == 0 {
			continue
		}
		section, ok := builtinSection(doc, d.Name)
		if !ok {
			continue // TestDocsBuiltins reports it
		}
		sig := d.Signature()
		first := sig[len(d.Name)+1:]
		first = first[:strings.IndexAny(first, "=,)")]
		j := strings.Index(section, d.Name+"("+first)
		if j < 0 {
			t.Errorf("docs/language.md, %s(): the section does not show the signature", d.Name)
			continue
		}
		k := strings.Index(section[j:], ")")
		written := strings.Join(strings.Fields(section[j:j+k+1]), " ")
		wp, wk := split(written)
		gp, gk := split(sig)
		if strings.Join(wp, ", ") != strings.Join(gp, ", ") || strings.Join(wk, ", ") != strings.Join(gk, ", ") {
			t.Errorf("docs/language.md shows\n  %s\nbut the builtin is\n  %s", written, sig)
		}
	}
}
