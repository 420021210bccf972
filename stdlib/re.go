package stdlib

// This file defines the re module: RE2 regular expressions from Go's regexp
// package, so matching is linear in the input and cannot blow up.

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

var reModule = &starlarkstruct.Module{
	Name: "re",
	Members: starlark.StringDict{
		"match":   starlark.NewBuiltin("re.match", reMatch),
		"search":  starlark.NewBuiltin("re.search", reSearch),
		"findall": starlark.NewBuiltin("re.findall", reFindall),
		"sub":     starlark.NewBuiltin("re.sub", reSub),
		"split":   starlark.NewBuiltin("re.split", reSplit),
	},
}

// Compiled patterns are cached: conditions evaluate the same pattern on
// every visit.
var reCache sync.Map // string -> *regexp.Regexp

func compileRE(fn, pattern string) (*regexp.Regexp, error) {
	if re, ok := reCache.Load(pattern); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: bad pattern: %v", fn, err)
	}
	reCache.Store(pattern, re)
	return re, nil
}

// groups returns the match of re at loc as Starlark: the whole match when the
// pattern has no groups, else a tuple of groups (None for unmatched ones).
func groups(s string, loc []int, ngroups int) starlark.Value {
	if ngroups == 0 {
		return starlark.String(s[loc[0]:loc[1]])
	}
	t := make(starlark.Tuple, 0, ngroups+1)
	for i := 0; i <= ngroups; i++ {
		if loc[2*i] < 0 {
			t = append(t, starlark.None)
		} else {
			t = append(t, starlark.String(s[loc[2*i]:loc[2*i+1]]))
		}
	}
	return t
}

// patternArgs unpacks (pattern, s) and compiles the pattern.
func patternArgs(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (*regexp.Regexp, string, error) {
	var pattern, s string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &pattern, &s); err != nil {
		return nil, "", err
	}
	re, err := compileRE(b.Name(), pattern)
	return re, s, err
}

// reMatch(pattern, s): the match anchored at the start of s (whole match, or
// a tuple of the whole match and its groups), or None.
func reMatch(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	re, s, err := patternArgs(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil || loc[0] != 0 {
		// RE2 finds the leftmost match; retry anchored to be exact.
		anchored, err := compileRE(b.Name(), `^(?:`+re.String()+`)`)
		if err != nil {
			return nil, err
		}
		loc = anchored.FindStringSubmatchIndex(s)
		if loc == nil {
			return starlark.None, nil
		}
	}
	return groups(s, loc, re.NumSubexp()), nil
}

// reSearch(pattern, s): like match, but anywhere in s.
func reSearch(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	re, s, err := patternArgs(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		return starlark.None, nil
	}
	return groups(s, loc, re.NumSubexp()), nil
}

// reFindall(pattern, s): every match; strings without groups, else tuples.
func reFindall(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	re, s, err := patternArgs(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	// A match's indexes, its list slot and its groups' tuple.
	if err := checkMatches("finding", re, s, -1, matchBytes+int64(re.NumSubexp())*(16+elemBytes)); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	var out []starlark.Value
	for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
		if re.NumSubexp() == 0 {
			out = append(out, starlark.String(s[loc[0]:loc[1]]))
			continue
		}
		t := make(starlark.Tuple, 0, re.NumSubexp())
		for i := 1; i <= re.NumSubexp(); i++ {
			if loc[2*i] < 0 {
				t = append(t, starlark.String(""))
			} else {
				t = append(t, starlark.String(s[loc[2*i]:loc[2*i+1]]))
			}
		}
		out = append(out, t)
	}
	return starlark.NewList(out), nil
}

// reSub(pattern, repl, s, count=0): s with matches replaced by repl, which
// may name groups as $1 or ${name}.
func reSub(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern, repl, s string
	count := 0
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "repl", &repl, "s", &s, "count?", &count); err != nil {
		return nil, err
	}
	re, err := compileRE(b.Name(), pattern)
	if err != nil {
		return nil, err
	}
	if count <= 0 {
		count = -1
	}
	if err := checkSub(re, repl, s, count); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if count < 0 {
		return starlark.String(re.ReplaceAllString(s, repl)), nil
	}
	var out []byte
	last := 0
	for _, loc := range re.FindAllStringSubmatchIndex(s, count) {
		out = append(out, s[last:loc[0]]...)
		out = re.ExpandString(out, repl, s, loc)
		last = loc[1]
	}
	out = append(out, s[last:]...)
	return starlark.String(out), nil
}

// matchBytes is about what one match takes while re.sub with a count
// collects them.
const matchBytes = 64

// checkSub reports an error if re.sub could make a value over
// MaxValueBytes, or hold too many matches at once. When even the worst
// case (a match between every two bytes, each group reference as long as
// s) is within the bound it costs nothing; otherwise it counts the matches
// first. Each match writes repl with each $ reference at most as long as
// the match.
func checkSub(re *regexp.Regexp, repl, s string, count int) error {
	refs := int64(strings.Count(repl, "$"))
	slots := int64(len(s)) + 1
	if count > 0 {
		slots = min(slots, int64(count))
	}
	worst := int64(len(s)) + satMul(slots, int64(len(repl))) + satMul(refs, int64(len(s)))
	if worst <= MaxValueBytes && (count < 0 || satMul(slots, matchBytes) <= MaxValueBytes) {
		return nil
	}
	n, matched := countMatches(re, s, count)
	if total := int64(len(s)) + satMul(n, int64(len(repl))) + satMul(refs, matched); total > MaxValueBytes {
		return sizeError(fmt.Sprintf("replacing %d matches", n), float64(total))
	}
	if count > 0 && satMul(n, matchBytes) > MaxValueBytes {
		return fmt.Errorf("%d matches to replace one by one is too many; give no count to replace them all", n)
	}
	return nil
}

// countMatches counts the matches of re in s, the first count of them if
// count is not negative, and the bytes they match, without holding them.
func countMatches(re *regexp.Regexp, s string, count int) (n, matched int64) {
	re.ReplaceAllStringFunc(s, func(m string) string {
		if count < 0 || n < int64(count) {
			n++
			matched += int64(len(m))
		}
		return ""
	})
	return n, matched
}

// checkMatches reports an error if what (re.findall, re.split) could hold
// more than the bound at once for the matches of re in s (at most count
// of them, unless count is negative), each taking per bytes. Like
// checkSub, it counts only when even a match between every two bytes
// would be too many.
func checkMatches(what string, re *regexp.Regexp, s string, count int, per int64) error {
	slots := int64(len(s)) + 1
	if count >= 0 {
		slots = min(slots, int64(count))
	}
	if satMul(slots, per) <= MaxValueBytes {
		return nil
	}
	if n, _ := countMatches(re, s, count); satMul(n, per) > MaxValueBytes {
		return sizeError(fmt.Sprintf("%s %d matches (about %d bytes each)", what, n, per), float64(n)*float64(per))
	}
	return nil
}

// reSplit(pattern, s, maxsplit=0): s split around matches.
func reSplit(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern, s string
	maxsplit := 0
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "s", &s, "maxsplit?", &maxsplit); err != nil {
		return nil, err
	}
	re, err := compileRE(b.Name(), pattern)
	if err != nil {
		return nil, err
	}
	n := -1
	if maxsplit > 0 {
		n = maxsplit + 1
	}
	if err := checkMatches("splitting at", re, s, max(n-1, -1), matchBytes); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	parts := re.Split(s, n)
	out := make([]starlark.Value, len(parts))
	for i, p := range parts {
		out[i] = starlark.String(p)
	}
	return starlark.NewList(out), nil
}
