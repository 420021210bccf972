package main

// This file defines `skein watch` (docs/cli.md): reload and re-check a flow on
// every save, show what changed in its graph, and with --run run it again.
//
// Editors save in many ways (write in place, write a temporary file and
// rename it over, delete and recreate), so the watcher watches the
// directories of the files a load read, not the files, and reacts to any
// event naming one of them. The set is recomputed after every load, so a
// new load() is picked up and a dropped one is let go.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/flowtest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/store"
)

// defaultDebounce is how long the files must stay quiet before a reload:
// one save is often several events (truncate, write, rename, chmod).
const defaultDebounce = 100 * time.Millisecond

type watchFlags struct {
	run  bool
	test bool
	inputFlags
	recordFlags
	root     string
	noPrompt bool
}

func init() {
	register(&command{
		name:    "watch",
		args:    "FLOW [--run] [--input k=v]...",
		summary: "reload and re-check a flow on every change",
		long: `Loads and checks the flow, then again whenever it, a module it loads or a
child flow it names is saved (editors that save by renaming are seen; a
newly added load() is watched from the next reload on). Each reload prints
the diagnostics, or one line with the steps, edges and time taken, followed
by what changed in the graph since the last load without errors (+ added,
- removed, ~ changed).

On a terminal the screen is cleared before each reload; when stdout is not
a terminal the reports are appended.

With --run, a flow that checks without errors is then run with live
progress; a change during a run cancels it (its processes included) and
starts it again after the re-check. Inputs are given as for 'skein run', and
the flow's models are checked before each run as skein run checks them.
Each run is its own run in the run store, recorded as skein run's are
(--store, --no-store), its id printed after its summary. An approval is
asked inline when stdin is a terminal: y approves, n rejects and asks for an
optional reason (n REASON gives it at once), recorded as skein approve
records it. Otherwise, or with --no-prompt, the run parks and the report
says how to decide it (skein approve RUN STEP --resume).

Ctrl-C stops watching (exit status 0). A run cancelled by Ctrl-C or by a
save gives its exit handler (flow(on_exit=)) 30s, as skein run does; a
Ctrl-C meanwhile stops the handler at once.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *watchFlags) {
			fs.BoolVar(&o.run, "run", false, "run the flow after each clean check")
			fs.BoolVar(&o.test, "test", false, "run the flow's tests (FLOW_test.star) after each clean check, and on changes to them")
			o.inputFlags.define(fs, " for --run")
			fs.StringVar(&o.root, "root", "", "flow root that load() and child flows may not leave (default: the flow's directory)")
			o.recordFlags.define(fs, "--run's runs", "as skein run")
			fs.BoolVar(&o.noPrompt, "no-prompt", false, "never ask for approvals on the terminal: park the run instead")
		}, runWatch, nil),
	})
}

func runWatch(ctx context.Context, sio stdio, opts *watchFlags, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(sio.err, "skein watch: want exactly one flow\nusage: skein watch FLOW [--run] [--input k=v]...")
		return exitUsage
	}
	if err := opts.recordFlags.conflict("watch"); err != nil {
		fmt.Fprintln(sio.err, err)
		return exitUsage
	}
	if _, err := os.Stat(args[0]); err != nil {
		fmt.Fprintf(sio.err, "skein watch: %v\n", err)
		return exitUsage
	}
	given, err := opts.inputFlags.parse()
	if err != nil {
		fmt.Fprintf(sio.err, "skein watch: %v\n", err)
		return exitUsage
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	cfg := watchConfig{
		file: args[0], root: opts.root, run: opts.run, test: opts.test, inputs: given, store: opts.store, noStore: opts.noStore,
		out: sio.out, err: sio.err, tty: isTerminal(sio.out), debounce: defaultDebounce, interrupts: sigs,
	}
	if in, ok := sio.in.(*os.File); ok && !opts.noPrompt && isTerminal(in) {
		cfg.answers = fdLine(int(in.Fd()))
	}
	if err := watch(ctx, cfg); err != nil {
		fmt.Fprintf(sio.err, "skein watch: %v\n", err)
		return exitFail
	}
	return exitOK
}

// watchConfig is what [watch] needs: the flow, what to do after a load and
// where to print.
type watchConfig struct {
	file     string
	root     string
	run      bool
	test     bool // run FLOW_test.star after each clean check
	inputs   *frontend.Inputs
	store    string // --store; "" for the default place
	noStore  bool
	out, err io.Writer
	tty      bool          // clear the screen before each report
	debounce time.Duration // quiet time before a reload
	reported func()        // if set, called after each report (for tests)
	// interrupts are Ctrl-Cs: the first stops watching, and one while a
	// cancelled run ends stops its exit handler at once.
	interrupts <-chan os.Signal
	// answers reads approval decisions; nil parks runs on approvals.
	answers lineReader
}

// watcher is the state of one watch.
type watcher struct {
	cfg   watchConfig
	fsw   *fsnotify.Watcher
	files map[string]bool // absolute paths the last load read or tried to
	good  *graphir.Graph  // the last graph without errors

	// The sources the last load read, recorded with its runs.
	sources []store.Source

	// The run in progress, if any: cancelRun stops it, cancelExit stops
	// its exit handler's grace; hasExit says it has an exit handler.
	cancelRun  context.CancelFunc
	cancelExit context.CancelFunc
	hasExit    bool
	runDone    chan struct{}
	prog       *progress // the run's, for notes above it
}

// watch loads and checks cfg.file, then again after every change to the
// files the load read, until ctx is done. It returns once any run it
// started has ended and its processes are gone.
func watch(ctx context.Context, cfg watchConfig) error {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fsw.Close()
	w := &watcher{cfg: cfg, fsw: fsw}
	defer w.stopRun()

	w.reload(ctx, nil)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	changed := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-cfg.interrupts:
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod || !w.interesting(ev.Name) {
				continue
			}
			changed[ev.Name] = true
			timer.Reset(cfg.debounce)
		case err, ok := <-fsw.Errors:
			if !ok {
				return nil
			}
			fmt.Fprintf(cfg.err, "skein watch: %v\n", err)
		case <-timer.C:
			names := make([]string, 0, len(changed))
			for name := range changed {
				names = append(names, name)
			}
			changed = map[string]bool{}
			w.reload(ctx, names)
		}
	}
}

// interesting reports whether an event on path concerns the flow: path is
// a file the load read, or a directory on the way to one (created, removed
// or renamed as a whole).
func (w *watcher) interesting(path string) bool {
	path = filepath.Clean(path)
	if w.files[path] {
		return true
	}
	for f := range w.files {
		if strings.HasPrefix(f, path+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// reload stops any run, loads and checks the flow, prints the report,
// watches the directories of the files read, and starts a run if asked.
func (w *watcher) reload(ctx context.Context, changed []string) {
	w.stopRun()
	start := time.Now()
	read := map[string]bool{}
	record := func(name string) { read[confine.Abs(name)] = true }
	record(w.cfg.file)
	if w.cfg.test {
		record(testFileOf(w.cfg.file))
	}
	loaded := frontend.Load(w.cfg.file, frontend.Options{Root: w.cfg.root, ReadFile: func(name string) ([]byte, error) {
		record(name) // watched even when it cannot be read
		return lang.ReadFile(name)
	}})
	g, ds := loaded.Graph, loaded.Diagnostics
	took := time.Since(start)
	w.files = read
	w.watchDirs()

	out := w.cfg.out
	if w.cfg.tty {
		fmt.Fprint(out, "\x1b[H\x1b[2J")
	}
	fmt.Fprintf(out, "%s %s\n", paint(useColor(w.cfg.tty), "2", "["+start.Format("15:04:05")+"]"), w.what(changed))
	check.WriteText(out, ds)
	errs, warns := check.Count(ds)
	if errs > 0 {
		fmt.Fprintf(out, "%s %s: %s, checked in %s\n", paint(useColor(w.cfg.tty), "1;31", "FAIL"), w.cfg.file, countText(errs, warns), briefDuration(took))
		if w.cfg.run || w.cfg.test {
			fmt.Fprintln(out, "not run: waiting for the errors to be fixed")
		}
		w.done()
		return
	}
	counts := fmt.Sprintf("%s, %s", plural(len(g.Steps()), "step"), plural(len(g.Edges), "edge"))
	if warns > 0 {
		counts += ", " + plural(warns, "warning")
	}
	fmt.Fprintf(out, "%s  %s: %s, checked in %s\n", paint(useColor(w.cfg.tty), "1;32", "ok"), w.cfg.file, counts, briefDuration(took))
	if w.good != nil {
		if d := graphir.Diff(w.good, g); d.Empty() {
			fmt.Fprintln(out, paint(useColor(w.cfg.tty), "2", "  graph unchanged"))
		} else {
			fmt.Fprint(out, d.String())
		}
	}
	w.good = g
	w.sources = loaded.Sources.List()
	if w.cfg.test {
		w.runTests(ctx)
	}
	w.done()
	if w.cfg.run {
		w.startRun(ctx, g)
	}
}

// testFileOf is the test file of a flow: build.star -> build_test.star.
func testFileOf(flow string) string {
	return strings.TrimSuffix(flow, ".star") + flowtest.Suffix
}

// runTests runs the flow's tests and prints their results, the way `skein
// test` does. A save during the tests waits for them: they are meant to
// be quick (mock the slow steps).
func (w *watcher) runTests(ctx context.Context) {
	file := testFileOf(w.cfg.file)
	if _, err := os.Stat(file); err != nil {
		fmt.Fprintf(w.cfg.out, "no tests: %s does not exist\n", file)
		return
	}
	fr := flowtest.RunFile(ctx, file, flowtest.Options{Root: w.cfg.root})
	if fr.Err != nil {
		fmt.Fprintf(w.cfg.out, "FAIL  %s  [does not load]\n    %s\n", fr.File, fr.Err.Error())
		return
	}
	writeTestText(w.cfg.out, fr, false)
}

func (w *watcher) done() {
	if w.cfg.reported != nil {
		w.cfg.reported()
	}
}

// what says why a report is printed: the first load, or the files changed.
func (w *watcher) what(changed []string) string {
	if changed == nil {
		return fmt.Sprintf("watching %s (%s)", w.cfg.file, plural(len(w.files), "file"))
	}
	wd, _ := os.Getwd()
	names := make([]string, len(changed))
	for i, c := range changed {
		names[i] = c
		if rel, ok := confine.Rel(wd, c); ok {
			names[i] = rel
		}
	}
	sort.Strings(names)
	return "changed: " + strings.Join(names, ", ")
}

func countText(errs, warns int) string {
	s := plural(errs, "error")
	if warns > 0 {
		s += ", " + plural(warns, "warning")
	}
	return s
}

// briefDuration prints a load time: 850µs, 3.1ms, 1.2s.
func briefDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// watchDirs watches the directory of every file the last load read (the
// nearest one that exists, for a file whose directory is gone) and lets go
// of the others.
func (w *watcher) watchDirs() {
	want := map[string]bool{}
	for f := range w.files {
		dir := filepath.Dir(f)
		for {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		want[dir] = true
	}
	for _, d := range w.fsw.WatchList() {
		if !want[d] {
			w.fsw.Remove(d)
		}
	}
	for d := range want {
		// Adding again is harmless, and renews a watch the kernel dropped
		// when the directory was removed and made again.
		if err := w.fsw.Add(d); err != nil {
			fmt.Fprintf(w.cfg.err, "skein watch: cannot watch %s: %v\n", d, err)
		}
	}
}

// startRun runs g in the background with progress, as `skein run` would.
func (w *watcher) startRun(ctx context.Context, g *graphir.Graph) {
	inputs, err := w.cfg.inputs.Bind(g) // a nil *Inputs gives none
	if err != nil {
		writeError(w.cfg.out, err)
		fmt.Fprintln(w.cfg.out, "not run: fix the inputs and save again")
		return
	}
	exitCtx, cancelExit := context.WithCancel(context.Background())
	sr := newSessionRun(&runSetup{out: w.cfg.out, errw: w.cfg.out, tty: w.cfg.tty, answers: w.cfg.answers, exitCtx: exitCtx,
		record: !w.cfg.noStore, store: w.cfg.store, noStoreFlag: "--no-store", file: confine.Abs(g.File), sources: w.sources}, g, inputs)
	if sr == nil {
		cancelExit()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.cancelRun, w.cancelExit, w.runDone = cancel, cancelExit, done
	w.hasExit, w.prog = g.OnExit != graphir.None, sr.prog
	res := sr.start(ctx)
	go func() {
		defer close(done)
		sr.report(<-res)
	}()
}

// stopRun cancels the run in progress and waits until it has ended, its
// processes included.
// A Ctrl-C meanwhile stops its exit handler at once.
func (w *watcher) stopRun() {
	if w.cancelRun == nil {
		return
	}
	w.cancelRun()
	select {
	case <-w.runDone:
	default:
		if w.hasExit {
			w.prog.note("stopping the run: its exit handler has up to 30s (Ctrl-C stops it)")
		}
		for waiting := true; waiting; {
			select {
			case <-w.runDone:
				waiting = false
			case <-w.cfg.interrupts:
				w.cancelExit()
			}
		}
	}
	w.cancelExit()
	w.cancelRun, w.cancelExit, w.runDone, w.prog = nil, nil, nil, nil
}
