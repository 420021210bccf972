// Package visible writes text from outside Skein (a step's output, a
// flow file's names and messages) so that it shows what it holds without a
// terminal interpreting it: control characters become escapes.
package visible

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text returns s with every control character other than tab written
// out as an escape (\x1b, \r, \u009b), and invalid UTF-8 as \xNN, so it
// shows what a step printed without a terminal interpreting it. Newlines
// are kept when keepNewlines, else escaped too.
func Text(s string, keepNewlines bool) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && (c != '\n' || !keepNewlines) || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepNewlines, r == '\t':
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r == '\u2028', r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}
