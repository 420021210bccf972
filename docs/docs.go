// Package docs embeds the user documentation, so the binary can hand the
// language reference to a model (skein compose).
package docs

import "embed"

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
