package jsonschema

// This file defines Example: the plainest value a schema accepts, which
// Skein's offline stub model answers when no rule says otherwise.

import (
	"maps"
	"slices"
)

// Example returns a simple value that s (a schema of the supported
// subset, see [Check]) accepts: an enum's first value, anyOf's first
// branch, the first non-null of a list of types, "" made "example" for a
// string, 0, false, an empty list, and an object with its required
// properties (all of them when it lists none).
func Example(s any) any {
	m, _ := s.(map[string]any)
	if m == nil {
		return nil
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if a, ok := m["anyOf"].([]any); ok && len(a) > 0 {
		return Example(a[0])
	}
	types, _ := schemaTypesOf(m["type"])
	t := ""
	for _, x := range types {
		if x != "null" || t == "" {
			t = x
		}
		if t != "null" {
			break
		}
	}
	if t == "" {
		if _, ok := m["properties"]; ok {
			t = "object"
		}
	}
	switch t {
	case "object":
		props, _ := m["properties"].(map[string]any)
		names := slices.Sorted(maps.Keys(props))
		if req, ok := m["required"].([]any); ok {
			names = names[:0]
			for _, r := range req {
				if n, ok := r.(string); ok {
					names = append(names, n)
				}
			}
		}
		obj := map[string]any{}
		for _, n := range names {
			obj[n] = Example(props[n])
		}
		return obj
	case "array":
		return []any{}
	case "string":
		return "example"
	case "number", "integer":
		return float64(0) // as decoded JSON
	case "boolean":
		return false
	}
	return nil
}
