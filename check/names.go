package check

// This file checks step names (duplicate_step, invalid_name,
// reserved_name) and the names maps give their elements (reserved_name).

import (
	"fmt"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

func checkNames(p *pass) {
	// The graph indexes each name by its first step.
	first := func(name string) *graphir.Node {
		if n := p.g.Node(name); n != nil && n.IsStep() {
			return n
		}
		return nil
	}
	for _, n := range p.g.Steps() {
		if prev := first(n.Name); prev != n {
			p.report(codes.DuplicateStep, n, n.Pos,
				fmt.Sprintf("step %q is already declared at %s", n.Name, prev.Pos),
				"step names are unique in the whole flow, loop and map bodies included")
			continue
		}
		switch {
		case !graphir.ValidName(n.Name):
			hint := "names are lower-case letters, digits and _, not starting with a digit"
			if s := suggestName(n.Name); s != "" && first(s) == nil {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			p.report(codes.InvalidName, n, n.Pos,
				fmt.Sprintf("step name %q must match [a-z_][a-z0-9_]*", n.Name), hint)
		case graphir.Reserved(n.Name):
			p.report(codes.ReservedName, n, n.Pos,
				fmt.Sprintf("step name %q is reserved: %s", n.Name, reservedWhy(n.Name)),
				fmt.Sprintf("rename it, e.g. %q", n.Name+"_step"))
		}
		// A map's item_var is a name its body's expressions read: one
		// that is reserved, or a step's, would hide what it names there.
		if n.Kind != graphir.KindMap || n.Map.ItemVar == "item" {
			continue
		}
		iv := n.Map.ItemVar
		hint := fmt.Sprintf("name the element otherwise, e.g. item_var = %q", iv+"_item")
		switch {
		case graphir.Reserved(iv):
			p.report(codes.ReservedName, n, n.Pos,
				fmt.Sprintf("item_var %q of map %q is reserved: %s", iv, n.Name, reservedWhy(iv)), hint)
		case first(iv) != nil:
			p.report(codes.ReservedName, n, n.Pos,
				fmt.Sprintf("item_var %q of map %q is also a step's name: in the body, %s would be the element, not step %q", iv, n.Name, iv, iv), hint)
		}
	}
}

// suggestName turns an invalid name into a valid one: lower-case, other
// characters as _, a leading digit prefixed.
func suggestName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" {
		return ""
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "step_" + out
	}
	if !graphir.ValidName(out) || graphir.Reserved(out) {
		return ""
	}
	return out
}

func reservedWhy(name string) string {
	switch name {
	case "self", "inputs", "loop", "item", "index", "r", "run", "args":
		return "expressions use it for " + map[string]string{
			"self": "the current step", "inputs": "the flow inputs", "loop": "the current loop iteration",
			"item": "the current map element", "index": "the position of the map element", "r": "the run view",
			"run": "the run's outcome in an exit handler", "args": "the arguments of a tool call",
		}[name]
	case "visits", "status", "reveal", "json", "math", "re", "struct":
		return "it would shadow the predeclared " + name
	}
	if strings.ContainsAny(name[:1], "abcdefghijklmnopqrstuvwxyz") && !isKeyword(name) {
		return "it would shadow the Starlark builtin " + name
	}
	return "it is a Starlark keyword"
}

func isKeyword(s string) bool {
	switch s {
	case "and", "break", "continue", "def", "elif", "else", "for", "if", "in", "lambda", "load",
		"not", "or", "pass", "return", "while", "as", "assert", "async", "await", "class", "del",
		"except", "finally", "from", "global", "import", "is", "nonlocal", "raise", "try", "with", "yield":
		return true
	}
	return false
}
