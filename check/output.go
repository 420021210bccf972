package check

// This file prints diagnostics: the compiler form of docs/codes.md and the JSON
// shape of docs/cli.md.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/skeinlang/skein/internal/visible"
)

// String formats the first line of d in compiler form:
// file:line:col: error: message [code].
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s: %s: %s [%s]", d.Pos, d.Severity, d.Message, d.Code)
}

// WriteText prints ds one per line in compiler form, each followed by its
// indented hint and trace lines, control characters written as escapes
// (\x1b, \n).
func WriteText(w io.Writer, ds []Diagnostic) error {
	var b strings.Builder
	for _, d := range ds {
		// A flow file's names and messages (fail("...")) are shown, not
		// interpreted by the terminal.
		b.WriteString(visible.Text(d.String(), false))
		b.WriteByte('\n')
		if d.Hint != "" {
			fmt.Fprintf(&b, "    hint: %s\n", visible.Text(d.Hint, false))
		}
		for _, t := range d.Trace {
			fmt.Fprintf(&b, "    %s\n", visible.Text(t, false))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type jsonDiag struct {
	Code     string   `json:"code"`
	Severity string   `json:"severity"`
	Message  string   `json:"message"`
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Step     string   `json:"step"`
	Hint     string   `json:"hint"`
	Trace    []string `json:"trace,omitempty"`
}

type jsonReport struct {
	Diagnostics []jsonDiag `json:"diagnostics"`
	Errors      int        `json:"errors"`
	Warnings    int        `json:"warnings"`
}

// WriteJSON prints ds as the object of docs/cli.md:
// {"diagnostics": [...], "errors": N, "warnings": N}.
func WriteJSON(w io.Writer, ds []Diagnostic) error {
	r := jsonReport{Diagnostics: []jsonDiag{}}
	for _, d := range ds {
		r.Diagnostics = append(r.Diagnostics, jsonDiag{Code: string(d.Code), Severity: d.Severity.String(),
			Message: d.Message, File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col, Step: d.Step,
			Hint: d.Hint, Trace: d.Trace})
	}
	r.Errors, r.Warnings = Count(ds)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "<" stays "<": this is no HTML page
	return enc.Encode(r)
}
