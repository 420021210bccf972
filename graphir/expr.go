package graphir

// This file defines expressions and templates (docs/language.md): how they are parsed
// when the graph is frozen, what names they read, and the compiled form the
// VM calls.
//
// A string expression such as `critique.ok and visits("draft") < 3` is
// compiled once into the function `lambda _S_: (_S_.critique.ok and
// _S_.visits("draft") < 3)`: every free name that is not a Starlark builtin or
// predeclared module becomes an attribute of one argument, the run view. So
// an expression and a user's function `lambda r: r.critique.ok` are called
// the same way, names are looked up only when evaluation reaches them (a
// branch not taken never reads its step), and the compiled function is
// shared by every run and safe to call concurrently.

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
)

// FileOptions is the Starlark dialect of flow files and expressions (docs/language.md).
var FileOptions = &syntax.FileOptions{
	Set:             true,
	TopLevelControl: true,
	GlobalReassign:  true,
}

// viewParam names the argument of a compiled expression. It is not a valid
// step name, so it cannot collide with one.
const viewParam = "_S_"

// Expr is an expression or function evaluated at run time: a `when`
// condition, a router's `by` or case, a map's `over`, the flow's `output`, or
// one `{{ }}` of a template.
type Expr struct {
	Src   string            // the source text; "" for a user's function
	Pos   Pos               // where Src starts in the file, else the call that gave it
	Exact bool              // offsets in Src map one-to-one onto the file from Pos
	Func  starlark.Callable // the compiled lambda(view), or the user's function of r
	User  bool              // Func is the user's own function
	Refs  []Ref             // free names read, in source order (string expressions only)
	Err   *Error            // an expr_syntax error; Func is nil then
	// Reads is what a user's function reads of its parameter, when the
	// loader knows its syntax; nil otherwise.
	Reads *FuncRefs

	rewrites []Pos // where the compiled source inserts the view prefix (see FilePos)
}

// ExprFile is the file name runtime errors give for positions inside the
// compiled function of a string expression; [Expr.FilePos] maps them back.
const ExprFile = "<expr>"

// FilePos maps a position that a runtime error reports inside the compiled
// function of a string expression (file [ExprFile], 1-based line and rune
// column) to the place in the user's file where that part of the expression
// is written. For an expression whose position is not exact (built by a
// library, say), it is the expression's position.
func (e *Expr) FilePos(line, col int) Pos {
	// The compiled source is "lambda _S_: (\n" + src with "_S_." before
	// each free name + "\n)": one line more, and four columns more after
	// each inserted prefix on the line.
	line--
	if line < 1 || e.User {
		return e.Pos
	}
	shift := 0
	for _, rw := range e.rewrites {
		if rw.Line != line {
			continue
		}
		at := rw.Col + shift // where the prefix starts in the compiled line
		if col < at {
			break
		}
		if col < at+len(viewParam)+1 {
			col = at + len(viewParam) + 1 // inside the prefix: the name itself
		}
		shift += len(viewParam) + 1
	}
	return offsetPos(e.Pos, e.Exact, Pos{Line: line, Col: col - shift})
}

// Ref is one free name read by an expression, with the attribute or constant
// key read directly from it, if any (x.attr, x["key"]).
type Ref struct {
	Name string
	Attr string
	Key  string
	// Sub is the attribute or constant key read from x.attr itself, if
	// any (x.attr.sub, x.attr["sub"]): a field of an approval's values.
	Sub string
	Pos Pos // in the file when the expression's position is exact, else the expression's
	// Revealed: the name is read inside reveal(...), which marks a use
	// of a secret as deliberate (docs/language.md#secret).
	Revealed bool
}

// String returns the source, or a description of a user's function.
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	if e.User {
		return "<function " + e.Func.Name() + ">"
	}
	return e.Src
}

// Template is a string with `{{ expr }}` holes (docs/language.md).
type Template struct {
	Src   string
	Pos   Pos
	Exact bool
	Parts []TemplatePart
	Err   *Error // an expr_syntax error in one of the holes
}

// TemplatePart is literal text, one hole (X), or a secret() given where a
// template is taken (Secret; [SecretTemplate]).
type TemplatePart struct {
	Lit    string
	X      *Expr
	Secret *Secret // the run renders the secret's value here
	// Reveal: the secret was written reveal(secret(...)), a use the
	// checker allows where it would refuse the secret.
	Reveal bool
}

// Whole returns the expression if the template is exactly one hole and
// nothing else, so its value keeps its type where that matters (inputs).
func (t *Template) Whole() *Expr {
	if t != nil && len(t.Parts) == 1 && t.Parts[0].X != nil {
		return t.Parts[0].X
	}
	return nil
}

// IsLiteral reports whether the template has no holes.
func (t *Template) IsLiteral() bool {
	for _, p := range t.Parts {
		if p.X != nil || p.Secret != nil {
			return false
		}
	}
	return true
}

// Exprs returns the template's holes.
func (t *Template) Exprs() []*Expr {
	var out []*Expr
	for _, p := range t.Parts {
		if p.X != nil {
			out = append(out, p.X)
		}
	}
	return out
}

// Compiler parses and compiles expressions, caching compiled functions by
// source so that a flow repeating one condition compiles it once. It is safe
// for concurrent use.
type Compiler struct {
	mu        sync.Mutex
	cache     map[string]*compiled
	exprs     map[siteKey]*Expr
	templates map[siteKey]*Template
}

type compiled struct {
	fn   starlark.Callable
	refs []Ref // positions relative to the source (File empty)
	// rewrites are where free names start in the source (relative, in
	// source order): the compiled source has the view prefix before each.
	rewrites []Pos
	err      *Error
	errAt    Pos // relative position of err
}

// NewCompiler returns an empty compiler.
func NewCompiler() *Compiler { return &Compiler{cache: make(map[string]*compiled)} }

// Literal returns a template for text known to have no holes, without
// parsing it: it has no Parts (its text is Src) and no position, so use
// [Compiler.Template] where a position may be reported.
func (c *Compiler) Literal(s string) *Template {
	return &Template{Src: s}
}

// Func wraps a user's function of one argument as an expression; reads is
// what its body reads of the argument, if known.
func (c *Compiler) Func(fn starlark.Callable, pos Pos, reads *FuncRefs) *Expr {
	return &Expr{Func: fn, User: true, Pos: pos, Reads: reads}
}

// Opaque reports whether e is a user's function whose reads of its
// argument cannot all be followed, so it may read any step.
func (e *Expr) Opaque() bool {
	return e != nil && e.User && (e.Reads == nil || e.Reads.Opaque)
}

// Expr parses and compiles src, which starts at pos in its file (exactly
// there if exact).
func (c *Compiler) Expr(src string, pos Pos, exact bool) *Expr {
	return memo(&c.mu, &c.exprs, siteKey{src, pos, exact}, func() *Expr { return c.expr(src, pos, exact) })
}

// memo returns (*m)[key], making and storing it on a miss. The lock is not
// held while make runs, since making a template compiles expressions.
func memo[K comparable, V any](mu *sync.Mutex, m *map[K]V, key K, make func() V) V {
	mu.Lock()
	v, ok := (*m)[key]
	mu.Unlock()
	if ok {
		return v
	}
	v = make()
	mu.Lock()
	if *m == nil {
		*m = map[K]V{}
	}
	(*m)[key] = v
	mu.Unlock()
	return v
}

// siteKey identifies an expression or template by its text and where it is
// written. A flow that declares steps in a loop writes the same text at the
// same place thousands of times; those share one immutable value.
type siteKey struct {
	src   string
	pos   Pos
	exact bool
}

func (c *Compiler) expr(src string, pos Pos, exact bool) *Expr {
	cm := memo(&c.mu, &c.cache, src, func() *compiled { return compile(src) })
	e := &Expr{Src: src, Pos: pos, Exact: exact, Func: cm.fn, rewrites: cm.rewrites}
	if cm.err != nil {
		err := *cm.err
		err.Pos = offsetPos(pos, exact, cm.errAt)
		e.Err = &err
		return e
	}
	if len(cm.refs) > 0 {
		e.Refs = make([]Ref, len(cm.refs))
		for i, r := range cm.refs {
			r.Pos = offsetPos(pos, exact, r.Pos)
			e.Refs[i] = r
		}
	}
	return e
}

// offsetPos maps rel, a 1-based line and column within an expression's
// source, to the file, when base maps exactly.
func offsetPos(base Pos, exact bool, rel Pos) Pos {
	if !exact || rel.Line == 0 {
		return base
	}
	if rel.Line == 1 {
		return Pos{File: base.File, Line: base.Line, Col: base.Col + rel.Col - 1}
	}
	return Pos{File: base.File, Line: base.Line + rel.Line - 1, Col: rel.Col}
}

// compile does the work of Expr for one source string.
func compile(src string) *compiled {
	if strings.TrimSpace(src) == "" {
		return &compiled{err: &Error{Code: codes.ExprSyntax, Msg: "empty expression"}}
	}
	x, err := ParseExpr("<expr>", src, 0)
	if err != nil {
		if e, ok := err.(syntax.Error); ok {
			e.Pos = SyntaxErrorStart(src, e)
			err = e
		}
		return syntaxError(err)
	}
	universe := func(name string) bool { return starlark.Universe.Has(name) }
	if _, err := resolve.ExprOptions(FileOptions, x, func(name string) bool { return !universe(name) }, universe); err != nil {
		return syntaxError(err)
	}

	// Collect the free names and what is read from each directly.
	type hit struct {
		id   *syntax.Ident
		attr string
		key  string
		sub  string
	}
	var hits []*hit
	byIdent := map[*syntax.Ident]*hit{}
	subs := map[*syntax.DotExpr]string{} // x.attr -> what is read from it
	syntax.Walk(x, func(n syntax.Node) bool {
		// Outer nodes are visited first: note x.attr.sub before x.attr.
		switch n := n.(type) {
		case *syntax.DotExpr:
			if in, ok := n.X.(*syntax.DotExpr); ok {
				subs[in] = n.Name.Name
			}
		case *syntax.IndexExpr:
			if in, ok := n.X.(*syntax.DotExpr); ok {
				if lit, ok := n.Y.(*syntax.Literal); ok && lit.Token == syntax.STRING {
					subs[in] = lit.Value.(string)
				}
			}
		}
		switch n := n.(type) {
		case *syntax.Ident:
			if n.Binding != nil && n.Binding.(*resolve.Binding).Scope == resolve.Predeclared {
				if _, seen := byIdent[n]; !seen {
					h := &hit{id: n}
					byIdent[n] = h
					hits = append(hits, h)
				}
			}
		case *syntax.DotExpr:
			if id, ok := n.X.(*syntax.Ident); ok {
				h := &hit{id: id, attr: n.Name.Name, sub: subs[n]}
				if _, seen := byIdent[id]; !seen {
					byIdent[id] = h
					hits = append(hits, h)
				}
			}
		case *syntax.IndexExpr:
			if id, ok := n.X.(*syntax.Ident); ok {
				if lit, ok := n.Y.(*syntax.Literal); ok && lit.Token == syntax.STRING {
					h := &hit{id: id, key: lit.Value.(string)}
					if _, seen := byIdent[id]; !seen {
						byIdent[id] = h
						hits = append(hits, h)
					}
				}
			}
		}
		return true
	})
	// DotExpr/IndexExpr hits were recorded before their Ident was visited;
	// drop those whose Ident turned out not to be free.
	reveals := revealSpans(x)
	var refs []Ref
	var rewrite []*syntax.Ident
	for _, h := range hits {
		if h.id.Binding == nil || h.id.Binding.(*resolve.Binding).Scope != resolve.Predeclared {
			continue
		}
		if stdlib.IsModule(h.id.Name) || h.id.Name == RevealName {
			continue
		}
		refs = append(refs, Ref{Name: h.id.Name, Attr: h.attr, Key: h.key, Sub: h.sub,
			Pos:      Pos{Line: int(h.id.NamePos.Line), Col: int(h.id.NamePos.Col)},
			Revealed: reveals.contain(h.id.NamePos)})
		rewrite = append(rewrite, h.id)
	}
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].Pos.Less(refs[j].Pos) })

	// Rewrite each free name n to _S_.n and compile a function of _S_.
	sort.Slice(rewrite, func(i, j int) bool {
		a, b := rewrite[i].NamePos, rewrite[j].NamePos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	var b strings.Builder
	b.WriteString("lambda " + viewParam + ": (\n")
	last := 0
	for _, id := range rewrite {
		off := byteOffset(src, int(id.NamePos.Line), int(id.NamePos.Col))
		b.WriteString(src[last:off])
		b.WriteString(viewParam + ".")
		last = off
	}
	b.WriteString(src[last:])
	b.WriteString("\n)")
	lx, err := ParseExpr(ExprFile, b.String(), 0)
	if err != nil {
		return syntaxError(err)
	}
	// Bound the values one operation makes (stdlib.Rewrite).
	lambda, err := starlark.EvalExprOptions(FileOptions, &starlark.Thread{Name: "compile"}, stdlib.RewriteExpr(lx), exprEnv)
	if err != nil {
		return syntaxError(err)
	}
	lambda.Freeze()
	at := make([]Pos, len(rewrite))
	for i, id := range rewrite {
		at[i] = Pos{Line: int(id.NamePos.Line), Col: int(id.NamePos.Col)}
	}
	return &compiled{fn: lambda.(starlark.Callable), refs: refs, rewrites: at}
}

// exprEnv is what expressions see besides the run view: the modules, the
// bounded str, repr, print and getattr, the checked operations, and reveal.
var exprEnv = func() starlark.StringDict {
	d := stdlib.Predeclared()
	d[RevealName] = Reveal
	d.Freeze()
	return d
}()

func syntaxError(err error) *compiled {
	msg := err.Error()
	var at Pos
	switch e := err.(type) {
	case syntax.Error:
		msg, at = e.Msg, Pos{Line: int(e.Pos.Line), Col: int(e.Pos.Col)}
	case resolve.ErrorList:
		if len(e) > 0 {
			msg, at = e[0].Msg, Pos{Line: int(e[0].Pos.Line), Col: int(e[0].Pos.Col)}
		}
	}
	return &compiled{err: &Error{Code: codes.ExprSyntax, Msg: msg}, errAt: at}
}

// SyntaxErrorStart returns where a parse error should point. The Starlark
// parser reports "got X, want Y" at the end of the unexpected token X (the
// scanner has read past it), which for a missing ":" is the start of the
// next line; this moves the position back to the start of X, or for an
// unexpected newline to the end of the line it ends.
func SyntaxErrorStart(src string, e syntax.Error) syntax.Position {
	p := e.Pos
	got, ok := strings.CutPrefix(e.Msg, "got ")
	if !ok || p.Line < 1 || p.Col < 1 {
		return p
	}
	off := byteOffset(src, int(p.Line), int(p.Col))
	back := 0 // runes to move back
	switch {
	case strings.HasPrefix(got, "newline"):
		if p.Col != 1 || off == 0 || src[off-1] != '\n' {
			return p
		}
		line := src[:off-1]
		line = line[strings.LastIndexByte(line, '\n')+1:]
		if i := strings.IndexByte(line, '#'); i >= 0 && !strings.ContainsAny(line[:i], `"'`) {
			line = line[:i] // point before a trailing comment
		}
		line = strings.TrimRight(line, " \t\r")
		p.Line--
		p.Col = int32(utf8.RuneCountInString(line)) + 1
		return p
	case strings.HasPrefix(got, "string literal"), strings.HasPrefix(got, "bytes literal"):
		// Back to the opening quote (or triple quote) and any prefix.
		before := src[:off]
		if before == "" || (before[len(before)-1] != '"' && before[len(before)-1] != '\'') {
			return p
		}
		q := before[len(before)-1:]
		if strings.HasSuffix(before, q+q+q) && len(before) >= 6 {
			q = q + q + q
		}
		open := len(before) - len(q)
		for {
			open = strings.LastIndex(before[:open], q)
			if open < 0 {
				return p
			}
			escapes := 0
			for i := open - 1; i >= 0 && before[i] == '\\'; i-- {
				escapes++
			}
			if escapes%2 == 0 {
				break
			}
		}
		prefix := 0 // r, b, rb: not part of a longer word
		for prefix < 2 && open-prefix > 0 && strings.IndexByte("rRbB", before[open-prefix-1]) >= 0 {
			prefix++
		}
		if open-prefix == 0 || !isWordByte(before[open-prefix-1]) {
			open -= prefix
		}
		lit := before[open:]
		if strings.Contains(lit, "\n") {
			return p // a multi-line literal: keep the reported line
		}
		back = utf8.RuneCountInString(lit)
	case strings.HasPrefix(got, "'"):
		// A punctuation token, quoted: '=' or '**'.
		if end := strings.IndexByte(got[1:], '\''); end > 0 && strings.HasSuffix(src[:off], got[1:end+1]) {
			back = end
		}
	default:
		// An identifier, keyword or number: back over its characters.
		for i := off; i > 0 && isWordByte(src[i-1]); i-- {
			back++
		}
	}
	if back > 0 && int(p.Col) > back {
		p.Col -= int32(back)
	}
	return p
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// byteOffset converts a 1-based line and rune column to a byte offset in s.
func byteOffset(s string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return len(s)
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(s); c++ {
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	return off
}

// relPos returns the 1-based line and rune column of byte offset off in s.
func relPos(s string, off int) Pos {
	return (&cursor{s: s}).at(off)
}

// cursor converts byte offsets of s to lines and columns, scanning only
// from the last offset asked for, so that a template with many holes is
// mapped in one pass.
type cursor struct {
	s         string
	off       int
	line, col int
}

func (c *cursor) at(off int) Pos {
	if c.line == 0 || off < c.off {
		c.off, c.line, c.col = 0, 1, 1
	}
	for _, r := range c.s[c.off:off] {
		if r == '\n' {
			c.line++
			c.col = 1
		} else {
			c.col++
		}
	}
	c.off = off
	return Pos{Line: c.line, Col: c.col}
}

// maxHoleEnds bounds the "}}" tried as the end of one hole. A real hole
// holds a "}}" only inside a string, once or twice; without a bound, a
// generated string of many "}}" would take time quadratic in its length.
const maxHoleEnds = 64

// Template parses a template string starting at pos.
func (c *Compiler) Template(src string, pos Pos, exact bool) *Template {
	return memo(&c.mu, &c.templates, siteKey{src, pos, exact}, func() *Template { return c.template(src, pos, exact) })
}

func (c *Compiler) template(src string, pos Pos, exact bool) *Template {
	t := &Template{Src: src, Pos: pos, Exact: exact}
	rest, off := src, 0
	cur := &cursor{s: src}
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if rest != "" {
				t.Parts = append(t.Parts, TemplatePart{Lit: rest})
			}
			return t
		}
		if i > 0 {
			t.Parts = append(t.Parts, TemplatePart{Lit: rest[:i]})
		}
		body := rest[i+2:]
		bodyOff := off + i + 2
		// The hole ends at the first "}}" after which its text parses, so
		// a hole may contain "}}" inside a string: {{ "}}" }}.
		var x *Expr
		end := -1
		for from, tries := 0, 0; tries < maxHoleEnds; tries++ {
			j := strings.Index(body[from:], "}}")
			if j < 0 {
				break
			}
			j += from
			cand := body[:j]
			inner := strings.TrimLeft(cand, " \t\n")
			lead := len(cand) - len(inner)
			at := offsetPos(pos, exact, cur.at(bodyOff+lead))
			e := c.Expr(strings.TrimRight(inner, " \t\n"), at, exact)
			if e.Err == nil || x == nil {
				x, end = e, j
			}
			if e.Err == nil {
				break
			}
			from = j + 1
		}
		if x == nil {
			at := offsetPos(pos, exact, relPos(src, off+i))
			t.Err = &Error{Code: codes.ExprSyntax, Pos: at, Msg: fmt.Sprintf("unclosed {{ in template %q", src)}
			t.Parts = append(t.Parts, TemplatePart{Lit: rest[i:]})
			return t
		}
		t.Parts = append(t.Parts, TemplatePart{X: x})
		rest = body[end+2:]
		off = bodyOff + end + 2
		if x.Err != nil {
			// The first error is the one reported; what follows a hole
			// that does not parse is kept as text, unparsed.
			t.Err = x.Err
			if rest != "" {
				t.Parts = append(t.Parts, TemplatePart{Lit: rest})
			}
			return t
		}
	}
}
