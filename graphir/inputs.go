package graphir

// This file defines typed flow inputs (docs/language.md, input()): the types an input
// may declare, how a value given as JSON is checked against its type, and
// how text from a command line is converted by it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/stdlib"
)

// InputTypes are the types an input may declare, in the order docs list them.
var InputTypes = []string{"string", "int", "float", "bool", "list", "dict", "any"}

// Input is one declared flow input.
type Input struct {
	Name     string
	Default  starlark.Value // nil when required
	Required bool
	Type     string           // one of InputTypes; "any" when neither given nor inferable
	Help     string           // input(help=)
	Choices  []starlark.Value // input(choices=), nil when any value of the type is allowed
	Pos      Pos              // the input() call, else the flow() call
	// Field: a field of an approval step (step(approve=, fields=)), a
	// value a person gives with a decision, rather than a flow input;
	// messages call it a field.
	Field bool
	// Secret: input(secret = True), a value the run masks wherever it
	// would show and the checker keeps out of prompts, outputs, argv,
	// file names and conditions (docs/language.md#secret). It is a
	// string with no default and no choices.
	Secret bool
}

// Noun is what messages call the input: "input", or "field".
func (in *Input) Noun() string {
	if in.Field {
		return "field"
	}
	return "input"
}

// InferType returns the input type of a default value: its own type when it
// has one of [InputTypes], else "any".
func InferType(v starlark.Value) string {
	switch v.(type) {
	case starlark.String:
		return "string"
	case starlark.Int:
		return "int"
	case starlark.Float:
		return "float"
	case starlark.Bool:
		return "bool"
	case *starlark.List, starlark.Tuple:
		return "list"
	case *starlark.Dict, *stdlib.Map:
		return "dict"
	}
	return "any"
}

// HasType reports whether v, flow data, has the input type typ. An int is
// a float too (JSON does not tell 3 from 3.0).
func HasType(typ string, v starlark.Value) bool {
	switch typ {
	case "any", "":
		return true
	case "float":
		switch v.(type) {
		case starlark.Float, starlark.Int:
			return true
		}
		return false
	}
	return InferType(v) == typ
}

// Describe says what the input is, for messages and --help:
// `n (int, default 3): number of retries`.
func (in *Input) Describe() string {
	var b strings.Builder
	b.WriteString(in.Name)
	b.WriteString(" (")
	b.WriteString(in.TypeName())
	if in.Required {
		b.WriteString(", required")
	} else {
		b.WriteString(", default ")
		b.WriteString(ValueString(in.Default))
	}
	if len(in.Choices) > 0 {
		b.WriteString(", one of ")
		b.WriteString(in.choiceList())
	}
	b.WriteString(")")
	if in.Help != "" {
		b.WriteString(": ")
		b.WriteString(in.Help)
	}
	return b.String()
}

// TypeName returns the declared type, "any" when none is set.
func (in *Input) TypeName() string {
	if in.Type == "" {
		return "any"
	}
	return in.Type
}

func (in *Input) choiceList() string {
	parts := make([]string, len(in.Choices))
	for i, c := range in.Choices {
		parts[i] = ValueString(c)
	}
	return strings.Join(parts, ", ")
}

// ValueString renders flow data the way JSON writes it: "x" for strings,
// [1, 2] for lists.
func ValueString(v starlark.Value) string {
	if v == nil {
		return "None"
	}
	if g, err := stdlib.ToGo(v); err == nil {
		if s, err := jsonText(g); err == nil {
			return s
		}
	}
	return v.String()
}

// Check reports whether v, a value given as JSON or passed by a parent flow
// (already flow data), fits the input: it has the type (an int given for a
// float becomes a float) and is one of the choices. It returns the value to
// use.
func (in *Input) Check(v starlark.Value) (starlark.Value, error) {
	if !HasType(in.TypeName(), v) {
		return nil, fmt.Errorf("%s %q must be %s, got %s", in.Noun(), in.Name, typeArticle(in.TypeName()), describeValue(v))
	}
	if i, ok := v.(starlark.Int); ok && in.TypeName() == "float" {
		v = starlark.Float(i.Float())
	}
	return v, in.checkChoice(v)
}

func (in *Input) checkChoice(v starlark.Value) error {
	if len(in.Choices) == 0 {
		return nil
	}
	for _, c := range in.Choices {
		if eq, err := starlark.Equal(c, v); err == nil && eq {
			return nil
		}
	}
	return fmt.Errorf("%s %q must be one of %s, got %s", in.Noun(), in.Name, in.choiceList(), ValueString(v))
}

// Parse converts text given on a command line (--input name=text) by the
// input's type (docs/language.md): a string keeps the text exactly; int, float and
// bool must parse as such; list and dict as JSON; any is JSON when the text
// parses as JSON, else the text. JSON whose value would be over
// stdlib.MaxValueBytes is an error.
func (in *Input) Parse(text string) (starlark.Value, error) {
	var v starlark.Value
	bad := func() error {
		return fmt.Errorf("%s %q must be %s, got %q", in.Noun(), in.Name, typeArticle(in.TypeName()), text)
	}
	switch in.TypeName() {
	case "string":
		v = starlark.String(text)
	case "int":
		t := strings.TrimSpace(text)
		if len(t) > stdlib.MaxIntDigits+1 {
			return nil, fmt.Errorf("%s %q: %v", in.Noun(), in.Name, stdlib.IntDigitsError("the int", len(t)))
		}
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			v = starlark.MakeInt64(n)
		} else if b, ok := new(big.Int).SetString(t, 10); ok {
			v = starlark.MakeBigInt(b)
		} else {
			return nil, bad()
		}
	case "float":
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, bad()
		}
		v = starlark.Float(f)
	case "bool":
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, bad()
		}
		v = starlark.Bool(b)
	case "list", "dict":
		j, err := stdlib.FromJSON([]byte(text))
		if errors.Is(err, stdlib.ErrTooBig) || errors.Is(err, stdlib.ErrIntDigits) {
			return nil, fmt.Errorf("%s %q: %v", in.Noun(), in.Name, err)
		}
		if err != nil || InferType(j) != in.TypeName() {
			return nil, fmt.Errorf("%s %q must be %s as JSON, got %q", in.Noun(), in.Name, typeArticle(in.TypeName()), text)
		}
		v = j
	default:
		if j, err := stdlib.FromJSON([]byte(text)); err == nil {
			v = j
		} else if errors.Is(err, stdlib.ErrTooBig) || errors.Is(err, stdlib.ErrIntDigits) {
			return nil, fmt.Errorf("%s %q: %v", in.Noun(), in.Name, err) // JSON, too big to be its value
		} else {
			v = starlark.String(text)
		}
	}
	return v, in.checkChoice(v)
}

// typeArticle names a type with its article: "an int", "a string", "any value".
func typeArticle(typ string) string {
	switch typ {
	case "int":
		return "an int"
	case "any", "":
		return "any value"
	}
	return "a " + typ
}

// describeValue names a value's input type with the value, for messages.
func describeValue(v starlark.Value) string {
	s := ValueString(v)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	t := InferType(v)
	if t == "any" {
		t = v.Type()
	}
	if v == starlark.None {
		return "None"
	}
	return fmt.Sprintf("%s %s", typeArticle(t), s)
}

// jsonText encodes a Go value as compact JSON without HTML escapes.
func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
