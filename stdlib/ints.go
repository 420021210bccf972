package stdlib

// This file bounds integers. Go's math/big converts decimal text to an
// integer in time quadratic in its digits (1.6 million digits: 5.6 s)
// and multiplies in more than linear time, each in one call that a
// thread's cancellation cannot interrupt and the step budget counts as
// one step. So integers read from text (a literal, int(), JSON, an int
// input) are bounded by their digits, and a product by its bits, before
// either is made.

import (
	"errors"
	"fmt"

	"go.starlark.net/starlark"
)

// MaxIntDigits is the most digits an integer read from text may have:
// reading one this long takes a few milliseconds.
const MaxIntDigits = 10_000

// MaxIntBits is the most bits a product of integers may have (about
// 315,000 decimal digits): making it takes a few milliseconds, and
// writing it in decimal a fifth of a second.
const MaxIntBits = 1 << 20

// ErrIntDigits is wrapped by the error of an integer with more than
// MaxIntDigits digits (errors.Is).
var ErrIntDigits = errors.New("integer with too many digits")

// IntDigitsError is the error of an integer of n digits read from text
// as what ("the text", "a JSON number").
func IntDigitsError(what string, n int) error {
	return &digitsError{what, n}
}

type digitsError struct {
	what string
	n    int
}

func (e *digitsError) Unwrap() error { return ErrIntDigits }

func (e *digitsError) Error() string {
	return fmt.Sprintf("%s has %d digits; an integer read from text may have at most %d", e.what, e.n, MaxIntDigits)
}

// intDigits counts the digits of a number's text: its letters and
// digits, less a base prefix (0x, 0o, 0b).
func intDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			n++
		}
	}
	if n >= 2 {
		for _, p := range []string{"0x", "0X", "0o", "0O", "0b", "0B"} {
			if containsPrefix(s, p) {
				return n - 1
			}
		}
	}
	return n
}

func containsPrefix(s, p string) bool {
	for i := 0; i+len(p) <= len(s) && i < 2; i++ {
		if s[i:i+len(p)] == p {
			return true
		}
	}
	return false
}

// checkProduct reports an error if x * y, both ints, would have more than
// MaxIntBits bits.
func checkProduct(x, y starlark.Value) error {
	a, ok := x.(starlark.Int)
	if !ok {
		return nil
	}
	b, ok := y.(starlark.Int)
	if !ok {
		return nil
	}
	if _, ok := a.Int64(); ok {
		if _, ok := b.Int64(); ok {
			return nil // at most 126 bits
		}
	}
	if bits := a.BigInt().BitLen() + b.BigInt().BitLen(); bits > MaxIntBits {
		return fmt.Errorf("multiplying a %d-bit int by a %d-bit int would make about %d bits; an int made by * may have at most %d", a.BigInt().BitLen(), b.BigInt().BitLen(), bits, MaxIntBits)
	}
	return nil
}

// boundedInt is the universe's int(), refusing text of more than
// MaxIntDigits digits before it converts it.
var boundedInt = func() *starlark.Builtin {
	inner := starlark.Universe["int"].(*starlark.Builtin)
	return starlark.NewBuiltin("int", func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok {
				if n := intDigits(string(s)); n > MaxIntDigits {
					return nil, fmt.Errorf("int: %w", IntDigitsError("the text", n))
				}
			}
		}
		return starlark.Call(thread, inner, args, kwargs)
	})
}()
