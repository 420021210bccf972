package stdlib

// This file defines the values that flow data is made of at run time: Map,
// a frozen dict whose keys are also attributes (so `review.ok` and
// `review["ok"]` both work, docs/language.md), and the conversions between Starlark
// values, JSON and flow data.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// Map is an immutable mapping from strings to frozen values, keeping
// insertion order. It behaves like a frozen dict (indexing, `in`, len,
// iteration over keys, get/keys/values/items) and also exposes its keys as
// attributes; a key wins over a method of the same name.
type Map struct {
	members []entry
	index   map[string]int // built for larger maps
}

// entry is one key of a Map and its value.
type entry struct {
	k string
	v starlark.Value
}

var (
	_ starlark.IterableMapping = (*Map)(nil)
	_ starlark.HasAttrs        = (*Map)(nil)
	_ starlark.Sequence        = (*Map)(nil)
	_ starlark.Comparable      = (*Map)(nil)
)

// NewMap returns a Map of the given keys and values, which must be frozen and
// have distinct keys.
func NewMap(keys []string, vals []starlark.Value) *Map {
	m, ms := mapFor(len(keys))
	for i, k := range keys {
		ms = append(ms, entry{k, vals[i]})
	}
	return m.fill(ms)
}

// MapBuilder builds a Map a member at a time, into the Map's own members:
// for a caller that would otherwise append keys and values to slices of
// its own for [NewMap] to copy. The zero MapBuilder is ready for a Map of
// any size; [NewMapBuilder] sizes it.
type MapBuilder struct {
	m  *Map
	ms []entry
}

// NewMapBuilder returns a MapBuilder for a Map of n members (one or two in
// one allocation, as NewMap's); more may be added, at the cost of growing.
func NewMapBuilder(n int) MapBuilder {
	m, ms := mapFor(n)
	return MapBuilder{m, ms}
}

// Add adds the key k with the value v, which must be frozen; k must not
// have been added before.
func (b *MapBuilder) Add(k string, v starlark.Value) { b.ms = append(b.ms, entry{k, v}) }

// Len returns how many members have been added.
func (b *MapBuilder) Len() int { return len(b.ms) }

// Map returns the Map of the members added, in the order they were added.
// b is not to be used after.
func (b *MapBuilder) Map() *Map {
	m := b.m
	if m == nil {
		m = new(Map)
	}
	m.fill(b.ms)
	*b = MapBuilder{}
	return m
}

// smallMap1 and smallMap2 are Maps of one and two members with their
// members, in one allocation (64 and 96 bytes): most results of fn steps
// are such dicts.
type (
	smallMap1 struct {
		m  Map
		ms [1]entry
	}
	smallMap2 struct {
		m  Map
		ms [2]entry
	}
)

// mapFor returns a Map for n members, to fill, and an empty slice of
// capacity n for its members; a Map of at most two members is allocated
// with them.
func mapFor(n int) (*Map, []entry) {
	switch n {
	case 1:
		s := new(smallMap1)
		return &s.m, s.ms[:0]
	case 2:
		s := new(smallMap2)
		return &s.m, s.ms[:0]
	}
	return new(Map), make([]entry, 0, n)
}

// fill gives m its members, which it takes over.
func (m *Map) fill(ms []entry) *Map {
	m.members = ms
	if len(ms) > 8 {
		m.index = make(map[string]int, len(ms))
		for i, e := range ms {
			m.index[e.k] = i
		}
	}
	return m
}

func (m *Map) find(k string) int {
	if m.index != nil {
		if i, ok := m.index[k]; ok {
			return i
		}
		return -1
	}
	for i := range m.members {
		if m.members[i].k == k {
			return i
		}
	}
	return -1
}

// Lookup returns the value for key k.
func (m *Map) Lookup(k string) (starlark.Value, bool) {
	if i := m.find(k); i >= 0 {
		return m.members[i].v, true
	}
	return nil, false
}

// Keys returns the keys in order, in a new slice.
func (m *Map) Keys() []string {
	keys := make([]string, len(m.members))
	for i, e := range m.members {
		keys[i] = e.k
	}
	return keys
}

// WithValues returns a copy of m whose value for each key k is f(k, v), v
// its value in m; f's values must be frozen.
func (m *Map) WithValues(f func(k string, v starlark.Value) starlark.Value) *Map {
	c, ms := mapFor(len(m.members))
	for _, e := range m.members {
		ms = append(ms, entry{e.k, f(e.k, e.v)})
	}
	return c.fill(ms)
}

// All yields the keys and their values in order.
func (m *Map) All(yield func(k string, v starlark.Value) bool) {
	for _, e := range m.members {
		if !yield(e.k, e.v) {
			return
		}
	}
}

func (m *Map) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range m.members {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(syntax.Quote(e.k, false))
		b.WriteString(": ")
		b.WriteString(e.v.String())
	}
	b.WriteByte('}')
	return b.String()
}

func (m *Map) Type() string          { return "dict" }
func (m *Map) Freeze()               {}
func (m *Map) Truth() starlark.Bool  { return len(m.members) > 0 }
func (m *Map) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: dict") }
func (m *Map) Len() int              { return len(m.members) }

func (m *Map) Get(k starlark.Value) (starlark.Value, bool, error) {
	s, ok := k.(starlark.String)
	if !ok {
		return nil, false, nil
	}
	v, found := m.Lookup(string(s))
	return v, found, nil
}

func (m *Map) Items() []starlark.Tuple {
	out := make([]starlark.Tuple, len(m.members))
	for i, e := range m.members {
		out[i] = starlark.Tuple{starlark.String(e.k), e.v}
	}
	return out
}

func (m *Map) Iterate() starlark.Iterator { return &mapIter{m: m} }

type mapIter struct {
	m *Map
	i int
}

func (it *mapIter) Next(p *starlark.Value) bool {
	if it.i >= len(it.m.members) {
		return false
	}
	*p = starlark.String(it.m.members[it.i].k)
	it.i++
	return true
}
func (it *mapIter) Done() {}

func (m *Map) Attr(name string) (starlark.Value, error) {
	if v, ok := m.Lookup(name); ok {
		return v, nil
	}
	switch name {
	case "get":
		return starlark.NewBuiltin("get", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var key, dflt starlark.Value = nil, starlark.None
			if err := starlark.UnpackPositionalArgs("get", args, kwargs, 1, &key, &dflt); err != nil {
				return nil, err
			}
			if v, ok, _ := m.Get(key); ok {
				return v, nil
			}
			return dflt, nil
		}), nil
	case "keys", "values", "items":
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackPositionalArgs(name, args, kwargs, 0); err != nil {
				return nil, err
			}
			out := make([]starlark.Value, len(m.members))
			for i, e := range m.members {
				switch name {
				case "keys":
					out[i] = starlark.String(e.k)
				case "values":
					out[i] = e.v
				default:
					out[i] = starlark.Tuple{starlark.String(e.k), e.v}
				}
			}
			return starlark.NewList(out), nil
		}), nil
	}
	return nil, nil // starlark reports "dict has no .name field or method"
}

func (m *Map) AttrNames() []string {
	names := m.Keys()
	sort.Strings(names)
	return names
}

func (m *Map) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	o, ok := y.(*Map)
	if !ok {
		// A dict written in a flow or test: compare it as flow data.
		d, err := Data(y)
		if err != nil {
			return false, err
		}
		if o, ok = d.(*Map); !ok {
			return false, fmt.Errorf("%s %s %s not implemented", m.Type(), op, y.Type())
		}
	}
	switch op {
	case syntax.EQL, syntax.NEQ:
		eq := len(m.members) == len(o.members)
		for i := 0; eq && i < len(m.members); i++ {
			ov, ok := o.Lookup(m.members[i].k)
			if !ok {
				eq = false
				break
			}
			e, err := starlark.EqualDepth(m.members[i].v, ov, depth-1)
			if err != nil {
				return false, err
			}
			eq = e
		}
		return eq == (op == syntax.EQL), nil
	}
	return false, fmt.Errorf("%s %s %s not implemented", m.Type(), op, y.Type())
}

// maxDepth bounds nesting when converting, so a list containing itself is an
// error rather than a hang.
const maxDepth = 64

// Data converts v, a value computed by a flow (a fn step's result, an input
// default), to flow data: JSON-representable and deep-frozen, with dicts and
// structs turned into [Map]s. Anything else is an error naming what it is.
// Its text (as JSON) must fit in MaxValueBytes, and so must what it takes
// as flow data: the conversion copies each list and dict as often as it
// is shared, as reading the data back from JSON does.
func Data(v starlark.Value) (starlark.Value, error) {
	small := smallBudget{nodes: smallNodes, text: smallText}
	if d, err := data(v, 0, &small); err != errNotSmall {
		return d, err
	}
	if err := CheckSize(v); err != nil {
		return nil, err
	}
	if size := dataSize(v, 0, MaxValueBytes); size > MaxValueBytes {
		return nil, overError("copying this " + v.Type() + " as flow data")
	}
	return data(v, 0, nil)
}

// A value of at most smallNodes values, counted as often as they are
// shared, whose strings and keys hold at most smallText bytes in all and
// whose ints fit 64 bits, is within both of Data's bounds without
// measuring: its JSON is at most smallNodes*(24+6) bytes beside its
// strings' 6 bytes a byte escaped, and as flow data it takes at most
// smallNodes objects of smallNodes members beside its strings
// (TestSmallWithinBounds checks the arithmetic). Most fn results are such
// values: Data converts them at once, counting as it goes, and measures
// only a value found not to be small (measuring, with its memo of
// containers and dicts' items copied, cost more than converting).
const (
	smallNodes = 256
	smallText  = 1 << 20
)

// smallBudget is what a small value has left as data converts it.
type smallBudget struct {
	nodes, text int
}

// holds spends on m, flow data already (a step's result returned again),
// reporting whether it was small.
func (b *smallBudget) holds(m *Map) bool {
	for _, e := range m.members {
		if !b.spend(0, len(e.k)) || !b.holdsData(e.v) {
			return false
		}
	}
	return true
}

func (b *smallBudget) holdsData(v starlark.Value) bool {
	if !b.spend(1, 0) {
		return false
	}
	switch x := v.(type) {
	case starlark.NoneType, starlark.Bool, starlark.Float:
	case starlark.Int:
		_, ok := x.Int64()
		return ok
	case starlark.String:
		return b.spend(0, len(x))
	case *Map:
		return b.holds(x)
	case *starlark.List:
		for i := range x.Len() {
			if !b.holdsData(x.Index(i)) {
				return false
			}
		}
	case starlark.Tuple:
		for _, e := range x {
			if !b.holdsData(e) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// errNotSmall stops data when its budget is spent.
var errNotSmall = errors.New("not a small value")

// spend takes n values and text bytes of text from b, reporting whether
// they were there; a nil b is no budget.
func (b *smallBudget) spend(n, text int) bool {
	if b == nil {
		return true
	}
	b.nodes -= n
	b.text -= text
	return b.nodes >= 0 && b.text >= 0
}

// dataSize returns about what v takes as flow data, each container counted
// as often as it is shared, with the costs FromJSON's estimate uses; or a
// number over budget once it is known to be over. What data refuses (too
// deep, not JSON-representable) counts nothing more: data reports it.
func dataSize(v starlark.Value, depth int, budget int64) int64 {
	if depth > maxDepth {
		return 0
	}
	c := &flowDataCosts
	var total int64
	kid := func(e starlark.Value) bool {
		total += dataSize(e, depth+1, budget-total)
		return total <= budget
	}
	switch x := v.(type) {
	case starlark.String:
		return c.str + int64(len(x))
	case starlark.Int:
		if i, ok := x.Int64(); ok && i >= math.MinInt32 && i <= math.MaxInt32 {
			return 0
		}
		return bigIntBytes(len(x.String()))
	case starlark.Float:
		return c.float
	case *starlark.List, starlark.Tuple:
		s := x.(starlark.Indexable)
		total = c.list + int64(s.Len())*slotBytes
		for i := 0; i < s.Len() && kid(s.Index(i)); i++ {
		}
	case *Map:
		total = c.object(len(x.members))
		for _, e := range x.members {
			total += c.key + int64(len(e.k))
			if !kid(e.v) {
				break
			}
		}
	case *starlark.Dict:
		total = c.object(x.Len())
		for _, kv := range x.Items() {
			if k, ok := kv[0].(starlark.String); ok {
				total += c.key + int64(len(k))
			}
			if !kid(kv[1]) {
				break
			}
		}
	case *starlarkstruct.Struct:
		names := x.AttrNames()
		total = c.object(len(names))
		for _, n := range names {
			a, _ := x.Attr(n)
			total += c.key + int64(len(n))
			if !kid(a) {
				break
			}
		}
	}
	return total
}

// data converts v as Data does, within small unless it is nil (then
// errNotSmall once it is spent).
func data(v starlark.Value, depth int, small *smallBudget) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested more than %d deep (is it cyclic?)", maxDepth)
	}
	if !small.spend(1, 0) {
		return nil, errNotSmall
	}
	switch x := v.(type) {
	case starlark.NoneType, starlark.Bool:
		return v, nil
	case starlark.Int:
		if _, ok := x.Int64(); !ok && small != nil {
			return nil, errNotSmall
		}
		return v, nil
	case starlark.String:
		if !small.spend(0, len(x)) {
			return nil, errNotSmall
		}
		return v, nil
	case *Map:
		if small != nil && !small.holds(x) {
			return nil, errNotSmall
		}
		return v, nil
	case starlark.Float:
		if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
			return nil, fmt.Errorf("float %v is not representable in JSON", x)
		}
		return v, nil
	case *starlark.List:
		elems := make([]starlark.Value, x.Len())
		for i := range elems {
			e, err := data(x.Index(i), depth+1, small)
			if err != nil {
				return nil, err
			}
			elems[i] = e
		}
		l := starlark.NewList(elems)
		l.Freeze()
		return l, nil
	case starlark.Tuple:
		elems := make(starlark.Tuple, len(x))
		for i := range x {
			e, err := data(x[i], depth+1, small)
			if err != nil {
				return nil, err
			}
			elems[i] = e
		}
		return elems, nil
	case *starlark.Dict:
		m, ms := mapFor(x.Len())
		for _, kv := range x.Keys() {
			k, ok := kv.(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s, want string", kv, kv.Type())
			}
			// Not x.Entries(): its loop body, a closure, would take
			// small and ms to the heap.
			v, _, _ := x.Get(kv)
			e, err := data(v, depth+1, small)
			if err != nil {
				return nil, err
			}
			if !small.spend(0, len(k)) {
				return nil, errNotSmall
			}
			ms = append(ms, entry{string(k), e})
		}
		return m.fill(ms), nil
	case *starlarkstruct.Struct:
		names := x.AttrNames()
		m, ms := mapFor(len(names))
		for _, n := range names {
			if !small.spend(0, len(n)) {
				return nil, errNotSmall
			}
			a, _ := x.Attr(n)
			e, err := data(a, depth+1, small)
			if err != nil {
				return nil, err
			}
			ms = append(ms, entry{n, e})
		}
		return m.fill(ms), nil
	}
	return nil, fmt.Errorf("a %s is not JSON-representable", v.Type())
}

// ToGo converts flow data to Go values for encoding/json: nil, bool, int64
// (or json.Number for big ints), float64, string, []any, and [Object] for
// mappings and structs (which keeps key order).
// Its text (as JSON) must fit in MaxValueBytes.
func ToGo(v starlark.Value) (any, error) {
	if err := CheckSize(v); err != nil {
		return nil, err
	}
	return toGo(v, 0)
}

func toGo(v starlark.Value, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested more than %d deep", maxDepth)
	}
	switch x := v.(type) {
	case nil, starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(x), nil
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i, nil
		}
		return json.Number(x.String()), nil
	case starlark.Float:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("float %v is not representable in JSON", x)
		}
		return f, nil
	case starlark.String:
		return string(x), nil
	case starlark.IterableMapping:
		var obj Object
		for _, kv := range x.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s, want string", kv[0], kv[0].Type())
			}
			e, err := toGo(kv[1], depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, Member{string(k), e})
		}
		return obj, nil
	case starlark.Iterable:
		out := []any{}
		it := x.Iterate()
		defer it.Done()
		var e starlark.Value
		for it.Next(&e) {
			g, err := toGo(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case starlark.HasAttrs:
		var obj Object
		for _, n := range x.AttrNames() {
			a, err := x.Attr(n)
			if err != nil || a == nil {
				continue
			}
			if _, isFn := a.(starlark.Callable); isFn {
				continue
			}
			e, err := toGo(a, depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, Member{n, e})
		}
		return obj, nil
	}
	return nil, fmt.Errorf("a %s is not JSON-representable", v.Type())
}

// Object is a JSON object that keeps its members in order.
type Object []Member

// Member is one name and value of an [Object].
type Member struct {
	Name  string
	Value any
}

// MarshalJSON encodes the members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// FromJSON decodes one JSON value into flow data, keeping object key order.
// Of a key given twice in an object, the last value counts. A document
// nested more than MaxJSONDepth deep, or whose value would take more than
// MaxValueBytes in memory (estimated from its text before anything is
// made), is an error.
func FromJSON(data []byte) (starlark.Value, error) { return fromJSON(data, false) }

// FromJSONUnique is like [FromJSON], but a key given twice in an object is
// an error naming it.
func FromJSONUnique(data []byte) (starlark.Value, error) { return fromJSON(data, true) }

// FromStoredJSON is FromJSON without the estimate of the value's size,
// for JSON that Skein wrote itself from flow data (a store's records, the
// inputs of a run being resumed, a child run's result, a Temporal
// payload): what was accepted as flow data when it was written decodes
// again, even when it is over the bound once decoded (a list that held
// one dict a million times holds a million dicts). Nesting is bounded.
func FromStoredJSON(data []byte) (starlark.Value, error) {
	return decodeJSON(data, jsonDecoder{maxDepth: maxDepth})
}

// FromTaggedJSON decodes a value in the typed form [AppendTaggedJSON]
// writes. Nesting is bounded by maxTaggedDepth.
func FromTaggedJSON(data []byte) (starlark.Value, error) {
	return decodeJSON(data, jsonDecoder{tagged: true, maxDepth: maxTaggedDepth})
}

// maxTaggedDepth bounds the nesting of a tagged value: flow data's bound,
// and room for the tags of tuples inside it.
const maxTaggedDepth = 1000

func fromJSON(data []byte, unique bool) (starlark.Value, error) {
	if err := checkJSON(data, &flowDataCosts); err != nil {
		return nil, err
	}
	return decodeJSON(data, jsonDecoder{unique: unique, maxDepth: maxDepth})
}

func decodeJSON(data []byte, d jsonDecoder) (starlark.Value, error) {
	d.dec = json.NewDecoder(bytes.NewReader(data))
	d.dec.UseNumber()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if rest := bytes.TrimSpace(data[d.dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("unexpected data after JSON value: %q", truncate(string(rest), 20))
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// jsonDecoder is the one reader of JSON into Starlark values, for flow
// data and for the tagged form of a run's snapshot.
type jsonDecoder struct {
	dec *json.Decoder
	// unique: a key given twice in an object is an error (else the
	// last value counts).
	unique bool
	// tagged: objects are in [AppendTaggedJSON]'s typed form.
	tagged   bool
	maxDepth int
}

func (d *jsonDecoder) value(depth int) (starlark.Value, error) {
	if depth > d.maxDepth {
		return nil, fmt.Errorf("JSON nested more than %d deep", d.maxDepth)
	}
	tok, err := d.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(t), nil
	case string:
		return starlark.String(t), nil
	case json.Number:
		return ParseNumber(string(t))
	case json.Delim:
		switch t {
		case '[':
			var elems []starlark.Value
			for d.dec.More() {
				e, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				elems = append(elems, e)
			}
			if _, err := d.dec.Token(); err != nil {
				return nil, err
			}
			l := starlark.NewList(elems)
			l.Freeze()
			return l, nil
		case '{':
			return d.object(depth)
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// object reads the rest of an object whose '{' was read.
func (d *jsonDecoder) object(depth int) (starlark.Value, error) {
	var ms []entry
	seen := map[string]int{}
	// Of a tagged object: a tuple, or Go's nil.
	var tuple starlark.Tuple
	isTuple, isNil := false, false
	for d.dec.More() {
		kt, err := d.dec.Token()
		if err != nil {
			return nil, err
		}
		k := kt.(string)
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if d.tagged {
			switch {
			case strings.HasPrefix(k, ":"):
				k = k[1:]
			case k == "t":
				l, ok := v.(*starlark.List)
				if !ok {
					return nil, errors.New("bad tuple")
				}
				tuple, isTuple = make(starlark.Tuple, l.Len()), true
				for i := range tuple {
					tuple[i] = l.Index(i)
				}
				continue
			case k == "u":
				isNil = true
				continue
			default:
				return nil, fmt.Errorf("bad key %q", k)
			}
		}
		if i, dup := seen[k]; dup {
			if d.unique {
				return nil, fmt.Errorf("key %q appears twice in one object", k)
			}
			ms[i].v = v
			continue
		}
		seen[k] = len(ms)
		ms = append(ms, entry{k, v})
	}
	if _, err := d.dec.Token(); err != nil {
		return nil, err
	}
	switch {
	case isNil && !isTuple && len(ms) == 0:
		return nil, nil
	case isTuple && !isNil && len(ms) == 0:
		return tuple, nil
	case isNil || isTuple:
		return nil, errors.New("bad tagged value")
	}
	return new(Map).fill(ms), nil
}

// AppendTaggedJSON appends v to b in the typed form in which a run's
// snapshot carries values, which [FromTaggedJSON] reads back as they
// were: JSON for None, bools, ints, strings and lists; floats always with
// a point or an exponent; dicts ([Map]s) as objects whose keys are
// prefixed with ":"; a tuple as {"t": [...]}; no value at all (Go's nil)
// as {"u": 0}. Other values are an error.
func AppendTaggedJSON(b []byte, v starlark.Value) ([]byte, error) {
	return appendTagged(b, v, 0)
}

func appendTagged(b []byte, v starlark.Value, depth int) ([]byte, error) {
	if depth > maxTaggedDepth {
		return b, errors.New("value nested too deep")
	}
	switch x := v.(type) {
	case nil:
		return append(b, `{"u":0}`...), nil
	case starlark.NoneType:
		return append(b, "null"...), nil
	case starlark.Bool:
		return strconv.AppendBool(b, bool(x)), nil
	case starlark.Int:
		return append(b, x.String()...), nil
	case starlark.Float:
		n := len(b)
		b = AppendJSONFloat(b, float64(x))
		if !strings.ContainsAny(string(b[n:]), ".eE") {
			b = append(b, ".0"...)
		}
		return b, nil
	case starlark.String:
		return AppendJSONString(b, string(x)), nil
	case *starlark.List:
		b = append(b, '[')
		for i := range x.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendTagged(b, x.Index(i), depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case starlark.Tuple:
		b = append(b, `{"t":[`...)
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendTagged(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, "]}"...), nil
	case *Map:
		b = append(b, '{')
		for i, e := range x.members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendJSONString(b, ":"+e.k), ':')
			var err error
			if b, err = appendTagged(b, e.v, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return b, fmt.Errorf("a %s value cannot be carried in a snapshot", v.Type())
}

// ParseNumber turns the text of a JSON number into flow data: an int (a big
// one if need be) when it has no fraction or exponent, else a float. JSON
// values and run snapshots both read their numbers with it.
func ParseNumber(s string) (starlark.Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return starlark.MakeInt64(i), nil
		}
		if b, ok := new(big.Int).SetString(s, 10); ok {
			return starlark.MakeBigInt(b), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, err
	}
	return starlark.Float(f), nil
}

// FromGo converts a value decoded by encoding/json (or built in Go from
// strings, numbers, slices and maps) into flow data.
func FromGo(x any) (starlark.Value, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	return FromJSON(b)
}
