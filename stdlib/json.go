package stdlib

// This file appends flow data as JSON straight into a byte slice, byte for
// byte as encoding/json would encode the Go values of ToGo, without
// building those values or re-validating nested output.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

// AppendJSON appends the JSON of flow data v to dst: the bytes of
// json.Marshal(ToGo(v)), or with a non-empty indent those of
// json.MarshalIndent(ToGo(v), "", indent) for a value nested level deep.
// On error dst is returned as it was; the error is ToGo's.
func AppendJSON(dst []byte, v starlark.Value, indent string, level int) ([]byte, error) {
	out, err := appendValue(dst, v, indent, level, 0)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func appendValue(b []byte, v starlark.Value, indent string, level, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, fmt.Errorf("value nested more than %d deep", maxDepth)
	}
	switch x := v.(type) {
	case nil, starlark.NoneType:
		return append(b, "null"...), nil
	case starlark.Bool:
		return strconv.AppendBool(b, bool(x)), nil
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return strconv.AppendInt(b, i, 10), nil
		}
		return append(b, x.String()...), nil
	case starlark.Float:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return b, fmt.Errorf("float %v is not representable in JSON", x)
		}
		return AppendJSONFloat(b, f), nil
	case starlark.String:
		return AppendJSONString(b, string(x)), nil
	case *Map:
		if len(x.members) == 0 {
			return append(b, "{}"...), nil
		}
		b = append(b, '{')
		var err error
		for i, e := range x.members {
			b = member(b, i, e.k, indent, level+1)
			if b, err = appendValue(b, e.v, indent, level+1, depth+1); err != nil {
				return b, err
			}
		}
		return closeWith(b, '}', indent, level), nil
	case starlark.IterableMapping:
		items := x.Items()
		if len(items) == 0 {
			return append(b, "{}"...), nil
		}
		b = append(b, '{')
		for i, kv := range items {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return b, fmt.Errorf("dict key %s is a %s, want string", kv[0], kv[0].Type())
			}
			b = member(b, i, string(k), indent, level+1)
			var err error
			if b, err = appendValue(b, kv[1], indent, level+1, depth+1); err != nil {
				return b, err
			}
		}
		return closeWith(b, '}', indent, level), nil
	case starlark.Iterable:
		it := x.Iterate()
		defer it.Done()
		var e starlark.Value
		n := 0
		b = append(b, '[')
		for it.Next(&e) {
			if n > 0 {
				b = append(b, ',')
			}
			b = newline(b, indent, level+1)
			n++
			var err error
			if b, err = appendValue(b, e, indent, level+1, depth+1); err != nil {
				return b, err
			}
		}
		if n == 0 {
			return append(b, ']'), nil
		}
		return closeWith(b, ']', indent, level), nil
	case starlark.HasAttrs:
		n := 0
		mark := len(b)
		b = append(b, '{')
		for _, name := range x.AttrNames() {
			a, err := x.Attr(name)
			if err != nil || a == nil {
				continue
			}
			if _, isFn := a.(starlark.Callable); isFn {
				continue
			}
			b = member(b, n, name, indent, level+1)
			n++
			if b, err = appendValue(b, a, indent, level+1, depth+1); err != nil {
				return b, err
			}
		}
		if n == 0 {
			return append(b[:mark], "{}"...), nil
		}
		return closeWith(b, '}', indent, level), nil
	}
	return b, fmt.Errorf("a %s is not JSON-representable", v.Type())
}

// member starts the i-th member of an object: the comma, the line break
// and indent, and the quoted name with its colon.
func member(b []byte, i int, name, indent string, level int) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = newline(b, indent, level)
	b = AppendJSONString(b, name)
	if indent != "" {
		return append(b, ':', ' ')
	}
	return append(b, ':')
}

func newline(b []byte, indent string, level int) []byte {
	if indent == "" {
		return b
	}
	b = append(b, '\n')
	for range level {
		b = append(b, indent...)
	}
	return b
}

func closeWith(b []byte, c byte, indent string, level int) []byte {
	return append(newline(b, indent, level), c)
}

// AppendJSONFloat appends f as encoding/json encodes a float64.
func AppendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// jsonSafe[c] reports whether the ASCII byte c stands for itself in a
// JSON string as encoding/json writes it: not a control character, a
// quote, a backslash or one of <, > and &.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// bigString is the length from which AppendJSONString measures a string's
// escapes first.
const bigString = 64 << 10

// AppendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it: quotes, backslashes and control characters, the HTML
// characters <, > and &, U+2028 and U+2029; invalid UTF-8 becomes U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	if len(s) >= bigString {
		// Room for all of it at once: escaping writes up to 6 bytes
		// for one, and a buffer grown as it goes copies itself each time.
		b = slices.Grow(b, int(quotedString(s, QuoteJSON)))
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
