package builtins

// This file defines safer versions of Starlark builtins whose one call can
// allocate without bound. The step budget cannot see inside a builtin, so
// `list(range(1 << 40))` would otherwise exhaust memory before the load
// could be stopped. Predeclared names shadow the universe, so flows get
// these versions transparently.

import (
	"fmt"

	"go.starlark.net/starlark"
)

// MaxRetries is the most retries a step may have. The backoff doubles
// after each failure up to an hour, so this bounds a step's retrying to
// about four days; a flow timeout bounds it further.
const MaxRetries = 100

// MaxRange is the most elements a range() may have.
const MaxRange = 10_000_000

var universeRange = starlark.Universe["range"].(*starlark.Builtin)

func rangeFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, err := starlark.Call(thread, universeRange, args, kwargs)
	if err != nil {
		return nil, err
	}
	if n := v.(starlark.Sequence).Len(); n > MaxRange {
		return nil, fmt.Errorf("range: %d elements is more than the limit of %d (flow files describe graphs; keep computation small)", n, MaxRange)
	}
	return v, nil
}
