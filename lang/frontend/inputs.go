package frontend

// This file defines a run's inputs as given before the flow is known, and
// their binding to the flow's declared inputs.

import (
	"errors"
	"fmt"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// Inputs are the inputs given to a run: values that already have their
// types (a JSON object of inputs, the inputs recorded with a run, a flow
// test's) and texts (name=text on a command line), which are converted by
// each input's declared type once the flow is known, and win over a value
// of the same name. The zero Inputs (and a nil *Inputs) has none.
type Inputs struct {
	values map[string]starlark.Value
	texts  map[string]string
	order  []string // names of texts, in the order given
}

// Set gives the input called name the value v.
func (in *Inputs) Set(name string, v starlark.Value) {
	if in.values == nil {
		in.values = map[string]starlark.Value{}
	}
	in.values[name] = v
}

// SetText gives the input called name a text, converted by the input's
// declared type when the inputs are bound.
func (in *Inputs) SetText(name, text string) {
	if in.texts == nil {
		in.texts = map[string]string{}
	}
	if _, dup := in.texts[name]; !dup {
		in.order = append(in.order, name)
	}
	in.texts[name] = text
}

// SetJSON sets the inputs of a JSON object a person wrote (duplicate keys
// are refused). A value over the bound is stdlib.ErrTooBig.
func (in *Inputs) SetJSON(data []byte) error {
	v, err := stdlib.FromJSONUnique(data)
	if errors.Is(err, stdlib.ErrTooBig) {
		return err
	}
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	m, ok := v.(*stdlib.Map)
	if !ok {
		return fmt.Errorf("want a JSON object, got %s", v.Type())
	}
	for _, k := range m.Keys() {
		v, _ := m.Lookup(k)
		in.Set(k, v)
	}
	return nil
}

// SetRecorded sets the inputs recorded with a run (the store's JSON).
func (in *Inputs) SetRecorded(data []byte) error {
	v, err := stdlib.FromStoredJSON(data)
	if err != nil {
		return fmt.Errorf("the recorded inputs are not valid JSON: %v", err)
	}
	m, ok := v.(*stdlib.Map)
	if !ok {
		return fmt.Errorf("the recorded inputs are not an object")
	}
	for _, k := range m.Keys() {
		v, _ := m.Lookup(k)
		in.Set(k, v)
	}
	return nil
}

// Bind converts the texts by the flow's declared input types
// (docs/language.md: a string keeps the text exactly, an int must parse as
// one, ...) and binds them with the values to g's inputs, defaults filled
// in. A name the flow does not declare is converted as "any" and left for
// vm.BindInputs to refuse with a did-you-mean. A text that does not fit is
// a *graphir.Error with code bad_input naming the input, its type and its
// help.
func (in *Inputs) Bind(g *graphir.Graph) (*stdlib.Map, error) {
	if in == nil {
		in = &Inputs{}
	}
	given := make(map[string]starlark.Value, len(in.values)+len(in.texts))
	for k, v := range in.values {
		given[k] = v
	}
	for _, name := range in.order {
		text := in.texts[name]
		decl := g.Input(name)
		if decl == nil {
			decl = &graphir.Input{Name: name, Type: "any"}
		}
		v, err := decl.Parse(text)
		if err != nil {
			return nil, &graphir.Error{Code: codes.BadInput, Msg: err.Error(), Hint: decl.Describe()}
		}
		given[name] = v
	}
	return vm.BindInputs(g, given)
}
