package stdlib

// This file bounds the Starlark builtins whose one call can take time
// without bound on a deeply nested value. The step budget cannot see inside
// a builtin, and go.starlark.net's str, repr, print and json.encode walk a
// value with a cycle check that is quadratic in its depth (a list nested
// 100,000 deep takes seconds, a million deep minutes), while json.decode
// recurses once per bracket and overflows the stack on "[" * 2000000. So
// these wrappers measure the nesting first and fail fast with an error
// (json.decode also estimates what it would make, jsonsize.go).
// Predeclared names shadow the universe, so flow files and expressions get
// these versions transparently.

import (
	"fmt"
	"strings"
	"unsafe"

	"go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// MaxJSONDepth is how deeply JSON may nest, decoded or encoded: the bound of
// flow data.
const MaxJSONDepth = maxDepth

// MaxReprDepth is how deeply a value given to str, repr or print may nest.
const MaxReprDepth = 1000

var (
	universeStr   = starlark.Universe["str"].(*starlark.Builtin)
	universeRepr  = starlark.Universe["repr"].(*starlark.Builtin)
	universePrint = starlark.Universe["print"].(*starlark.Builtin)
)

var safeBuiltins = func() starlark.StringDict {
	d := starlark.StringDict{
		"str":   starlark.NewBuiltin("str", boundedArgs(universeStr, MaxReprDepth)),
		"repr":  starlark.NewBuiltin("repr", boundedArgs(universeRepr, MaxReprDepth)),
		"print": starlark.NewBuiltin("print", boundedArgs(universePrint, MaxReprDepth)),
		// getattr(s, "join") is the checked method (alloc.go).
		"getattr": starlark.NewBuiltin("getattr", checkedGetattr),
		"int":     boundedInt,
	}
	for _, name := range lengthBounded {
		d[name] = boundedByLen(name)
	}
	d.Freeze()
	return d
}()

// SafeBuiltins returns the bounded versions of str, repr, print, getattr
// and the builtins of lengthBounded, to predeclare over the universe's. The dict is frozen and shared.
func SafeBuiltins() starlark.StringDict { return safeBuiltins }

// boundedArgs wraps b so that every argument is first checked to nest at
// most limit deep, and the text of all of them, escapes counted, to fit in
// one value. str and print write a string argument as it is; repr and
// json.encode quote it.
func boundedArgs(b *starlark.Builtin, limit int) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	quote, quoteTop := QuoteRepr, true
	switch b.Name() {
	case "json.encode":
		quote = QuoteStarJSON
	case "str", "print":
		quoteTop = false
	}
	return func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var size int64
		for _, a := range args {
			if err := CheckDepth(a, limit); err != nil {
				return nil, fmt.Errorf("%s: %v", b.Name(), err)
			}
			if s, ok := a.(starlark.String); ok && !quoteTop {
				size += int64(len(s))
			} else {
				size += QuotedSize(a, MaxValueBytes-size+1, quote)
			}
			if size > MaxValueBytes {
				return nil, fmt.Errorf("%s: %v", b.Name(), overError("the text of its arguments"))
			}
		}
		return starlark.Call(thread, b, args, kwargs)
	}
}

// CheckDepth reports an error if v nests more than limit containers deep.
// It visits each container once, so it is linear in the size of v even when
// v shares (or contains) itself; a container inside itself counts once, as
// str prints it as "[...]".
func CheckDepth(v starlark.Value, limit int) error {
	w := depthWalk{limit: limit, height: map[unsafe.Pointer]int{}}
	if _, ok := w.walk(v, 0); !ok {
		return fmt.Errorf("value nested more than %d deep", limit)
	}
	return nil
}

type depthWalk struct {
	limit  int
	height map[unsafe.Pointer]int // of containers seen; -1 while being walked
}

// walk returns the height of v below it, or false once depth plus that
// height passes the limit.
func (w *depthWalk) walk(v starlark.Value, depth int) (int, bool) {
	key, _, kids, ok := containerKids(v)
	if !ok || key == nil {
		return 0, true // not a container, or an empty one
	}
	if h, seen := w.height[key]; seen {
		if h < 0 {
			return 0, true // inside itself
		}
		return h, depth+h <= w.limit
	}
	if depth >= w.limit {
		return 0, false
	}
	w.height[key] = -1
	h, ok := 0, true
	kids(func(e starlark.Value) bool {
		var eh int
		eh, ok = w.walk(e, depth+1)
		h = max(h, eh+1)
		return ok
	})
	if !ok {
		return 0, false
	}
	w.height[key] = h
	return h, true
}

// containerKids returns what the walks of a value (CheckDepth, TextSize)
// need of a container: a key that is the same however often it is shared,
// how many values it holds (a dict's, a map's and a struct's keys or names
// count, and are yielded, before each value) and what yields them. ok is
// false when v is not a container; key is nil when it is an empty one
// (a struct, even empty, has a key).
func containerKids(v starlark.Value) (key unsafe.Pointer, n int, kids func(yield func(starlark.Value) bool), ok bool) {
	switch x := v.(type) {
	case *starlark.List:
		if x.Len() == 0 {
			return nil, 0, nil, true
		}
		return unsafe.Pointer(x), x.Len(), func(yield func(starlark.Value) bool) {
			for i := 0; i < x.Len() && yield(x.Index(i)); i++ {
			}
		}, true
	case starlark.Tuple:
		if len(x) == 0 {
			return nil, 0, nil, true
		}
		return unsafe.Pointer(&x[0]), len(x), func(yield func(starlark.Value) bool) {
			for _, e := range x {
				if !yield(e) {
					return
				}
			}
		}, true
	case *starlark.Dict:
		if x.Len() == 0 {
			return nil, 0, nil, true
		}
		return unsafe.Pointer(x), 2 * x.Len(), itemKids(x.Items()), true
	case *Map:
		if len(x.members) == 0 {
			return nil, 0, nil, true
		}
		return unsafe.Pointer(x), 2 * len(x.members), func(yield func(starlark.Value) bool) {
			for _, e := range x.members {
				if !yield(starlark.String(e.k)) || !yield(e.v) {
					return
				}
			}
		}, true
	case *starlark.Set:
		if x.Len() == 0 {
			return nil, 0, nil, true
		}
		return unsafe.Pointer(x), x.Len(), func(yield func(starlark.Value) bool) {
			it := x.Iterate()
			defer it.Done()
			var e starlark.Value
			for it.Next(&e) {
				if !yield(e) {
					return
				}
			}
		}, true
	case *starlarkstruct.Struct:
		names := x.AttrNames()
		return unsafe.Pointer(x), 2 * len(names), func(yield func(starlark.Value) bool) {
			for _, name := range names {
				a, _ := x.Attr(name)
				if !yield(starlark.String(name)) || !yield(a) {
					return
				}
			}
		}, true
	}
	return nil, 0, nil, false
}

func itemKids(items []starlark.Tuple) func(yield func(starlark.Value) bool) {
	return func(yield func(starlark.Value) bool) {
		for _, kv := range items {
			if !yield(kv[0]) || !yield(kv[1]) {
				return
			}
		}
	}
}

// jsonModule is go.starlark.net's json with encode and decode bounded.
var jsonModule = func() *starlarkstruct.Module {
	m := &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{}}
	for k, v := range json.Module.Members {
		m.Members[k] = v
	}
	encode := boundedArgs(json.Module.Members["encode"].(*starlark.Builtin), MaxJSONDepth)
	fixed := func(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := encode(thread, fn, args, kwargs)
		if s, ok := v.(starlark.String); ok && err == nil {
			v = starlark.String(fixJSONEscapes(string(s)))
		}
		return v, err
	}
	m.Members["encode"] = starlark.NewBuiltin("json.encode", fixed)
	indent := json.Module.Members["indent"].(*starlark.Builtin)
	m.Members["encode_indent"] = starlark.NewBuiltin("json.encode_indent", func(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Value
		prefix, ind := "", "\t"
		if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "x", &x, "prefix?", &prefix, "indent?", &ind); err != nil {
			return nil, err
		}
		if err := CheckDepth(x, MaxJSONDepth); err != nil {
			return nil, fmt.Errorf("%s: %v", fn.Name(), err)
		}
		v, err := fixed(thread, fn, starlark.Tuple{x}, nil)
		if err != nil {
			return nil, err
		}
		if err := checkIndent(string(v.(starlark.String)), prefix, ind); err != nil {
			return nil, fmt.Errorf("%s: %v", fn.Name(), err)
		}
		return starlark.Call(thread, indent, starlark.Tuple{v}, []starlark.Tuple{{starlark.String("prefix"), starlark.String(prefix)}, {starlark.String("indent"), starlark.String(ind)}})
	})
	m.Members["indent"] = starlark.NewBuiltin("json.indent", func(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		prefix, ind := "", "\t"
		var src string
		if starlark.UnpackArgs(fn.Name(), nil, kwargs, "prefix?", &prefix, "indent?", &ind) == nil &&
			starlark.UnpackPositionalArgs(fn.Name(), args, nil, 1, &src) == nil {
			if err := checkIndent(src, prefix, ind); err != nil {
				return nil, fmt.Errorf("%s: %v", fn.Name(), err)
			}
		}
		return starlark.Call(thread, indent, args, kwargs) // its own errors
	})
	decode := json.Module.Members["decode"].(*starlark.Builtin)
	m.Members["decode"] = starlark.NewBuiltin("json.decode", func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok {
				if err := checkJSON(string(s), &starlarkCosts); err != nil {
					return nil, fmt.Errorf("json.decode: %w", err)
				}
			}
		}
		return starlark.Call(thread, decode, args, kwargs)
	})
	m.Freeze()
	return m
}()

// fixJSONEscapes turns the \xHH escapes go.starlark.net's json.encode
// writes for DEL (it quotes "printable" ASCII with Go's strconv) into the
// \u00HH that JSON has.
func fixJSONEscapes(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == 'x' && i+3 < len(s) {
			b.WriteString(`\u00`)
			b.WriteString(s[i+2 : i+4])
			i += 3
			continue
		}
		b.WriteByte(c)
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

// checkIndent reports an error if indenting the JSON text src with prefix
// and indent would make more than the bound: each bracket and comma may
// start a line, which gets the prefix and the indent once per level, so a
// long indent multiplies the text.
func checkIndent(src, prefix, indent string) error {
	total, depth := int64(len(src)), int64(0)
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
		default:
			continue
		}
		total += 1 + int64(len(prefix)) + max(depth, 0)*int64(len(indent))
		if total > MaxValueBytes {
			return overError("indenting")
		}
	}
	return nil
}
