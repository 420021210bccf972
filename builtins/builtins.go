// Package builtins defines the Skein builtins of docs/language.md (flow, step, edge,
// chain, router, loop, map and the sentinels START, END, ABORT) as Starlark
// values that record a graph into a [graphir.Builder].
//
// Every argument is checked at the call, so a mistake is reported as an
// error at the caller's line naming the parameter and what was expected. The
// builder travels with the Starlark thread ([SetBuilder]); the package holds
// no state of its own, so any number of loads may run at once.
package builtins

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
)

const builderKey = "skein.builder"

// SetBuilder attaches the builder that the builtins called on thread record
// into.
func SetBuilder(thread *starlark.Thread, b *graphir.Builder) { thread.SetLocal(builderKey, b) }

// BuilderOf returns the builder attached to thread, or nil.
func BuilderOf(thread *starlark.Thread) *graphir.Builder {
	b, _ := thread.Local(builderKey).(*graphir.Builder)
	return b
}

var predeclared = func() starlark.StringDict {
	d := starlark.StringDict{
		"flow":    starlark.NewBuiltin("flow", flowFn),
		"step":    starlark.NewBuiltin("step", stepFn),
		"edge":    starlark.NewBuiltin("edge", edgeFn),
		"chain":   starlark.NewBuiltin("chain", chainFn),
		"router":  starlark.NewBuiltin("router", routerFn),
		"loop":    starlark.NewBuiltin("loop", loopFn),
		"map":     starlark.NewBuiltin("map", mapFn),
		"input":   starlark.NewBuiltin("input", inputFn),
		"model":   starlark.NewBuiltin("model", modelFn),
		"judge":   starlark.NewBuiltin("judge", judgeFn),
		"tool":    starlark.NewBuiltin("tool", toolFn),
		"range":   starlark.NewBuiltin("range", rangeFn),
		"trigger": starlark.NewBuiltin("trigger", triggerFn),
		"secret":  starlark.NewBuiltin("secret", secretFn),
		"reveal":  starlark.NewBuiltin(graphir.RevealName, revealFn),
		"START":   &Step{id: graphir.Start, name: "START", kind: "start"},
		"END":     &Step{id: graphir.End, name: "END", kind: "end"},
		"ABORT":   &Step{id: graphir.Abort, name: "ABORT", kind: "abort"},
	}
	for k, v := range stdlib.Predeclared() {
		d[k] = v
	}
	d.Freeze()
	return d
}()

// Predeclared returns the names predeclared in every flow file and module:
// the builtins, the sentinels and the standard modules. The dict is frozen
// and shared.
func Predeclared() starlark.StringDict { return predeclared }

// Names lists the predeclared names, for completion and hints.
func Names() []string {
	var names []string
	for _, n := range predeclared.Keys() {
		if !stdlib.IsCheckedOp(n) && !stdlib.IsLengthBounded(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Step is the value step(), router(), loop() and map() return, and the type
// of START, END and ABORT.
type Step struct {
	b    *graphir.Builder // nil for the sentinels
	n    *graphir.Node    // the step's node (its ID changes when the REPL drops a step); nil for the sentinels
	id   graphir.NodeID   // the sentinels' id
	name string
	kind string
}

var _ starlark.HasAttrs = (*Step)(nil)

// ID returns the node id of the step in its builder.
func (s *Step) ID() graphir.NodeID {
	if s.n != nil {
		return s.n.ID
	}
	return s.id
}

func (s *Step) String() string {
	if s.b == nil {
		return s.name
	}
	return fmt.Sprintf("<step %s>", s.name)
}
func (s *Step) Type() string         { return "step" }
func (s *Step) Freeze()              {}
func (s *Step) Truth() starlark.Bool { return true }
func (s *Step) Hash() (uint32, error) {
	return starlark.String(s.name).Hash()
}
func (s *Step) Attr(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(s.name), nil
	case "kind":
		return starlark.String(s.kind), nil
	}
	return nil, nil
}
func (s *Step) AttrNames() []string { return []string{"kind", "name"} }

// call holds what every builtin needs about the call being made.
type call struct {
	thread *starlark.Thread
	b      *graphir.Builder
	fn     string
	*site
	kind, stepName string // set by named once the name is known
}

// site is where a builtin is called from: its stack and the positions
// derived from it. A flow that builds many steps in a loop calls the
// builtins from a few call sites over and over, so sites are interned per
// load thread and shared by the nodes they create.
type site struct {
	lparen graphir.Pos // position of the "(" of the call, as reported
	userLP graphir.Pos // the same for the user's frame
	stack  graphir.Stack
	pos    graphir.Pos // the user's line
}

// siteKey identifies a call site by the raw positions of its frames,
// outermost first, for stacks of up to four frames.
type siteKey struct {
	n   int
	pos [4]syntax.Position
}

const sitesKey = "skein.sites"

func newCall(thread *starlark.Thread, fn *starlark.Builtin) (*call, error) {
	b := BuilderOf(thread)
	if b == nil {
		return nil, fmt.Errorf("%s: can only be called while a flow is loading", fn.Name())
	}
	c := &call{thread: thread, b: b, fn: fn.Name()}
	depth := thread.CallStackDepth() - 1 // not the builtin's own frame
	if depth <= len(siteKey{}.pos) {
		var key siteKey
		var frames [4]starlark.CallFrame
		key.n = depth
		for i := 0; i < depth; i++ {
			frames[i] = thread.CallFrame(depth - i)
			key.pos[i] = frames[i].Pos
		}
		sites, _ := thread.Local(sitesKey).(map[siteKey]*site)
		if s, ok := sites[key]; ok {
			c.site = s
			return c, nil
		}
		c.site = newSite(b, frames[:depth])
		if sites == nil {
			sites = map[siteKey]*site{}
			thread.SetLocal(sitesKey, sites)
		}
		sites[key] = c.site
		return c, nil
	}
	cs := thread.CallStack()
	c.site = newSite(b, cs[:len(cs)-1])
	return c, nil
}

// newSite maps the raw frames of a call site, outermost first.
func newSite(b *graphir.Builder, frames []starlark.CallFrame) *site {
	s := &site{stack: make(graphir.Stack, len(frames))}
	for i, f := range frames {
		p := graphir.Pos{File: f.Pos.Filename(), Line: int(f.Pos.Line), Col: int(f.Pos.Col)}
		if i == len(frames)-1 {
			s.lparen = p
		}
		s.stack[i] = graphir.Frame{Func: f.Name, Pos: b.Pos(p)}
	}
	if u := s.stack.UserFrame(); u >= 0 {
		s.pos = s.stack[u].Pos
		f := frames[u].Pos
		s.userLP = graphir.Pos{File: f.Filename(), Line: int(f.Line), Col: int(f.Col)}
	}
	return s
}

// what names the call in messages: `step "build"` once the name is known,
// else the builtin's name.
func (c *call) what() string {
	if c.kind == "" {
		return c.fn
	}
	return fmt.Sprintf("%s %q", c.kind, c.stepName)
}

func (c *call) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", c.what(), fmt.Sprintf(format, args...))
}

// hintf is errorf with advice, which the loader shows as the diagnostic's
// hint.
func (c *call) hintf(hint, format string, args ...any) error {
	return &graphir.Error{Msg: fmt.Sprintf("%s: %s", c.what(), fmt.Sprintf(format, args...)), Hint: hint}
}

func (c *call) named(kind, name string) {
	c.kind, c.stepName = kind, name
}

// step unpacks a Step argument belonging to this load. allow says which
// sentinels are accepted.
func (c *call) step(param string, v starlark.Value, allow ...graphir.NodeID) (*Step, error) {
	s, ok := v.(*Step)
	if !ok {
		if name, isStr := v.(starlark.String); isStr {
			return nil, c.hintf(fmt.Sprintf("pass the step itself, the value step(%q) returned, not its name; only a router's routes, cases and default take step names", string(name)),
				"%s must be a step, got %s", param, describe(v))
		}
		return nil, c.errorf("%s must be a step, got %s", param, describe(v))
	}
	if s.b == nil {
		for _, a := range allow {
			if s.id == a {
				return s, nil
			}
		}
		return nil, c.errorf("%s cannot be %s", param, s.name)
	}
	if s.b != c.b {
		return nil, c.errorf("%s: step %q belongs to another flow", param, s.name)
	}
	if s.n.Dropped() {
		return nil, c.errorf("%s: step %q was dropped", param, s.name)
	}
	return s, nil
}

// target unpacks a router target: a step, END or ABORT, or a step name.
func (c *call) target(param string, v starlark.Value) (graphir.Target, error) {
	switch v := v.(type) {
	case starlark.String:
		pos, _ := c.locate(param, string(v))
		return graphir.Target{ID: graphir.None, Name: string(v), Pos: pos}, nil
	case *Step:
		s, err := c.step(param, v, graphir.End, graphir.Abort)
		if err != nil {
			return graphir.Target{}, err
		}
		return graphir.Target{ID: s.ID(), Pos: c.pos}, nil
	}
	return graphir.Target{}, c.errorf("%s must be a step or a step name, got %s", param, describe(v))
}

// keywordAliases are keywords people bring from other tools (and
// Python), with the keyword meant, when spelling alone does not find it.
var keywordAliases = map[string]string{
	"retry":       "retries",
	"max_retries": "retries",
	"attempts":    "retries",
	"cmd":         "run",
	"command":     "run",
	"argv":        "run",
	"script":      "shell",
	"cwd":         "dir",
	"workdir":     "dir",
	"environment": "env",
	"func":        "fn",
	"function":    "fn",
	"prompt":      "llm",
	"deadline":    "timeout",
	"sleep":       "wait",
}

// unpack binds the arguments of a call to params, a builtin's parameter
// names in order (a trailing "?" marks an optional one), storing each in
// the matching element of out. Unlike starlark.UnpackArgs it allocates
// nothing, and an unknown keyword gets a did-you-mean or the list of
// accepted ones.
func (c *call) unpack(args starlark.Tuple, kwargs []starlark.Tuple, params []string, out []starlark.Value) error {
	if len(args) > len(params) {
		return fmt.Errorf("%s: got %d arguments, want at most %d", c.fn, len(args), len(params))
	}
	copy(out, args)
	for _, kv := range kwargs {
		k := string(kv[0].(starlark.String))
		i := paramIndex(params, k)
		if i < 0 {
			names := make([]string, len(params))
			for j, p := range params {
				names[j] = strings.TrimSuffix(p, "?")
			}
			near := spell.Nearest(k, names)
			if alias := keywordAliases[k]; near == "" && slices.Contains(names, alias) {
				near = alias
			}
			if near != "" {
				return fmt.Errorf("%s: unexpected keyword argument %q (did you mean %q?)", c.fn, k, near)
			}
			return fmt.Errorf("%s: unexpected keyword argument %q (want one of %s)", c.fn, k, strings.Join(names, ", "))
		}
		if out[i] != nil {
			return fmt.Errorf("%s: got multiple values for parameter %q", c.fn, k)
		}
		out[i] = kv[1]
	}
	for i, p := range params {
		if out[i] == nil && !strings.HasSuffix(p, "?") {
			return fmt.Errorf("%s: missing argument for %s", c.fn, p)
		}
	}
	return nil
}

// paramIndex finds name among params (each possibly ending in "?").
func paramIndex(params []string, name string) int {
	for i, p := range params {
		if len(p) == len(name)+1 && p[len(p)-1] == '?' && p[:len(name)] == name || p == name {
			return i
		}
	}
	return -1
}

// cond unpacks a condition or value expression: a string or a function of
// one argument r.
func (c *call) cond(param string, v starlark.Value) (*graphir.Expr, error) {
	switch v := v.(type) {
	case starlark.String:
		pos, exact := c.locate(param, string(v))
		return c.b.Compiler.Expr(string(v), pos, exact), nil
	case starlark.Callable:
		if err := c.arity(param, v); err != nil {
			return nil, err
		}
		return c.b.Compiler.Func(v, c.pos, c.reads(v)), nil
	}
	return nil, c.errorf("%s must be an expression string or a function of r, got %s", param, describe(v))
}

// reads returns what the function fn reads of its parameter, when fn is a
// Starlark function whose syntax the loader parsed.
func (c *call) reads(fn starlark.Callable) *graphir.FuncRefs {
	return ReadsOf(c.b, fn)
}

// ReadsOf returns what the Starlark function fn, defined in a file that b's
// load parsed, reads of its parameter, or nil.
func ReadsOf(b *graphir.Builder, fn starlark.Value) *graphir.FuncRefs {
	f, ok := fn.(*starlark.Function)
	if !ok || b.Locator == nil {
		return nil
	}
	p := f.Position()
	return b.Locator.Func(graphir.Pos{File: p.Filename(), Line: int(p.Line), Col: int(p.Col)})
}

// arity checks that a Starlark function takes exactly one parameter.
func (c *call) arity(param string, v starlark.Callable) error {
	if f, ok := v.(*starlark.Function); ok {
		if n := f.NumParams(); n != 1 || f.HasVarargs() || f.HasKwargs() {
			return c.errorf("%s must be a function of one parameter r; %s takes %d", param, f.Name(), n)
		}
	}
	return nil
}

func (c *call) template(param string, v starlark.Value) (*graphir.Template, error) {
	if sv, ok := v.(*SecretValue); ok {
		return c.secretTemplate(param, sv)
	}
	s, ok := v.(starlark.String)
	if !ok {
		return nil, c.errorf("%s must be a string, got %s", param, describe(v))
	}
	return c.tmpl(param, string(s)), nil
}

// tmpl parses the template s given for param.
func (c *call) tmpl(param, s string) *graphir.Template {
	pos, exact := c.locate(param, s)
	return c.b.Compiler.Template(s, pos, exact)
}

// locate finds where the string s given for param was written: as a
// literal argument of this call (preferably in the keyword argument param
// names), else of the user's call that led to it, else it is the user's
// line.
func (c *call) locate(param, s string) (graphir.Pos, bool) {
	kw := keyword(param)
	if loc := c.b.Locator; loc != nil {
		if p, exact, ok := loc.Literal(c.lparen, kw, s); ok {
			return p, exact
		}
		if c.userLP != c.lparen {
			if p, exact, ok := loc.Literal(c.userLP, "", s); ok {
				return p, exact
			}
		}
	}
	return c.pos, false
}

// keyword returns the keyword a parameter description starts with:
// "routes" for `routes["x"]`, "cases" for "cases[0] target".
func keyword(param string) string {
	for i := 0; i < len(param); i++ {
		if c := param[i]; c != '_' && (c < 'a' || c > 'z') {
			return param[:i]
		}
	}
	return param
}

func (c *call) strings(param string, v starlark.Value) ([]*graphir.Template, error) {
	seq, ok := v.(starlark.Indexable)
	if _, isStr := v.(starlark.String); !ok || isStr {
		return nil, c.errorf("%s must be a list of strings, got %s", param, describe(v))
	}
	out := make([]*graphir.Template, seq.Len())
	for i := range out {
		if sv, ok := seq.Index(i).(*SecretValue); ok {
			t, err := c.secretTemplate(param, sv)
			if err != nil {
				return nil, err
			}
			out[i] = t
			continue
		}
		s, ok := seq.Index(i).(starlark.String)
		if !ok {
			return nil, c.errorf("%s[%d] must be a string, got %s", param, i, describe(seq.Index(i)))
		}
		if strings.Contains(string(s), "{{") {
			out[i] = c.tmpl(param, string(s))
		} else {
			out[i] = c.b.Compiler.Literal(string(s))
		}
	}
	return out, nil
}

// dict unpacks a dict with string keys, in key order.
func (c *call) dict(param string, v starlark.Value) ([]string, []starlark.Value, error) {
	d, ok := v.(*starlark.Dict)
	if !ok {
		return nil, nil, c.errorf("%s must be a dict, got %s", param, describe(v))
	}
	var keys []string
	var vals []starlark.Value
	for _, kv := range d.Items() {
		k, ok := kv[0].(starlark.String)
		if !ok {
			return nil, nil, c.errorf("%s: keys must be strings, got %s", param, describe(kv[0]))
		}
		keys = append(keys, string(k))
		vals = append(vals, kv[1])
	}
	return keys, vals, nil
}

func (c *call) duration(param string, v starlark.Value) (time.Duration, error) {
	s, ok := v.(starlark.String)
	if !ok {
		return 0, c.errorf("%s must be a duration string such as \"30s\", got %s", param, describe(v))
	}
	d, err := graphir.ParseDuration(string(s))
	if err != nil || d <= 0 {
		return 0, c.errorf("%s must be a positive duration such as \"30s\" or \"10m\", got %q", param, string(s))
	}
	return d, nil
}

func (c *call) intAtLeast(param string, v starlark.Value, min int) (int, error) {
	i, ok := v.(starlark.Int)
	if !ok {
		return 0, c.errorf("%s must be an int, got %s", param, describe(v))
	}
	n, exact := i.Int64()
	if !exact {
		return 0, c.errorf("%s is too large: %s", param, i)
	}
	if n < int64(min) {
		return 0, c.errorf("%s must be at least %d, got %d", param, min, n)
	}
	if n > 1<<31 {
		return 0, c.errorf("%s is too large: %d", param, n)
	}
	return int(n), nil
}

// describe names a value's type for an error message, with the value when
// it is short.
func describe(v starlark.Value) string {
	if v == nil {
		return "nothing"
	}
	s := v.String()
	if len(s) > 40 {
		return v.Type()
	}
	switch v.(type) {
	case starlark.NoneType:
		return "None"
	case *Step:
		return s
	}
	return fmt.Sprintf("%s %s", v.Type(), s)
}

func isNone(v starlark.Value) bool { return v == nil || v == starlark.None }

// oneOf reports whether s is among choices, for error messages.
func oneOf(param, s string, choices ...string) error {
	for _, c := range choices {
		if s == c {
			return nil
		}
	}
	return fmt.Errorf("%s must be one of %s, got %q", param, quoteAll(choices), s)
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
