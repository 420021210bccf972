package lsp

// This file answers hover, definition, completion, document symbol and
// formatting requests from the last check of a buffer and its syntax tree.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
)

// cursor is a position in an open buffer, with what surrounds it.
type cursor struct {
	d    *document
	g    *graphir.Graph // the last graph of the buffer, or nil
	file *syntax.File   // the last syntax tree, or nil
	// fileOf is the text file was parsed from, which keeps what is read
	// from the tree once per version of the buffer rather than once per
	// request.
	fileOf *text
	pos    position
	line   string   // the cursor's line
	off    int      // byte offset of the cursor in line
	lit    *literal // the string literal around pos, once str has looked
}

// open returns the open buffer of uri; it is called with s.mu held.
func (s *Server) open(uri string) (*document, *respError) {
	d := s.docs[filepath.Clean(pathOf(uri))]
	if d == nil {
		return nil, &respError{codeInvalidParams, "the document is not open: " + uri}
	}
	return d, nil
}

// opened returns the open buffer that params (documentParams) name; it is
// called with s.mu held.
func (s *Server) opened(params json.RawMessage) (*document, *respError) {
	var p documentParams
	if e := decode(params, &p); e != nil {
		return nil, e
	}
	return s.open(p.TextDocument.URI)
}

// at resolves a text document position; it is called with s.mu held.
func (s *Server) at(params json.RawMessage) (*cursor, *respError) {
	var p textDocumentPositionParams
	if e := decode(params, &p); e != nil {
		return nil, e
	}
	d, e := s.open(p.TextDocument.URI)
	if e != nil {
		return nil, e
	}
	// Answered from the last good state: the graph of the last check that
	// made one (a check under way is not waited for), and the tree of the
	// buffer as it is, or as it was at that check if it does not parse.
	c := &cursor{d: d, pos: p.Position, line: d.text.line(p.Position.Line), off: d.text.offset(p.Position)}
	if d.good != nil {
		c.g = d.good.g
	}
	if f := d.text.tree(d.path); f != nil {
		c.file, c.fileOf = f, d.text
	} else if d.good != nil {
		if f := d.good.text.tree(d.path); f != nil {
			c.file, c.fileOf = f, d.good.text
		}
	}
	return c, nil
}

// str reports whether the cursor is inside a string literal, which may
// span lines (a triple-quoted prompt), and returns the literal's contents
// and the part of them before the cursor. The buffer is read up to the
// cursor once per cursor, however many features ask.
func (c *cursor) str() (contents, before string, ok bool) {
	if c.lit == nil {
		c.lit = new(literal)
		at := c.d.text.lineStart(c.pos.Line) + c.off
		src := c.d.text.src
		if _, start, end, ok := stringAt(src, at); ok {
			c.lit.contents, c.lit.before, c.lit.in = src[start:end], src[start:at], true
		}
	}
	return c.lit.contents, c.lit.before, c.lit.in
}

// literal is what [cursor.str] found.
type literal struct {
	contents, before string
	in               bool
}

// runeCol is the 1-based rune column of byte offset off in c's line.
func (c *cursor) runeCol(off int) int { return utf8.RuneCountInString(c.line[:off]) + 1 }

// ident returns the identifier of the syntax tree at the cursor, and the
// call and keyword argument it names, if it is one.
func (c *cursor) ident() (id *syntax.Ident, call *syntax.CallExpr, keyword bool) {
	if c.file == nil {
		return nil, nil, false
	}
	word, ws, _ := wordAt(c.line, c.off)
	if word == "" {
		return nil, nil, false
	}
	line, col := int32(c.pos.Line+1), int32(c.runeCol(ws))
	visit := func(n syntax.Node) bool {
		if id != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			for _, a := range n.Args {
				if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
					if x, ok := b.X.(*syntax.Ident); ok && x.NamePos.Line == line && x.NamePos.Col == col {
						id, call, keyword = x, n, true
						return false
					}
				}
			}
		case *syntax.Ident:
			if n.NamePos.Line == line && n.NamePos.Col == col {
				id = n
			}
		}
		return true
	}
	// Only the top-level statements around the cursor's line can hold it,
	// and they are in order: the walk is of them, not of the whole file.
	stmts := c.file.Stmts
	i := sort.Search(len(stmts), func(i int) bool { _, end := stmts[i].Span(); return end.Line >= line })
	for ; i < len(stmts) && id == nil; i++ {
		if start, _ := stmts[i].Span(); start.Line > line {
			break
		}
		syntax.Walk(stmts[i], visit)
	}
	return id, call, keyword
}

// calledName is the name a call calls, if it is a plain name.
func calledName(call *syntax.CallExpr) string {
	if id, ok := call.Fn.(*syntax.Ident); ok {
		return id.Name
	}
	return ""
}

// stepVars maps the globals bound to a step() (router, loop, map) call
// with a literal name to that name, in the cursor's syntax tree. The map
// is made once per version of the buffer: it walks the whole tree.
func (c *cursor) stepVars() map[string]string {
	if c.fileOf == nil {
		return nil
	}
	if c.fileOf.vars == nil {
		c.fileOf.vars = stepVars(c.file)
	}
	return c.fileOf.vars
}

// stepVars maps the globals bound to a step() (router, loop, map) call
// with a literal name to that name.
func stepVars(f *syntax.File) map[string]string {
	vars := map[string]string{}
	if f == nil {
		return vars
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		a, ok := n.(*syntax.AssignStmt)
		if !ok || a.Op != syntax.EQ {
			return true
		}
		id, ok := a.LHS.(*syntax.Ident)
		call, ok2 := a.RHS.(*syntax.CallExpr)
		if !ok || !ok2 || len(call.Args) == 0 {
			return true
		}
		switch calledName(call) {
		case "step", "router", "loop", "map":
			if lit, ok := call.Args[0].(*syntax.Literal); ok && lit.Token == syntax.STRING {
				vars[id.Name] = lit.Value.(string)
			}
		}
		return true
	})
	return vars
}

// stepAt returns the step the cursor names: a step name in a string
// (expression, template, route target) or a variable bound to a step.
func (c *cursor) stepAt() *graphir.Node {
	if c.g == nil {
		return nil
	}
	word, ws, _ := wordAt(c.line, c.off)
	if word == "" {
		return nil
	}
	if str, before, in := c.str(); in {
		if ws > 0 && c.line[ws-1] == '.' {
			return nil // a field, not a name
		}
		if strings.Contains(str, "{{") && !inHole(str, len(before)) {
			return nil // the literal text of a template
		}
		if n := c.g.Node(word); n != nil {
			return n
		}
		return nil
	}
	if id, _, kw := c.ident(); id != nil && !kw {
		if name, ok := c.stepVars()[id.Name]; ok {
			return c.g.Node(name)
		}
		for _, sentinel := range []graphir.NodeID{graphir.Start, graphir.End, graphir.Abort} {
			if n := c.g.Nodes[sentinel]; n.Name == id.Name {
				return n
			}
		}
	}
	return nil
}

// inHole reports whether offset off of template s is inside a {{ }}.
func inHole(s string, off int) bool {
	open := strings.LastIndex(s[:off], "{{")
	return open >= 0 && !strings.Contains(s[open:off], "}}")
}

// inputAt returns the input named by inputs.NAME around the cursor in a
// string, or "".
func (c *cursor) inputAt() string {
	if _, _, in := c.str(); !in {
		return ""
	}
	word, ws, _ := wordAt(c.line, c.off)
	if word != "" && strings.HasSuffix(c.line[:ws], "inputs.") {
		return word
	}
	return ""
}

func (s *Server) hover(params json.RawMessage) (any, *respError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, e := s.at(params)
	if e != nil {
		return nil, e
	}
	md := ""
	if n := c.stepAt(); n != nil {
		md = stepHover(c.g, n)
		if good := c.d.good; n.IsStep() && good != nil && good.g == c.g {
			if se := good.envelope().Step(n.Name); se != nil {
				md += envelopeHover(se)
			}
		}
	} else if name := c.inputAt(); name != "" && c.g != nil {
		if in := c.g.Input(name); in != nil {
			md = inputHover(in)
		}
	} else if id, call, kw := c.ident(); id != nil {
		if kw {
			if d := builtins.DocOf(calledName(call)); d != nil {
				if p := d.Param(id.Name); p != nil {
					md = fmt.Sprintf("**%s** of `%s`", p.Name, d.Signature())
					if p.Default != "" {
						md += fmt.Sprintf("\n\ndefault `%s`", p.Default)
					}
					md += "\n\n" + p.Doc
				}
			}
		} else if d := builtins.DocOf(id.Name); d != nil {
			md = builtinHover(d)
		}
	}
	if md == "" {
		return nil, nil
	}
	return hover{Contents: markupContent{Kind: "markdown", Value: md}}, nil
}

// inputHover describes a flow input: type, default, help and choices.
func inputHover(in *graphir.Input) string {
	md := fmt.Sprintf("**input `%s`**", in.Name)
	if in.Type != "" {
		md += fmt.Sprintf(" (%s)", in.Type)
	}
	if in.Required {
		md += ", required"
	} else {
		md += fmt.Sprintf(", default `%s`", in.Default)
	}
	if len(in.Choices) > 0 {
		var cs []string
		for _, c := range in.Choices {
			cs = append(cs, c.String())
		}
		md += fmt.Sprintf("; one of %s", strings.Join(cs, ", "))
	}
	if in.Help != "" {
		md += "\n\n" + in.Help
	}
	return md
}

func builtinHover(d *builtins.Doc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "```python\n%s\n```\n\n%s\n", d.Signature(), d.Summary)
	for _, p := range d.Params {
		fmt.Fprintf(&b, "\n- `%s`: %s", p.Name, p.Doc)
	}
	return b.String()
}

// stepHover describes a step: kind, declaration, bound, join and reads.
// envelopeHover says what a step may spend over a run (docs/envelope.md).
func envelopeHover(se *check.StepEnvelope) string {
	counts := se.Envelope
	counts.Seconds = check.Amount{}
	s := fmt.Sprintf("- envelope of a run: visits at most %s; %s", se.Visits, counts.Summary(false))
	if !se.Seconds.IsZero() {
		s += "; time " + se.Seconds.Format(check.FormatSeconds) + " a visit"
	}
	return s + "\n"
}

func stepHover(g *graphir.Graph, n *graphir.Node) string {
	if !n.IsStep() {
		return fmt.Sprintf("**%s**: the %s sentinel", n.Name, strings.ToLower(n.Name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** `%s`\n\n", n.Kind, n.Name)
	fmt.Fprintf(&b, "- declared at %s\n", n.Pos)
	switch bound := g.VisitBound(n); {
	case n.MaxVisits > 0:
		fmt.Fprintf(&b, "- max_visits: %d\n", bound)
	case bound > 0:
		fmt.Fprintf(&b, "- max_visits: %d (the flow's default)\n", bound)
	default:
		b.WriteString("- max_visits: unbounded\n")
	}
	fmt.Fprintf(&b, "- join: %s\n", n.Join)
	if n.Parent != graphir.None {
		fmt.Fprintf(&b, "- in the body of %s\n", g.Nodes[n.Parent].Name)
	}
	if reads := nodeReads(g, n); len(reads) > 0 {
		fmt.Fprintf(&b, "- reads: %s\n", strings.Join(reads, ", "))
	}
	return b.String()
}

// nodeReads lists what a step's expressions and templates read, and its
// in-edges' conditions: step names and inputs.NAME, each once, sorted.
func nodeReads(g *graphir.Graph, n *graphir.Node) []string {
	var exprs []*graphir.Expr
	var tmpls []*graphir.Template
	tmpls = append(tmpls, n.Argv...)
	tmpls = append(tmpls, n.Shell, n.Stdin, n.Dir)
	for _, e := range n.Env {
		tmpls = append(tmpls, e.Value)
	}
	if sub := n.Subflow; sub != nil {
		tmpls = append(tmpls, sub.Flow)
		for _, in := range sub.Inputs {
			tmpls = append(tmpls, in.Value)
		}
	}
	for _, t := range tmpls {
		if t != nil {
			exprs = append(exprs, t.Exprs()...)
		}
	}
	if rt := n.Router; rt != nil {
		exprs = append(exprs, rt.By)
		for _, cs := range rt.Cases {
			exprs = append(exprs, cs.When)
		}
	}
	if n.Map != nil {
		exprs = append(exprs, n.Map.Over)
	}
	for _, id := range n.In {
		exprs = append(exprs, g.Edges[id].When)
	}
	seen := map[string]bool{}
	var out []string
	for _, x := range exprs {
		if x == nil {
			continue
		}
		for _, r := range x.Refs {
			name := r.Name
			switch {
			case name == "inputs" && r.Attr != "":
				name = "inputs." + r.Attr
			case g.Node(name) == nil:
				continue
			case r.Attr != "":
				name += "." + r.Attr
			}
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) definition(params json.RawMessage) (any, *respError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, e := s.at(params)
	if e != nil {
		return nil, e
	}
	if loc := s.definitionOf(c); loc != nil {
		return []location{*loc}, nil
	}
	return nil, nil
}

func (s *Server) definitionOf(c *cursor) *location {
	if path := c.loadPath(); path != "" {
		return &location{URI: uriOf(path)}
	}
	if name := c.inputAt(); name != "" {
		if p := c.inputDecl(name); p.Line > 0 {
			return s.locationOf(p)
		}
		if c.g != nil && c.g.Pos.IsValid() {
			return s.locationOf(c.g.Pos)
		}
		return nil
	}
	if n := c.stepAt(); n != nil && n.IsStep() && n.Pos.IsValid() {
		return s.locationOf(n.Pos)
	}
	id, _, kw := c.ident()
	if id == nil || kw || c.file == nil {
		return nil
	}
	// A name bound by load(): the module's top-level definition of it.
	for _, st := range c.file.Stmts {
		ld, ok := st.(*syntax.LoadStmt)
		if !ok {
			continue
		}
		for i, to := range ld.To {
			if to.Name != id.Name {
				continue
			}
			path := filepath.Join(filepath.Dir(c.d.path), ld.ModuleName())
			src, err := s.readFile(path)
			if err != nil {
				return &location{URI: uriOf(path)}
			}
			if p, ok := topLevel(path, src, ld.From[i].Name); ok {
				return s.locationOf(p)
			}
			return &location{URI: uriOf(path)}
		}
	}
	// A function or global of this file.
	if p, ok := topLevel(c.d.path, []byte(c.d.text.src), id.Name); ok && (p.Line != c.pos.Line+1) {
		return s.locationOf(p)
	}
	return nil
}

// topLevel finds where a file defines a top-level function or assigns a
// global called name.
func topLevel(file string, src []byte, name string) (graphir.Pos, bool) {
	f, err := graphir.ParseFile(file, src, 0)
	if err != nil {
		return graphir.Pos{}, false
	}
	for _, st := range f.Stmts {
		switch st := st.(type) {
		case *syntax.DefStmt:
			if st.Name.Name == name {
				return graphir.Pos{File: file, Line: int(st.Name.NamePos.Line), Col: int(st.Name.NamePos.Col)}, true
			}
		case *syntax.AssignStmt:
			if id, ok := st.LHS.(*syntax.Ident); ok && id.Name == name {
				return graphir.Pos{File: file, Line: int(id.NamePos.Line), Col: int(id.NamePos.Col)}, true
			}
		}
	}
	return graphir.Pos{}, false
}

// loadPath returns the file a load() module string at the cursor names, or
// "".
func (c *cursor) loadPath() string {
	if c.file == nil {
		return ""
	}
	for _, st := range c.file.Stmts {
		ld, ok := st.(*syntax.LoadStmt)
		if !ok || int(ld.Module.TokenPos.Line) != c.pos.Line+1 {
			continue
		}
		start := int(ld.Module.TokenPos.Col)
		col := c.runeCol(c.off)
		if col >= start && col <= start+utf8.RuneCountInString(ld.Module.Raw) && !strings.HasPrefix(ld.ModuleName(), graphir.StdPrefix) {
			return filepath.Join(filepath.Dir(c.d.path), ld.ModuleName())
		}
	}
	return ""
}

// inputDecl is where flow(inputs = {...}) declares name.
func (c *cursor) inputDecl(name string) graphir.Pos {
	var p graphir.Pos
	if c.file == nil {
		return p
	}
	syntax.Walk(c.file, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || calledName(call) != "flow" {
			return true
		}
		for _, a := range call.Args {
			b, ok := a.(*syntax.BinaryExpr)
			if !ok || b.Op != syntax.EQ {
				continue
			}
			if k, ok := b.X.(*syntax.Ident); !ok || k.Name != "inputs" {
				continue
			}
			d, ok := b.Y.(*syntax.DictExpr)
			if !ok {
				continue
			}
			for _, e := range d.List {
				if lit, ok := e.(*syntax.DictEntry).Key.(*syntax.Literal); ok && lit.Value == name {
					p = graphir.Pos{File: c.d.path, Line: int(lit.TokenPos.Line), Col: int(lit.TokenPos.Col)}
				}
			}
		}
		return false
	})
	return p
}

// locationOf is the location of a Skein position, as a range over the word
// or string that starts there.
func (s *Server) locationOf(p graphir.Pos) *location {
	path := filepath.Clean(confine.Abs(p.File))
	src, err := s.readFile(path)
	if err != nil {
		src = nil
	}
	t := newText(string(src))
	uri := uriOf(path)
	if d := s.docs[path]; d != nil {
		uri = d.uri
	}
	return &location{URI: uri, Range: wordRange(t, p.Line, p.Col)}
}

var fieldBefore = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z0-9_]*)$`)

// fields are the output fields completion offers after NAME. by step kind.
func fields(k graphir.Kind) []string {
	if k.IsProcess() {
		return []string{"stdout", "text", "stderr", "exit_code", "error", "code"}
	}
	return []string{"error", "code"}
}

func (s *Server) completion(params json.RawMessage) (any, *respError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, e := s.at(params)
	if e != nil {
		return nil, e
	}
	items := c.complete()
	if items == nil {
		items = []completionItem{}
	}
	return completionList{Items: items}, nil
}

func (c *cursor) complete() []completionItem {
	var items []completionItem
	add := func(kind int, detail string, labels ...string) {
		for _, l := range labels {
			items = append(items, completionItem{Label: l, Kind: kind, Detail: detail})
		}
	}
	pre := c.line[:c.off]
	if _, typed, in := c.str(); in {
		if strings.HasPrefix(strings.TrimSpace(c.line), "load(") && strings.HasPrefix(typed, "@") {
			dir := typed[:strings.LastIndex(typed, "/")+1]
			for _, n := range stdlib.StdNames() {
				full := graphir.StdPrefix + n
				if strings.HasPrefix(full, dir) {
					items = append(items, completionItem{Label: full, Kind: kindModule, InsertText: strings.TrimPrefix(full, dir)})
				}
			}
			return items
		}
		if m := fieldBefore.FindStringSubmatch(pre); m != nil {
			switch name := m[1]; {
			case name == "inputs":
				if c.g != nil {
					for _, in := range c.g.Inputs {
						detail := "input"
						if in.Type != "" {
							detail = in.Type + " input"
						}
						items = append(items, completionItem{Label: in.Name, Kind: kindField, Detail: detail + ": " + in.Help})
					}
				}
			case name == "self":
				add(kindField, "", "visits")
			case name == "loop":
				add(kindField, "", "iteration", "index", "feedback")
			case c.g != nil && c.g.Node(name) != nil && c.g.Node(name).IsStep():
				add(kindField, c.g.Node(name).Kind.String()+" output", fields(c.g.Node(name).Kind)...)
			}
			return items
		}
		if c.g != nil {
			add(kindVariable, "step", c.g.StepNames()...)
		}
		add(kindKeyword, "", "inputs", "self", "visits", "json", "math", "re")
		return items
	}
	// In code: keyword arguments of the builtin being called, the names
	// bound to steps, and the builtins.
	if call := enclosingCall(c.d.text.src[:c.d.text.lineStart(c.pos.Line)] + pre); call != "" {
		if d := builtins.DocOf(call); d != nil {
			for _, p := range d.Params {
				items = append(items, completionItem{Label: p.Name, Kind: kindProperty, Detail: p.Doc, InsertText: p.Name + " = "})
			}
		}
	}
	vars := c.stepVars()
	names := make([]string, 0, len(vars))
	for v := range vars {
		names = append(names, v)
	}
	sort.Strings(names)
	add(kindVariable, "step", names...)
	for _, d := range builtins.Docs() {
		items = append(items, completionItem{Label: d.Name, Kind: kindFunction, Detail: d.Signature()})
	}
	add(kindKeyword, "sentinel", "START", "END", "ABORT")
	return items
}

// enclosingCall returns the name called by the innermost call still open
// at the end of src, or "". It skips strings and comments.
func enclosingCall(src string) string {
	var stack []string
	for i := 0; i < len(src); i++ {
		switch ch := src[i]; ch {
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case '"', '\'':
			q := string(ch)
			if strings.HasPrefix(src[i:], strings.Repeat(q, 3)) {
				q = strings.Repeat(q, 3)
			}
			i += len(q)
			for i < len(src) && !strings.HasPrefix(src[i:], q) {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i += len(q) - 1
		case '(', '[', '{':
			name := ""
			if ch == '(' {
				name, _, _ = wordAt(src[:i], i)
			}
			stack = append(stack, name)
		case ')', ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if n := len(stack); n > 0 {
		// The innermost bracket decides: "" for a list or dict, which is
		// not a keyword position.
		return stack[n-1]
	}
	return ""
}

func (s *Server) documentSymbols(params json.RawMessage) (any, *respError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, e := s.opened(params)
	if e != nil {
		return nil, e
	}
	if d.good == nil {
		return []documentSymbol{}, nil
	}
	return symbols(d.good.g, d.path, d.text), nil
}

// symbols lists the steps declared in file, loop and map bodies under
// their loop or map.
func symbols(g *graphir.Graph, file string, t *text) []documentSymbol {
	var build func(scope graphir.NodeID) []documentSymbol
	build = func(scope graphir.NodeID) []documentSymbol {
		out := []documentSymbol{}
		for _, id := range g.Scope(scope) {
			n := g.Nodes[id]
			if filepath.Clean(confine.Abs(n.Pos.File)) != file {
				continue
			}
			start := t.toLSP(n.Pos.Line, n.Pos.Col)
			sel := wordRange(t, n.Pos.Line, n.Pos.Col)
			sym := documentSymbol{Name: n.Name, Detail: n.Kind.String(), Kind: symbolFunction,
				Range: lspRange{start, t.lspAt(start.Line, len(t.line(start.Line)))}, SelectionRange: sel}
			if n.HasBody() {
				sym.Kind = symbolNamespace
				sym.Children = build(n.ID)
				for _, ch := range sym.Children {
					if before(ch.Range.Start, sym.Range.Start) {
						sym.Range.Start = ch.Range.Start
					}
					if before(sym.Range.End, ch.Range.End) {
						sym.Range.End = ch.Range.End
					}
				}
			}
			out = append(out, sym)
		}
		return out
	}
	return build(graphir.None)
}

func before(a, b position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Character < b.Character
}

func (s *Server) formatting(params json.RawMessage) (any, *respError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, e := s.opened(params)
	if e != nil {
		return nil, e
	}
	out, err := lang.Format(d.path, []byte(d.text.src))
	if err != nil {
		// The diagnostics already show why; an editor formatting on save
		// keeps the buffer as it is.
		s.logf("formatting %s: %v", d.path, err)
		return nil, nil
	}
	if string(out) == d.text.src {
		return []textEdit{}, nil
	}
	return []textEdit{{Range: lspRange{End: d.text.end()}, NewText: string(out)}}, nil
}
