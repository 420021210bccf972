package graphir

// This file defines the rules for step names shared by the builtins, the
// loader and the checker.

import (
	"go.starlark.net/starlark"
)

// ValidName reports whether s matches [a-z_][a-z0-9_]*.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Expression roots and predeclared names that a step may not shadow.
var reserved = map[string]bool{
	"self": true, "inputs": true, "loop": true, "item": true, "index": true, "r": true,
	"visits": true, "status": true, "run": true, "args": true, "reveal": true, "json": true, "math": true, "re": true, "struct": true,
	// Starlark keywords, which could never be named in an expression.
	"and": true, "break": true, "continue": true, "def": true, "elif": true, "else": true,
	"for": true, "if": true, "in": true, "lambda": true, "load": true, "not": true,
	"or": true, "pass": true, "return": true, "while": true,
	// Words Starlark reserves for the future.
	"as": true, "assert": true, "async": true, "await": true, "class": true, "del": true,
	"except": true, "finally": true, "from": true, "global": true, "import": true,
	"is": true, "nonlocal": true, "raise": true, "try": true, "with": true, "yield": true,
}

// Reserved reports whether name may not be used for a step because an
// expression could not refer to it (a root such as inputs, a predeclared
// module, a Starlark builtin or keyword).
func Reserved(name string) bool {
	if reserved[name] {
		return true
	}
	_, ok := starlark.Universe[name]
	return ok
}
