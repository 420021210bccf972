// Package lang loads flow files (docs/language.md): it reads and parses them in the
// Skein dialect, runs their top-level code with the builtins under a step
// budget, resolves load() of relative and embedded @std modules inside the
// flow root, loads literal child flows, and returns the frozen graph. Every
// failure comes back as a *graphir.Error with the user's position and trace.
//
// lang knows nothing of checking or running a graph.
package lang

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
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
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/heapwatch"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
)

// DefaultMaxSteps is the default load-time step budget (docs/language.md).
const DefaultMaxSteps = 10_000_000

// stepTime is the wall time the load budget allows for each step of the
// step budget: 60 s for the default. The step budget counts Starlark
// steps, and some single steps take far longer than others (an insertion
// into a dict whose keys' hashes collide compares the key with every one
// before it: go.starlark.net hashes an int by its lowest 64 bits, so all
// of i << 64 collide), so a load that keeps within its steps can still
// take hours; the time budget ends it.
const stepTime = 6 * time.Microsecond

// minTime is the least time budget a small step budget gives: a budget of
// a few thousand steps is about counting steps, and a loaded machine must
// not turn it into a race with the clock.
const minTime = 10 * time.Second

// MaxChildDepth is how deep literal child flows are loaded. The checker
// reports chains deeper than 8 (subflow_depth); loading stops a little
// beyond so the report can name the chain.
const MaxChildDepth = 10

// Options controls a load.
type Options struct {
	// Root is the flow root: no load() or child flow may leave it. Empty
	// means the directory of the flow file.
	Root string
	// MaxSteps is the load-time step budget; 0 means DefaultMaxSteps.
	MaxSteps uint64
	// MaxTime bounds the wall time of loading one flow file with its
	// modules (a literal child flow has its own); 0 means 6 µs for each
	// step of the step budget (60 s for the default), and never less than
	// 10 s.
	MaxTime time.Duration
	// MaxMemory bounds how much the heap may grow while one file runs;
	// 0 means DefaultMaxMemory.
	MaxMemory uint64
	// Context, when not nil, interrupts the load when it is done (a child
	// flow a run loads while it is being cancelled).
	Context context.Context
	// ReadFile reads a file; nil means [ReadFile].
	ReadFile func(name string) ([]byte, error)
	// Print receives print() output during loading; nil discards it.
	Print func(pos graphir.Pos, msg string)
}

// maxTime returns the time budget of a load.
func (o *Options) maxTime() time.Duration {
	if o.MaxTime > 0 {
		return o.MaxTime
	}
	steps := o.MaxSteps
	if steps == 0 {
		steps = DefaultMaxSteps
	}
	if steps > uint64(math.MaxInt64/stepTime) {
		return math.MaxInt64
	}
	return max(time.Duration(steps)*stepTime, minTime)
}

func (o *Options) readFile(name string) ([]byte, error) {
	if o.ReadFile != nil {
		return o.ReadFile(name)
	}
	return ReadFile(name)
}

// Load loads the flow in file and returns its frozen graph. A parse or load
// error is returned as a *graphir.Error; a partial graph is never returned.
func Load(file string, opts Options) (*graphir.Graph, error) {
	src, err := opts.readFile(file)
	if err != nil {
		return nil, FileError(file, err)
	}
	return LoadSource(file, src, opts)
}

// LoadSource is like [Load] with the flow's source given (an editor's
// buffer, a drafted flow). The source is bounded as a file is: over
// [MaxFileSize] it is the load_error a file that size would be.
func LoadSource(file string, src []byte, opts Options) (*graphir.Graph, error) {
	if len(src) > MaxFileSize {
		return nil, FileError(file, tooBig(file))
	}
	src = dropBOM(src)
	root := opts.Root
	if root == "" {
		root = filepath.Dir(file)
	}
	s := &session{opts: opts, root: root, loc: newLocator(), children: map[string]*child{}}
	return s.loadFlow(file, src, nil)
}

// session is the state shared by a flow's load and the loads of its literal
// child flows.
type session struct {
	opts     Options
	root     string
	loc      *locator
	children map[string]*child // by cleaned path
}

type child struct {
	g   *graphir.Graph
	err *graphir.Error
}

// loader is the state of loading one flow file and its modules.
type loader struct {
	s       *session
	b       *graphir.Builder
	modules map[string]*module
	order   []*module // modules in load order
	chain   []string  // files being loaded, outermost first
	budget  uint64
	limit   time.Duration      // the time budget
	until   time.Time          // when it runs out
	used    uint64             // steps of finished threads
	active  []*starlark.Thread // threads running, outermost first
	paused  []uint64           // steps of the threads before each of active
	mem     *heapwatch.Watch   // the memory watch while a thread runs
	memStop func()
	files   []string
}

type module struct {
	file    string
	globals starlark.StringDict
	err     *graphir.Error
	loading bool
}

func (s *session) loadFlow(file string, src []byte, parents []string) (*graphir.Graph, error) {
	l := s.newLoader(file)
	main := &module{file: file, loading: true}
	l.modules[filepath.Clean(file)] = main
	globals, err := l.exec(file, src)
	main.loading = false
	if err != nil {
		return nil, err
	}
	main.globals = globals
	return l.finish(file, globals, parents, true), nil
}

// newLoader returns a loader whose builder records the flow in file.
func (s *session) newLoader(file string) *loader {
	budget := s.opts.MaxSteps
	if budget == 0 {
		budget = DefaultMaxSteps
	}
	l := &loader{s: s, modules: map[string]*module{}, budget: budget, limit: s.opts.maxTime()}
	l.until = time.Now().Add(l.limit)
	l.b = graphir.NewBuilder(file, s.root)
	l.b.Locator = s.loc
	return l
}

// finish resolves until= names against main (the flow's globals) and its
// modules, loads the literal child flows and freezes the graph. A REPL
// session calls it for every snapshot of its graph.
func (l *loader) finish(file string, main starlark.StringDict, parents []string, final bool) *graphir.Graph {
	l.resolveUntil(main)
	l.loadChildren(file, append(parents, filepath.Clean(file)))
	var g *graphir.Graph
	if final {
		g = l.b.FreezeFinal() // nothing records into this builder again
	} else {
		g = l.b.Freeze()
	}
	g.Funcs = l.funcNames(main)
	g.Files = l.files
	return g
}

// exec parses and runs one file with the builtins, returning its globals.
func (l *loader) exec(file string, src []byte) (starlark.StringDict, error) {
	l.files = append(l.files, file)
	f, err := graphir.ParseFile(file, src, syntax.RetainComments)
	if err != nil {
		if e, ok := err.(syntax.Error); ok {
			e.Pos = graphir.SyntaxErrorStart(string(src), e)
			err = e
		}
		return nil, withPythonHint(string(src), convert(err, nil))
	}
	stdlib.Rewrite(f) // bound the values one operation makes
	prog, err := starlark.FileProgram(f, builtins.Predeclared().Has)
	if err != nil {
		e := convert(err, nil)
		var rerrs resolve.ErrorList
		if errors.As(err, &rerrs) {
			// The resolver's own did-you-mean knows local names too; keep
			// it unless a step fits the place better.
			own := strings.Contains(rerrs[0].Msg, "(did you mean")
			if h, strong := undefinedHint(f, rerrs); h != "" && (strong || !own) {
				e.Hint = h
			}
		}
		return nil, withPythonHint(string(src), e)
	}
	l.s.loc.add(f)

	thread := l.newThread(file)
	l.chain = append(l.chain, file)
	pop := l.push(thread)
	stopTimer := l.watchTime(thread)
	globals, err := prog.Init(thread, builtins.Predeclared())
	stopTimer()
	pop()
	l.chain = l.chain[:len(l.chain)-1]
	l.used += thread.ExecutionSteps()
	if err != nil {
		return nil, convert(err, l.s.loc)
	}
	globals.Freeze()
	return globals, nil
}

// newThread returns a thread that runs code of file with the builtins,
// resolves its load() relative to file and stops when the budget runs out.
func (l *loader) newThread(file string) *starlark.Thread {
	thread := &starlark.Thread{Name: file, Load: l.load}
	thread.Print = func(t *starlark.Thread, msg string) {
		if l.s.opts.Print != nil {
			// The innermost frame that is the user's: print is wrapped.
			fr := t.CallFrame(1)
			for d := 2; d < t.CallStackDepth() && fr.Pos.Filename() == "<builtin>"; d++ {
				fr = t.CallFrame(d)
			}
			l.s.opts.Print(pos(fr.Pos), graphir.ClipMessage(msg))
		}
	}
	builtins.SetBuilder(thread, l.b)
	thread.SetLocal("skein.file", file)
	thread.SetMaxExecutionSteps(l.remaining())
	thread.OnMaxSteps = func(t *starlark.Thread) {
		t.Cancel(fmt.Sprintf("load-time step budget of %d steps exceeded (is there an endless or huge computation?)", l.budget))
	}
	return thread
}

// watchTime cancels thread when the load's time budget runs out, or when
// the load's context is done; stop ends the watch. A thread paused in a
// load() notices once the module's returns, whose own thread is cancelled
// at the same time.
func (l *loader) watchTime(thread *starlark.Thread) (stop func()) {
	t := time.AfterFunc(time.Until(l.until), func() {
		thread.Cancel(fmt.Sprintf("load-time budget of %s exceeded (is there an endless or huge computation? one step can take long: a dict or set of keys whose hashes collide, a big computation on huge ints)", l.limit))
	})
	ctx := l.s.opts.Context
	if ctx == nil {
		return func() { t.Stop() }
	}
	stopCtx := context.AfterFunc(ctx, func() { thread.Cancel("cancelled") })
	return func() { t.Stop(); stopCtx() }
}

// remaining returns the steps left in the budget, counting threads that are
// paused in a load().
func (l *loader) remaining() uint64 {
	used := l.used
	if n := len(l.active); n > 0 {
		used += l.paused[n-1] + l.active[n-1].ExecutionSteps()
	}
	if used >= l.budget {
		return 1
	}
	return l.budget - used
}

// load implements load() for the interpreter.
func (l *loader) load(thread *starlark.Thread, name string) (starlark.StringDict, error) {
	from, _ := thread.Local("skein.file").(string)
	path, err := l.resolve(from, name)
	if err != nil {
		return nil, err
	}
	if m, ok := l.modules[path]; ok {
		if m.loading {
			var chain []string
			start := 0
			for i, f := range l.chain {
				if filepath.Clean(f) == path {
					start = i
				}
			}
			chain = append(chain, l.chain[start:]...)
			chain = append(chain, path)
			return nil, fmt.Errorf("load cycle: %s", strings.Join(chain, " -> "))
		}
		if m.err != nil {
			return nil, &moduleError{m.err}
		}
		return m.globals, nil
	}
	m := &module{file: path, loading: true}
	l.modules[path] = m
	l.order = append(l.order, m)

	var src []byte
	if strings.HasPrefix(name, graphir.StdPrefix) {
		src, err = stdlib.StdSource(strings.TrimPrefix(name, graphir.StdPrefix))
		if err != nil {
			m.loading = false
			hint := ""
			if n := spell.Nearest(strings.TrimPrefix(name, graphir.StdPrefix), stdlib.StdNames()); n != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", graphir.StdPrefix+n)
			} else {
				var all []string
				for _, n := range stdlib.StdNames() {
					all = append(all, graphir.StdPrefix+n)
				}
				hint = " (the standard modules are " + strings.Join(all, ", ") + ")"
			}
			delete(l.modules, path)
			return nil, fmt.Errorf("no standard module %s%s", name, hint)
		}
	} else if src, err = l.s.opts.readFile(path); err != nil {
		m.loading = false
		delete(l.modules, path)
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("cannot read %s: %v", path, pe.Err)
		}
		return nil, err
	}

	// Pause the importer's budget while the module runs on its own thread.
	globals, gerr := l.exec(path, src)
	thread.SetMaxExecutionSteps(thread.ExecutionSteps() + l.remaining())
	m.loading = false
	if gerr != nil {
		m.err = convert(gerr, nil)
		return nil, &moduleError{m.err}
	}
	m.globals = globals
	return globals, nil
}

// resolve turns a load() argument into a path, refusing absolute paths and
// paths that leave the flow root.
func (l *loader) resolve(from, name string) (string, error) {
	if strings.HasPrefix(name, graphir.StdPrefix) {
		return name, nil
	}
	if name == "" {
		return "", fmt.Errorf("empty module name")
	}
	if filepath.IsAbs(name) {
		return "", fmt.Errorf("absolute path %q is not allowed: load modules relative to the flow", name)
	}
	if strings.HasPrefix(from, graphir.StdPrefix) {
		return "", fmt.Errorf("standard module %s cannot load %q", from, name)
	}
	path := filepath.Join(filepath.Dir(from), name)
	if err := l.s.confine(path); err != nil {
		return "", &graphir.Error{Msg: err.Error(), Err: err, Hint: rootHint(path)}
	}
	return path, nil
}

// rootHint says how to let a flow reach path, outside its root.
func rootHint(path string) string {
	return "load() and child flows stay inside the flow root, the main flow's directory unless --root says otherwise: widen it with --root DIR (skein check --root DIR, skein run --root DIR), DIR holding both the flow and " + filepath.Clean(path)
}

// confine refuses a path outside the flow root.
func (s *session) confine(path string) error { return confine.Check(s.root, path) }

// resolveUntil binds loop until= names to functions defined anywhere in the
// flow's modules, now that all of them have loaded.
func (l *loader) resolveUntil(main starlark.StringDict) {
	for _, n := range l.b.Nodes() {
		if n.Kind != graphir.KindLoop || n.Loop.UntilName == "" {
			continue
		}
		lp := n.Loop
		v, ok := main[lp.UntilName]
		for _, m := range l.order {
			if ok {
				break
			}
			v, ok = m.globals[lp.UntilName]
		}
		if !ok {
			continue
		}
		if f, isFn := v.(starlark.Callable); isFn {
			lp.Until = f
			lp.UntilReads = builtins.ReadsOf(l.b, f)
		} else {
			lp.UntilBad = fmt.Sprintf("%s (a %s)", lp.UntilName, v.Type())
		}
	}
}

// funcNames lists the functions defined by the flow's modules.
func (l *loader) funcNames(main starlark.StringDict) []string {
	seen := map[string]bool{}
	var names []string
	add := func(g starlark.StringDict) {
		for name, v := range g {
			if _, ok := v.(*starlark.Function); ok && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	add(main)
	for _, m := range l.order {
		add(m.globals)
	}
	sort.Strings(names)
	return names
}

// loadChildren loads the literal child flow of every subflow step and
// flow= tool, so the checker can see them; a failure is recorded on the
// step or tool.
func (l *loader) loadChildren(file string, chain []string) {
	for _, n := range l.b.Nodes() {
		sub := n.Subflow
		if n.Kind != graphir.KindSubflow || sub.Flow == nil || !sub.Flow.IsLiteral() || sub.Flow.Err != nil {
			continue
		}
		sub.ChildPath, sub.Child, sub.ChildErr = l.loadChild(file, chain, sub.Flow, n.Name)
	}
	for _, t := range l.b.Tools() {
		if t.Flow == nil {
			continue
		}
		t.ChildPath, t.Child, t.ChildErr = l.loadChild(file, chain, t.Flow, "")
	}
}

// nearFlow is the did-you-mean for a child flow rel (path from here) that
// does not exist: the nearest .star file in its folder, written as rel
// writes it, when its folder is on this machine's disk (a worker's
// sources are only those sent).
func (l *loader) nearFlow(rel, path string) string {
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".star") && !strings.HasSuffix(e.Name(), "_test.star") && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	near := spell.Nearest(filepath.Base(rel), names)
	if near == "" {
		return ""
	}
	if dir, _ := filepath.Split(rel); dir != "" {
		near = dir + near
	}
	return fmt.Sprintf("did you mean %q?", near)
}

// loadChild loads the child flow that the literal flow= template ref of
// step (or of a tool, when step is "") names: its path, its graph when it
// loaded, and why it could not be.
func (l *loader) loadChild(file string, chain []string, ref *graphir.Template, step string) (string, *graphir.Graph, *graphir.Error) {
	rel := ref.Src
	path := filepath.Join(filepath.Dir(file), rel)
	fail := func(code codes.Code, format string, args ...any) *graphir.Error {
		return &graphir.Error{Code: code, Pos: ref.Pos, Step: step, Msg: fmt.Sprintf(format, args...)}
	}
	if filepath.IsAbs(rel) {
		return path, nil, fail(codes.SubflowNotFound, "child flow %q: absolute paths are not allowed", rel)
	}
	if err := l.s.confine(path); err != nil {
		e := fail(codes.SubflowNotFound, "child flow %q: %v", rel, err)
		e.Hint = rootHint(path)
		return path, nil, e
	}
	clean := filepath.Clean(path)
	if i := indexOf(chain, clean); i >= 0 {
		cycle := append(append([]string(nil), chain[i:]...), clean)
		return path, nil, fail(codes.SubflowCycle, "flow %s reaches itself: %s", clean, strings.Join(cycle, " -> "))
	}
	if len(chain) > MaxChildDepth {
		return path, nil, fail(codes.SubflowDepth, "child flows nest deeper than %d: %s", MaxChildDepth, strings.Join(append(chain, clean), " -> "))
	}
	c, ok := l.s.children[clean]
	if !ok {
		c = &child{}
		src, err := l.s.opts.readFile(path)
		if err != nil {
			var pe *fs.PathError
			switch {
			case errors.As(err, &pe) && errors.Is(pe.Err, fs.ErrNotExist):
				c.err = &graphir.Error{Code: codes.SubflowNotFound, Msg: fmt.Sprintf("child flow %s does not exist", path), Hint: l.nearFlow(rel, path)}
			case errors.As(err, &pe):
				// A directory, say: still the step's flow= that is wrong.
				c.err = &graphir.Error{Code: codes.SubflowNotFound, Msg: fmt.Sprintf("child flow %s cannot be read: %v", path, pe.Err), Err: err}
			default:
				c.err = FileError(path, err)
			}
		} else {
			g, err := l.s.loadFlow(path, src, chain)
			if err != nil {
				c.err = convert(err, nil)
			}
			c.g = g
		}
		// A child whose load met a cycle is not cached: another parent
		// chain may reach it without one.
		if c.err == nil || c.err.Code != codes.SubflowCycle {
			l.s.children[clean] = c
		}
	}
	var cerr *graphir.Error
	if c.err != nil {
		e := *c.err
		if e.Code == codes.SubflowNotFound {
			e.Pos, e.Step = ref.Pos, step
		}
		cerr = &e
	}
	if c.g != nil {
		for _, f := range c.g.Files {
			if indexOf(l.files, f) < 0 {
				l.files = append(l.files, f)
			}
		}
	} else if indexOf(l.files, path) < 0 {
		l.files = append(l.files, path)
	}
	return path, c.g, cerr
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if filepath.Clean(y) == x {
			return i
		}
	}
	return -1
}
