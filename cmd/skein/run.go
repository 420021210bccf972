package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

type runOptions struct {
	inputFlags
	parallel int
	timeout  time.Duration
	json     bool
	events   bool
	root     string
}

func init() {
	register(&command{
		name:    "run",
		args:    "FLOW [--input k=v]... [--inputs-file F] [--parallel N] [--timeout D] [--json] [--events]",
		summary: "check a flow, then run it",
		long: fmt.Sprintf(`Checks the flow first: errors are printed and nothing runs (exit 2); warnings
are printed to stderr and the run goes ahead. Inputs are given with --input
name=value (the value is JSON when it parses as JSON, else a string) or as a
JSON object in --inputs-file; --input wins over the file.

On a terminal the run shows live progress and a summary; when stdout is not a
terminal it prints plain lines. --json prints only the result object at the
end; --events prints one JSON object per event per line as the run goes.
Ctrl-C cancels the run: running tasks are signalled and waited for.

--parallel bounds the task, shell and child-flow steps running at once
(default %d: such steps mostly wait on processes). With --parallel 1 the path
is the same on every run.

Exit status: 0 succeeded, 1 failed or cancelled, 2 usage, load or check errors.`, vm.DefaultParallel),
		flags: func(fs *pflag.FlagSet) any {
			o := &runOptions{}
			o.inputFlags.define(fs, "")
			fs.IntVarP(&o.parallel, "parallel", "p", 0, fmt.Sprintf("task, shell and child-flow steps run at once (default %d)", vm.DefaultParallel))
			fs.DurationVar(&o.timeout, "timeout", 0, "stop the run after this long (overrides the flow's timeout)")
			fs.BoolVar(&o.json, "json", false, "print only the result, as JSON, when the run ends")
			fs.BoolVar(&o.events, "events", false, "print one JSON object per event per line as the run goes")
			fs.StringVar(&o.root, "root", "", "flow root that load() and child flows may not leave (default: the flow's directory)")
			return o
		},
		run: runRun,
	})
}

func runRun(ctx context.Context, io stdio, o any, args []string) int {
	opts := o.(*runOptions)
	if len(args) != 1 {
		fmt.Fprintln(io.err, "skein run: want exactly one flow\nusage: skein run FLOW [--input k=v]... [--json] [--events]")
		return exitUsage
	}
	if opts.parallel < 0 {
		fmt.Fprintln(io.err, "skein run: --parallel must be at least 1")
		return exitUsage
	}
	g, ok := loadForRun(io, args[0], opts.root)
	if !ok {
		return exitUsage
	}
	given, err := opts.inputFlags.parse()
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitUsage
	}
	inputs, err := vm.BindInputs(g, given)
	if err != nil {
		printInputError(io.err, err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	vopts := vm.Options{Parallel: opts.parallel, Timeout: opts.timeout, LoadFlow: loadChild}
	var prog *progress
	switch {
	case opts.events:
		enc := newEventWriter(io.out)
		vopts.OnEvent = enc.write
		defer enc.close()
	case !opts.json:
		prog = newProgress(io.out, isTerminal(io.out))
		vopts.OnEvent = prog.event
		prog.start()
	}
	res := vm.Prepare(g).Run(ctx, inputs, vopts)
	if prog != nil {
		prog.stop()
		prog.summary(res)
	}
	if opts.json {
		if err := res.WriteJSON(io.out, "  "); err != nil {
			fmt.Fprintf(io.err, "skein run: cannot encode the result: %v\n", err)
			return exitFail
		}
	}
	if res.Status != vm.Succeeded {
		return exitFail
	}
	return exitOK
}

// loadForRun loads and checks a flow for running: load and check errors are
// printed and refuse the run; warnings are printed and do not.
func loadForRun(io stdio, file, root string) (*graphir.Graph, bool) {
	g, ds := loadAndCheck(file, root)
	if errs, _ := check.Count(ds); errs > 0 || g == nil {
		check.WriteText(io.err, ds)
		fmt.Fprintf(io.err, "skein: %s not run: it has %s\n", file, plural(errs, "error"))
		return nil, false
	}
	check.WriteText(io.err, ds)
	return g, true
}

// loadChild loads and checks a child flow that a templated flow= path names
// at run time, inside the parent's flow root.
func loadChild(_ context.Context, path, root string) (*graphir.Graph, error) {
	g, ds := loadAndCheck(path, root)
	for _, d := range ds {
		if d.Severity == check.Error {
			return nil, fmt.Errorf("%s", d.String())
		}
	}
	return g, nil
}

// inputFlags are --input and --inputs-file, shared by run and watch.
type inputFlags struct {
	inputs     []string
	inputsFile string
}

// define adds the flags to fs; purpose ends their help (" for --run").
func (f *inputFlags) define(fs *pflag.FlagSet, purpose string) {
	fs.StringArrayVarP(&f.inputs, "input", "i", nil, "an input as name=value"+purpose+" (repeatable)")
	fs.StringVar(&f.inputsFile, "inputs-file", "", "a JSON file with an object of inputs"+purpose)
}

// parse reads --inputs-file, then applies each --input name=value.
// Values are JSON when they parse as JSON, else strings.
func (f *inputFlags) parse() (map[string]starlark.Value, error) {
	pairs, file := f.inputs, f.inputsFile
	given := map[string]starlark.Value{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--inputs-file: %v", err)
		}
		v, err := stdlib.FromJSON(data)
		if err != nil {
			return nil, fmt.Errorf("--inputs-file %s: not valid JSON: %v", file, err)
		}
		m, ok := v.(*stdlib.Map)
		if !ok {
			return nil, fmt.Errorf("--inputs-file %s: want a JSON object, got %s", file, v.Type())
		}
		for _, k := range m.Keys() {
			given[k], _ = m.Lookup(k)
		}
	}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--input %q: want name=value", p)
		}
		given[name] = inputValue(value)
	}
	return given, nil
}

// inputValue parses an --input value: JSON if it is JSON, else the string.
func inputValue(s string) starlark.Value {
	if v, err := stdlib.FromJSON([]byte(s)); err == nil {
		return v
	}
	return starlark.String(s)
}

func printInputError(w io.Writer, err error) {
	var ge *graphir.Error
	if errors.As(err, &ge) {
		fmt.Fprintf(w, "skein run: %s\n", ge.Msg)
		if ge.Hint != "" {
			fmt.Fprintf(w, "    hint: %s\n", ge.Hint)
		}
		return
	}
	fmt.Fprintf(w, "skein run: %v\n", err)
}

// eventWriter prints events as JSON lines through one buffer, flushed on
// a short tick, at once when a step fails or retries, and at the end.
// Child flows report from their own goroutines, so writes are serialized.
type eventWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	buf   []byte // reused for each event
	flush *flusher
}

func newEventWriter(w io.Writer) *eventWriter {
	e := &eventWriter{w: bufio.NewWriterSize(w, 64<<10)}
	e.flush = startFlusher(flushEvery, func() {
		e.mu.Lock()
		e.w.Flush()
		e.mu.Unlock()
	})
	return e
}

func (e *eventWriter) write(ev vm.Event) {
	e.mu.Lock()
	e.buf = append(ev.AppendJSON(e.buf[:0]), '\n')
	e.w.Write(e.buf)
	if mustShow(&ev) {
		e.w.Flush()
	}
	e.mu.Unlock()
}

// close stops the tick and flushes what is left.
func (e *eventWriter) close() {
	e.flush.stop()
	e.mu.Lock()
	e.w.Flush()
	e.mu.Unlock()
}

// mustShow reports whether an event is one a person must see at once: a
// step failed or is being retried, or the run ended.
func mustShow(ev *vm.Event) bool {
	switch ev.Type {
	case vm.StepRetrying, vm.RunFinished:
		return true
	case vm.StepFinished:
		return ev.Status != string(vm.StepSucceeded)
	}
	return false
}

// flushEvery is how often buffered run output is flushed (and a terminal's
// live block redrawn): 20 times a second.
const flushEvery = 50 * time.Millisecond

// flusher calls a function on a tick until stopped.
type flusher struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func startFlusher(every time.Duration, fn func()) *flusher {
	f := &flusher{done: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-f.done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return f
}

// stop ends the tick; fn is not running when it returns.
func (f *flusher) stop() {
	close(f.done)
	f.wg.Wait()
}

// valueText renders a flow value for people: strings as they are, anything
// else as compact JSON, cut to max runes.
func valueText(v starlark.Value, max int) string {
	var s string
	if str, ok := v.(starlark.String); ok {
		s = string(str)
	} else if g, err := stdlib.ToGo(v); err == nil {
		b, _ := json.Marshal(g)
		s = string(b)
	} else {
		s = v.String()
	}
	s = strings.TrimRight(s, "\n")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
