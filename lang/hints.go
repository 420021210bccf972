package lang

// This file chooses the did-you-mean of "undefined: NAME" from names that
// make sense where NAME is written: in an argument of edge(), chain(),
// router(), loop() or map() that takes steps, the step variables of the
// file come first; anywhere, the file's own names win over builtins that
// are as near. It also names the Starlark way for Python's habits.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
)

// stepBuiltins are the builtins that return a step.
var stepBuiltins = map[string]bool{"step": true, "router": true, "loop": true, "map": true}

// wiringBuiltins are the builtins whose arguments are mostly steps.
var wiringBuiltins = map[string]bool{"edge": true, "chain": true, "router": true, "loop": true, "map": true}

// undefinedHint returns the did-you-mean for the first "undefined: NAME"
// error of errs in the resolved file f, or "" for other errors; strong is
// set when it names a step variable for a place that takes steps.
func undefinedHint(f *syntax.File, errs resolve.ErrorList) (hint string, strong bool) {
	return undefinedHintWith(f, errs, nil)
}

// undefinedHintWith is [undefinedHint] with globals defined before f (a
// REPL session's): their names, and whether each holds a step.
func undefinedHintWith(f *syntax.File, errs resolve.ErrorList, before map[string]bool) (hint string, strong bool) {
	if len(errs) == 0 {
		return "", false
	}
	name, ok := strings.CutPrefix(errs[0].Msg, "undefined: ")
	if !ok {
		return "", false
	}
	if i := strings.IndexByte(name, ' '); i >= 0 {
		name = name[:i] // the resolver's own " (did you mean x?)"
	}
	at := errs[0].Pos

	var stepVars, globals []string
	seen := map[string]bool{}
	global := func(id *syntax.Ident, isStep bool) {
		if id == nil || seen[id.Name] {
			return
		}
		seen[id.Name] = true
		globals = append(globals, id.Name)
		if isStep {
			stepVars = append(stepVars, id.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		seen[name] = true
		globals = append(globals, name)
		if before[name] {
			stepVars = append(stepVars, name)
		}
	}
	inWiring := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.AssignStmt:
			if id, ok := n.LHS.(*syntax.Ident); ok {
				call, _ := n.RHS.(*syntax.CallExpr)
				isStep := false
				if call != nil {
					if fn, ok := call.Fn.(*syntax.Ident); ok && stepBuiltins[fn.Name] {
						isStep = true
					}
				}
				global(id, isStep)
			}
		case *syntax.DefStmt:
			global(n.Name, false)
		case *syntax.LoadStmt:
			for _, id := range n.To {
				global(id, false)
			}
		case *syntax.CallExpr:
			if fn, ok := n.Fn.(*syntax.Ident); ok && wiringBuiltins[fn.Name] {
				for _, arg := range n.Args {
					if kw, ok := arg.(*syntax.BinaryExpr); ok && kw.Op == syntax.EQ {
						if k, ok := kw.X.(*syntax.Ident); ok && (k.Name == "over" || k.Name == "by" || k.Name == "until") {
							continue // not steps
						}
						arg = kw.Y
					}
					if spans(arg, at) {
						inWiring = true
					}
				}
			}
		}
		return true
	})
	if line := boundAfter(f.Stmts, name, at); line > 0 {
		// Top-level code runs in order: the name exists only from its
		// assignment on, so no other name is meant.
		return fmt.Sprintf("%s is assigned later, at line %d: a name can be used only after it is assigned (move the step() or assignment above this line)", name, line), true
	}
	// Only the file's globals: names local to a function have the
	// resolver's own did-you-mean.
	var builtinNames []string
	builtinNames = append(builtinNames, builtins.Names()...)
	builtinNames = append(builtinNames, starlark.Universe.Keys()...)
	if inWiring {
		if near := spell.Nearest(name, stepVars); near != "" {
			return fmt.Sprintf("did you mean %q?", near), true
		}
	}
	// Nearest keeps the first of equally near names: the file's own.
	if near := spell.Nearest(name, append(globals, builtinNames...)); near != "" {
		return fmt.Sprintf("did you mean %q?", near), false
	}
	return "", false
}

// boundAfter returns the line of the first top-level binding of name (an
// assignment, def or load, also inside top-level if and for) after pos, or
// 0. Bindings inside functions are local and do not count.
func boundAfter(stmts []syntax.Stmt, name string, pos syntax.Position) int {
	for _, st := range stmts {
		var ids []*syntax.Ident
		switch st := st.(type) {
		case *syntax.AssignStmt:
			ids = boundIdents(st.LHS)
		case *syntax.DefStmt:
			ids = []*syntax.Ident{st.Name}
		case *syntax.LoadStmt:
			ids = st.To
		case *syntax.IfStmt:
			if l := boundAfter(st.True, name, pos); l > 0 {
				return l
			}
			if l := boundAfter(st.False, name, pos); l > 0 {
				return l
			}
		case *syntax.ForStmt:
			ids = boundIdents(st.Vars)
			if l := boundAfter(st.Body, name, pos); l > 0 {
				return l
			}
		}
		for _, id := range ids {
			if id.Name == name && posLE(pos, id.NamePos) {
				return int(id.NamePos.Line)
			}
		}
	}
	return 0
}

// boundIdents returns the names an assignment's left side binds.
func boundIdents(e syntax.Expr) []*syntax.Ident {
	switch e := e.(type) {
	case *syntax.Ident:
		return []*syntax.Ident{e}
	case *syntax.TupleExpr:
		var out []*syntax.Ident
		for _, x := range e.List {
			out = append(out, boundIdents(x)...)
		}
		return out
	case *syntax.ListExpr:
		var out []*syntax.Ident
		for _, x := range e.List {
			out = append(out, boundIdents(x)...)
		}
		return out
	case *syntax.ParenExpr:
		return boundIdents(e.X)
	}
	return nil
}

// spans reports whether the identifier at pos lies within n.
func spans(n syntax.Node, pos syntax.Position) bool {
	start, end := n.Span()
	return pos.IsValid() && posLE(start, pos) && posLE(pos, end)
}

func posLE(a, b syntax.Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col <= b.Col
}

// withPythonHint gives e the hint [pythonHint] has for it, if any, in
// place of a did-you-mean (sum is not a typo of str).
func withPythonHint(src string, e *graphir.Error) *graphir.Error {
	if h := pythonHint(src, e); h != "" {
		e.Hint = h
	}
	return e
}

// pythonHint returns advice for an error that Python's habits cause, at
// e's position in src, naming the Starlark way; "" for other errors.
// Starlark reads like Python but has no import, no f-strings and fewer
// builtins, and load is a statement: the raw parser messages for these
// ("got '=', want '('") do not say so.
func pythonHint(src string, e *graphir.Error) string {
	if e == nil || e.Code != codes.ParseError {
		return ""
	}
	line := lineAt(src, e.Pos.Line)
	before := ""
	if c := e.Pos.Col - 1; c >= 0 && c <= len(line) {
		before = line[:c]
	}
	switch {
	case strings.HasPrefix(e.Msg, "got import") || strings.HasPrefix(e.Msg, "got from") && strings.HasPrefix(strings.TrimSpace(line), "from "):
		return `Starlark has no import: load("lib.star", "name") loads a name from a module of your own, json, math and re are already there, and files, processes and the environment belong in a step (run = ["cmd", ...])`
	case strings.HasPrefix(e.Msg, "got '=', want '('") && loadName.MatchString(before):
		return `load is a statement of Starlark (load("lib.star", "name")), not a name a variable can take: call it something else, e.g. load_step`
	case strings.HasPrefix(e.Msg, "got string literal") && fPrefix.MatchString(before):
		return `Starlark has no f-strings: write "hi %s" % name or "hi {}".format(name); in a step's run=, args= or prompt, a template "{{ inputs.name }}" reads a run's values`
	}
	if name, ok := strings.CutPrefix(e.Msg, "undefined: "); ok {
		if h, found := pythonBuiltins[name]; found {
			return h
		}
	}
	return ""
}

var (
	// loadName is the text of a line up to an "=" after a variable
	// named load.
	loadName = regexp.MustCompile(`(^|[^A-Za-z0-9_.])load\s*$`)
	// fPrefix is the text of a line up to a string literal that starts
	// an f-string (f"...", rf'...').
	fPrefix = regexp.MustCompile(`(^|[^A-Za-z0-9_])[rR]?[fF][rR]?$`)
)

// pythonBuiltins are Python builtins Starlark lacks, with what to write
// instead.
var pythonBuiltins = map[string]string{
	"sum":        "Starlark has no sum(): add in a loop (total = 0, then for x in xs: total += x), in a def",
	"open":       `Starlark cannot open files while a flow loads or runs: read one in a step (run = ["cat", "notes.txt"]) and use its text`,
	"isinstance": `Starlark has no isinstance(): compare type(x) == "list" (or "dict", "string", "int")`,
	"round":      "Starlark has no round(): int(x + 0.5) rounds a positive number, or keep the float",
}

// lineAt returns line n (1-based) of src, without its end.
func lineAt(src string, n int) string {
	for i := 1; i < n; i++ {
		j := strings.IndexByte(src, '\n')
		if j < 0 {
			return ""
		}
		src = src[j+1:]
	}
	if j := strings.IndexByte(src, '\n'); j >= 0 {
		src = src[:j]
	}
	return src
}
