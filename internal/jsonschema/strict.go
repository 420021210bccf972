package jsonschema

// This file defines strict mode: the shape OpenAI's structured outputs
// (response_format with "strict": true) and Anthropic's require of a
// schema, and how a schema of the supported subset is made into it
// without changing what it accepts.

import (
	"fmt"
	"sort"
)

// Strict returns s as strict mode requires it, with the same meaning:
// every object gets additionalProperties false, and a property not listed
// in required becomes required and nullable (a reply's null for it means
// "absent": [DropOptionalNulls] removes it before the reply is validated
// against s). s itself is not changed. A schema whose meaning strict mode
// cannot keep is an error naming the rule and where it applies: the top
// level is not an object, or an object allows other properties.
func Strict(s any) (any, error) {
	m, ok := s.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a schema must be a dict, got %s", jsonTypeName(s))
	}
	types, _ := schemaTypesOf(m["type"])
	if len(types) != 1 || types[0] != "object" {
		return nil, fmt.Errorf("strict mode: the top level must be an object, not %s (wrap it: {\"type\": \"object\", \"properties\": {\"value\": ...}, \"required\": [\"value\"]})", describeTypes(m))
	}
	return strict(m, "")
}

func describeTypes(m map[string]any) string {
	if t, ok := m["type"]; ok {
		return jsonRepr(t)
	}
	if _, ok := m["anyOf"]; ok {
		return "anyOf"
	}
	return "an enum"
}

func strict(m map[string]any, path string) (map[string]any, error) {
	at := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	types, _ := schemaTypesOf(m["type"])
	if contains(types, "object") {
		switch a := m["additionalProperties"].(type) {
		case nil:
			out["additionalProperties"] = false
		case bool:
			if a {
				return nil, fmt.Errorf("%s: strict mode: additionalProperties must be false (list the properties instead)", at("additionalProperties"))
			}
		default:
			return nil, fmt.Errorf("%s: strict mode: additionalProperties must be false, not a schema (list the properties instead)", at("additionalProperties"))
		}
		props, _ := m["properties"].(map[string]any)
		required := requiredSet(m)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		newProps := make(map[string]any, len(props))
		all := make([]any, 0, len(names))
		for _, k := range names {
			sub, _ := props[k].(map[string]any)
			ss, err := strict(sub, at("properties."+k))
			if err != nil {
				return nil, err
			}
			if !required[k] {
				ss = nullable(ss)
			}
			newProps[k] = ss
			all = append(all, k)
		}
		if props != nil {
			out["properties"] = newProps
		} else {
			out["properties"] = map[string]any{}
		}
		out["required"] = all
	}
	if it, ok := m["items"].(map[string]any); ok {
		ss, err := strict(it, at("items"))
		if err != nil {
			return nil, err
		}
		out["items"] = ss
	}
	if alts, ok := m["anyOf"].([]any); ok {
		l := make([]any, len(alts))
		for i, a := range alts {
			sub, _ := a.(map[string]any)
			ss, err := strict(sub, fmt.Sprintf("%s[%d]", at("anyOf"), i))
			if err != nil {
				return nil, err
			}
			l[i] = ss
		}
		out["anyOf"] = l
	}
	return out, nil
}

// nullable returns schema s that also accepts null.
func nullable(s map[string]any) map[string]any {
	if types, ok := schemaTypesOf(s["type"]); ok {
		if contains(types, "null") {
			return s
		}
		if len(types) == 1 {
			if e, ok := s["enum"].([]any); ok {
				// An enum must list null too, or null is still refused.
				out := copyMap(s)
				out["type"] = []any{types[0], "null"}
				out["enum"] = append(append([]any(nil), e...), nil)
				return out
			}
			out := copyMap(s)
			out["type"] = []any{types[0], "null"}
			return out
		}
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// DropOptionalNulls returns v, a reply to [Strict] of s, with the
// null of every property s does not require (and does not allow to be
// null) removed: in strict mode the model writes null for what it leaves
// out. v is changed in place.
func DropOptionalNulls(s any, v any) any {
	m, _ := s.(map[string]any)
	dropNulls(m, v)
	return v
}

func dropNulls(s map[string]any, v any) {
	if s == nil {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		required := requiredSet(s)
		for k, x := range v {
			sub, _ := props[k].(map[string]any)
			if x == nil && !required[k] && sub != nil && validate(sub, nil, "") != nil {
				delete(v, k)
				continue
			}
			dropNulls(sub, x)
		}
	case []any:
		it, _ := s["items"].(map[string]any)
		for _, x := range v {
			dropNulls(it, x)
		}
	}
}

// requiredSet returns the names in schema s's "required" list.
func requiredSet(s map[string]any) map[string]bool {
	required := map[string]bool{}
	r, _ := s["required"].([]any)
	for _, x := range r {
		if n, ok := x.(string); ok {
			required[n] = true
		}
	}
	return required
}
