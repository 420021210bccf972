package stdlib

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// TestMapEqualsDict: a map of a run's record compares equal to the dict a
// flow or test writes with the same items, instead of panicking.
func TestMapEqualsDict(t *testing.T) {
	m := NewMap([]string{"a", "b"}, []starlark.Value{starlark.MakeInt(1), starlark.String("x")})
	d := starlark.NewDict(2)
	d.SetKey(starlark.String("b"), starlark.String("x"))
	d.SetKey(starlark.String("a"), starlark.MakeInt(1))
	if eq, err := starlark.Equal(m, d); err != nil || !eq {
		t.Errorf("map == dict: %v, %v", eq, err)
	}
	d.SetKey(starlark.String("a"), starlark.MakeInt(2))
	if eq, err := starlark.Equal(m, d); err != nil || eq {
		t.Errorf("map == different dict: %v, %v", eq, err)
	}
}

// The tagged form a snapshot carries values in reads back as what was
// written: tuples stay tuples, Go's nil stays nil, a float stays a float.
func TestTaggedJSON(t *testing.T) {
	m := NewMap([]string{"t", "u", ":x", ""}, []starlark.Value{starlark.MakeInt(1), starlark.None, starlark.Float(2), starlark.String("<&>")})
	for _, tc := range []struct {
		v    starlark.Value
		want string
	}{
		{nil, `{"u":0}`},
		{starlark.None, `null`},
		{starlark.Float(2), `2.0`},
		{starlark.Float(1e30), `1e+30`},
		{starlark.MakeInt64(1 << 62), `4611686018427387904`},
		{starlark.Tuple{starlark.True, starlark.Tuple{}}, `{"t":[true,{"t":[]}]}`},
		{starlark.NewList([]starlark.Value{m}), `[{":t":1,":u":null,"::x":2.0,":":"\u003c\u0026\u003e"}]`},
	} {
		b, err := AppendTaggedJSON(nil, tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("AppendTaggedJSON(%v) = %s, %v, want %s", tc.v, b, err, tc.want)
			continue
		}
		back, err := FromTaggedJSON(b)
		if err != nil {
			t.Errorf("FromTaggedJSON(%s): %v", b, err)
			continue
		}
		if again, _ := AppendTaggedJSON(nil, back); string(again) != tc.want {
			t.Errorf("FromTaggedJSON(%s) = %v, written again %s", b, back, again)
		}
	}
	if _, err := AppendTaggedJSON(nil, starlark.NewDict(0)); err == nil || err.Error() != "a dict value cannot be carried in a snapshot" {
		t.Errorf("AppendTaggedJSON of a dict: %v", err)
	}
	for doc, want := range map[string]string{
		`{"x":1}`:                 `bad key "x"`,
		`{"t":1}`:                 `bad tuple`,
		`{"t":[],"u":0}`:          `bad tagged value`,
		`{"t":[],":a":1}`:         `bad tagged value`,
		`[1] 2`:                   `unexpected data after JSON value: "2"`,
		strings.Repeat("[", 1002): `JSON nested more than 1000 deep`,
	} {
		if _, err := FromTaggedJSON([]byte(doc)); err == nil || err.Error() != want {
			t.Errorf("FromTaggedJSON(%.20s): %v, want %s", doc, err, want)
		}
	}
	// A key given twice: the last counts, as in flow data.
	if v, err := FromTaggedJSON([]byte(`{":a":1,":a":2}`)); err != nil || v.String() != `{"a": 2}` {
		t.Errorf("FromTaggedJSON of a key given twice: %v, %v", v, err)
	}
}

// TestMapWithValues: a copy with the values f gives, in the same order,
// the original unchanged; for each size mapFor allocates differently.
func TestMapWithValues(t *testing.T) {
	for n := range 11 {
		keys := make([]string, n)
		vals := make([]starlark.Value, n)
		for i := range n {
			keys[i], vals[i] = fmt.Sprintf("k%d", i), starlark.MakeInt(i)
		}
		m := NewMap(keys, vals)
		c := m.WithValues(func(k string, v starlark.Value) starlark.Value {
			if k == "k1" {
				return starlark.String("one")
			}
			return v
		})
		want := m.String()
		if n > 1 {
			want = strings.Replace(want, `"k1": 1`, `"k1": "one"`, 1)
		}
		if c.String() != want || m.Len() != n || c.Len() != n {
			t.Errorf("%d members: %s from %s, want %s", n, c, m, want)
		}
		if v, ok := c.Lookup("k0"); n > 0 && (!ok || v != vals[0]) {
			t.Errorf("%d members: k0 looks up %v %v", n, v, ok)
		}
	}
}

// A MapBuilder makes the Map NewMap would of the same members, sized or
// not, and one of n members sized for n in one allocation.
func TestMapBuilder(t *testing.T) {
	for n := range 11 {
		keys := make([]string, n)
		vals := make([]starlark.Value, n)
		for i := range n {
			keys[i], vals[i] = fmt.Sprintf("k%d", i), starlark.MakeInt(i)
		}
		want := NewMap(keys, vals).String()
		for _, size := range []int{0, 1, n, n + 1} {
			b := NewMapBuilder(size)
			for i := range n {
				b.Add(keys[i], vals[i])
			}
			m := b.Map()
			if m.String() != want || m.Len() != n {
				t.Errorf("%d members, sized for %d: %s, want %s", n, size, m, want)
			}
			if v, ok := m.Lookup(fmt.Sprintf("k%d", n-1)); n > 0 && (!ok || v != vals[n-1]) {
				t.Errorf("%d members, sized for %d: the last key looks up %v %v", n, size, v, ok)
			}
		}
		var b MapBuilder
		for i := range n {
			b.Add(keys[i], vals[i])
		}
		if m := b.Map(); m.String() != want {
			t.Errorf("%d members, zero builder: %s, want %s", n, m, want)
		}
		if RaceEnabled || n > 8 { // a Map of more has an index too
			continue
		}
		allocs := testing.AllocsPerRun(100, func() {
			b := NewMapBuilder(n)
			for i := range n {
				b.Add(keys[i], vals[i])
			}
			b.Map()
		})
		wantAllocs := 2.0 // the Map and its members
		if n <= 2 {
			wantAllocs = 1 // none, or in the Map's
		}
		if allocs != wantAllocs {
			t.Errorf("building a Map of %d members allocated %v times, want %v", n, allocs, wantAllocs)
		}
	}
}

// A fn step's result of a one- or two-member dict becomes flow data in
// one allocation of 64 or 96 bytes: the Map with its members
// (docs/performance.md).
func TestSmallDictOneAllocation(t *testing.T) {
	if RaceEnabled {
		t.Skip("counts allocations, which the race detector's runtime adds to; make test runs it without (MEMORY_TESTS)")
	}
	for _, tc := range []struct {
		members int
		bytes   uint64
	}{{1, 64}, {2, 96}} {
		d := starlark.NewDict(tc.members)
		for i := range tc.members {
			d.SetKey(starlark.String(fmt.Sprintf("k%d", i)), starlark.MakeInt(i))
		}
		d.Freeze()
		convert := func() {
			if _, err := Data(d); err != nil {
				t.Fatal(err)
			}
		}
		if n := testing.AllocsPerRun(100, convert); n != 1 {
			t.Errorf("a dict of %d members became flow data in %v allocations, want 1", tc.members, n)
		}
		const runs = 1000
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			convert()
		}
		runtime.ReadMemStats(&after)
		if got := (after.TotalAlloc - before.TotalAlloc) / runs; got != tc.bytes {
			t.Errorf("a dict of %d members became flow data in %d bytes, want %d", tc.members, got, tc.bytes)
		}
	}
}
