package jsonschema

import (
	"encoding/json"
	"testing"
)

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type": "string"}`, ""},
		{`{"type": "object", "properties": {"a": {"type": "integer", "description": "n"}, "b": {"type": "array", "items": {"type": "string"}}}, "required": ["a"], "additionalProperties": false}`, ""},
		{`{"enum": ["x", "y"]}`, ""},
		{`{"type": "object", "additionalProperties": {"type": "number"}}`, ""},
		{`"string"`, "a schema must be a dict, got a string"},
		{`{}`, "schema: needs a type, an enum or anyOf"},
		{`{"type": "str"}`, `type: type must be one of object, array, string, number, integer, boolean, null, or a list of distinct ones, got "str"`},
		{`{"type": "string", "format": "email"}`, `format: keyword "format" is not in the supported subset (type, properties, required, items, enum, description, additionalProperties, anyOf)`},
		{`{"type": "object", "propertes": {}}`, `propertes: keyword "propertes" is not in the supported subset (type, properties, required, items, enum, description, additionalProperties, anyOf) (did you mean "properties"?)`},
		{`{"type": "object", "properties": {"p": {"type": "object", "properties": {"q": {"type": 3}}}}}`, "properties.p.properties.q.type: type must be one of object, array, string, number, integer, boolean, null, or a list of distinct ones, got 3"},
		{`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}`, `required[0]: "b" is not among the properties`},
		{`{"type": "string", "items": {"type": "string"}}`, "items: items applies only to type array"},
		{`{"type": "string", "enum": ["a", 1]}`, "enum[1]: 1 is not of type string"},
		{`{"type": "string", "enum": []}`, "enum: enum must be a non-empty list"},
		{`{"type": "array", "items": "string"}`, "items: items must be a schema (a dict)"},
		{`{"type": "object", "properties": {"a": "string"}}`, "properties.a: a property's schema must be a dict, got a string"},
	} {
		err := Check(decodeJSON(t, tc.schema))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Check(%s)\n got %q\nwant %q", tc.schema, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	schema := decodeJSON(t, `{"type": "object", "properties": {
		"file": {"type": "string"}, "line": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
		"ok": {"type": "boolean"}, "none": {"type": "null"}},
		"required": ["file"], "additionalProperties": false}`)
	for _, tc := range []struct{ value, want string }{
		{`{"file": "a.go", "line": 3, "tags": ["a", "b"], "ok": true, "none": null}`, ""},
		{`{"line": 3}`, `$: missing required property "file"`},
		{`{"file": "a", "line": 3.5}`, "$.line: want an integer, got 3.5"},
		{`{"file": "a", "tags": ["c"]}`, `$.tags[0]: "c" is not one of "a", "b"`},
		{`{"file": "a", "extra": 1}`, `$: property "extra" is not allowed`},
		{`{"file": "a", "ok": "yes"}`, `$.ok: want a boolean, got "yes"`},
		{`[1]`, "$: want an object, got a list"},
	} {
		err := Validate(schema, decodeJSON(t, tc.value))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Validate(%s)\n got %q\nwant %q", tc.value, got, tc.want)
		}
	}
}

// FuzzSchema: checking any JSON as a schema, and validating any JSON
// against a schema that checks, never panics.
func FuzzSchema(f *testing.F) {
	f.Add(`{"type": "object", "properties": {"a": {"type": "array", "items": {"enum": [1, "x"]}}}, "required": ["a"]}`, `{"a": [1]}`)
	f.Add(`{"type": "integer"}`, `1e400`)
	f.Add(`{"enum": [null, {"a": [true]}]}`, `{"a": [true]}`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		var s, v any
		if json.Unmarshal([]byte(schema), &s) != nil || json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		if Check(s) == nil {
			Validate(s, v)
		}
	})
}

// The example of a schema validates against it.
func TestExample(t *testing.T) {
	for _, s := range []string{
		`{"type": "object", "properties": {"file": {"type": "string"}, "n": {"type": "integer"}, "ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}}, "note": {"type": ["null", "string"]}}, "required": ["file", "n", "ok", "tags"], "additionalProperties": false}`,
		`{"type": "object", "properties": {"label": {"type": "string", "enum": ["urgent", "routine"]}}, "required": ["label"]}`,
		`{"type": "object", "properties": {"v": {"anyOf": [{"type": "number"}, {"type": "string"}]}, "o": {"type": "object", "properties": {"x": {"type": "string"}}}}}`,
		`{"type": "string"}`,
	} {
		schema := decodeJSON(t, s)
		if err := Validate(schema, Example(schema)); err != nil {
			t.Errorf("%s: example %v: %v", s, Example(schema), err)
		}
	}
	label := Example(decodeJSON(t, `{"type": "object", "properties": {"label": {"enum": ["urgent", "routine"]}}}`))
	if label.(map[string]any)["label"] != "urgent" {
		t.Errorf("enum example %v", label)
	}
}
