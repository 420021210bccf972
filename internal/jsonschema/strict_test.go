package jsonschema

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestStrict(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}`,
			want: `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}`},
		{in: `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "enum": ["x"]}, "c": {"anyOf": [{"type": "integer"}]}}}`,
			want: `{"type": "object", "additionalProperties": false, "required": ["a", "b", "c"], "properties": {
				"a": {"type": ["string", "null"]}, "b": {"type": ["string", "null"], "enum": ["x", null]},
				"c": {"anyOf": [{"anyOf": [{"type": "integer"}]}, {"type": "null"}]}}}`},
		{in: `{"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": ["string", "null"]}}}}}, "required": ["l"]}`,
			want: `{"type": "object", "additionalProperties": false, "required": ["l"], "properties": {
				"l": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["k"], "properties": {"k": {"type": ["string", "null"]}}}}}}`},
		{in: `{"type": "object"}`, want: `{"type": "object", "additionalProperties": false, "required": [], "properties": {}}`},
		{in: `{"type": "array", "items": {"type": "string"}}`, err: `strict mode: the top level must be an object, not "array" (wrap it: {"type": "object", "properties": {"value": ...}, "required": ["value"]})`},
		{in: `{"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}`, err: `properties.m.additionalProperties: strict mode: additionalProperties must be false, not a schema (list the properties instead)`},
	} {
		in := decode(t, tc.in)
		if err := Check(in); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		got, err := Strict(in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if diff := cmp.Diff(decode(t, tc.want), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
		if err := Check(got); err != nil {
			t.Errorf("the strict schema is not in the subset: %v", err)
		}
		if diff := cmp.Diff(decode(t, tc.in), in); diff != "" {
			t.Errorf("the schema given was changed (-want +got):\n%s", diff)
		}
	}
}

func TestNullableAndAnyOf(t *testing.T) {
	s := decode(t, `{"type": "object", "properties": {"n": {"type": ["integer", "null"]}, "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "o": {"type": "string"}}, "required": ["n", "u"]}`)
	if err := Check(s); err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{
		`{"n": null, "u": "a"}`:            "",
		`{"n": 3, "u": 4}`:                 "",
		`{"n": "x", "u": 4}`:               `$.n: want an integer or null, got "x"`,
		`{"n": 1, "u": true}`:              `$.u: matches none of anyOf (the first says $.u: want a string, got true)`,
		`{"n": 1, "u": 1, "o": null}`:      "", // an optional property's null is dropped
		`{"n": 1, "u": 1, "o": "present"}`: "",
	} {
		got := ""
		if err := Validate(s, DropOptionalNulls(s, decode(t, v))); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: %q, want %q", v, got, want)
		}
	}
}
