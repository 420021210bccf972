package builtins

// This file defines secret() and reveal() (docs/language.md#secret): a
// value the run reads when it starts, never while the flow loads, and the
// mark of a use of a secret the checker would otherwise refuse.

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
)

// SecretValue is the value secret() returns: where a secret comes from,
// never the secret itself. Given where a template is taken (env=, stdin=,
// run=, llm=, ...) it becomes a template part the run fills in
// ([graphir.SecretTemplate]); the checker says where it may go.
type SecretValue struct {
	s      *graphir.Secret
	reveal bool // reveal(secret(...))
}

var _ starlark.Value = (*SecretValue)(nil)

func (v *SecretValue) String() string {
	if v.reveal {
		return graphir.RevealName + "(" + v.s.String() + ")"
	}
	return v.s.String()
}
func (v *SecretValue) Type() string         { return "secret" }
func (v *SecretValue) Freeze()              {}
func (v *SecretValue) Truth() starlark.Bool { return true }
func (v *SecretValue) Hash() (uint32, error) {
	return starlark.String(v.s.Key()).Hash()
}

// secret(name, *, file=None)
func secretFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var vals [2]starlark.Value
	if err := c.unpack(args, kwargs, secretParams, vals[:]); err != nil {
		return nil, err
	}
	s := &graphir.Secret{Pos: c.pos}
	if s.Name, err = c.str("name", vals[0], false); err != nil {
		return nil, err
	}
	if isNone(vals[1]) && !envName(s.Name) {
		return nil, c.errorf("name must be an environment variable such as \"API_TOKEN\" ([A-Za-z_][A-Za-z0-9_]*), got %q", s.Name)
	}
	if !isNone(vals[1]) {
		file, err := c.str("file", vals[1], false)
		if err != nil {
			return nil, err
		}
		if filepath.IsAbs(file) {
			return nil, c.hintf("a secret's file is named relative to the flow's folder, inside the flow root",
				"file: absolute path %q is not allowed", file)
		}
		// Relative to the folder of the file that calls secret(), as
		// load() and answers= are; the file is not read now.
		path := filepath.Join(filepath.Dir(c.pos.File), file)
		if err := confine.Check(c.b.Root, path); c.b.Root != "" && err != nil {
			return nil, c.errorf("file: %v", err)
		}
		s.File = path
	}
	return &SecretValue{s: s}, nil
}

// envName reports whether s may name an environment variable.
func envName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// reveal(x): x, marked as a deliberate use of a secret. While a flow loads
// it marks a secret() (reveal(secret("TOKEN"))); in a fn body or an
// expression it returns x, and the checker reads where it is written
// (reveal(r.inputs.token), "{{ reveal(inputs.token) }}").
func revealFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &x); err != nil {
		return nil, err
	}
	switch v := x.(type) {
	case *SecretValue:
		return &SecretValue{s: v.s, reveal: true}, nil
	case starlark.String:
		if BuilderOf(thread) != nil && strings.Contains(string(v), "{{") {
			// The checker reads reveal() inside a hole, where it names
			// what it reveals; around a whole template it would hide
			// which hole it meant.
			return nil, fmt.Errorf("reveal: write it inside the hole that reads the secret, like \"{{ reveal(inputs.token) }}\", not around the template %q", string(v))
		}
	}
	return x, nil
}

// secretTemplate makes the template of a secret() given for param, and
// records the secret in the flow.
func (c *call) secretTemplate(param string, v *SecretValue) (*graphir.Template, error) {
	if param == "shell" {
		return nil, c.hintf(`a shell script is run as written: pass the secret in env= and read it there, e.g. env = {"TOKEN": secret("TOKEN")} and "$TOKEN"`,
			"shell cannot be a secret()")
	}
	c.b.AddSecret(v.s)
	return graphir.SecretTemplate(v.s, v.reveal), nil
}

var secretParams = []string{"name", "file?"}
