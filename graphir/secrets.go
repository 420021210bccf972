package graphir

// This file defines secrets (docs/language.md#secret): the secret("NAME")
// values a flow reads when a run starts, never while it loads, and the
// reveal(...) that marks a use of a secret the checker would otherwise
// refuse. Secret inputs (input(secret = True)) are [Input.Secret].

import (
	"fmt"
	"strconv"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// RevealName is the function that marks a use of a secret as deliberate:
// reveal(x) is x, in flow files, fn bodies and expressions alike; the
// checker reads where it is written.
const RevealName = "reveal"

// Reveal is reveal(x) as expressions see it: x unchanged. The checker, not
// the value, knows it was revealed.
var Reveal = starlark.NewBuiltin(RevealName, func(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &x); err != nil {
		return nil, err
	}
	return x, nil
})

// Secret is one secret() of a flow: a value read by the run, from the
// environment variable Name or, with File, from a file, when the run starts
// (and again when it resumes); it is never read at load time and never
// stored.
type Secret struct {
	// Name is the environment variable read; with File, the name that
	// messages and masks call the secret.
	Name string
	// File is secret(file=): the file read, joined with the folder of
	// the file that called secret() (as the loader names paths, like
	// [Graph.File]); "" reads the environment variable Name. The loader
	// checked it lies inside the flow root; the run checks again, with
	// symbolic links resolved, before it reads.
	File string
	Pos  Pos // the secret() call
}

// Key identifies the secret's source: two secret() calls with one key are
// one value.
func (s *Secret) Key() string {
	if s.File == "" {
		return "env:" + s.Name
	}
	return "file:" + s.File
}

// String is the call as a flow writes it: secret("TOKEN"), or
// secret("TOKEN", file = "keys/token").
func (s *Secret) String() string {
	if s.File == "" {
		return "secret(" + strconv.Quote(s.Name) + ")"
	}
	return fmt.Sprintf("secret(%s, file = %s)", strconv.Quote(s.Name), strconv.Quote(s.File))
}

// SecretTemplate returns the template of a secret() given where a template
// is taken (env=, stdin=, ...): one part, the secret, revealed when written
// reveal(secret(...)). Its Src is the call as written, so a graph printed
// or diffed shows where the secret goes, never its value.
func SecretTemplate(s *Secret, reveal bool) *Template {
	src := s.String()
	if reveal {
		src = RevealName + "(" + src + ")"
	}
	return &Template{Src: src, Pos: s.Pos, Parts: []TemplatePart{{Secret: s, Reveal: reveal}}}
}

// Secrets returns the template's secret() parts.
func (t *Template) Secrets() []*Secret {
	var out []*Secret
	if t == nil {
		return nil
	}
	for _, p := range t.Parts {
		if p.Secret != nil {
			out = append(out, p.Secret)
		}
	}
	return out
}

// SecretInputs lists the names of the inputs declared secret = True.
func (g *Graph) SecretInputs() []string {
	var out []string
	for _, in := range g.Inputs {
		if in.Secret {
			out = append(out, in.Name)
		}
	}
	return out
}

// spans are the argument lists of reveal(...) calls in one piece of syntax.
type spans [][2]syntax.Position

// revealSpans finds the reveal(...) calls in n, by name: a function
// called reveal is taken to be the builtin (a flow cannot rebind a
// predeclared name in an expression, and a helper shadowing it in a
// module would only make the checker more trusting of its own author).
func revealSpans(n syntax.Node) spans {
	var out spans
	syntax.Walk(n, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			if id, ok := c.Fn.(*syntax.Ident); ok && id.Name == RevealName {
				out = append(out, [2]syntax.Position{c.Lparen, c.Rparen})
			}
		}
		return true
	})
	return out
}

// contain reports whether p lies inside one of the spans.
func (s spans) contain(p syntax.Position) bool {
	for _, sp := range s {
		if !before(p, sp[0]) && before(p, sp[1]) {
			return true
		}
	}
	return false
}

func before(a, b syntax.Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}
