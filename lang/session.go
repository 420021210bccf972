package lang

// This file defines a REPL session: Starlark typed a chunk at a time into
// one growing flow, with the same builtins, dialect, modules, budget and
// error positions as a flow file.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
)

// ChunkFile is the file name of what is typed into a [Session]. Its lines
// count every line entered since the session began, so each position names
// one line of the session's input, as in a file.
const ChunkFile = "<stdin>"

// chunkOptions is the flow dialect with load() binding globals, so that a
// load() in one chunk serves the chunks after it.
var chunkOptions = func() *syntax.FileOptions {
	o := *graphir.FileOptions
	o.LoadBindsGlobally = true
	return &o
}()

// ParseChunk reads one chunk of session input through readline, a line at
// a time, and parses it in the flow dialect: a simple statement, or a
// compound one (def, if, for) ended by a blank line or by the next line at
// its level, which the parser has then read too. Positions in the result
// count from the chunk's first line.
func ParseChunk(readline func() ([]byte, error)) (*syntax.File, error) {
	var read []byte // the chunk so far, its literals bounded as it grows
	f, err := chunkOptions.ParseCompoundStmt(ChunkFile, func() ([]byte, error) {
		line, err := readline()
		read = append(read, line...)
		if err == nil && graphir.BoundLiterals(ChunkFile, line) != nil {
			// Too long a number on this line, unless a string it is in
			// began on an earlier one.
			err = graphir.BoundLiterals(ChunkFile, read)
		}
		return line, err
	})
	if err == nil {
		err = graphir.BoundDepth(f)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Session is an interactive session: chunks of Starlark run one after the
// other against shared globals, and the steps and edges they declare
// accumulate into one flow, whose frozen snapshot [Session.Graph] returns at
// any time. A session may start from a file ([Session.LoadFile]); chunks
// then continue that file: its globals are theirs, its steps are in the
// graph, and load() and child flows resolve relative to its directory.
//
// Each chunk has the load-time step and memory budgets of a whole file. Errors are
// *graphir.Error values with positions in [ChunkFile] or in the files
// loaded. A Session is not safe for concurrent use.
type Session struct {
	dir  string
	opts Options

	last    string // the file loaded last (for Reload), even if it failed
	file    string // the flow the graph belongs to: the file loaded, or dir/<stdin>
	ls      *session
	l       *loader
	globals starlark.StringDict // the predeclared names, then the user's
	lines   int                 // lines of input so far
}

// NewSession returns an empty session whose chunks resolve load() and
// child flows relative to dir, inside opts.Root (default dir).
func NewSession(dir string, opts Options) *Session {
	s := &Session{dir: dir, opts: opts}
	s.Reset()
	return s
}

// Reset empties the session: no globals of the user's, no steps, no
// modules, and line numbers start again at 1. The file loaded last is
// remembered for [Session.Reload].
func (s *Session) Reset() {
	root := s.opts.Root
	if root == "" {
		root = s.dir
	}
	s.start(filepath.Join(s.dir, ChunkFile), root)
	s.globals = predeclaredCopy()
	s.lines = 0 // positions count from the first line after the reset
}

// start begins a new load of the flow in file.
func (s *Session) start(file, root string) {
	s.file = file
	s.ls = &session{opts: s.opts, root: root, loc: newLocator(), children: map[string]*child{}}
	s.l = s.ls.newLoader(file)
}

func predeclaredCopy() starlark.StringDict {
	g := make(starlark.StringDict, len(builtins.Predeclared()))
	for k, v := range builtins.Predeclared() {
		g[k] = v
	}
	return g
}

// LoadFile replaces the session with the flow in file, loaded as
// [Load] would (the root is opts.Root, else the file's directory): its
// globals become the session's and its steps the session's graph. On error
// the session is left as it was.
func (s *Session) LoadFile(file string) error {
	src, err := s.opts.readFile(file)
	if err != nil {
		return FileError(file, err)
	}
	root := s.opts.Root
	if root == "" {
		root = filepath.Dir(file)
	}
	old := *s
	s.start(file, root)
	main := &module{file: file, loading: true}
	s.l.modules[filepath.Clean(file)] = main
	globals, err := s.l.exec(file, src)
	main.loading = false
	if err != nil {
		*s = old // the session, and the file Reload loads, stay as they were
		return err
	}
	s.last = file
	main.globals = globals
	s.globals = predeclaredCopy()
	for k, v := range s.loadBindings(file, src) {
		s.globals[k] = v
	}
	for k, v := range globals {
		s.globals[k] = v
	}
	return nil
}

// loadBindings returns the names that the load() statements of a file that
// just loaded bind. In the file they are its own, not globals; a session
// continuing the file needs them.
func (s *Session) loadBindings(file string, src []byte) starlark.StringDict {
	f, err := graphir.ParseFile(file, src, 0)
	if err != nil {
		return nil
	}
	names := starlark.StringDict{}
	for _, stmt := range f.Stmts {
		ld, ok := stmt.(*syntax.LoadStmt)
		if !ok {
			continue
		}
		path, err := s.l.resolve(file, ld.ModuleName())
		if err != nil {
			continue
		}
		m := s.l.modules[path]
		if m == nil {
			continue
		}
		for i, from := range ld.From {
			if v, ok := m.globals[from.Name]; ok {
				names[ld.To[i].Name] = v
			}
		}
	}
	return names
}

// Reload loads the file loaded last without error again, fresh (modules
// and child flows are read again).
func (s *Session) Reload() error {
	if s.last == "" {
		return &graphir.Error{Code: codes.LoadError, Msg: "no file loaded yet"}
	}
	return s.LoadFile(s.last)
}

// Drop removes the step called name from the session's flow, with its
// body if it is a loop or map and every edge to or from them, so that it
// can be declared again. It returns the names of the steps removed.
func (s *Session) Drop(name string) ([]string, error) {
	gone, err := s.l.b.Drop(name)
	if err != nil {
		return nil, &graphir.Error{Code: codes.LoadError, Msg: err.Error()}
	}
	return gone, nil
}

// File returns the file loaded last, or "".
func (s *Session) File() string { return s.last }

// Exec runs one chunk of input: statements, or one expression whose value it
// returns (nil for statements). The chunk runs with the builtins under the
// load-time step budget; cancelling ctx interrupts it. The globals it sets
// and the steps it declares are kept even when it fails part way, as in
// Python.
func (s *Session) Exec(ctx context.Context, src string) (starlark.Value, error) {
	first := s.lines
	s.lines += strings.Count(strings.TrimSuffix(src, "\n"), "\n") + 1
	// Pad with the lines entered before, so positions count session lines.
	src = strings.Repeat("\n", first) + src
	f, err := graphir.ParseFileWith(chunkOptions, ChunkFile, src, 0)
	if err != nil {
		return nil, withPythonHint(src, convert(err, nil))
	}
	stdlib.Rewrite(f) // bound the values one operation makes
	s.ls.loc.add(f)

	// A module that failed to load is tried again, in case it was fixed;
	// one that loaded stays loaded until Reload or Reset.
	for path, m := range s.l.modules {
		if m.err != nil {
			delete(s.l.modules, path)
		}
	}
	l := s.l
	l.used = 0
	l.until = time.Now().Add(l.limit) // each chunk has the budget of a file
	thread := l.newThread(filepath.Join(filepath.Dir(s.file), ChunkFile))
	defer l.push(thread)()
	defer l.watchTime(thread)()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			thread.Cancel("interrupted")
		case <-done:
		}
	}()

	if len(f.Stmts) == 1 {
		if e, ok := f.Stmts[0].(*syntax.ExprStmt); ok {
			v, err := starlark.EvalExprOptions(chunkOptions, thread, e.X, s.globals)
			if err != nil {
				return nil, withPythonHint(src, s.hint(f, err, convert(err, s.ls.loc)))
			}
			return v, nil
		}
	}
	if err := starlark.ExecREPLChunk(f, thread, s.globals); err != nil {
		return nil, withPythonHint(src, s.hint(f, err, convert(err, s.ls.loc)))
	}
	return nil, nil
}

// hint suggests the nearest name for "undefined: NAME": the resolver knows
// a chunk's own names only, not the session's.
func (s *Session) hint(f *syntax.File, cause error, err *graphir.Error) *graphir.Error {
	var rerrs resolve.ErrorList
	if errors.As(cause, &rerrs) && !strings.Contains(rerrs[0].Msg, "(did you mean") {
		before := map[string]bool{}
		for name, v := range s.globals {
			if stdlib.IsLengthBounded(name) && v == builtins.Predeclared()[name] {
				continue // the universe's builtin, bounded: a hint lists it as such
			}
			_, isStep := v.(*builtins.Step)
			before[name] = isStep
		}
		if h, _ := undefinedHintWith(f, rerrs, before); h != "" {
			err.Hint = h
			return err
		}
	}
	if name, ok := strings.CutPrefix(err.Msg, "undefined: "); ok && err.Hint == "" {
		if n := spell.Nearest(name, s.Names()); n != "" {
			err.Hint = fmt.Sprintf("did you mean %q?", n)
		}
	}
	return err
}

// Graph returns a frozen snapshot of the session's flow, as [Load] would
// return it: until= names are resolved against the session's globals and
// its modules, and literal child flows are read afresh. Like the end of a
// load, it freezes the values of the globals (a list bound to a global can
// no longer be changed), so that runs may share them.
func (s *Session) Graph() *graphir.Graph {
	s.globals.Freeze()
	for _, n := range s.l.b.Nodes() {
		if n.Loop != nil && n.Loop.UntilName != "" {
			n.Loop.Until, n.Loop.UntilBad = nil, ""
		}
	}
	s.ls.children = map[string]*child{}
	files := len(s.l.files)
	g := s.l.finish(s.file, s.Globals(), nil, false)
	g.Files = append([]string(nil), g.Files...)
	s.l.files = s.l.files[:files]
	return g
}

// Globals returns the globals the user's code defined (or redefined), not
// the predeclared names.
func (s *Session) Globals() starlark.StringDict {
	pre := builtins.Predeclared()
	user := starlark.StringDict{}
	for k, v := range s.globals {
		if p, ok := pre[k]; ok && p == v {
			continue
		}
		user[k] = v
	}
	return user
}

// Lookup returns the value of a global, predeclared or the user's, or nil.
func (s *Session) Lookup(name string) starlark.Value { return s.globals[name] }

// StepNames returns the names of the steps declared so far, in
// declaration order.
func (s *Session) StepNames() []string {
	var names []string
	for _, n := range s.l.b.Nodes() {
		if n.IsStep() {
			names = append(names, n.Name)
		}
	}
	return names
}

// Names returns every name a chunk can use: the predeclared ones, the
// Starlark builtins and the user's globals, sorted, for completion.
func (s *Session) Names() []string {
	seen := map[string]bool{}
	var names []string
	for _, d := range []starlark.StringDict{s.globals, starlark.Universe} {
		for k := range d {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	return names
}
