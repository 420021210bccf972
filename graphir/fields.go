package graphir

// This file defines the fields of approval steps (step(approve=,
// fields=)): values a person gives with a decision, declared with input()
// like flow inputs, how a decision's values are bound to them, and their
// plain JSON form (kept with an approval's record, so that a decision can
// be checked without loading the flow).

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
)

// jsonField is one field in [FieldsJSON]'s form.
type jsonField struct {
	Name string `json:"name"`
	jsonInput
}

// FieldsJSON encodes fields as a JSON array of {name, type, required,
// default, help, choices}; "" for none.
func FieldsJSON(fields []Input) string {
	if len(fields) == 0 {
		return ""
	}
	out := make([]jsonField, len(fields))
	for i, in := range fields {
		out[i] = jsonField{Name: in.Name, jsonInput: in.json()}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}

// ParseFields decodes what [FieldsJSON] wrote; "" is no fields.
func ParseFields(s string) ([]Input, error) {
	if s == "" {
		return nil, nil
	}
	var raw []struct {
		Name     string            `json:"name"`
		Type     string            `json:"type"`
		Required bool              `json:"required"`
		Default  json.RawMessage   `json:"default"`
		Help     string            `json:"help"`
		Choices  []json.RawMessage `json:"choices"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("fields: %v", err)
	}
	out := make([]Input, len(raw))
	for i, f := range raw {
		in := Input{Name: f.Name, Type: f.Type, Required: f.Required, Help: f.Help, Field: true}
		if !f.Required {
			v, err := stdlib.FromJSON(f.Default)
			if err != nil {
				return nil, fmt.Errorf("field %q: default: %v", f.Name, err)
			}
			in.Default = v
		}
		for _, c := range f.Choices {
			v, err := stdlib.FromJSON(c)
			if err != nil {
				return nil, fmt.Errorf("field %q: choices: %v", f.Name, err)
			}
			in.Choices = append(in.Choices, v)
		}
		out[i] = in
	}
	return out, nil
}

// BindFields binds the values given with a decision on approval step to
// its fields, and returns them as a dict of every field: a value given as
// a Go string is text read by the field's type as a command line's is
// ([Input.Parse]: "3" for an int field is 3); any other is a JSON value
// (decoded: float64, bool, []any, map[string]any...) or flow data, checked
// against the field ([Input.Check]). A field not given takes its default;
// an approval (approved true) needs every required field, a rejection
// none. A value for a field the step does not declare is an error.
func BindFields(step string, fields []Input, given map[string]any, approved bool) (*stdlib.Map, error) {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	var unknown []string
	for k := range given {
		if !slices.Contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(fields) == 0 {
			return nil, fmt.Errorf("approval %q takes no values (it declares no fields), got %s", step, strings.Join(unknown, ", "))
		}
		msg := fmt.Sprintf("approval %q has no field %q; it declares %s", step, unknown[0], DescribeFields(fields))
		return nil, fmt.Errorf("%s%s", msg, spell.Suggest(unknown[0], names))
	}
	keys := make([]string, 0, len(fields))
	vals := make([]starlark.Value, 0, len(fields))
	var missing []string
	for _, f := range fields {
		f.Field = true
		g, ok := given[f.Name]
		var v starlark.Value
		switch {
		case ok:
			var err error
			switch x := g.(type) {
			case string:
				v, err = f.Parse(x)
			case starlark.Value:
				if v, err = stdlib.Data(x); err == nil {
					v, err = f.Check(v)
				}
			default:
				// Through JSON, so that a number decoded as float64
				// that is whole is an int, as in a JSON input.
				var b []byte
				if b, err = json.Marshal(x); err == nil {
					if v, err = stdlib.FromJSON(b); err == nil {
						v, err = f.Check(v)
					}
				}
			}
			if err != nil {
				return nil, fmt.Errorf("approval %q: %v", step, err)
			}
		case f.Required:
			missing = append(missing, f.Name)
			v = starlark.None
		default:
			v = f.Default
		}
		keys = append(keys, f.Name)
		vals = append(vals, v)
	}
	if approved && len(missing) > 0 {
		return nil, fmt.Errorf("approval %q needs a value for %s; it declares %s", step, quoteNames(missing), DescribeFields(fields))
	}
	return stdlib.NewMap(keys, vals), nil
}

// DescribeFields lists fields for messages: `version (string, required),
// rollout (string, default "canary", one of "canary", "all")`.
func DescribeFields(fields []Input) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		f.Help = ""
		parts[i] = f.Describe()
	}
	return strings.Join(parts, ", ")
}

func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("field %q", n)
	}
	return strings.Join(q, ", ")
}
