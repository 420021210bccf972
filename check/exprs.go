package check

// This file resolves the names that expressions and templates read (docs/language.md)
// and reports unknown_name, unknown_input, unknown_output and expr_syntax,
// and refuses templates inside shell= (shell_interpolation).
//
// An expression is checked where it is evaluated: an edge's condition in
// the scope of the edge's source, a router's by and cases and a step's
// templates in the scope of the step, a map's over in the scope around the
// map (its items are not bound yet), the flow's output at the top level.
// Functions given instead of expressions are opaque here.

import (
	"fmt"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
)

type siteKind uint8

const (
	siteWhen      siteKind = iota // an edge's condition
	siteBy                        // a router's by=
	siteCase                      // a router case's condition
	siteOver                      // a map's over=
	siteOutput                    // the flow's output=
	siteTemplate                  // one {{ }} of a step's template
	siteRetryWhen                 // a step's retry_when=, after a failed attempt
	siteFn                        // a fn step's function
	siteUntil                     // a loop's until function
)

// site is one string expression and where it is evaluated.
type site struct {
	x     *graphir.Expr
	kind  siteKind
	at    graphir.NodeID // the node evaluating it: the edge's source, END for output=
	scope graphir.NodeID // the scope its names resolve in
	edge  graphir.EdgeID // siteWhen: the edge
	field string         // siteTemplate: run, env, stdin, dir, flow or inputs
	key   string         // env and inputs: the key
	index int            // run: the argument; siteCase: the case
}

// after reports whether the expression runs once its node has finished
// (an edge's condition), rather than before the node runs.
func (s *site) after() bool { return s.kind == siteWhen || s.kind == siteRetryWhen }

// read is one resolved read of a step's output by an expression.
type read struct {
	site int32
	step graphir.NodeID
	pos  graphir.Pos
}

// exprIndex is every expression of the graph with the steps it reads.
type exprIndex struct {
	sites    []site
	reads    []read
	readStep []bool       // node -> some expression names it
	problems []Diagnostic // what checkExprs reports
	visible  map[graphir.NodeID][]string
}

// taskFields are the fields of a task or shell step's output (docs/language.md).
var taskFields = []string{"stdout", "text", "stderr", "exit_code", "error", "code"}

// rootNames are the names every expression may read besides steps.
var rootNames = []string{"inputs", "self", "visits", "status"}

// exprs returns the expression index of the pass's graph, building it on
// first use.
func (p *pass) exprs() *exprIndex {
	if p.ex != nil {
		return p.ex
	}
	g := p.g
	ix := &exprIndex{readStep: make([]bool, len(g.Nodes)), visible: map[graphir.NodeID][]string{}}
	ix.sites = make([]site, 0, len(g.Edges)/2+len(g.Nodes)/2)
	p.ex = ix
	add := func(s site) {
		if s.x == nil || s.x.User && s.x.Reads == nil {
			return // a function whose syntax is not known is opaque
		}
		ix.sites = append(ix.sites, s)
	}
	for _, e := range g.Edges {
		if e.When != nil && !e.Router {
			add(site{x: e.When, kind: siteWhen, at: e.From, scope: scopeOf(g, e.From), edge: e.ID})
		}
	}
	for _, n := range g.Steps() {
		tmpl := func(t *graphir.Template, field, key string, index int) {
			if t == nil {
				return
			}
			for _, part := range t.Parts {
				if part.X != nil {
					add(site{x: part.X, kind: siteTemplate, at: n.ID, scope: n.Parent, field: field, key: key, index: index})
				}
			}
			if t.Err != nil && !holeErr(t) {
				// An unclosed {{: no hole carries the error.
				ix.problems = append(ix.problems, p.diag(codes.ExprSyntax, n, t.Err.Pos,
					fmt.Sprintf("invalid template in %s: %s", describeField(n, field, key, index), t.Err.Msg),
					`write a literal "{{" as {{ "{{" }}`))
			}
		}
		stepTemplates(n, tmpl)
		add(site{x: n.RetryWhen, kind: siteRetryWhen, at: n.ID, scope: n.Parent})
		switch n.Kind {
		case graphir.KindFn:
			if n.FnReads != nil {
				add(site{x: &graphir.Expr{Func: n.Fn, User: true, Pos: n.Pos, Reads: n.FnReads}, kind: siteFn, at: n.ID, scope: n.Parent})
			}
		case graphir.KindLoop:
			if lp := n.Loop; lp.Until != nil && lp.UntilReads != nil {
				add(site{x: &graphir.Expr{Func: lp.Until, User: true, Pos: lp.UntilPos, Reads: lp.UntilReads}, kind: siteUntil, at: n.ID, scope: n.ID})
			}
		case graphir.KindRouter:
			add(site{x: n.Router.By, kind: siteBy, at: n.ID, scope: n.Parent})
			for i, c := range n.Router.Cases {
				add(site{x: c.When, kind: siteCase, at: n.ID, scope: n.Parent, index: i})
			}
		case graphir.KindMap:
			add(site{x: n.Map.Over, kind: siteOver, at: n.ID, scope: n.Parent})
		}
	}
	add(site{x: g.Output, kind: siteOutput, at: graphir.End, scope: graphir.None})

	for i := range ix.sites {
		p.resolveSite(ix, int32(i))
	}
	return ix
}

// holeErr reports whether t's error is one of its holes' own.
func holeErr(t *graphir.Template) bool {
	for _, part := range t.Parts {
		if part.X != nil && part.X.Err == t.Err {
			return true
		}
	}
	return false
}

// resolveSite resolves every name read by one site: the free names of a
// string expression, or the r.NAME reads of a function.
func (p *pass) resolveSite(ix *exprIndex, si int32) {
	s := &ix.sites[si]
	if s.x.Err != nil {
		ix.problems = append(ix.problems, p.siteDiag(s, codes.ExprSyntax, s.x.Err.Pos,
			fmt.Sprintf("invalid expression in %s: %s", p.describe(s), s.x.Err.Msg), syntaxHint(s.x.Src)))
		return
	}
	refs := s.x.Refs
	if s.x.User {
		refs = s.x.Reads.Refs
	}
	if s.kind == siteUntil {
		for _, r := range refs {
			p.resolveUntilRef(ix, s, r)
		}
		return
	}
	for _, r := range refs {
		p.resolveRef(ix, si, r)
	}
}

// resolveRef resolves one name read by a site.
func (p *pass) resolveRef(ix *exprIndex, si int32, r graphir.Ref) {
	g := p.g
	s := &ix.sites[si]
	switch r.Name {
	case "inputs":
		if name := r.Attr + r.Key; name != "" && g.Input(name) == nil {
			ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownInput, r.Pos,
				fmt.Sprintf("unknown input %q in %s", name, p.describe(s)), p.inputHint(name)))
		}
		return
	case "self", "visits", "status":
		return
	case "run":
		if !p.inExitHandler(s.at) {
			ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownName, r.Pos,
				fmt.Sprintf("run is only defined in the exit handler (in %s)", p.describe(s)),
				"run.status and run.error say how the run ended; read them in the step named by flow(on_exit=...)"))
		}
		return
	}
	if scopeVar(g, s.scope, r.Name) {
		return
	}
	n := g.Node(r.Name)
	if n == nil || !n.IsStep() {
		ix.problems = append(ix.problems, p.unknownName(s, r))
		return
	}
	if !encloses(g, n.Parent, s.scope) {
		owner := g.Nodes[n.Parent]
		for !encloses(g, owner.Parent, s.scope) {
			owner = g.Nodes[owner.Parent]
		}
		hint := fmt.Sprintf("read the output of %s %q instead", owner.Kind, owner.Name)
		if owner.Kind == graphir.KindMap {
			hint += " (the list of each item's result)"
		} else if owner.Kind == graphir.KindLoop {
			hint += " (the last iteration's result), or look at it in the loop's until"
		}
		ix.problems = append(ix.problems, p.siteDiag(s, codes.BodyRead, r.Pos,
			fmt.Sprintf("%s reads step %q, which is inside %s: a body step cannot be read from outside its body", p.describe(s), n.Name, describeScope(g, n.Parent)),
			hint))
		return
	}
	ix.readStep[n.ID] = true
	ix.reads = append(ix.reads, read{site: si, step: n.ID, pos: r.Pos})
	if n.Kind == graphir.KindApproval && r.Attr+r.Key == "values" {
		p.resolveValuesRef(ix, s, n, r)
	}
	if field := r.Attr + r.Key; n.Kind.IsProcess() && field != "" && !contains(taskFields, field) && !mapMethod(r) {
		hint := "task outputs have stdout, text, stderr, exit_code, error and code"
		if near := spell.Nearest(field, taskFields); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		}
		ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownOutput, r.Pos,
			fmt.Sprintf("step %q is a %s: its output has no field %q (in %s)", n.Name, n.Kind, field, p.describe(s)), hint))
	}
}

// resolveValuesRef checks a read of the values of approval step n: the
// step declares fields, and r.Sub, when read, is one of them.
func (p *pass) resolveValuesRef(ix *exprIndex, s *site, n *graphir.Node, r graphir.Ref) {
	names := make([]string, len(n.Fields))
	for i, f := range n.Fields {
		names[i] = f.Name
	}
	switch {
	case len(n.Fields) == 0:
		ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownOutput, r.Pos,
			fmt.Sprintf("approval step %q declares no fields: its output has no values (in %s)", n.Name, p.describe(s)),
			"declare what the person gives with fields = {\"name\": input(type = \"string\")}"))
	case r.Sub != "" && !contains(names, r.Sub) && !(r.Key == "" && contains(mapMethods, r.Sub)):
		hint := "its fields are " + quoted(names)
		if near := spell.Nearest(r.Sub, names); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		}
		ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownOutput, r.Pos,
			fmt.Sprintf("approval step %q has no field %q (in %s)", n.Name, r.Sub, p.describe(s)), hint))
	}
}

// mapMethods are the methods of the dict-like values the run gives
// (task outputs, it.result): build.get("stdout"), it.result.keys().
var mapMethods = []string{"get", "keys", "values", "items"}

// mapMethod reports whether r calls a method of a dict-like value rather
// than reading a field.
func mapMethod(r graphir.Ref) bool {
	return r.Key == "" && contains(mapMethods, r.Attr)
}

// untilFields are the fields of the argument of a loop's until (docs/language.md).
var untilFields = []string{"index", "iteration", "output", "result", "history", "feedback", "max_iterations", "is_last", "inputs"}

// resolveUntilRef checks one read of until's argument: a field it has, and
// for it.result.NAME a step of the loop's body.
func (p *pass) resolveUntilRef(ix *exprIndex, s *site, r graphir.Ref) {
	g := p.g
	loop := g.Nodes[s.at]
	param := s.x.Reads.Param
	var body []string
	for _, id := range g.Scope(loop.ID) {
		body = append(body, g.Nodes[id].Name)
	}
	switch field := r.Attr + r.Key; r.Name {
	case "inputs":
		if field != "" && g.Input(field) == nil {
			ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownInput, r.Pos,
				fmt.Sprintf("unknown input %q in %s", field, p.describe(s)), p.inputHint(field)))
		}
		return
	case "result":
		if field == "" {
			return
		}
		if !contains(body, field) && mapMethod(r) {
			// it.result.get("probe"): any body step may be read.
			for _, id := range g.Scope(loop.ID) {
				ix.readStep[id] = true
			}
			return
		}
		if !contains(body, field) {
			hint := fmt.Sprintf("%s.result holds the output of each step of the body of loop %q: %s", param, loop.Name, quoted(body))
			if near := spell.Nearest(field, body); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			}
			ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownName, r.Pos,
				fmt.Sprintf("%s.result has no step %q in %s", param, field, p.describe(s)), hint))
			return
		}
		ix.readStep[g.Node(field).ID] = true
		return
	}
	if contains(untilFields, r.Name) {
		return
	}
	msg := fmt.Sprintf("%s.%s in %s: until's argument has no field %q", param, r.Name, p.describe(s), r.Name)
	var hint string
	if contains(body, r.Name) {
		hint = fmt.Sprintf("a body step's output is in %s.result: write %s.result.%s", param, param, r.Name)
	} else if near := spell.Nearest(r.Name, untilFields); near != "" {
		hint = fmt.Sprintf("did you mean %s.%s?", param, near)
	} else {
		hint = fmt.Sprintf("until's argument has %s", strings.Join(untilFields, ", "))
	}
	ix.problems = append(ix.problems, p.siteDiag(s, codes.UnknownName, r.Pos, msg, hint))
}

// scopeVar reports whether name is bound by a loop or map around scope:
// loop inside a loop body, a map's item_var and index inside a map body.
func scopeVar(g *graphir.Graph, scope graphir.NodeID, name string) bool {
	for s := scope; s != graphir.None; s = g.Nodes[s].Parent {
		switch n := g.Nodes[s]; n.Kind {
		case graphir.KindLoop:
			if name == "loop" {
				return true
			}
		case graphir.KindMap:
			if name == n.Map.ItemVar || name == "index" {
				return true
			}
		}
	}
	return false
}

// unknownName explains a name that is neither a step nor bound where it is
// read.
func (p *pass) unknownName(s *site, r graphir.Ref) Diagnostic {
	g := p.g
	msg := fmt.Sprintf("unknown name %q in %s", r.Name, p.describe(s))
	hint := ""
	name := r.Name
	if s.x.User {
		msg = fmt.Sprintf("%s.%s in %s: no step, input root or run-view field is called %q", s.x.Reads.Param, r.Name, p.describe(s), r.Name)
		name = "" // the special cases below are about expressions
	}
	switch name {
	case "loop":
		msg = fmt.Sprintf("%q is only defined inside a loop body (in %s)", r.Name, p.describe(s))
	case "item", "index":
		msg = fmt.Sprintf("%q is only defined inside a map body (in %s)", r.Name, p.describe(s))
		for sc := s.scope; sc != graphir.None; sc = g.Nodes[sc].Parent {
			if n := g.Nodes[sc]; n.Kind == graphir.KindMap {
				hint = fmt.Sprintf("map %q names its element %q (item_var)", n.Name, n.Map.ItemVar)
				break
			}
		}
		if s.kind == siteOver {
			hint = "over= is evaluated before the map runs, so its items are not bound yet"
		}
	case "args":
		msg = fmt.Sprintf("args is only defined in a tool's templates (in %s)", p.describe(s))
		hint = "tool(..., run = [\"cat\", \"{{ args.path }}\"], params = {\"path\": \"string\"}) reads the model's arguments as args.NAME"
	case "r":
		hint = "r is the argument of functions; in an expression name the step directly (critique.ok, not r.critique.ok)"
	}
	if hint == "" {
		cands := append([]string(nil), rootNames...)
		for sc := s.scope; sc != graphir.None; sc = g.Nodes[sc].Parent {
			switch n := g.Nodes[sc]; n.Kind {
			case graphir.KindLoop:
				cands = append(cands, "loop")
			case graphir.KindMap:
				cands = append(cands, n.Map.ItemVar, "index")
			}
		}
		cands = append(cands, p.visibleSteps(s.scope)...)
		if near := spell.Nearest(r.Name, cands); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		} else {
			hint = "an expression can read step names, inputs, self, visits and the modules json, math, re and struct"
			if s.x.User {
				hint = fmt.Sprintf("%s has the steps' outputs (%s.build), %s.inputs, %s.self, %s.visits(name) and %s.status(name)",
					s.x.Reads.Param, s.x.Reads.Param, s.x.Reads.Param, s.x.Reads.Param, s.x.Reads.Param, s.x.Reads.Param)
			}
		}
	}
	return p.siteDiag(s, codes.UnknownName, r.Pos, msg, hint)
}

// visibleSteps lists the names of the steps an expression in scope may
// read, for hints (computed once per scope).
func (p *pass) visibleSteps(scope graphir.NodeID) []string {
	if names, ok := p.ex.visible[scope]; ok {
		return names
	}
	var names []string
	for _, n := range p.g.Steps() {
		if encloses(p.g, n.Parent, scope) {
			names = append(names, n.Name)
		}
	}
	p.ex.visible[scope] = names
	return names
}

// inputHint suggests the nearest declared input, or declaring it.
func (p *pass) inputHint(name string) string {
	names := make([]string, len(p.g.Inputs))
	for i, in := range p.g.Inputs {
		names[i] = in.Name
	}
	if near := spell.Nearest(name, names); near != "" {
		return fmt.Sprintf("did you mean %q?", near)
	}
	return fmt.Sprintf(`declare it: flow(inputs = {%q: ...})`, name)
}

// describe names where a site's expression is written.
func (p *pass) describe(s *site) string {
	g := p.g
	switch s.kind {
	case siteWhen:
		e := g.Edges[s.edge]
		return fmt.Sprintf("the condition of edge %s -> %s", g.Nodes[e.From].Name, g.Nodes[e.To].Name)
	case siteBy:
		return fmt.Sprintf("by= of router %q", g.Nodes[s.at].Name)
	case siteCase:
		return fmt.Sprintf("case %d of router %q", s.index, g.Nodes[s.at].Name)
	case siteOver:
		return fmt.Sprintf("over= of map %q", g.Nodes[s.at].Name)
	case siteOutput:
		return "output= of the flow"
	case siteRetryWhen:
		return fmt.Sprintf("retry_when= of step %q", g.Nodes[s.at].Name)
	case siteFn:
		return fmt.Sprintf("fn= of step %q", g.Nodes[s.at].Name)
	case siteUntil:
		return fmt.Sprintf("until= of loop %q", g.Nodes[s.at].Name)
	}
	return describeField(g.Nodes[s.at], s.field, s.key, s.index)
}

// describeField names one template parameter of step n.
func describeField(n *graphir.Node, field, key string, index int) string {
	switch field {
	case "run":
		return fmt.Sprintf("argument %d of step %q", index, n.Name)
	case "env", "inputs":
		return fmt.Sprintf("%s[%q] of step %q", field, key, n.Name)
	}
	return fmt.Sprintf("%s= of step %q", field, n.Name)
}

// siteDiag builds a diagnostic about an expression: an edge's condition
// points at the edge() call's stack, anything else at its step's.
func (p *pass) siteDiag(s *site, code codes.Code, pos graphir.Pos, msg, hint string) Diagnostic {
	d := p.diag(code, p.g.Nodes[s.at], pos, msg, hint)
	if s.kind == siteWhen {
		st := p.g.Edges[s.edge].Stack
		d.Trace = st.Trace(st.UserFrame())
	}
	return d
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// checkExprs reports the problems found while resolving expressions, and
// every template inside shell=.
func checkExprs(p *pass) {
	p.diags = append(p.diags, p.exprs().problems...)
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindShell || n.Shell == nil {
			continue
		}
		for _, part := range n.Shell.Parts {
			if part.X == nil {
				continue
			}
			p.report(codes.ShellInterpolation, n, part.X.Pos,
				fmt.Sprintf("shell= of step %q contains the template {{ %s }}: its value would be parsed by the shell", n.Name, part.X.Src),
				fmt.Sprintf(`pass the value through env (env = {"%s": "{{ %s }}"}) and write "$%s" in the script`,
					envName(part.X), part.X.Src, envName(part.X)))
		}
	}
}

// envName suggests an environment variable name for the value of x, from
// the last name it reads: NAME for inputs.name, DRAFT_STDOUT for
// draft.stdout.
func envName(x *graphir.Expr) string {
	name := "VALUE"
	if len(x.Refs) > 0 {
		r := x.Refs[len(x.Refs)-1]
		field := r.Attr + r.Key
		switch {
		case field == "":
			name = r.Name
		case r.Name == "inputs":
			name = field
		default:
			name = r.Name + "_" + field
		}
	}
	name = strings.ToUpper(name)
	if !graphir.ValidName(strings.ToLower(name)) {
		return "VALUE"
	}
	return name
}

// syntaxHint explains a common mistake in an expression that does not
// parse: a single "=" meant as a comparison.
func syntaxHint(src string) string {
	var b strings.Builder
	var quote byte
	found := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '\\' && i+1 < len(src) {
				b.WriteByte(c)
				i++
				c = src[i]
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '=' && (i == 0 || !strings.ContainsRune("=!<>", rune(src[i-1]))) && (i+1 == len(src) || src[i+1] != '='):
			b.WriteString("==")
			found = true
			continue
		}
		b.WriteByte(c)
	}
	if !found {
		return ""
	}
	return fmt.Sprintf("= assigns and an expression cannot assign; to compare, write ==: %s", b.String())
}

// stepTemplates calls visit with each template step n holds, named by
// its field (and key or index) as describeField names them.
func stepTemplates(n *graphir.Node, visit func(t *graphir.Template, field, key string, index int)) {
	for i, t := range n.Argv {
		visit(t, "run", "", i)
	}
	for _, v := range n.Env {
		visit(v.Value, "env", v.Name, 0)
	}
	visit(n.Stdin, "stdin", "", 0)
	visit(n.Dir, "dir", "", 0)
	if n.WaitUntil {
		visit(n.Wait, "wait_until", "", 0)
	} else {
		visit(n.Wait, "wait", "", 0)
	}
	visit(n.Approve, "approve", "", 0)
	if sub := n.Subflow; sub != nil {
		visit(sub.Flow, "flow", "", 0)
		for _, in := range sub.Inputs {
			visit(in.Value, "inputs", in.Name, 0)
		}
	}
	if call := n.Call; call != nil {
		if n.Kind == graphir.KindAgent {
			visit(call.Prompt, "agent", "", 0)
		} else {
			visit(call.Prompt, "llm", "", 0)
		}
		visit(call.System, "system", "", 0)
	}
}
