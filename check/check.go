// Package check proves a frozen flow graph sane before anything runs
// (docs/codes.md): every name real, every step reachable, every branch leading
// somewhere, every loop bounded. It turns a graph into positioned
// diagnostics with hints, and prints them the way compilers do.
//
// check reads a [graphir.Graph] only; it never loads files or runs steps.
package check

import (
	"sort"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// Severity says whether a diagnostic stops a run.
type Severity = codes.Severity

const (
	Error   = codes.Error
	Warning = codes.Warning
)

// SeverityOf returns the severity of a diagnostic code: its default in
// the table of codes (a warning's for maybe_unmet, unused_result, ...;
// an error's for the others).
func SeverityOf(code codes.Code) Severity { return codes.SeverityOf(code) }

// Diagnostic is one finding: a code of docs/codes.md, where, and what to do.
type Diagnostic struct {
	Code     codes.Code
	Severity Severity
	Message  string
	Pos      graphir.Pos
	Step     string
	Hint     string
	Trace    []string // further frames, innermost first
}

// FromError turns a load or parse error into a diagnostic.
func FromError(err *graphir.Error) Diagnostic {
	code := err.Code
	if code == "" {
		code = codes.LoadError
	}
	return Diagnostic{Code: code, Severity: SeverityOf(code), Message: err.Msg, Pos: err.Pos,
		Step: err.Step, Hint: err.Hint, Trace: err.Trace}
}

// A rule inspects the graph of a pass and reports what it finds. Rules live
// one family to a file; add a new one to the list below.
type rule func(p *pass)

// rules is set in init because checkSubflows checks child flows with all
// the rules.
var rules []rule

func init() {
	rules = []rule{
		checkNames,        // names.go
		checkReachability, // reach.go
		checkScopes,       // scopes.go
		checkExprs,        // exprs.go
		checkInterpreters, // interpreters.go
		checkOneString,    // interpreters.go
		checkStdinCode,    // interpreters.go
		checkCycles,       // cycles.go
		checkJoins,        // cycles.go
		checkRaces,        // cycles.go
		checkRouters,      // control.go
		checkUntil,        // control.go
		checkModels,       // models.go
		checkTools,        // tools.go
		checkSubflows,     // subflows.go
		checkDataflow,     // dataflow.go
		checkExitHandler,  // exit.go
		checkInputs,       // inputs.go
		checkTriggers,     // triggers.go
		checkEmit,         // triggers.go
		checkOver,         // values.go
		checkConditions,   // values.go
		checkSecrets,      // secrets.go
		checkEnvelope,     // envelope.go
	}
}

// Graph runs every rule over g and returns the diagnostics sorted by
// position, without duplicates.
func Graph(g *graphir.Graph) []Diagnostic {
	return Sort(newPass(g, map[*graphir.Graph]*childCheck{}).run())
}

func newPass(g *graphir.Graph, children map[*graphir.Graph]*childCheck) *pass {
	return &pass{g: g, children: children}
}

func (p *pass) run() []Diagnostic {
	for _, r := range rules {
		r(p)
	}
	return p.diags
}

// Sort orders diagnostics by file, line, column, then code and message, and
// drops exact duplicates.
func Sort(ds []Diagnostic) []Diagnostic {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Pos != b.Pos {
			return a.Pos.Less(b.Pos)
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Message < b.Message
	})
	out := ds[:0]
	for i, d := range ds {
		if i > 0 && d.Pos == ds[i-1].Pos && d.Code == ds[i-1].Code && d.Message == ds[i-1].Message {
			continue
		}
		out = append(out, d)
	}
	return out
}

// Count returns the number of errors and warnings in ds.
func Count(ds []Diagnostic) (errors, warnings int) {
	for _, d := range ds {
		if d.Severity == Error {
			errors++
		} else {
			warnings++
		}
	}
	return
}

// pass is the state of checking one graph.
type pass struct {
	g     *graphir.Graph
	diags []Diagnostic

	// Computed on first use and shared by the rules that need them.
	sc   *scopeIndex // scopes.go
	ex   *exprIndex  // exprs.go
	sets [2]nodeSet  // scratch sets for reach.go

	// children holds the checks of literal child flows, shared with the
	// passes over those children so each is checked once (subflows.go).
	children map[*graphir.Graph]*childCheck
	deepest  []string // the files of the deepest literal child chain below g
}

// report adds a diagnostic about node n (nil for the flow as a whole).
func (p *pass) report(code codes.Code, n *graphir.Node, pos graphir.Pos, msg, hint string) {
	p.diags = append(p.diags, p.diag(code, n, pos, msg, hint))
}

// diag builds a diagnostic about node n (nil for the flow as a whole); a
// step's diagnostic names it and carries the trace of its creation.
func (p *pass) diag(code codes.Code, n *graphir.Node, pos graphir.Pos, msg, hint string) Diagnostic {
	d := Diagnostic{Code: code, Severity: SeverityOf(code), Message: msg, Pos: pos, Hint: hint}
	if n != nil && n.IsStep() {
		d.Step = n.Name
		d.Trace = n.Stack.Trace(n.Stack.UserFrame())
	}
	return d
}

// reportEdge adds a diagnostic about edge e.
func (p *pass) reportEdge(code codes.Code, e *graphir.Edge, msg, hint string) {
	d := Diagnostic{Code: code, Severity: SeverityOf(code), Message: msg, Pos: e.Pos, Hint: hint,
		Step: p.g.Nodes[e.From].Name, Trace: e.Stack.Trace(e.Stack.UserFrame())}
	p.diags = append(p.diags, d)
}

// flowPos is where a diagnostic about the flow as a whole points: the flow()
// call, else the first step, else the top of the file.
func (p *pass) flowPos() graphir.Pos {
	if p.g.Pos.IsValid() {
		return p.g.Pos
	}
	if steps := p.g.Steps(); len(steps) > 0 {
		return steps[0].Pos
	}
	return graphir.Pos{File: p.g.File, Line: 1, Col: 1}
}
