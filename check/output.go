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
	Diagnostics []jsonDiag      `json:"diagnostics"`
	Errors      int             `json:"errors"`
	Warnings    int             `json:"warnings"`
	Envelopes   []*FlowEnvelope `json:"envelopes,omitempty"`
}

// WriteJSON prints ds as the object of docs/cli.md:
// {"diagnostics": [...], "errors": N, "warnings": N}.
func WriteJSON(w io.Writer, ds []Diagnostic) error { return WriteJSONEnvelopes(w, ds, nil) }

// WriteJSONEnvelopes is [WriteJSON] with the flows' envelopes under
// "envelopes" (skein check --envelope --json).
func WriteJSONEnvelopes(w io.Writer, ds []Diagnostic, envs []*FlowEnvelope) error {
	r := jsonReport{Diagnostics: []jsonDiag{}, Envelopes: envs}
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

// Summary writes what e bounds, leaving out what it bounds at zero:
// "9 model calls, 12,288 completion tokens, $0.1200, 3 processes, time
// 1h0m0s". Seconds are left out when time is false.
func (e Envelope) Summary(time bool) string {
	var parts []string
	add := func(a Amount, what string, f Format) {
		if a.IsZero() {
			return
		}
		if f == FormatCount && a.Bounded() {
			parts = append(parts, a.Format(f)+" "+what)
		} else {
			parts = append(parts, what+" "+a.Format(f))
		}
	}
	add(e.ModelCalls, "model calls", FormatCount)
	add(e.Tokens, "completion tokens", FormatCount)
	add(e.Cost, "output cost", FormatDollars)
	add(e.Processes, "processes", FormatCount)
	add(e.ToolCalls, "tool calls", FormatCount)
	add(e.Approvals, "approvals", FormatCount)
	if time {
		add(e.Seconds, "time", FormatSeconds)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// WriteEnvelope prints fe for people: the run's total, then each step
// that spends anything (its visits, what they spend, one visit's time),
// then what was assumed.
func WriteEnvelope(w io.Writer, fe *FlowEnvelope) error {
	var b strings.Builder
	fmt.Fprintf(&b, "envelope of %s (flow %q): the most one run may spend\n", fe.File, fe.Flow)
	fmt.Fprintf(&b, "  run: %s\n", fe.Total.Summary(true))
	for _, s := range fe.Steps {
		if s.Visits.IsZero() {
			fmt.Fprintf(&b, "  %s (%s): never entered\n", s.Step, s.Kind)
			continue
		}
		counts := s.Envelope
		counts.Seconds = Amount{}
		line := counts.Summary(false)
		if !s.Seconds.IsZero() {
			if line == "nothing" {
				line = ""
			} else {
				line += ", "
			}
			line += "time " + s.Seconds.Format(FormatSeconds) + " a visit"
		}
		visits := "1 visit"
		if s.Visits.Max != 1 || len(s.Visits.PerItem) > 0 || !s.Visits.Bounded() {
			visits = s.Visits.String() + " visits"
		}
		fmt.Fprintf(&b, "  %s (%s, %s): %s\n", visible.Text(s.Step, false), s.Kind, visits, visible.Text(line, false))
	}
	if fe.AssumedTokens {
		fmt.Fprintf(&b, "  (a model call without max_tokens is counted at %s completion tokens)\n", Thousands(DefaultMaxTokens))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
