package builtins

// This file defines input() (docs/language.md): the declaration of one typed flow
// input, given as a value of flow(inputs=).

import (
	"fmt"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
)

// InputDecl is the value input() returns: a declaration waiting for
// flow(inputs=) to give it a name.
type InputDecl struct {
	decl graphir.Input // Name unset; a default of the wrong type is the checker's to report (input_type)
}

var _ starlark.Value = (*InputDecl)(nil)

func (d *InputDecl) String() string {
	return fmt.Sprintf("input(type=%q)", d.decl.Type)
}
func (d *InputDecl) Type() string         { return "input" }
func (d *InputDecl) Freeze()              {}
func (d *InputDecl) Truth() starlark.Bool { return true }
func (d *InputDecl) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable type: input")
}

// input(default=<required>, *, type=None, help="", choices=None, secret=False)
func inputFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "default"); err != nil {
		return nil, err
	}
	var vals [5]starlark.Value
	if err := c.unpack(args, kwargs, inputParams, vals[:]); err != nil {
		return nil, err
	}
	dflt, typ, help, choices := vals[0], vals[1], vals[2], vals[3]
	in := graphir.Input{Required: isNone(dflt), Pos: c.pos}
	if !in.Required {
		if in.Default, err = stdlib.Data(dflt); err != nil {
			return nil, c.errorf("default: %v", err)
		}
	}
	switch t := typ.(type) {
	case nil, starlark.NoneType:
		in.Type = "any"
		if !in.Required {
			in.Type = graphir.InferType(in.Default)
		}
	case starlark.String:
		if err := oneOf("type", string(t), graphir.InputTypes...); err != nil {
			if near := spell.Nearest(string(t), graphir.InputTypes); near != "" {
				return nil, c.errorf("type must be one of %s, got %q (did you mean %q?)", quoteAll(graphir.InputTypes), string(t), near)
			}
			return nil, c.errorf("%v", err)
		}
		in.Type = string(t)
	default:
		return nil, c.errorf("type must be a string such as \"int\", got %s", describe(typ))
	}
	if !isNone(help) {
		s, ok := help.(starlark.String)
		if !ok {
			return nil, c.errorf("help must be a string, got %s", describe(help))
		}
		in.Help = string(s)
	}
	if !isNone(choices) {
		seq, ok := choices.(starlark.Indexable)
		if _, isStr := choices.(starlark.String); !ok || isStr {
			return nil, c.errorf("choices must be a list of values, got %s", describe(choices))
		}
		if seq.Len() == 0 {
			return nil, c.errorf("choices must not be empty")
		}
		for i := 0; i < seq.Len(); i++ {
			v, err := stdlib.Data(seq.Index(i))
			if err != nil {
				return nil, c.errorf("choices[%d]: %v", i, err)
			}
			if !graphir.HasType(in.Type, v) {
				return nil, c.errorf("choices[%d] must be %s like the input, got %s", i, typeArticle(in.Type), describe(v))
			}
			in.Choices = append(in.Choices, v)
		}
	}
	if !isNone(vals[4]) {
		b, ok := vals[4].(starlark.Bool)
		if !ok {
			return nil, c.errorf("secret must be True or False, got %s", describe(vals[4]))
		}
		in.Secret = bool(b)
	}
	if in.Secret {
		if err := c.secretInput(&in, typ); err != nil {
			return nil, err
		}
	}
	return &InputDecl{decl: in}, nil
}

// secretInput checks the rest of an input(secret = True): a secret is a
// string given to the run, never written in the flow, so it has no default
// and no choices (both would put it, or a list of its values, in the file).
func (c *call) secretInput(in *graphir.Input, typ starlark.Value) error {
	switch {
	case !in.Required:
		return c.hintf(`a flow file is read by everyone who reads the flow: give the value to the run (--input, or secret("NAME") read from the environment)`,
			"a secret input cannot have a default")
	case in.Choices != nil:
		return c.errorf("a secret input cannot have choices")
	case !isNone(typ) && in.Type != "string":
		return c.errorf("a secret input is a string, got type %q", in.Type)
	}
	in.Type = "string"
	return nil
}

func typeArticle(t string) string {
	if t == "int" {
		return "an int"
	}
	return "a " + t
}

// flowInput turns one entry of flow(inputs=) into a declaration: an
// input() value, or a plain default meaning input(default).
func (c *call) flowInput(name string, v starlark.Value) (graphir.Input, error) {
	if d, ok := v.(*InputDecl); ok {
		in := d.decl
		in.Name = name
		return in, nil
	}
	in := graphir.Input{Name: name, Required: isNone(v), Type: "any", Pos: c.pos}
	if !in.Required {
		d, err := stdlib.Data(v)
		if err != nil {
			return in, c.errorf("inputs: default of %q: %v", name, err)
		}
		in.Default = d
		in.Type = graphir.InferType(d)
	}
	return in, nil
}

// fields unpacks an approval step's fields=: a dict of names to input()
// declarations or plain defaults, as flow(inputs=).
func (c *call) fields(v starlark.Value) ([]graphir.Input, error) {
	keys, vals, err := c.dict("fields", v)
	if err != nil {
		return nil, err
	}
	var out []graphir.Input
	for i, k := range keys {
		if !graphir.ValidName(k) {
			return nil, c.errorf("fields: field name %q must match [a-z_][a-z0-9_]*", k)
		}
		in, err := c.flowInput(k, vals[i])
		if err != nil {
			return nil, err
		}
		if _, ok := vals[i].(*InputDecl); !ok {
			in.Pos, _ = c.locate("fields", k)
		}
		if in.Secret {
			return nil, c.errorf("fields: field %q cannot be secret: a person's answer is recorded with the decision", k)
		}
		in.Field = true
		out = append(out, in)
	}
	return out, nil
}

var inputParams = []string{"default?", "type?", "help?", "choices?", "secret?"}
