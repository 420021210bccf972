package graphir_test

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
)

// TestInputParse: text from a command line is converted by the input's
// type; a string keeps the text exactly.
func TestInputParse(t *testing.T) {
	cases := []struct {
		typ, text string
		want      string // the value's repr, or the error
		wantType  string
		choices   []starlark.Value
	}{
		{"string", "1.10", `"1.10"`, "string", nil},
		{"string", "2.0", `"2.0"`, "string", nil},
		{"string", `"quoted"`, `"\"quoted\""`, "string", nil},
		{"string", "", `""`, "string", nil},
		{"int", "42", "42", "int", nil},
		{"int", " -7 ", "-7", "int", nil},
		{"int", "123456789012345678901234567890", "123456789012345678901234567890", "int", nil},
		{"int", "4.0", `input "x" must be an int, got "4.0"`, "", nil},
		{"int", "forty", `input "x" must be an int, got "forty"`, "", nil},
		{"float", "2", "2.0", "float", nil},
		{"float", "1e3", "1000.0", "float", nil},
		{"float", "NaN", `input "x" must be a float, got "NaN"`, "", nil},
		{"float", "x", `input "x" must be a float, got "x"`, "", nil},
		{"bool", "true", "True", "bool", nil},
		{"bool", "False", "False", "bool", nil},
		{"bool", "yes", `input "x" must be a bool, got "yes"`, "", nil},
		{"list", `["a", 1]`, `["a", 1]`, "list", nil},
		{"list", `{"a": 1}`, `input "x" must be a list as JSON, got "{\"a\": 1}"`, "", nil},
		{"list", `a,b`, `input "x" must be a list as JSON, got "a,b"`, "", nil},
		{"dict", `{"a": [1]}`, `{"a": [1]}`, "dict", nil},
		{"dict", `[]`, `input "x" must be a dict as JSON, got "[]"`, "", nil},
		{"any", "3", "3", "int", nil},
		{"any", "2.0", "2.0", "float", nil},
		{"any", "hello", `"hello"`, "string", nil},
		{"any", `[1]`, `[1]`, "list", nil},
		{"string", "stage", `input "x" must be one of "dev", "prod", got "stage"`, "", []starlark.Value{starlark.String("dev"), starlark.String("prod")}},
		{"string", "prod", `"prod"`, "string", []starlark.Value{starlark.String("dev"), starlark.String("prod")}},
		{"int", "2", "2", "int", []starlark.Value{starlark.MakeInt(1), starlark.MakeInt(2)}},
		{"int", "3", `input "x" must be one of 1, 2, got 3`, "", []starlark.Value{starlark.MakeInt(1), starlark.MakeInt(2)}},
	}
	for _, tc := range cases {
		in := &graphir.Input{Name: "x", Type: tc.typ, Choices: tc.choices}
		v, err := in.Parse(tc.text)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = v.String()
			if gt := graphir.InferType(v); gt != tc.wantType {
				t.Errorf("%s %q: type %s, want %s", tc.typ, tc.text, gt, tc.wantType)
			}
		}
		if got != tc.want {
			t.Errorf("%s %q: got %s, want %s", tc.typ, tc.text, got, tc.want)
		}
	}
}

func TestInputDescribe(t *testing.T) {
	for _, tc := range []struct {
		in   graphir.Input
		want string
	}{
		{graphir.Input{Name: "n", Type: "int", Required: true, Help: "how many"}, "n (int, required): how many"},
		{graphir.Input{Name: "v", Type: "string", Default: starlark.String("1.0")}, `v (string, default "1.0")`},
		{graphir.Input{Name: "e", Type: "string", Default: starlark.String("a"), Choices: []starlark.Value{starlark.String("a"), starlark.String("b")}}, `e (string, default "a", one of "a", "b")`},
		{graphir.Input{Name: "z", Required: true}, "z (any, required)"},
	} {
		if got := tc.in.Describe(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// JSON whose value would be over the bound of one value is an error naming
// the input and the size, for a list or dict input and for an any input
// alike (which does not fall back to the text): issue 9.
func TestInputParseTooBig(t *testing.T) {
	big := "[" + strings.Repeat("{},", 999999) + "{}]"
	for _, typ := range []string{"list", "any"} {
		in := &graphir.Input{Name: "x", Type: typ}
		_, err := in.Parse(big)
		want := `input "x": decoding this JSON would make about 76.8 MiB (past the bound at byte 2516582); one value may take at most 64 MiB`
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", typ, err, want)
		}
	}
}

// An int input, or a number in a JSON input, has at most
// stdlib.MaxIntDigits digits: converting more takes quadratic time
// (issue 26).
func TestInputParseDigits(t *testing.T) {
	long := strings.Repeat("7", 200_000)
	for typ, text := range map[string]string{"int": long, "list": "[" + long + "]", "any": long} {
		in := &graphir.Input{Name: "x", Type: typ}
		_, err := in.Parse(text)
		if err == nil || !strings.Contains(err.Error(), `input "x": `) || !strings.Contains(err.Error(), "has 200000 digits; an integer read from text may have at most 10000") {
			t.Errorf("%s: %v", typ, err)
		}
	}
	if v, err := (&graphir.Input{Name: "x", Type: "int"}).Parse(long[:10_000]); err != nil || v == nil {
		t.Errorf("at the bound: %v", err)
	}
}
