package vm

import "github.com/skeinlang/skein/graphir"

// SetFastConds turns the fast path for simple conditions on or off and
// returns what restores it.
func SetFastConds(on bool) (restore func()) {
	old := fastConds
	fastConds = on
	return func() { fastConds = old }
}

// HasFastForm reports whether condition x has a fast form.
func HasFastForm(x *graphir.Expr) bool { return compileFast(x) != nil }
