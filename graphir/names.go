package graphir

// This file defines the rules for step names shared by the builtins, the
// loader and the checker, and the nearest-name search behind every
// did-you-mean hint.

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
	"visits": true, "status": true, "run": true, "args": true, "json": true, "math": true, "re": true, "struct": true,
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

// Nearest returns the element of candidates closest to x by edit distance,
// or "" if none is close enough to be a plausible typo.
func Nearest(x string, candidates []string) string {
	best, bestDist := "", 1<<30
	limit := 1 + len(x)/4 // tolerate about one typo in four characters
	if limit > 3 {
		limit = 3
	}
	for _, c := range candidates {
		if c == x || c == "" {
			continue
		}
		d := editDistance(x, c, min(bestDist, limit+1))
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist > limit {
		return ""
	}
	return best
}

// editDistance returns the Damerau-Levenshtein (optimal string alignment)
// distance between a and b, or a value >= max once it is known to be that
// large.
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= max || -d >= max {
		return max
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin >= max {
			return max
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
