// Package docs embeds the user documentation, so the binary can hand the
// language reference to a model (skein compose) and print it.
package docs

import (
	"embed"
	"sort"
	"strings"
)

//go:embed *.md
var files embed.FS

// Page returns the text of the page named name ("language.md"), or "".
func Page(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		return ""
	}
	return string(b)
}

// Pages returns the names of the embedded pages, sorted.
func Pages() []string {
	ents, _ := files.ReadDir(".")
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".md") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}
