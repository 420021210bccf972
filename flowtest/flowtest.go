// Package flowtest runs flow tests: `*_test.star` files beside the flows
// they test, whose `test_*(t)` functions run flows on the real VM with
// scripted effects (mocks) and assert on the results. It also provides the
// producer of dry runs.
//
// Mocks are one more producer behind the VM's effect seam ([vm.EffectProducer]):
// fn steps, conditions, routers by expression and until functions always
// run for real, so a flow test tests the flow's logic, not a copy of it.
//
// flowtest sits above lang, check and vm (like the command line) and knows
// nothing of terminals or flags: it returns results for cmd/skein to print.
package flowtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
)

// Suffix ends the name of every test file.
const Suffix = "_test.star"

// Options controls a test run.
type Options struct {
	// Run selects the tests to run by name; nil runs them all.
	Run *regexp.Regexp
	// Root is the root test files and the flows they run may not leave;
	// empty means each test file's directory.
	Root string
	// Parallel is how many test files run at once; 0 means 4.
	Parallel int
	// Steps bounds each test function's own Starlark steps; 0 means 10
	// million.
	Steps uint64
}

// Failure is one failed assertion, error or mock problem of a test.
type Failure struct {
	Pos   graphir.Pos
	Msg   string
	Trace []string // for errors raised: the Starlark backtrace, innermost last
}

// TestResult is how one test function went.
type TestResult struct {
	File     string
	Name     string
	Pos      graphir.Pos // the def
	Duration time.Duration
	Failures []Failure
	Log      []string // what the test print()ed
}

// Passed reports whether the test had no failure.
func (r *TestResult) Passed() bool { return len(r.Failures) == 0 }

// FileResult is how one test file went: its tests in declaration order, or
// the error that kept it from running.
type FileResult struct {
	File     string
	Err      *graphir.Error // the file does not load; no test ran
	Tests    []*TestResult
	Duration time.Duration
}

// Failed counts the failed tests.
func (f *FileResult) Failed() int {
	n := 0
	for _, t := range f.Tests {
		if !t.Passed() {
			n++
		}
	}
	return n
}

// Find returns the test files named by paths: files as given, directories
// searched recursively for *_test.star (skipping hidden directories,
// node_modules and testdata). A missing path, or a file not named
// *_test.star, is an error.
func Find(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // "stat p: ..." says less than the path alone
			}
			return nil, fmt.Errorf("cannot read %s: %w", p, err)
		}
		if !st.IsDir() {
			if !strings.HasSuffix(p, Suffix) {
				// A flow given where its tests were meant: say where they are.
				msg := fmt.Sprintf("%s is not a test file (the name of one ends in %s)", p, Suffix)
				if t := strings.TrimSuffix(p, ".star") + Suffix; t != p {
					if _, err := os.Stat(t); err == nil {
						msg += "; its tests are in " + t
					}
				}
				return nil, errors.New(msg)
			}
			add(p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				name := d.Name()
				if path != p && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), Suffix) {
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RunFiles runs the test files, several at once, and returns their results
// in the order given. onDone, if set, hears of each file as it finishes
// (from any goroutine, one at a time, in the order given).
func RunFiles(ctx context.Context, files []string, opts Options, onDone func(*FileResult)) []*FileResult {
	par := opts.Parallel
	if par <= 0 {
		par = 4
	}
	results := make([]*FileResult, len(files))
	ready := make([]chan struct{}, len(files))
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			results[i] = RunFile(ctx, f, opts)
			<-sem
			close(ready[i])
		}()
	}
	for i := range files {
		<-ready[i]
		if onDone != nil {
			onDone(results[i])
		}
	}
	wg.Wait()
	return results
}

// RunFile loads one test file and runs its selected tests, each on a fresh
// thread and VM.
func RunFile(ctx context.Context, file string, opts Options) *FileResult {
	start := time.Now()
	fr := &FileResult{File: file}
	root := opts.Root
	if root == "" {
		root = filepath.Dir(file)
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		root = abs
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		fr.Err = &graphir.Error{Code: codes.LoadError, Msg: err.Error(), Pos: graphir.Pos{File: file}}
		return fr
	}
	l := &loader{root: root, cache: map[string]*loadEntry{}, display: map[string]string{absFile: file}}
	globals, gerr := l.load(nil, absFile)
	if gerr != nil {
		fr.Err = gerr
		fr.Duration = time.Since(start)
		return fr
	}
	type testFn struct {
		name string
		fn   *starlark.Function
	}
	var tests []testFn
	for name, v := range globals {
		fn, ok := v.(*starlark.Function)
		if !ok || !strings.HasPrefix(name, "test_") {
			continue
		}
		if opts.Run != nil && !opts.Run.MatchString(name) {
			continue
		}
		tests = append(tests, testFn{name, fn})
	}
	sort.Slice(tests, func(i, j int) bool {
		pi, pj := tests[i].fn.Position(), tests[j].fn.Position()
		if pi.Line != pj.Line {
			return pi.Line < pj.Line
		}
		return tests[i].name < tests[j].name
	})
	for _, tf := range tests {
		if ctx.Err() != nil {
			break
		}
		fr.Tests = append(fr.Tests, runTest(ctx, file, absFile, root, tf.name, tf.fn, &opts, l))
	}
	fr.Duration = time.Since(start)
	return fr
}

// runTest calls one test function with a fresh t.
func runTest(ctx context.Context, file, absFile, root, name string, fn *starlark.Function, opts *Options, l *loader) *TestResult {
	start := time.Now()
	p := fn.Position()
	res := &TestResult{File: file, Name: name, Pos: graphir.Pos{File: l.show(p.Filename()), Line: int(p.Line), Col: int(p.Col)}}
	if fn.NumParams() != 1 {
		res.Failures = append(res.Failures, Failure{Pos: res.Pos, Msg: fmt.Sprintf("%s must take one parameter, t; it takes %d", name, fn.NumParams())})
		return res
	}
	t := newTester(ctx, absFile, root, opts, res)
	defer t.close()
	th := &starlark.Thread{Name: name, Print: func(_ *starlark.Thread, msg string) { res.Log = append(res.Log, msg) }}
	steps := opts.Steps
	if steps == 0 {
		steps = 10_000_000
	}
	th.SetMaxExecutionSteps(steps)
	stop := context.AfterFunc(ctx, func() { th.Cancel("cancelled") })
	_, err := starlark.Call(th, fn, starlark.Tuple{t}, nil)
	stop()
	if err != nil {
		f := l.failure(err, res.Pos)
		if ctx.Err() != nil {
			// Cancelled (Ctrl-C): say so, not go.starlark.net's
			// "Starlark computation cancelled", at where the test was.
			f.Msg, f.Trace = "interrupted: the test did not finish", nil
		}
		res.Failures = append(res.Failures, f)
	}
	for i := range res.Failures {
		res.Failures[i].Pos.File = l.show(res.Failures[i].Pos.File)
	}
	res.Duration = time.Since(start)
	return res
}

// loader executes test files and the modules they load (relative paths
// inside the root, and @std modules): plain Starlark with the predeclared
// modules json, math, re and struct. Test files do not declare steps.
type loader struct {
	root    string
	cache   map[string]*loadEntry
	display map[string]string // absolute path -> as the user named it
}

type loadEntry struct {
	globals starlark.StringDict
	err     *graphir.Error
	loading bool
}

// show is how a file is named in messages: as the user gave it.
func (l *loader) show(file string) string {
	if d, ok := l.display[file]; ok {
		return d
	}
	return shownPath(file)
}

func (l *loader) load(from *starlark.Thread, file string) (starlark.StringDict, *graphir.Error) {
	if e, ok := l.cache[file]; ok {
		if e.loading {
			return nil, &graphir.Error{Code: codes.LoadError, Msg: fmt.Sprintf("load cycle through %s", l.show(file))}
		}
		return e.globals, e.err
	}
	e := &loadEntry{loading: true}
	l.cache[file] = e
	defer func() { e.loading = false }()
	var src []byte
	var err error
	if strings.HasPrefix(file, graphir.StdPrefix) {
		src, err = stdlib.StdSource(strings.TrimPrefix(file, graphir.StdPrefix))
	} else {
		src, err = lang.ReadFile(file)
	}
	if err != nil {
		e.err = lang.FileError(l.show(file), err)
		return nil, e.err
	}
	th := &starlark.Thread{Name: "load " + file, Load: func(th *starlark.Thread, module string) (starlark.StringDict, error) {
		path, err := l.resolve(file, module)
		if err != nil {
			return nil, err
		}
		g, gerr := l.load(th, path)
		if gerr != nil && gerr.Pos.Line == 0 {
			// A module that cannot be read or is a cycle: its message
			// says it all ("cannot load m.star: cannot read m.star: ..."),
			// as the flow loader words it.
			return nil, errors.New(gerr.Msg)
		}
		if gerr != nil {
			return nil, gerr
		}
		return g, nil
	}}
	th.SetMaxExecutionSteps(10_000_000)
	g, err := execFile(th, file, src)
	if err != nil {
		var se syntax.Error
		if errors.As(err, &se) {
			e.err = &graphir.Error{Code: codes.ParseError, Msg: se.Msg,
				Pos: graphir.Pos{File: l.show(se.Pos.Filename()), Line: int(se.Pos.Line), Col: int(se.Pos.Col)}}
			return nil, e.err
		}
		var rerrs resolve.ErrorList
		if errors.As(err, &rerrs) && len(rerrs) > 0 {
			// An undefined name, as skein check reports one in a flow.
			p := rerrs[0].Pos
			e.err = &graphir.Error{Code: codes.ParseError, Msg: rerrs[0].Msg,
				Pos: graphir.Pos{File: l.show(p.Filename()), Line: int(p.Line), Col: int(p.Col)}}
			return nil, e.err
		}
		ge := l.failure(err, graphir.Pos{File: l.show(file)})
		e.err = &graphir.Error{Code: codes.LoadError, Msg: ge.Msg, Pos: ge.Pos, Trace: ge.Trace}
		return nil, e.err
	}
	e.globals = g
	return g, nil
}

// resolve turns a load() name into a path: relative to the loading file,
// inside the root, or an embedded @std module.
func (l *loader) resolve(from, name string) (string, error) {
	if strings.HasPrefix(name, graphir.StdPrefix) {
		return name, nil
	}
	if filepath.IsAbs(name) {
		return "", fmt.Errorf("load(%q): absolute paths are not allowed", name)
	}
	path := filepath.Join(filepath.Dir(from), name)
	if err := confine.Check(l.root, path); err != nil {
		return "", fmt.Errorf("load(%q): %v (widen it with --root)", name, err)
	}
	return path, nil
}

// failure turns an error raised in a test (fail(), a bad call, a budget)
// into a failure at the innermost position in a user's file.
func (l *loader) failure(err error, fallback graphir.Pos) Failure {
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		f := Failure{Msg: ee.Msg, Pos: fallback}
		stack := ee.CallStack
		for i := len(stack) - 1; i >= 0; i-- {
			p := stack[i].Pos
			if p.IsValid() && p.Line > 0 && !strings.HasPrefix(p.Filename(), graphir.StdPrefix) {
				f.Pos = graphir.Pos{File: l.show(p.Filename()), Line: int(p.Line), Col: int(p.Col)}
				break
			}
		}
		for i := len(stack) - 1; i >= 0; i-- {
			p := stack[i].Pos
			if p.IsValid() && p.Line > 0 {
				f.Trace = append(f.Trace, fmt.Sprintf("%s:%d:%d: in %s", l.show(p.Filename()), p.Line, p.Col, stack[i].Name))
			}
		}
		if len(f.Trace) < 2 {
			f.Trace = nil
		}
		return f
	}
	var ge *graphir.Error
	if errors.As(err, &ge) {
		return Failure{Msg: ge.Msg, Pos: ge.Pos}
	}
	return Failure{Msg: err.Error(), Pos: fallback}
}

// execFile runs a test file as starlark.ExecFileOptions does, with the
// values one operation makes bounded (stdlib.Rewrite).
func execFile(th *starlark.Thread, file string, src []byte) (starlark.StringDict, error) {
	f, err := graphir.ParseFile(file, src, 0)
	if err != nil {
		return nil, err
	}
	stdlib.Rewrite(f)
	pre := stdlib.Predeclared()
	prog, err := starlark.FileProgram(f, pre.Has)
	if err != nil {
		return nil, err
	}
	return prog.Init(th, pre)
}
