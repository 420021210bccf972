// Package stdlib holds what Skein predeclares besides its builtins: the Go
// modules json, math, re and struct (docs/language.md), and the embedded @std/*.star
// pattern modules built from the public builtins.
//
// It knows nothing of graphs, loading or running; it only supplies values.
package stdlib

import (
	"embed"
	"io/fs"
	"sort"
	"strings"

	"go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

//go:embed std/*.star
var stdFiles embed.FS

var modules = func() starlark.StringDict {
	d := starlark.StringDict{
		"json":   jsonModule,
		"math":   math.Module,
		"re":     reModule,
		"struct": starlark.NewBuiltin("struct", starlarkstruct.Make),
	}
	d.Freeze()
	return d
}()

// Modules returns the predeclared modules json, math, re and struct. The dict
// and its values are frozen and shared; callers must not modify it.
func Modules() starlark.StringDict { return modules }

// Predeclared returns a new, unfrozen dict of Modules, SafeBuiltins and
// CheckedOps: what rewritten Skein code sees besides the universe. Callers
// add their own names and freeze it.
func Predeclared() starlark.StringDict {
	d := starlark.StringDict{}
	for _, m := range []starlark.StringDict{modules, safeBuiltins, checkedOps} {
		for k, v := range m {
			d[k] = v
		}
	}
	return d
}

// IsModule reports whether name is one of the predeclared modules.
func IsModule(name string) bool { _, ok := modules[name]; return ok }

// StdSource returns the source of the embedded standard module name
// ("patterns.star" for load("@std/patterns.star")).
func StdSource(name string) ([]byte, error) {
	if strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		return nil, fs.ErrNotExist
	}
	return stdFiles.ReadFile("std/" + name)
}

// StdNames lists the embedded standard modules, for hints and help.
func StdNames() []string {
	entries, _ := stdFiles.ReadDir("std")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
