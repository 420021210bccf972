package stdlib

import (
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
