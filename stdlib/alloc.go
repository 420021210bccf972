package stdlib

// This file bounds the size of a value that one Starlark operation makes.
// The memory watchdogs sample the heap between steps, but one step can ask
// for gigabytes at once ("a" * 999999999, [0] * 1000000000, a join or a
// replace of a big string), and Go cannot recover from running out of
// memory. go.starlark.net's own bound on a repetition is 1<<30 elements,
// far more than a machine has. So the operations whose result can be far
// bigger than their operands compute the size of that result first and fail
// with an error when it is over MaxValueBytes:
//
//   - x * n and x *= n on strings, bytes, lists and tuples, and x % args
//     on strings: Rewrite turns the operators into calls of checked
//     builtins (see CheckedOps) in the syntax tree, before it is resolved;
//   - the string methods join, replace, format, split, rsplit and
//     splitlines: Rewrite turns s.join into a checked attribute lookup,
//     and getattr is checked too;
//   - str, repr, print and json.encode measure the text they would write;
//   - json.encode_indent and json.indent measure the indentation they add;
//   - re.sub stops once its result passes the bound;
//   - re.findall and re.split count the matches they would hold first,
//     when there could be too many (as str.split counts its pieces);
//   - list, tuple, sorted, reversed, enumerate and zip of a range or of a
//     string's elems or codepoints (whose length they know and allocate
//     for at once, or iterate in one call), and enumerate and zip of any
//     operand whose length they know, measure the list they would make.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// MaxValueBytes bounds the size of one value an operation makes: a string
// of at most 64 MiB, a list or tuple of at most MaxValueBytes/16 (4 Mi)
// elements.
const MaxValueBytes = 64 << 20

// elemBytes is what one element of a list or tuple takes (an interface).
const elemBytes = int64(unsafe.Sizeof(starlark.Value(nil)))

// The names of the checked operations. They are not identifiers, so no
// flow can define, shadow or call them by name.
const (
	mulName     = "·mul"
	modName     = "·mod"
	attrName    = "·attr"
	augAttrName = "·augfield"
	augIdxName  = "·augindex"
)

var checkedOps = func() starlark.StringDict {
	d := starlark.StringDict{
		mulName:     starlark.NewBuiltin(mulName, checkedBinary(syntax.STAR)),
		modName:     starlark.NewBuiltin(modName, checkedBinary(syntax.PERCENT)),
		attrName:    starlark.NewBuiltin(attrName, checkedAttr),
		augAttrName: starlark.NewBuiltin(augAttrName, checkedAugField),
		augIdxName:  starlark.NewBuiltin(augIdxName, checkedAugIndex),
	}
	d.Freeze()
	return d
}()

// CheckedOps returns the builtins the code Rewrite makes calls, to
// predeclare wherever rewritten code runs. The dict is frozen and shared.
func CheckedOps() starlark.StringDict { return checkedOps }

// IsCheckedOp reports whether name is one of CheckedOps, not a name a user
// can write (completion and hints leave these out).
func IsCheckedOp(name string) bool { return checkedOps.Has(name) }

// ErrTooLarge is what the error of an operation refused because its value
// would pass MaxValueBytes is (errors.Is), whatever its message.
var ErrTooLarge = errors.New("value too large")

// tooLarge is such an error.
type tooLarge struct{ msg string }

func (e *tooLarge) Error() string        { return e.msg }
func (e *tooLarge) Is(target error) bool { return target == ErrTooLarge }

// sizeError is the error of an operation whose result would be too big.
func sizeError(what string, bytes float64) error {
	return &tooLarge{fmt.Sprintf("%s would make %s; one value may take at most %d MiB", what, human(bytes), MaxValueBytes>>20)}
}

// overError is the error of an operation whose result is known to be over
// the bound, before its size is known.
func overError(what string) error {
	return &tooLarge{fmt.Sprintf("%s would make more than %d MiB, the most one value may take", what, MaxValueBytes>>20)}
}

func human(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	default:
		return fmt.Sprintf("%.0f bytes", b)
	}
}

// checkRepeat reports an error if x * n (x a sequence, n an int) would make
// a value over the bound.
func checkRepeat(x, n starlark.Value) error {
	i, ok := n.(starlark.Int)
	if !ok {
		return nil
	}
	var size, unit int64
	var what string
	switch x := x.(type) {
	case starlark.String:
		size, unit, what = int64(len(x)), 1, "string"
	case starlark.Bytes:
		size, unit, what = int64(len(x)), 1, "bytes"
	case *starlark.List:
		size, unit, what = int64(x.Len()), elemBytes, "list"
	case starlark.Tuple:
		size, unit, what = int64(len(x)), elemBytes, "tuple"
	default:
		return nil
	}
	if size == 0 || i.Sign() <= 0 {
		return nil
	}
	count, exact := i.Int64()
	if exact && count <= MaxValueBytes/(size*unit) {
		return nil
	}
	f, _ := strconv.ParseFloat(i.String(), 64)
	total := f * float64(size)
	if unit == 1 {
		return sizeError(fmt.Sprintf("repeating a %d-byte %s %s times", size, what, i), total)
	}
	return sizeError(fmt.Sprintf("repeating a %d-element %s %s times (%.0f elements of %d bytes)", size, what, i, total, unit), total*float64(unit))
}

// checkedBinary returns the builtin that applies op to its two arguments
// once the size of the result is known to be within the bound.
func checkedBinary(op syntax.Token) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		if err := checkBinary(op, x, y); err != nil {
			return nil, err
		}
		return starlark.Binary(op, x, y)
	}
}

func checkBinary(op syntax.Token, x, y starlark.Value) error {
	switch op {
	case syntax.STAR:
		if err := checkRepeat(x, y); err != nil {
			return err
		}
		if err := checkProduct(x, y); err != nil {
			return err
		}
		return checkRepeat(y, x)
	case syntax.PERCENT:
		if f, ok := x.(starlark.String); ok {
			return checkPercent(string(f), y)
		}
	}
	return nil
}

// checkPercent bounds fmt % args: each conversion writes one argument, and
// a mapping's may all write the same.
func checkPercent(f string, args starlark.Value) error {
	convs := int64(strings.Count(f, "%"))
	if convs == 0 {
		return nil
	}
	var total int64
	switch a := args.(type) {
	case starlark.Tuple:
		total = int64(len(f))
		for _, e := range a {
			total += TextSize(e, MaxValueBytes-total+1)
			if total > MaxValueBytes {
				break
			}
		}
	default:
		total = int64(len(f)) + satMul(convs, TextSize(a, MaxValueBytes+1))
	}
	if total > MaxValueBytes {
		return overError("formatting with %")
	}
	return nil
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// checkedMethods are the string methods whose result can be far bigger
// than the string and its arguments.
var checkedMethods = map[string]bool{"join": true, "replace": true, "format": true, "split": true, "rsplit": true, "splitlines": true}

// checkedAttr implements x.name for the names in checkedMethods: the
// string's method, checked; anything else's attribute as usual.
func checkedAttr(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, name := args[0], string(args[1].(starlark.String))
	return getAttr(x, name)
}

// getAttr is x.name, with the checked string methods, and the errors of
// go.starlark.net.
func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	if s, ok := x.(starlark.String); ok && checkedMethods[name] {
		return checkedMethod(s, name), nil
	}
	return plainAttr(x, name)
}

// plainAttr is x.name with go.starlark.net's errors (less its spelling
// hint: these names are the string methods' own).
func plainAttr(x starlark.Value, name string) (starlark.Value, error) {
	h, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	v, err := h.Attr(name)
	if err != nil {
		if nsa, ok := err.(starlark.NoSuchAttrError); ok {
			return nil, fmt.Errorf("%s", string(nsa))
		}
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	return v, nil
}

// checkedMethod returns the method name of s, wrapped in a size check.
func checkedMethod(s starlark.String, name string) starlark.Value {
	m, _ := s.Attr(name)
	inner := m.(*starlark.Builtin)
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := checkMethod(s, name, args, kwargs); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		return starlark.Call(thread, inner, args, kwargs)
	}).BindReceiver(s)
}

func checkMethod(s starlark.String, name string, args starlark.Tuple, kwargs []starlark.Tuple) error {
	switch name {
	case "join":
		if len(args) != 1 {
			return nil // the method's own error
		}
		iter := starlark.Iterate(args[0])
		if iter == nil {
			return nil
		}
		defer iter.Done()
		var n, total int64
		var e starlark.Value
		for iter.Next(&e) {
			es, ok := e.(starlark.String)
			if !ok {
				return nil
			}
			if n > 0 {
				total += int64(len(s))
			}
			total += int64(len(es))
			n++
			if total > MaxValueBytes {
				return overError(fmt.Sprintf("joining %d or more strings", n))
			}
		}
	case "replace":
		if len(args) < 2 || len(kwargs) > 0 {
			return nil
		}
		old, ok1 := args[0].(starlark.String)
		repl, ok2 := args[1].(starlark.String)
		if !ok1 || !ok2 || len(repl) <= len(old) {
			return nil
		}
		count := int64(strings.Count(string(s), string(old)))
		if len(args) == 3 {
			if c, ok := args[2].(starlark.Int); ok {
				if c64, exact := c.Int64(); exact && c64 >= 0 && c64 < count {
					count = c64
				}
			}
		}
		total := int64(len(s)) + satMul(count, int64(len(repl)-len(old)))
		if total > MaxValueBytes {
			return sizeError(fmt.Sprintf("replacing %d matches with %d bytes each", count, len(repl)), float64(total))
		}
	case "split", "rsplit", "splitlines":
		// The list holds an element per piece.
		if int64(len(s)) < MaxValueBytes/elemBytes {
			return nil // fewer pieces than the bound, whatever the separator
		}
		var pieces int64
		switch {
		case name == "splitlines":
			pieces = int64(strings.Count(string(s), "\n")+strings.Count(string(s), "\r")) + 1
		case len(args) > 0 && args[0] != starlark.None:
			sep, ok := args[0].(starlark.String)
			if !ok || sep == "" {
				return nil
			}
			pieces = int64(strings.Count(string(s), string(sep))) + 1
		default:
			pieces = countFields(string(s))
		}
		if len(args) > 1 && name != "splitlines" {
			if m, ok := args[1].(starlark.Int); ok {
				if m64, exact := m.Int64(); exact && m64 >= 0 && m64+1 < pieces {
					pieces = m64 + 1
				}
			}
		}
		if pieces*elemBytes > MaxValueBytes {
			return sizeError(fmt.Sprintf("splitting into %d pieces (elements of %d bytes)", pieces, elemBytes), float64(pieces*elemBytes))
		}
	case "format":
		// Each replacement field writes one argument; any may write
		// the biggest.
		fields := int64(strings.Count(string(s), "{"))
		if fields == 0 {
			return nil
		}
		var biggest int64
		for _, a := range args {
			biggest = max(biggest, TextSize(a, MaxValueBytes+1))
		}
		for _, kv := range kwargs {
			biggest = max(biggest, TextSize(kv[1], MaxValueBytes+1))
		}
		if total := int64(len(s)) + satMul(fields, biggest); total > MaxValueBytes {
			return overError(fmt.Sprintf("formatting %d fields", fields))
		}
	}
	return nil
}

// countFields is len(strings.Fields(s)), without the slice.
func countFields(s string) int64 {
	var n int64
	in := false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// checkedAugField implements the first half of x.name op= y (op given as
// its token's string): it reads x.name and returns the builtin that, called
// with y, applies op with the size check and stores the result.
func checkedAugField(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, x, name := augOp(args[0]), args[1], string(args[2].(starlark.String))
	cur, err := plainAttr(x, name)
	if err != nil {
		return nil, err
	}
	return augStore(augAttrName, op, cur, func(z starlark.Value) error {
		if f, ok := x.(starlark.HasSetField); ok {
			return f.SetField(name, z)
		}
		return fmt.Errorf("can't assign to .%s field of %s", name, x.Type())
	}), nil
}

// checkedAugIndex implements the first half of x[k] op= y: it reads x[k]
// and returns the builtin that, called with y, applies op with the size
// check and stores the result in x[k].
func checkedAugIndex(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, x, k := augOp(args[0]), args[1], args[2]
	cur, err := getIndex(x, k)
	if err != nil {
		return nil, err
	}
	return augStore(augIdxName, op, cur, func(z starlark.Value) error { return setIndex(x, k, z) }), nil
}

// augStore returns the second half of an augmented assignment: the builtin
// name that, called with y, applies op to cur and y with the size check and
// passes the result to store.
func augStore(name string, op syntax.Token, cur starlark.Value, store func(starlark.Value) error) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		z, err := checkedBinary(op)(nil, nil, starlark.Tuple{cur, args[0]}, nil)
		if err != nil {
			return nil, err
		}
		if err := store(z); err != nil {
			return nil, err
		}
		return starlark.None, nil
	})
}

func augOp(v starlark.Value) syntax.Token {
	if v.(starlark.String) == "%" {
		return syntax.PERCENT
	}
	return syntax.STAR
}

// getIndex and setIndex are x[k] and x[k] = z as go.starlark.net does them.
func getIndex(x, k starlark.Value) (starlark.Value, error) {
	switch x := x.(type) {
	case starlark.Mapping:
		z, found, err := x.Get(k)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("key %v not in %s", k, x.Type())
		}
		return z, nil
	case starlark.Indexable:
		i, err := index(k, x.Len(), x.Type())
		if err != nil {
			return nil, err
		}
		return x.Index(i), nil
	}
	return nil, fmt.Errorf("unhandled index operation %s[%s]", x.Type(), k.Type())
}

func setIndex(x, k, z starlark.Value) error {
	switch x := x.(type) {
	case starlark.HasSetKey:
		return x.SetKey(k, z)
	case starlark.HasSetIndex:
		i, err := index(k, x.Len(), x.Type())
		if err != nil {
			return err
		}
		return x.SetIndex(i, z)
	}
	return fmt.Errorf("%s value does not support item assignment", x.Type())
}

func index(k starlark.Value, n int, typ string) (int, error) {
	i, err := starlark.AsInt32(k)
	if err != nil {
		return 0, fmt.Errorf("%s index: %s", typ, err)
	}
	orig := i
	if i < 0 {
		i += n
	}
	if n == 0 {
		return 0, fmt.Errorf("index %d out of range: empty %s", orig, typ)
	}
	if i < 0 || i >= n {
		return 0, fmt.Errorf("%s index %d out of range [%d:%d]", typ, orig, -n, n-1)
	}
	return i, nil
}

// checkedGetattr is getattr(x, name[, default]) with the checked string
// methods.
func checkedGetattr(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, def starlark.Value
	var name string
	if err := starlark.UnpackPositionalArgs("getattr", args, kwargs, 2, &x, &name, &def); err != nil {
		return nil, err
	}
	v, err := getAttr(x, name)
	if err != nil {
		if def != nil {
			return def, nil
		}
		return nil, fmt.Errorf("getattr: %v", err)
	}
	return v, nil
}

// CheckSize reports an error if the text of v (str, or JSON) would be over
// MaxValueBytes: a value that shares one big string many times is small in
// memory and huge once written out, and a string's escapes write up to 6
// bytes for one ("\u0001"), so a 60 MB string of control characters is
// 360 MB of JSON.
func CheckSize(v starlark.Value) error {
	switch x := v.(type) {
	case starlark.Int, starlark.Float, starlark.Bool, starlark.NoneType:
		return nil // already made
	case starlark.String:
		if len(x) <= MaxValueBytes/maxEscape {
			return nil
		}
		if size := quotedString(string(x), QuoteJSON); size > MaxValueBytes {
			return sizeError(fmt.Sprintf("writing out this %d-byte string as JSON (its escapes counted)", len(x)), float64(size))
		}
		return nil
	}
	if size := QuotedSize(v, MaxValueBytes+1, QuoteJSON); size > MaxValueBytes {
		return overError("writing out this " + v.Type())
	}
	return nil
}

// TextSize returns about how many bytes str or repr of v writes (strings
// count their quotes, not their escapes), or a number over limit once it
// is known to be over. Containers are measured once however often they are
// shared, so it is linear in the size of v: a list of a million references
// to one big string is measured as the million copies str would write.
func TextSize(v starlark.Value, limit int64) int64 {
	t := textSizer{limit: limit}
	return t.size(v)
}

// How strings are quoted, for QuotedSize.
const (
	quoteNone     = iota // their length and quotes: TextSize
	QuoteRepr            // as Starlark's repr and str of a container quote them
	QuoteStarJSON        // as go.starlark.net's json.encode does
	QuoteJSON            // as encoding/json and AppendJSON do
)

// maxEscape is the most bytes any quoting writes for one byte of a string
// (\u003c for "<" in JSON): a text measured by TextSize at most
// MaxValueBytes/maxEscape cannot pass the bound once escaped.
const maxEscape = 6

// QuotedSize is TextSize with each string's escapes counted as quote
// quotes them (at most: a non-printable character beyond ASCII, which
// repr writes as \u or \U, counts as its bytes). Counting the escapes
// reads every string, so it does only when TextSize says they could
// matter.
func QuotedSize(v starlark.Value, limit int64, quote int) int64 {
	size := TextSize(v, limit)
	if size > limit || size <= MaxValueBytes/maxEscape {
		return size
	}
	t := textSizer{limit: limit, quote: quote}
	return t.size(v)
}

// JSONSize returns how many bytes AppendJSON writes for v, compact, its
// strings' escapes counted; or a number over limit once it is known to be
// over. It reads every string: writers size their buffer with it, so that
// a big value is escaped once into a buffer of its size, not into one
// that grows (and copies itself) as the text comes.
func JSONSize(v starlark.Value, limit int64) int64 {
	t := textSizer{limit: limit, quote: QuoteJSON}
	return t.size(v)
}

// quotedString returns how many bytes quoting s writes, quotes included.
func quotedString(s string, quote int) int64 {
	var plain, repr, marshal int64 // plain: strconv.Quote of printable ASCII
	printable, high := true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			printable, high = false, true
			plain++
			repr++
			marshal++
		case c == '"' || c == '\\':
			plain += 2
			repr += 2
			marshal += 2
		case c == '<' || c == '>' || c == '&':
			plain++
			repr++
			marshal += 6
		case c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			printable = false
			repr += 2
			marshal += 2
		case c == '\a' || c == '\v':
			printable = false
			repr += 2
			marshal += 6
		case c < 0x20:
			printable = false
			repr += 4
			marshal += 6
		case c == 0x7f:
			// go.starlark.net quotes it with strconv, as \x7f, then
			// writes that as \u007f; encoding/json leaves it.
			plain += 6
			repr += 4
			marshal++
		default:
			plain++
			repr++
			marshal++
		}
	}
	if high {
		// U+2028 and U+2029 are \u2028 and \u2029 in JSON and in repr.
		seps := 3 * int64(strings.Count(s, "\u2028")+strings.Count(s, "\u2029"))
		marshal += seps
		repr += seps
	}
	if high && !utf8.ValidString(s) {
		// An invalid byte is \xHH in repr, \ufffd in JSON.
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				repr += 3
				marshal += 5
			}
			i += n
		}
	}
	switch {
	case quote == QuoteRepr:
		return repr + 2
	case quote == QuoteStarJSON && printable:
		return plain + 2
	}
	return marshal + 2
}

type textSizer struct {
	limit int64
	quote int                      // how strings are quoted
	memo  map[unsafe.Pointer]int64 // container sizes; -1 while being measured
}

func (t *textSizer) size(v starlark.Value) int64 {
	switch x := v.(type) {
	case starlark.String:
		if t.quote != quoteNone {
			return quotedString(string(x), t.quote)
		}
		return int64(len(x)) + 2
	case starlark.Bytes:
		return int64(len(x)) + 3
	case starlark.Int, starlark.Float, starlark.Bool, starlark.NoneType:
		return 24
	}
	key, n, kids, ok := containerKids(v)
	switch {
	case !ok:
		return int64(len(v.Type())) + 16 // a value that prints itself briefly
	case key == nil:
		return 2 // empty
	}
	if t.memo == nil {
		t.memo = map[unsafe.Pointer]int64{}
	}
	if s, seen := t.memo[key]; seen {
		if s < 0 {
			return 5 // inside itself: "[...]"
		}
		return s
	}
	t.memo[key] = -1
	total := int64(2 + 2*n)
	kids(func(e starlark.Value) bool {
		total += t.size(e)
		return total <= t.limit
	})
	t.memo[key] = total
	return total
}

// lengthBounded are the builtins that allocate their whole result at once
// when they know the length of what they iterate, or iterate it inside one
// call. Of a list, tuple, dict or set, list, tuple, sorted and reversed
// make about the size of the operand, as x + x does; enumerate and zip
// several times it (a tuple an element); of a range or a string's elems or
// codepoints any of them can be far bigger: list(s.elems()) of a 60 MB
// string asks for 1 GB, enumerate of it for 3 GB.
var lengthBounded = []string{"list", "tuple", "sorted", "reversed", "enumerate", "zip"}

// IsLengthBounded reports whether name is one of lengthBounded: the
// universe's builtin, which completion and hints list as such.
func IsLengthBounded(name string) bool { return slices.Contains(lengthBounded, name) }

// boundedByLen wraps the universe's builtin name with checkLen.
func boundedByLen(name string) *starlark.Builtin {
	inner := starlark.Universe[name].(*starlark.Builtin)
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := checkLen(name, args); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		return starlark.Call(thread, inner, args, kwargs)
	})
}

// codepoints returns how many codepoints s.codepoints() or
// s.codepoint_ords() iterates over, or -1 for any other value. (Their type
// is go.starlark.net's and unexported; the string is read by reflection.)
func codepoints(v starlark.Value) int64 {
	if v.Type() != "string.codepoints" {
		return -1
	}
	f := reflect.ValueOf(v)
	if f.Kind() != reflect.Struct {
		return -1
	}
	if f = f.FieldByName("s"); f.Kind() != reflect.String {
		return -1
	}
	return int64(utf8.RuneCountInString(f.String()))
}

// checkLen reports an error if the builtin name, called with args, would
// allocate a result over the bound for an operand that is not itself as big.
func checkLen(name string, args starlark.Tuple) error {
	if len(args) == 0 {
		return nil // the builtin's own result or error
	}
	n, per, lazy := int64(-1), int64(1), false
	for i, a := range args {
		if i > 0 && name != "zip" {
			break
		}
		l := int64(starlark.Len(a))
		if l < 0 {
			l = codepoints(a)
		}
		if l < 0 {
			return nil // unknown: it grows as it goes
		}
		if n < 0 || l < n {
			n = l
		}
		switch a.(type) {
		case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set, *Map:
		default:
			lazy = true
		}
	}
	switch name {
	case "enumerate":
		per = 3 // a pair per element, and its two slots
	case "zip":
		per = int64(1 + len(args))
	}
	// Of a list, tuple, dict or set, list and its kin make about the
	// operand's size, but enumerate and zip several times it.
	if (!lazy && per == 1) || n*per <= MaxValueBytes/elemBytes {
		return nil
	}
	return sizeError(fmt.Sprintf("making %d elements of %d bytes", n*per, elemBytes), float64(n*per*elemBytes))
}
