package vm

// This file defines how a run reads its secrets (secret() and secret
// inputs, docs/security.md#secrets-at-run-time): when it starts, and again
// when it resumes, never at load time; each value is masked in all the run
// reports ([secrets.Masker]) and never stored.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/stdlib"
)

// secretVals holds the values of a run tree's secret() calls by
// [graphir.Secret.Key]: shared by a run and its child flows, which run on
// goroutines of their own.
type secretVals struct {
	mu sync.Mutex
	m  map[string]string
}

// ReadSecrets reads the value of every secret() of g and of the child
// flows it loads with it, from env or the file named, and registers each
// with m. A variable unset or empty, a file that cannot be read or lies
// outside the flow root, and a value shorter than [secrets.MinLen] (it
// could not be masked) are an error at the secret() that names it. It is
// what a run does before its first step; a front end may call it first
// to refuse a run (a resume) before it records anything.
func ReadSecrets(g *graphir.Graph, env []string, m *secrets.Masker) (map[string]string, error) {
	vals := map[string]string{}
	var err error
	g.EachGraph(func(g *graphir.Graph) {
		for _, s := range g.Secrets {
			if err != nil {
				return
			}
			if _, ok := vals[s.Key()]; ok {
				continue
			}
			var v string
			if v, err = readSecret(g, s, env); err == nil {
				vals[s.Key()] = v
				m.Add(v)
			}
		}
	})
	return vals, err
}

// readSecret reads one secret.
func readSecret(g *graphir.Graph, s *graphir.Secret, env []string) (string, error) {
	fail := func(format string, args ...any) error {
		return &graphir.Error{Code: codes.BadInput, Pos: s.Pos, Msg: s.String() + ": " + fmt.Sprintf(format, args...)}
	}
	var v string
	if s.File == "" {
		if v = lookupEnv(env, s.Name); v == "" {
			return "", fail("$%s is not set", s.Name)
		}
	} else {
		if err := confine.Check(g.Root, s.File); err != nil {
			return "", fail("%v", err)
		}
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fail("%v", err)
		}
		// A file written by an editor or `echo` ends with a newline that
		// is not part of the secret.
		v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if v == "" {
			return "", fail("%s is empty", s.File)
		}
	}
	if len(v) < secrets.MinLen {
		return "", fail("the value is %d bytes: a secret must be at least %d to be masked", len(v), secrets.MinLen)
	}
	return v, nil
}

// readSecrets reads the secrets of the run's graph that its tree has not
// read yet (a child flow named at run time has its own), and masks its
// secret inputs' values.
func (r *run) readSecrets() *graphir.Error {
	for _, name := range r.g.SecretInputs() {
		if r.inputs == nil {
			break
		}
		if v, ok := r.inputs.Lookup(name); ok {
			if s, ok := v.(starlark.String); ok && !r.secrets.Add(string(s)) && len(s) > 0 {
				return &graphir.Error{Code: codes.BadInput, Msg: fmt.Sprintf("secret input %q is %d bytes: a secret must be at least %d to be masked", name, len(s), secrets.MinLen)}
			}
		}
	}
	if r.opts.SecretsUnread || r.opts.SecretRefs {
		return nil
	}
	sv := r.opts.secretVals
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.m == nil {
		vals, err := ReadSecrets(r.g, r.opts.Env, r.secrets)
		if err != nil {
			return err.(*graphir.Error)
		}
		sv.m = vals
		return nil
	}
	for _, s := range r.g.Secrets {
		if _, ok := sv.m[s.Key()]; ok {
			continue
		}
		v, err := readSecret(r.g, s, r.opts.Env)
		if err != nil {
			return err.(*graphir.Error)
		}
		sv.m[s.Key()] = v
		r.secrets.Add(v)
	}
	return nil
}

// secret returns the value of s, read when the run started.
func (r *run) secret(s *graphir.Secret) string {
	if r.opts.SecretsUnread {
		return secrets.Mask
	}
	if r.opts.SecretRefs {
		return SecretRef(s)
	}
	v, _ := r.opts.secretVals.lookup(s.Key())
	return v
}

// keyFileVar is the name under which a model's key read from a file
// (model(api_key = secret(NAME, file = PATH))) is looked up, as if it were
// a variable: the [graphir.Secret.Key] of that file, which no environment
// variable can be named ("file:PATH").
func keyFileVar(path string) string { return (&graphir.Secret{File: path}).Key() }

// lookup returns the value of the secret whose key is k, if it was read.
func (sv *secretVals) lookup(k string) (string, bool) {
	if !strings.HasPrefix(k, "file:") && !strings.HasPrefix(k, "env:") {
		return "", false
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	v, ok := sv.m[k]
	return v, ok
}

// MaskValue returns v with the secrets of m masked in every string it
// holds (a step's output as a record keeps it): v itself when none is.
func MaskValue(m *secrets.Masker, v starlark.Value) starlark.Value {
	if m.Empty() || v == nil {
		return v
	}
	out, _ := maskValue(m, v, 0)
	return out
}

func maskValue(m *secrets.Masker, v starlark.Value, depth int) (starlark.Value, bool) {
	if depth > 64 {
		return v, false
	}
	switch v := v.(type) {
	case starlark.String:
		if s := m.Mask(string(v)); s != string(v) {
			return starlark.String(s), true
		}
	case starlark.Bytes:
		if s := m.Mask(string(v)); s != string(v) {
			return starlark.Bytes(s), true
		}
	case *starlark.List:
		var elems []starlark.Value
		for i := 0; i < v.Len(); i++ {
			e, changed := maskValue(m, v.Index(i), depth+1)
			if changed && elems == nil {
				elems = make([]starlark.Value, 0, v.Len())
				for j := 0; j < i; j++ {
					elems = append(elems, v.Index(j))
				}
			}
			if elems != nil {
				elems = append(elems, e)
			}
		}
		if elems != nil {
			return starlark.NewList(elems), true
		}
	case starlark.Tuple:
		var out starlark.Tuple
		for i, e := range v {
			e2, changed := maskValue(m, e, depth+1)
			if changed && out == nil {
				out = append(starlark.Tuple(nil), v...)
			}
			if out != nil {
				out[i] = e2
			}
		}
		if out != nil {
			return out, true
		}
	case *stdlib.Map:
		// Walked once; copied from the first key or value that changes.
		var b stdlib.MapBuilder
		copied := false
		i := 0
		for k, e := range v.All {
			k2 := m.Mask(k)
			e2, changed := maskValue(m, e, depth+1)
			if (changed || k2 != k) && !copied {
				b, copied = stdlib.NewMapBuilder(v.Len()), true
				for k, e := range v.All {
					if b.Len() == i {
						break
					}
					b.Add(k, e)
				}
			}
			if copied {
				b.Add(k2, e2)
			}
			i++
		}
		if copied {
			return b.Map(), true
		}
	case *starlark.Dict:
		changed := false
		d := starlark.NewDict(v.Len())
		for _, kv := range v.Items() {
			k, c1 := maskValue(m, kv[0], depth+1)
			e, c2 := maskValue(m, kv[1], depth+1)
			changed = changed || c1 || c2
			d.SetKey(k, e)
		}
		if changed {
			return d, true
		}
	}
	return v, false
}

// maskEvent masks the secrets in what ev says, before anyone hears it.
func (r *run) maskEvent(ev *Event) {
	m := r.secrets
	ev.Error, ev.Message, ev.Args, ev.Result = m.Mask(ev.Error), m.Mask(ev.Message), m.Mask(ev.Args), m.Mask(ev.Result)
	ev.Output = MaskValue(m, ev.Output)
	ev.Trace = maskStrings(m, ev.Trace)
	ev.Items = maskStrings(m, ev.Items)
}

// maskStrings returns ss with m's secrets masked: ss itself when none is.
func maskStrings(m *secrets.Masker, ss []string) []string {
	var out []string
	for i, s := range ss {
		if t := m.Mask(s); t != s && out == nil {
			out = append([]string(nil), ss...)
		}
		if out != nil {
			out[i] = m.Mask(s)
		}
	}
	if out == nil {
		return ss
	}
	return out
}

// maskResult masks the secrets in the run's record as it is returned:
// its output, error, inputs (a secret input's value becomes "***") and
// each step's output, error and printed lines. A child flow's record was
// masked by its own run.
func (r *run) maskResult(res *Result) {
	m := r.secrets
	if m.Empty() {
		return
	}
	res.Output = MaskValue(m, res.Output)
	if in, ok := MaskValue(m, res.Inputs).(*stdlib.Map); ok {
		res.Inputs = in
	}
	for e := res.Error; e != nil; e = e.Cause {
		e.Msg, e.Hint, e.Trace = m.Mask(e.Msg), m.Mask(e.Hint), maskStrings(m, e.Trace)
	}
	recs := res.Steps
	if res.OnExit != nil {
		recs = append(recs[:len(recs):len(recs)], res.OnExit)
	}
	for _, rec := range recs {
		rec.Output = MaskValue(m, rec.Output)
		rec.Error, rec.Answer = m.Mask(rec.Error), m.Mask(rec.Answer)
		rec.Log, rec.Trace = maskStrings(m, rec.Log), maskStrings(m, rec.Trace)
	}
}

// Mask returns s with the secrets of the run that asked for req masked:
// what a front end shows of a request (a dry run's) goes through it.
func (req *EffectRequest) Mask(s string) string {
	if req.from == nil {
		return s
	}
	return req.from.mask(s)
}

// A secret reference is how a secret() renders in a run whose effects
// run elsewhere (Options.SecretRefs): its key and position between
// refOpen and refClose, never its value. The NUL bytes keep it from
// being mistaken for text a flow wrote, and a reference left unresolved
// cannot reach a process's environment (exec refuses NUL).
const (
	refOpen  = "\x00skein-secret:"
	refClose = "\x00"
)

// SecretRef is the reference that stands for s's value.
func SecretRef(s *graphir.Secret) string {
	return refOpen + s.Key() + "@" + s.Pos.String() + refClose
}

// ResolveSecretRefs replaces each secret reference in text with its
// secret's value, read from env or its file (a file's path mapped by
// path, which may be nil), and adds each value to m. A secret that
// cannot be read is an error at its secret()'s position, as when a run
// starts locally.
func ResolveSecretRefs(text string, env []string, path func(string) string, m *secrets.Masker) (string, error) {
	if !strings.Contains(text, refOpen) {
		return text, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(text, refOpen)
		if i < 0 {
			b.WriteString(text)
			return b.String(), nil
		}
		b.WriteString(text[:i])
		rest := text[i+len(refOpen):]
		j := strings.Index(rest, refClose)
		if j < 0 {
			return "", fmt.Errorf("a secret reference is cut short")
		}
		ref := rest[:j]
		text = rest[j+len(refClose):]
		key, pos, _ := strings.Cut(ref, "@")
		s := &graphir.Secret{}
		if name, ok := strings.CutPrefix(key, "env:"); ok {
			s.Name = name
		} else if file, ok := strings.CutPrefix(key, "file:"); ok {
			s.Name, s.File = filepath.Base(file), file
			if path != nil {
				s.File = path(file)
			}
		} else {
			return "", fmt.Errorf("%s: not a secret reference", pos)
		}
		v, err := readSecretAt(s, env)
		if err != nil {
			return "", fmt.Errorf("%s: %s: %v", pos, s, err)
		}
		m.Add(v)
		b.WriteString(v)
	}
}

// readSecretAt reads s where a worker runs an effect: from env, or the
// file (no flow root to confine it to: the worker's files are its own).
func readSecretAt(s *graphir.Secret, env []string) (string, error) {
	var v string
	if s.File == "" {
		if v = lookupEnv(env, s.Name); v == "" {
			return "", fmt.Errorf("$%s is not set on this worker", s.Name)
		}
	} else {
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", err
		}
		v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if v == "" {
			return "", fmt.Errorf("%s is empty", s.File)
		}
	}
	if len(v) < secrets.MinLen {
		return "", fmt.Errorf("the value is %d bytes: a secret must be at least %d to be masked", len(v), secrets.MinLen)
	}
	return v, nil
}
