package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang/frontend"
)

type graphOptions struct {
	format   string
	root     string
	envelope bool
}

func init() {
	register(&command{
		name:    "graph",
		args:    "FLOW [--format dot|mermaid|json] [--envelope]",
		summary: "draw the frozen graph of a flow",
		long: `Prints the graph the flow builds, after loading and freezing it: Graphviz DOT
(pipe it to 'dot -Tsvg'), a Mermaid flowchart, or the JSON IR.
Conditions label their edges, failure edges are dashed red, back-edges bold
blue, routers diamonds, approvals hexagons, noops (joins) dashed circles, loop
and map bodies clusters, and the exit handler dotted, hung from END and
ABORT; each step's kind, bounds, retries, timeout and join kind are under
its name.

The graph is drawn even when the checker finds errors, with the steps they
are at drawn red and their code under their name; a flow that does not load
exits 2.

With --envelope, each step (in DOT and Mermaid) also says what it may spend
in a run (docs/envelope.md): its visits, model calls, completion tokens,
cost, processes, tool calls and approvals, as at most, "∞" where
unbounded, "×n(map)" per item of a map.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *graphOptions) {
			fs.StringVarP(&o.format, "format", "f", "dot", "output format: dot, mermaid or json")
			fs.StringVar(&o.root, "root", "", "flow root (default: the flow's directory)")
			fs.BoolVar(&o.envelope, "envelope", false, "label each step with what it may spend in a run (docs/envelope.md)")
		}, runGraph, nil),
	})
}

func runGraph(_ context.Context, io stdio, opts *graphOptions, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(io.err, "skein graph: want exactly one flow\nusage: skein graph FLOW [--format dot|mermaid|json]")
		return exitUsage
	}
	switch opts.format {
	case "dot", "mermaid", "json":
	default:
		fmt.Fprintf(io.err, "skein graph: unknown format %q: want dot, mermaid or json\n", opts.format)
		return exitUsage
	}
	// Drawn whatever the checker finds: only a load error stops it.
	f := frontend.Load(args[0], frontend.Options{Root: opts.root, Print: printTo(io.err)})
	g := f.Graph
	if g == nil {
		check.WriteText(io.err, f.Diagnostics)
		return exitUsage
	}
	// The steps with errors are drawn red, so a flow the checker refuses
	// does not look fine.
	marks := map[string]graphir.Mark{}
	for _, d := range f.Diagnostics {
		if _, seen := marks[d.Step]; d.Severity == check.Error && d.Step != "" && !seen {
			marks[d.Step] = graphir.Mark{Code: string(d.Code), Message: d.Message}
		}
	}
	if opts.envelope {
		for _, se := range check.ComputeEnvelope(g).Steps {
			m := marks[se.Step]
			m.Note = envelopeNote(se)
			marks[se.Step] = m
		}
	}
	switch opts.format {
	case "dot":
		fmt.Fprint(io.out, g.DOTMarked(marks))
	case "mermaid":
		fmt.Fprint(io.out, g.MermaidMarked(marks))
	case "json":
		b, err := json.MarshalIndent(g, "", "  ")
		if err != nil {
			fmt.Fprintf(io.err, "skein graph: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(io.out, "%s\n", unescapeHTML(b))
	}
	return exitOK
}

// unescapeHTML undoes encoding/json's escaping of <, > and & in the JSON
// text b (\u003c, \u003e, \u0026), which a graph's conditions are full of
// (a.exit_code > 0): as check --json does, they are written as they are.
// Only a backslash that starts an escape counts, so a string that holds
// the text \u003c (written \\u003c) is left alone.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if i+5 < len(b) && b[i+1] == 'u' {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // an escape: its two bytes as they are
		i++
	}
	return out
}

// envelopeNote is the short label of what a step may spend in a run:
// "≤ 3 visits · 18 calls · 24,576 tok · 9 procs", "∞" where unbounded,
// "×n(each)" per item of the map each.
func envelopeNote(se check.StepEnvelope) string {
	short := func(a check.Amount, f check.Format) string {
		if !a.Bounded() {
			return "∞"
		}
		s := check.Amount{Max: a.Max}.Format(f)
		for _, m := range a.PerItem {
			s += "×n(" + m + ")"
		}
		return s
	}
	parts := []string{"≤ " + short(se.Visits, check.FormatCount) + " visits"}
	for _, q := range []struct {
		a    check.Amount
		what string
		f    check.Format
	}{
		{se.ModelCalls, "calls", check.FormatCount}, {se.Tokens, "tok", check.FormatCount},
		{se.Cost, "", check.FormatDollars}, {se.Processes, "procs", check.FormatCount},
		{se.ToolCalls, "tools", check.FormatCount}, {se.Approvals, "approvals", check.FormatCount},
	} {
		if q.a.IsZero() {
			continue
		}
		s := short(q.a, q.f)
		if q.what != "" {
			s += " " + q.what
		} else if !q.a.Bounded() {
			s += " $"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}
