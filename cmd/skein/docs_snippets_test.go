package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
)

// TestDocsSnippets runs every ```python block of docs/*.md and README.md
// through what `skein fmt --check` and `skein check` run: a snippet must be
// formatted as skein fmt formats it, and must check with no diagnostic.
//
// A snippet that is not a whole, sane flow says so with an HTML comment on
// the line just before its fence (markdown shows none of it):
//
//	<!-- snippet: fragment -->  a piece of a flow, a flow test file or a
//	                            child flow that needs its parent: it must
//	                            be fmt-clean, and is not checked
//	<!-- snippet: invalid -->   a deliberate mistake (docs/codes.md): it
//	                            must fail, either to parse or with at least
//	                            one diagnostic, so it still shows one
//	<!-- snippet: warns -->     a whole flow shown for the warning it gets:
//	                            fmt-clean, no error, at least one warning
func TestDocsSnippets(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md")
	n := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("UPDATE") == "1" {
			b = formatSnippets(t, page, b)
		}
		for _, s := range pythonSnippets(string(b)) {
			n++
			where := fmt.Sprintf("%s:%d", strings.TrimPrefix(page, "../../"), s.line)
			if err := checkSnippet(page, s); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no ```python block in the docs")
	}
}

// formatSnippets rewrites page with its snippets formatted (those that
// parse and are not marked invalid): UPDATE=1 go test -run TestDocsSnippets.
func formatSnippets(t *testing.T, page string, b []byte) []byte {
	md := string(b)
	snippets := pythonSnippets(md)
	for i := len(snippets) - 1; i >= 0; i-- { // from the end, so lines before stay put
		s := snippets[i]
		if s.kind == "invalid" {
			continue
		}
		out, err := lang.Format("snippet.star", []byte(s.src))
		if err != nil || string(out) == s.src {
			continue
		}
		lines := strings.Split(md, "\n")
		start := s.line - 1
		end := start + strings.Count(s.src, "\n")
		var code []string
		for _, l := range strings.SplitAfter(string(out), "\n") {
			if strings.TrimSpace(l) != "" {
				l = s.indent + l
			}
			code = append(code, l)
		}
		md = strings.Join(lines[:start], "\n") + "\n" + strings.Join(code, "") + strings.Join(lines[end:], "\n")
	}
	if md != string(b) {
		if err := os.WriteFile(page, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []byte(md)
}

type snippet struct {
	line   int    // the line of the first line of code, from 1
	kind   string // "", "fragment", "invalid" or "warns"
	indent string // the fence's indentation, which its lines share
	src    string
}

var snippetMark = regexp.MustCompile(`^<!--\s*snippet:\s*([a-z]+)\s*-->$`)

// pythonSnippets returns the ```python blocks of a markdown text.
func pythonSnippets(md string) []snippet {
	var out []snippet
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```python" {
			continue
		}
		s := snippet{line: i + 2, indent: lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]}
		// The mark is among the HTML comments just before the fence
		// (docs/tutorial.md names files with <!-- file: NAME -->).
		for j := i - 1; j >= 0; j-- {
			l := strings.TrimSpace(lines[j])
			if !strings.HasPrefix(l, "<!--") {
				break
			}
			if m := snippetMark.FindStringSubmatch(l); m != nil {
				s.kind = m[1]
			}
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], s.indent)) // a block in a list item is indented
		}
		s.src = strings.Join(body, "\n") + "\n"
		out = append(out, s)
	}
	return out
}

func checkSnippet(page string, s snippet) error {
	// Named as a flow beside the page, so that a child flow or load() it
	// names is looked for among the docs (and found in none).
	file := filepath.Join(filepath.Dir(page), fmt.Sprintf("snippet_%d.star", s.line))
	formatted, ferr := lang.Format(file, []byte(s.src))
	switch s.kind {
	case "fragment", "warns", "":
	case "invalid":
		if ferr != nil {
			return nil
		}
	default:
		return fmt.Errorf("unknown mark <!-- snippet: %s -->: want fragment, invalid or warns", s.kind)
	}
	if ferr != nil {
		return fmt.Errorf("does not parse: %v", ferr)
	}
	if !bytes.Equal(formatted, []byte(s.src)) && s.kind != "invalid" {
		return fmt.Errorf("not as skein fmt formats it; it should read:\n%s", formatted)
	}
	if s.kind == "fragment" {
		return nil
	}
	fl := frontend.LoadSource(file, []byte(s.src), frontend.Options{
		ReadFile: func(name string) ([]byte, error) {
			return nil, fmt.Errorf("%s: a snippet reads no other file", name)
		},
	})
	errs, warns := check.Count(fl.Diagnostics)
	var text bytes.Buffer
	check.WriteText(&text, fl.Diagnostics)
	switch {
	case s.kind == "invalid" && errs+warns == 0:
		return fmt.Errorf("marked invalid, but it checks clean")
	case s.kind == "warns" && (errs > 0 || warns == 0):
		return fmt.Errorf("marked warns, but has %d errors and %d warnings:\n%s", errs, warns, &text)
	case s.kind == "" && errs+warns > 0:
		return fmt.Errorf("skein check finds:\n%s(mark a deliberate mistake <!-- snippet: invalid -->, a piece of a flow <!-- snippet: fragment -->)", &text)
	}
	return nil
}
