// Package jsonschema is the subset of JSON Schema that Skein supports: the
// schema= of an llm= step and the parameters of a tool. [Check] runs once,
// when a flow is checked (is this schema in the subset?); [Validate] runs on
// every model reply and tool call (does this value satisfy it?). Both take
// JSON as encoding/json decodes it into an any (map[string]any, []any,
// string, float64, bool, nil) and name the offending path in their errors.
//
// It is not a general JSON Schema implementation: the subset is type (one,
// or one with null), properties, required, items, enum, description,
// additionalProperties and anyOf (docs/models.md); there is no $ref,
// format, pattern, numeric bound or other combinator, and Check rejects a
// schema that uses one rather than ignoring it. [Strict] makes a schema of
// the subset into the shape providers' strict mode requires. It knows
// nothing of graphs, steps or models.
package jsonschema

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/skeinlang/skein/internal/spell"
)

// Schema types of the supported subset.
var schemaTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// schemaKeys are the keywords of the supported subset.
var schemaKeys = []string{"type", "properties", "required", "items", "enum", "description", "additionalProperties", "anyOf"}

// Check reports whether s, a JSON value (map[string]any, []any,
// string, float64, bool, nil), is a schema of the supported subset: type
// object/array/string/number/integer/boolean/null (or a list of them, as
// ["string", "null"]), properties, required, items, enum, description,
// additionalProperties, anyOf. The error names the path of the offending
// part ("properties.patch.type").
func Check(s any) error {
	m, ok := s.(map[string]any)
	if !ok {
		return fmt.Errorf("a schema must be a dict, got %s", jsonTypeName(s))
	}
	return checkSchema(m, "")
}

// schemaTypesOf returns the types a schema's type keyword names: one, or a
// list of distinct ones; ok is false for anything else.
func schemaTypesOf(t any) ([]string, bool) {
	switch t := t.(type) {
	case string:
		return []string{t}, contains(schemaTypes, t)
	case []any:
		var out []string
		for _, x := range t {
			s, ok := x.(string)
			if !ok || !contains(schemaTypes, s) || contains(out, s) {
				return nil, false
			}
			out = append(out, s)
		}
		return out, len(out) > 0
	}
	return nil, false
}

func checkSchema(m map[string]any, path string) error {
	at := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !contains(schemaKeys, k) {
			return fmt.Errorf("%s: keyword %q is not in the supported subset (%s)%s", orRoot(at(k)), k, strings.Join(schemaKeys, ", "), spell.Suggest(k, schemaKeys))
		}
	}
	t, hasType := m["type"]
	var types []string
	if hasType {
		var ok bool
		if types, ok = schemaTypesOf(t); !ok {
			return fmt.Errorf("%s: type must be one of %s, or a list of distinct ones, got %s", at("type"), strings.Join(schemaTypes, ", "), jsonRepr(t))
		}
	} else if _, ok := m["enum"]; !ok {
		if _, ok := m["anyOf"]; !ok {
			return fmt.Errorf("%s: needs a type, an enum or anyOf", orRoot(path))
		}
	}
	// ts is the one non-null type the keywords below apply to.
	ts := ""
	for _, x := range types {
		if x != "null" {
			ts = x
		}
	}
	if len(types) > 2 || (len(types) == 2 && !contains(types, "null")) {
		return fmt.Errorf("%s: a list of types may only add \"null\" to one type (use anyOf for more)", at("type"))
	}
	if a, ok := m["anyOf"]; ok {
		l, ok := a.([]any)
		if !ok || len(l) == 0 {
			return fmt.Errorf("%s: anyOf must be a non-empty list of schemas", at("anyOf"))
		}
		for i, x := range l {
			sub, ok := x.(map[string]any)
			if !ok {
				return fmt.Errorf("%s[%d]: a schema must be a dict, got %s", at("anyOf"), i, jsonTypeName(x))
			}
			if err := checkSchema(sub, fmt.Sprintf("%s[%d]", at("anyOf"), i)); err != nil {
				return err
			}
		}
	}
	if d, ok := m["description"]; ok {
		if _, ok := d.(string); !ok {
			return fmt.Errorf("%s: description must be a string", at("description"))
		}
	}
	if e, ok := m["enum"]; ok {
		l, ok := e.([]any)
		if !ok || len(l) == 0 {
			return fmt.Errorf("%s: enum must be a non-empty list", at("enum"))
		}
		for i, v := range l {
			if hasType && !anyTypeMatches(types, v) {
				return fmt.Errorf("%s[%d]: %s is not of type %s", at("enum"), i, jsonRepr(v), strings.Join(types, " or "))
			}
		}
	}
	for _, k := range []string{"properties", "required", "additionalProperties"} {
		if _, ok := m[k]; ok && ts != "object" {
			return fmt.Errorf("%s: %s applies only to type object", at(k), k)
		}
	}
	if _, ok := m["items"]; ok && ts != "array" {
		return fmt.Errorf("%s: items applies only to type array", at("items"))
	}
	var props map[string]any
	if p, ok := m["properties"]; ok {
		if props, ok = p.(map[string]any); !ok {
			return fmt.Errorf("%s: properties must be a dict of schemas", at("properties"))
		}
		for _, k := range slices.Sorted(maps.Keys(props)) {
			sub, ok := props[k].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: a property's schema must be a dict, got %s", at("properties."+k), jsonTypeName(props[k]))
			}
			if err := checkSchema(sub, at("properties."+k)); err != nil {
				return err
			}
		}
	}
	if r, ok := m["required"]; ok {
		l, ok := r.([]any)
		if !ok {
			return fmt.Errorf("%s: required must be a list of property names", at("required"))
		}
		for i, v := range l {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s[%d]: a required name must be a string", at("required"), i)
			}
			if _, ok := props[s]; !ok {
				return fmt.Errorf("%s[%d]: %q is not among the properties", at("required"), i, s)
			}
		}
	}
	if a, ok := m["additionalProperties"]; ok {
		switch a := a.(type) {
		case bool:
		case map[string]any:
			if err := checkSchema(a, at("additionalProperties")); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: additionalProperties must be a bool or a schema", at("additionalProperties"))
		}
	}
	if it, ok := m["items"]; ok {
		sub, ok := it.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: items must be a schema (a dict)", at("items"))
		}
		if err := checkSchema(sub, at("items")); err != nil {
			return err
		}
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "schema"
	}
	return path
}

// Validate reports whether v, a decoded JSON value, satisfies schema
// s (one that [Check] accepts). The error names the first offending
// path ("$.patch.file: want a string, got 3").
func Validate(s any, v any) error {
	m, _ := s.(map[string]any)
	return validate(m, v, "$")
}

func validate(s map[string]any, v any, path string) error {
	if s == nil {
		return nil
	}
	if types, ok := schemaTypesOf(s["type"]); ok && !anyTypeMatches(types, v) {
		return fmt.Errorf("%s: want %s %s, got %s", path, article(types[0]), strings.Join(types, " or "), jsonRepr(v))
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var first error
		for _, a := range alts {
			sub, _ := a.(map[string]any)
			err := validate(sub, v, path)
			if err == nil {
				first = nil
				break
			}
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return fmt.Errorf("%s: matches none of anyOf (the first says %v)", path, first)
		}
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			if jsonEqual(x, v) {
				found = true
				break
			}
		}
		if !found {
			alts := make([]string, len(e))
			for i, x := range e {
				alts[i] = jsonRepr(x)
			}
			return fmt.Errorf("%s: %s is not one of %s", path, jsonRepr(v), strings.Join(alts, ", "))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if r, ok := s["required"].([]any); ok {
			for _, name := range r {
				n, _ := name.(string)
				if _, ok := v[n]; !ok {
					return fmt.Errorf("%s: missing required property %q", path, n)
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if sub, ok := props[k].(map[string]any); ok {
				if err := validate(sub, v[k], path+"."+k); err != nil {
					return err
				}
				continue
			}
			switch a := s["additionalProperties"].(type) {
			case bool:
				if !a {
					return fmt.Errorf("%s: property %q is not allowed", path, k)
				}
			case map[string]any:
				if err := validate(a, v[k], path+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if sub, ok := s["items"].(map[string]any); ok {
			for i, x := range v {
				if err := validate(sub, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func anyTypeMatches(types []string, v any) bool {
	for _, t := range types {
		if typeMatches(t, v) {
			return true
		}
	}
	return false
}

func typeMatches(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func article(t string) string {
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an"
	}
	return "a"
}

func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], bl[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// jsonRepr shows a JSON value briefly, for messages.
func jsonRepr(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("%q", v)
	case float64:
		return fmt.Sprint(v)
	case bool:
		return fmt.Sprint(v)
	case nil:
		return "null"
	}
	return jsonTypeName(v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
