package stdlib

// This file bounds what decoding JSON makes. A JSON document is small for
// what it decodes to: "{}," is three bytes and an empty dict half a
// kilobyte, so a 10 MB document can decode to gigabytes, in one builtin
// call the heap watchdog only sees once it has happened. So before a
// document is decoded, estimateJSON walks its text (without allocating)
// and adds up what each value it holds would take in memory, with the
// costs of the decoder that will make them; over MaxValueBytes, decoding
// is an error, and nothing is made.
//
// The walk follows the grammar of go.starlark.net's decoder, which is the
// more permissive of the two decoders (a string may hold raw control
// characters when it has no escape and no byte over 0x7f), and stops
// counting at the first byte that decoder would refuse: decoding stops
// there too, so a document is refused for its size only when the decoder
// would have made what is counted. The same walk bounds the nesting,
// which is how json.decode avoids go.starlark.net's unbounded recursion.

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrTooBig is wrapped by the error of a JSON document whose value would
// be over MaxValueBytes (errors.Is), so that callers can tell it from a
// document that is not JSON.
var ErrTooBig = errors.New("value over the bound")

// CheckJSON reports an error if the JSON text data nests more than
// MaxJSONDepth deep, or if the flow data FromJSON would make of it is
// estimated to take more than MaxValueBytes, before anything is made: for
// what decodes JSON into other values first (a model's reply into Go
// values), to refuse the document before it does.
func CheckJSON(data []byte) error { return checkJSON(data, &flowDataCosts) }

// jsonCosts are the bytes a decoder's values take, on a 64-bit machine.
type jsonCosts struct {
	list   int64             // a list: its header (the slots are apart)
	object func(n int) int64 // an object of n members: all but the keys' and values' own values
	str    int64             // a string value besides its bytes (its boxed header)
	key    int64             // a member's key besides its bytes
	float  int64             // a float (boxed)
}

// A slot of a list, a dict entry's key or value, or a Map's key: an
// interface or a string header, 16 bytes.
const slotBytes = 16

// starlarkCosts are those of go.starlark.net's json.decode: lists of
// interfaces grown by append; a dict is a hash table of 8-entry buckets
// (56 bytes an entry) with the first bucket inline (512 bytes in all),
// doubled once it holds 6.5 entries a bucket, plus the overflow buckets
// of full chains (about a quarter more); strings boxed.
var starlarkCosts = jsonCosts{
	list: 32,
	object: func(n int) int64 {
		const dict, bucket = 512, 456
		if n <= 8 {
			return dict
		}
		nb := int64(1)
		for float64(n-1) >= 6.5*float64(nb) {
			nb <<= 1
		}
		return dict + nb*bucket*5/4
	},
	str:   16,
	key:   16,
	float: 8,
}

// flowDataCosts are those of FromJSON: lists as go.starlark.net's; strings
// copied out of the document (encoding/json unquotes each); a Map
// is its header, a slice of keys and one of values grown by append, and
// past 8 keys an index (a Go map of string to int, about 48 bytes a key).
var flowDataCosts = jsonCosts{
	list: 32,
	object: func(n int) int64 {
		size := 64 + 2*grownSlots(n)*slotBytes
		if n > 8 {
			size += 48 * int64(n)
		}
		return size
	},
	str:   24, // boxed, and its bytes copied (about 8 more than their length)
	key:   8,  // its bytes copied; its header is its slot, counted in object
	float: 16, // boxed, after a json.Number of its text
}

// grownSlots is the capacity append gives a slice of 16-byte elements it
// grew one element at a time to n (less its rounding to size classes).
func grownSlots(n int) int64 {
	c := 0
	for c < n {
		switch {
		case c == 0:
			c = 1
		case c < 256:
			c *= 2
		default:
			c += (c + 3*256) / 4
		}
	}
	return int64(c)
}

// bigIntBytes is what an integer of the given number of digits takes: none
// when it is small (Starlark keeps the int32 range unboxed), else a big.Int
// and its words (with the 4 spare ones math/big allocates).
func bigIntBytes(digits int) int64 {
	if digits <= 9 {
		return 0
	}
	words := (int64(digits)*3322/1000)/64 + 1
	return 32 + (words+4)*8
}

// jsonOver is the error of a document whose decoded value would be too
// big: what it would make, and the byte at which the estimate passed the
// bound.
type jsonOver struct {
	size int64 // the estimate of the whole document, as far as it is valid
	at   int   // the byte at which the estimate passed MaxValueBytes
}

func (e *jsonOver) Unwrap() error { return ErrTooBig }

func (e *jsonOver) Error() string {
	return fmt.Sprintf("decoding this JSON would make about %s (past the bound at byte %d); one value may take at most %d MiB",
		human(float64(e.size)), e.at, MaxValueBytes>>20)
}

// jsonDeep is the error of a document nested too deep.
type jsonDeep struct {
	limit, at int
}

func (e *jsonDeep) Error() string {
	return fmt.Sprintf("JSON nested more than %d deep (at byte %d)", e.limit, e.at)
}

// checkJSON reports an error if the JSON text s nests more than MaxJSONDepth
// deep, or would decode with costs c to more than MaxValueBytes, before the
// first byte the decoder refuses (whose error the decoder reports).
func checkJSON[T string | []byte](s T, c *jsonCosts) error {
	return walkJSON(s, c, MaxJSONDepth, MaxValueBytes)
}

// estimateJSON returns the estimate of what decoding s with costs c would
// make, and where the walk stopped (len(s) for a valid document).
func estimateJSON[T string | []byte](s T, c *jsonCosts) (int64, int) {
	w := jsonWalk[T]{s: s, c: c, limit: 1 << 30, bound: 1 << 62, over: -1}
	w.run()
	return w.total, w.i
}

func walkJSON[T string | []byte](s T, c *jsonCosts, limit int, bound int64) error {
	w := jsonWalk[T]{s: s, c: c, limit: limit, bound: bound, over: -1}
	if err := w.run(); err != nil {
		return err
	}
	if w.over >= 0 {
		return &jsonOver{size: w.total, at: w.over}
	}
	return nil
}

// The states of the walk: what may come next.
const (
	wantValue      = iota // a value (at the top, after ':' or an array's ',')
	wantValueOrEnd        // a value or ']', just after '['
	wantKey               // a key, after an object's ','
	wantKeyOrEnd          // a key or '}', just after '{'
	wantColon             // ':' after a key
	wantCommaOrEnd        // ',' or the container's end, after a value
	done                  // the top value is complete
)

type jsonFrame struct {
	object bool
	n      int  // elements or members so far
	badKey bool // the key being read is not a string: the decoder refuses it once read
	inKey  bool // the value being read is a key
}

type jsonWalk[T string | []byte] struct {
	s     T
	c     *jsonCosts
	limit int   // nesting
	bound int64 // bytes
	i     int
	total int64
	over  int // the byte at which total passed bound, or -1
	stack []jsonFrame
	// complete is set once the top value is complete: the walk did not
	// stop at a byte the decoder refuses.
	complete bool
	// err is the error of a number with too many digits.
	err error
}

func (w *jsonWalk[T]) add(n int64) {
	w.total += n
	if w.total > w.bound && w.over < 0 {
		w.over = w.i
	}
}

// run walks the text until its top value is complete, or the first byte
// the decoder refuses; it returns an error only for nesting too deep.
func (w *jsonWalk[T]) run() error {
	s := w.s
	state := wantValue
	for state != done {
		if state < 0 {
			return nil // a key that is not a string
		}
		for w.i < len(s) && (s[w.i] == ' ' || s[w.i] == '\t' || s[w.i] == '\n' || s[w.i] == '\r') {
			w.i++
		}
		if w.i >= len(s) {
			return nil // unexpected end: the decoder's error
		}
		b := s[w.i]
		switch state {
		case wantColon:
			if b != ':' {
				return nil
			}
			w.i++
			state = wantValue
			continue
		case wantCommaOrEnd:
			top := &w.stack[len(w.stack)-1]
			switch {
			case b == ',':
				w.i++
				state = wantValue
				if top.object {
					state = wantKey
				}
				continue
			case b == ']' && !top.object, b == '}' && top.object:
				w.i++
				w.closeTop()
				state = w.valueDone()
				continue
			}
			return nil
		case wantValueOrEnd:
			if b == ']' {
				w.i++
				w.closeTop()
				state = w.valueDone()
				continue
			}
		case wantKeyOrEnd:
			if b == '}' {
				w.i++
				w.closeTop()
				state = w.valueDone()
				continue
			}
		}
		// A value (a key is read as one, as the decoder reads it).
		if state == wantKey || state == wantKeyOrEnd {
			top := &w.stack[len(w.stack)-1]
			top.inKey, top.badKey = true, b != '"'
		} else if len(w.stack) > 0 && !w.stack[len(w.stack)-1].object {
			w.stack[len(w.stack)-1].n++
			w.add(slotBytes)
		}
		switch b {
		case '[', '{':
			if len(w.stack) >= w.limit {
				return &jsonDeep{limit: w.limit, at: w.i}
			}
			w.stack = append(w.stack, jsonFrame{object: b == '{'})
			w.i++
			if b == '{' {
				w.add(w.c.object(0))
				state = wantKeyOrEnd
			} else {
				w.add(w.c.list)
				state = wantValueOrEnd
			}
			continue
		case '"':
			n, ok := w.str()
			if !ok {
				return nil
			}
			if k := len(w.stack); k > 0 && w.stack[k-1].inKey {
				w.add(w.c.key + int64(n))
			} else {
				w.add(w.c.str + int64(n))
			}
		case 'n', 't', 'f':
			word := "null"
			if b == 't' {
				word = "true"
			} else if b == 'f' {
				word = "false"
			}
			if len(s)-w.i < len(word) || string(s[w.i:w.i+len(word)]) != word {
				return nil
			}
			w.i += len(word)
		default:
			if !w.number() {
				return w.err // nil: the decoder's error
			}
		}
		state = w.valueDone()
	}
	w.complete = true
	return nil
}

// valueDone moves on after a complete value: the next state, or -1 when
// the value was a key the decoder refuses.
func (w *jsonWalk[T]) valueDone() int {
	if len(w.stack) == 0 {
		return done
	}
	top := &w.stack[len(w.stack)-1]
	if top.inKey {
		top.inKey = false
		if top.badKey {
			return -1
		}
		return wantColon
	}
	if top.object {
		top.n++
	}
	return wantCommaOrEnd
}

// closeTop ends the innermost container: the slack of a list's slots, and
// an object's growth.
func (w *jsonWalk[T]) closeTop() {
	top := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	if top.object {
		w.add(w.c.object(top.n) - w.c.object(0))
	} else {
		w.add((grownSlots(top.n) - int64(top.n)) * slotBytes)
	}
}

// str reads a string at w.i, returning how many bytes it decodes to (an
// escape counts what it stands for), and whether the decoder accepts it:
// go.starlark.net takes a string with no escape and no byte over 0x7f as
// it is, and gives any other to encoding/json, which refuses control
// characters and bad escapes.
func (w *jsonWalk[T]) str() (int, bool) {
	s := w.s
	plain, ctl := true, false
	n := 0
	for j := w.i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '"':
			w.i = j + 1
			if !plain && ctl {
				return 0, false
			}
			return n, true
		case c == '\\':
			plain = false
			if j+1 >= len(s) {
				return 0, false
			}
			switch s[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
				n++
			case 'u':
				if j+5 >= len(s) {
					return 0, false
				}
				r := 0
				for k := j + 2; k < j+6; k++ {
					h := hexVal(s[k])
					if h < 0 {
						return 0, false
					}
					r = r<<4 | h
				}
				j += 5
				switch {
				case r < 0x80:
					n++
				case r < 0x800:
					n += 2
				case r >= 0xDC00 && r < 0xE000:
					n++ // the second half of a pair: with the first, 4 bytes
				default:
					n += 3
				}
			default:
				return 0, false
			}
		case c < 0x20:
			ctl = true
			n++
		case c >= 0x80:
			plain = false
			n++
		default:
			n++
		}
	}
	return 0, false // unclosed
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// number reads a number at w.i as go.starlark.net does (a '-' or a digit,
// then any of 0-9 + - e E .), reporting whether the decoder accepts it.
func (w *jsonWalk[T]) number() bool {
	s := w.s
	b := s[w.i]
	if b != '-' && !isDigit(b) {
		return false
	}
	float := false
	j := w.i + 1
	for ; j < len(s); j++ {
		c := s[j]
		if isDigit(c) {
			continue
		}
		if c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			float = true
			continue
		}
		break
	}
	num := s[w.i:j]
	if n := j - w.i; n > MaxIntDigits+1 {
		w.err = fmt.Errorf("%w (at byte %d)", IntDigitsError("a JSON number", n), w.i)
		return false
	}
	digits := num
	if num[0] == '-' {
		digits = num[1:]
	}
	if len(digits) == 0 || digits[0] == '0' && len(digits) > 1 && isDigit(digits[1]) {
		return false
	}
	w.i = j
	if float {
		if _, err := strconv.ParseFloat(string(num), 64); err != nil {
			return false // out of range too: the decoder refuses 1e400
		}
		w.add(w.c.float)
		return true
	}
	w.add(bigIntBytes(len(digits)))
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
