package lsp

// This file converts between Skein positions (1-based lines, columns in
// runes) and LSP positions (0-based lines, characters in UTF-16 code
// units), and finds words and strings around a position.

import (
	"net/url"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
)

// text is a file's contents split into lines.
type text struct {
	src    string
	lines  []string // without their "\n"
	starts []int    // the byte offset in src where each line starts

	// What requests read from its syntax tree, made when one first asks
	// (the check's loader parses on its own: it rewrites its tree).
	parsed bool
	file   *syntax.File      // nil if it does not parse
	vars   map[string]string // stepVars of file, once a request has asked
}

// tree returns the syntax tree of t as the file at path, or nil if it does
// not parse; it is parsed once, when a request first asks. It is called
// with s.mu held.
func (t *text) tree(path string) *syntax.File {
	if !t.parsed {
		t.parsed = true
		if f, err := graphir.ParseFile(path, []byte(t.src), syntax.RetainComments); err == nil {
			t.file = f
		}
	}
	return t.file
}

func newText(src string) *text {
	t := &text{src: src, lines: strings.Split(src, "\n")}
	t.starts = make([]int, len(t.lines))
	n := 0
	for i, l := range t.lines {
		t.starts[i] = n
		n += len(l) + 1
	}
	return t
}

// lineStart returns the byte offset in src where 0-based line i starts:
// 0 before the first line, len(src) past the last, so that a position an
// editor sends past the end is clamped to it as a column past the end of
// a line is.
func (t *text) lineStart(i int) int {
	switch {
	case i < 0:
		return 0
	case i >= len(t.starts):
		return len(t.src)
	}
	return t.starts[i]
}

func (t *text) line(i int) string {
	if i < 0 || i >= len(t.lines) {
		return ""
	}
	return t.lines[i]
}

// toLSP converts a 1-based line and rune column to an LSP position. A
// column past the end of the line is clamped to it.
func (t *text) toLSP(line, col int) position {
	if line < 1 {
		return position{}
	}
	l := t.line(line - 1)
	units := 0
	for _, r := range l {
		if col <= 1 {
			break
		}
		col--
		units += utf16Len(r)
	}
	return position{Line: line - 1, Character: units}
}

// offset converts an LSP position to a byte offset in its line. A
// character past the end of the line is clamped to it.
func (t *text) offset(p position) int {
	l := t.line(p.Line)
	units := 0
	for i, r := range l {
		if units >= p.Character {
			return i
		}
		units += utf16Len(r)
	}
	return len(l)
}

// lspAt converts a byte offset in line i to an LSP position.
func (t *text) lspAt(i, off int) position {
	l := t.line(i)
	if off > len(l) {
		off = len(l)
	}
	return position{Line: i, Character: len(utf16.Encode([]rune(l[:off])))}
}

// end is the position after the last character.
func (t *text) end() position {
	last := len(t.lines) - 1
	return t.lspAt(last, len(t.lines[last]))
}

func utf16Len(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// wordAt returns the identifier-like word around byte offset off of line
// l, and its byte range.
func wordAt(l string, off int) (string, int, int) {
	if off > len(l) {
		off = len(l)
	}
	start, end := off, off
	for start > 0 && isWordByte(l[start-1]) {
		start--
	}
	for end < len(l) && isWordByte(l[end]) {
		end++
	}
	return l[start:end], start, end
}

// stringAt reports whether byte offset off of src (a buffer or one line
// of it) is inside a string literal, and returns the literal's contents
// (between its quotes, escapes left as written) and their byte range. A
// triple-quoted string may span lines; another ends at the end of its
// line, as an unterminated one does. src is read once, up to the literal
// around off.
func stringAt(src string, off int) (string, int, int, bool) {
	for i := 0; i < len(src) && i <= off; i++ {
		switch ch := src[i]; ch {
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case '"', '\'':
			quote := src[i : i+1]
			if i+2 < len(src) && src[i+1] == ch && src[i+2] == ch {
				quote = src[i : i+3]
			}
			start := i + len(quote)
			j := start
			for j < len(src) && !strings.HasPrefix(src[j:], quote) && (len(quote) == 3 || src[j] != '\n') {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(src))
			if off >= start && off <= j {
				return src[start:j], start, j, true
			}
			i = j + len(quote) - 1
		}
	}
	return "", 0, 0, false
}

// pathOf returns the file path of a file: URI, or "" for another scheme.
func pathOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	return filepath.FromSlash(u.Path)
}

// uriOf returns the file: URI of a path.
func uriOf(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}
