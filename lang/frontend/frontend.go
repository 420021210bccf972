// Package frontend is the one way a flow becomes something to run: it
// loads the flow (a file, or a source text such as an editor's buffer),
// checks the frozen graph, keeps the sources the load read in the form
// the run store records them, and gives the loader of templated child
// flows and the binding of a run's inputs. The CLI, the Temporal worker
// and client, flow tests and the language server all go through it, so a
// flow loads, checks, fails and takes its inputs the same way in each.
//
// It is a package of its own beside lang rather than part of it because
// it joins what lang must not know: check (which never imports lang) and
// the VM's input binding. It knows no flags or terminals: what a caller
// says about its flags (the hint for an exceeded load budget) comes in
// through [Options].
package frontend

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
)

// Options control a load and the loads of the child flows a run names
// at run time ([Options.ChildLoader]).
type Options struct {
	// Root is the flow root: no load() or child flow may leave it. Empty
	// means the directory of the flow file.
	Root string
	// MaxSteps is the load-time step budget; 0 means lang.DefaultMaxSteps.
	MaxSteps uint64
	// MaxMemory bounds how much the heap may grow while one file runs;
	// 0 means lang.DefaultMaxMemory.
	MaxMemory uint64
	// Context, when not nil, interrupts loading when it is done.
	Context context.Context
	// ReadFile reads a file; nil means lang.ReadFile (the disk, bounded).
	// An editor passes one that serves its open buffers first; a worker
	// one that serves the sources sent with the run.
	ReadFile func(name string) ([]byte, error)
	// Remote says the files are not on this machine's disk (a worker
	// loading the sources sent with a run, through ReadFile): the flow
	// root is then not looked for on disk.
	Remote bool
	// Recorded, when not nil, are the only files a load may read: the
	// sources recorded with a run, which its resume loads again. A child
	// flow a run names that the record does not hold is read with
	// ReadFile (the run never loaded it).
	Recorded Recorded
	// Print receives print() output during loading; nil discards it.
	Print func(pos graphir.Pos, msg string)
	// BudgetHint is the hint of a load that exceeds its step budget
	// (the CLI says which flag raises it); empty gives none.
	BudgetHint string
	// LeanGC lowers the garbage collector's target while loading (see
	// gc.go): for a process that loads a flow and then runs it, such as
	// the CLI, whose peak memory is then lower. A long-lived process that
	// does other work leaves it off.
	LeanGC bool
}

// Flow is the outcome of a load: the frozen graph and the checker's
// diagnostics (errors and warnings), or, when the flow did not load, a
// nil graph and the load error as its one diagnostic.
type Flow struct {
	// File is the flow's file as given.
	File string
	// Graph is the frozen graph, nil when the flow did not load.
	Graph *graphir.Graph
	// Diagnostics are the checker's, in the checker's order (check.Sort
	// orders them for printing), or the load error.
	Diagnostics []check.Diagnostic
	// Sources are the files the load read.
	Sources *Sources
}

// Errors returns how many of the diagnostics are errors.
func (f *Flow) Errors() int {
	n, _ := check.Count(f.Diagnostics)
	if n == 0 && f.Graph == nil {
		return 1
	}
	return n
}

// Err returns nil when the flow loaded and has no errors, else an
// [*Error] with its diagnostics.
func (f *Flow) Err() error {
	if f.Errors() == 0 {
		return nil
	}
	return &Error{File: f.File, Diagnostics: f.Diagnostics}
}

// Error is a flow that does not load or check.
type Error struct {
	File        string
	Diagnostics []check.Diagnostic
}

// Error gives the first error on one line (where, what, the code) and how
// many more there are: it goes inside a step's error when a child flow
// named at run time does not load or check.
func (e *Error) Error() string {
	var first *check.Diagnostic
	n := 0
	for i := range e.Diagnostics {
		if e.Diagnostics[i].Severity == check.Error {
			if first == nil {
				first = &e.Diagnostics[i]
			}
			n++
		}
	}
	if first == nil {
		return fmt.Sprintf("flow %s does not load", e.File)
	}
	msg := first.Message + " [" + string(first.Code) + "]"
	if first.Pos.Line > 0 {
		msg = first.Pos.String() + ": " + msg
	}
	if n > 1 {
		more := "more error"
		if n > 2 {
			more += "s"
		}
		msg += fmt.Sprintf(" (and %d %s)", n-1, more)
	}
	return msg
}

// Load loads the flow in file and checks it.
func Load(file string, opts Options) *Flow {
	return load(file, nil, opts)
}

// LoadSource is [Load] with the flow's source given (an editor's buffer,
// a drafted flow), which its sources hold as read from file.
func LoadSource(file string, src []byte, opts Options) *Flow {
	if src == nil {
		src = []byte{}
	}
	return load(file, src, opts)
}

func load(file string, src []byte, opts Options) *Flow {
	if opts.LeanGC {
		defer leanGC()()
	}
	f := &Flow{File: file, Sources: &Sources{}}
	if err := rootHolds(opts, file); err != nil {
		f.Diagnostics = []check.Diagnostic{check.FromError(&graphir.Error{Code: codes.LoadError, Pos: graphir.Pos{File: file}, Msg: err.Error()})}
		return f
	}
	lo := lang.Options{Root: opts.Root, MaxSteps: opts.MaxSteps, MaxMemory: opts.MaxMemory, Print: opts.Print, Context: opts.Context,
		ReadFile: f.Sources.reader(opts.read)}
	var g *graphir.Graph
	var err error
	if src != nil {
		if len(src) <= lang.MaxFileSize { // else it is refused unread
			f.Sources.add(file, src)
		}
		g, err = lang.LoadSource(file, src, lo)
	} else {
		g, err = lang.Load(file, lo)
	}
	if err != nil {
		ge := graphir.AsError(err)
		if ge.Hint == "" && opts.BudgetHint != "" && (strings.Contains(ge.Msg, "load-time step budget") || strings.Contains(ge.Msg, "load-time budget of")) {
			ge.Hint = opts.BudgetHint
		}
		f.Diagnostics = []check.Diagnostic{check.FromError(ge)}
		return f
	}
	f.Graph = g
	f.Diagnostics = check.Graph(g)
	return f
}

// rootHolds says why a flow root given (--root) cannot be file's: it does
// not exist, is no directory, or does not hold file. (A recorded run's
// root is not asked for: its sources come from the record; nor a remote
// load's.)
func rootHolds(opts Options, file string) error {
	if opts.Root == "" || opts.Recorded != nil || opts.Remote {
		return nil
	}
	fi, err := os.Stat(opts.Root)
	switch {
	case err != nil:
		return fmt.Errorf("the flow root %q does not exist", opts.Root)
	case !fi.IsDir():
		return fmt.Errorf("the flow root %q is not a directory", opts.Root)
	}
	return confine.Check(opts.Root, file)
}

// read is where a load reads its files from.
func (o *Options) read(name string) ([]byte, error) {
	if o.Recorded != nil {
		return o.Recorded.ReadFile(name)
	}
	if o.ReadFile != nil {
		return o.ReadFile(name)
	}
	return lang.ReadFile(name)
}
