// Package spell finds the name a person most likely meant when they wrote
// one that does not exist: the "did you mean" behind Skein's errors for an
// unknown step, input, flag, command, schema keyword or module (as
// go.starlark.net's own spell package does for Starlark names, which is
// internal to it).
//
// It compares names by edit distance only; it knows nothing of where the
// candidates come from, and it is not a fuzzy search: a name that is not a
// plausible typo of any candidate gets no suggestion.
package spell

import "fmt"

// Nearest returns the element of candidates closest to x by edit distance,
// or "" if none is close enough to be a plausible typo. Of equally near
// candidates it returns the first, so callers that want a stable answer
// sort the list. x itself is never suggested.
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

// Suggest is the hint an error message ends with when x is a typo of one of
// candidates, ` (did you mean "publish"?)`, or "" when it is not.
func Suggest(x string, candidates []string) string {
	if n := Nearest(x, candidates); n != "" {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
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
