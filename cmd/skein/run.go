package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/temporal/limits"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/store"
)

type runOptions struct {
	inputFlags
	engineFlags
	limitFlags
	outputFlags
	recordFlags
	cassetteFlags
	detach bool
	// heartbeat is --heartbeat-timeout, for --engine temporal.
	heartbeat time.Duration
	root      string
	fs        *pflag.FlagSet // to tell a flag given as 0 from one not given
	noPrompt  bool
	dryRun    bool
	mocks     []string
	// model is --model, as parseModelFlag returns it.
	model string
	// prune is --prune: drop from the cassette what the run did not use.
	prune bool
	// by is --by: who starts the run, as recorded.
	by string
}

func init() {
	register(&command{
		name:    "run",
		args:    "FLOW [--input k=v]... [--inputs-file F] [--parallel N] [--timeout D] [--json | --events] [--cassette F [--replay-only | --prune] | --model stub[:F]] [--max-tokens N]",
		summary: "check a flow, then run it",
		long: fmt.Sprintf(`Checks the flow first: errors are printed and nothing runs (exit 2); warnings
are printed to stderr and the run goes ahead. Inputs are given with --input
name=value, converted by the input's declared type (a string input keeps the
text exactly, an int input must be an int, list and dict inputs are JSON, an
input of type any is JSON when it parses as JSON, else the text), or as a
JSON object in --inputs-file whose values must already have the types;
--input wins over the file. 'skein run FLOW --help' lists the flow's inputs.

On a terminal the run shows live progress and a summary; when stdout is not a
terminal it prints plain lines. --json prints only the result object at the
end (for a flow that does not load or check, or inputs that do not fit, an
object with "status": "invalid" and the diagnostics of check --json);
--events prints one JSON object per event per line as the run goes.
Ctrl-C cancels the run: running tasks are signalled and waited for. The
flow's exit handler (flow(on_exit=...)) then runs with 30s of grace; a
second Ctrl-C stops it.

--parallel bounds the task, shell and model-call steps running at once in
the whole run, child flows included (default %d: such steps mostly wait on
processes); a child-flow step waiting for its child holds no slot. With
--parallel 1 the path is the same on every run: nothing starts while
anything runs, fn steps included, so a fn step racing a sleep waits for it.

An approve= step asks on the terminal; otherwise (or with --no-prompt) the
run parks once nothing else can progress, prints the skein approve command
that decides it, and exits 3.

Model steps (llm=, LLM routers, judge()) call the model their model()
declaration names, or $SKEIN_MODEL at $SKEIN_BASE_URL (else $OPENAI_BASE_URL,
else OpenAI's) with the key from $OPENAI_API_KEY; a flow whose models cannot
be called is refused before it starts (exit 2), naming the variable to set.
--cassette FILE records every model exchange into FILE the first time and
answers from it afterwards; with --replay-only a request missing from it
fails the run (replay_miss) and no key or server is needed; with --prune,
a run that succeeds drops from it the exchanges it did not use. --model stub
answers every model call with Skein's built-in offline model instead
(--model stub:FILE with the rules it answers from), for writing and
trying a flow before any provider is set up. --max-tokens
bounds the tokens the run's model calls may spend, child flows included
(budget_exceeded), overriding flow(max_tokens=).

Exit status: 0 succeeded, 1 failed or cancelled, 2 usage, load or check
errors, 3 waiting for an approval.`, vm.DefaultParallel),
		flags: withOptions(func(fs *pflag.FlagSet, o *runOptions) {
			o.fs = fs
			o.inputFlags.define(fs, "")
			o.limitFlags.define(fs, false)
			o.outputFlags.define(fs)
			fs.StringVar(&o.root, "root", "", "flow root that load() and child flows may not leave (default: the flow's directory)")
			fs.StringVar(&o.by, "by", "", "who starts the run, as recorded (default $SKEIN_USER, else $USER, else $LOGNAME)")
			o.recordFlags.define(fs, "the run", "$SKEIN_STORE, else .skein/runs.db at or above the flow root")
			fs.BoolVar(&o.noPrompt, "no-prompt", false, "never ask for approvals on the terminal: park the run instead (exit 3)")
			fs.BoolVar(&o.dryRun, "dry-run", false, "execute no effect: tasks, shells, child flows, model calls, approvals and waits succeed with empty output and print what they would do (not recorded)")
			fs.StringArrayVar(&o.mocks, "mock", nil, "with --dry-run, STEP=ok, STEP=fail or STEP=OUTPUT (a task's stdout; JSON or text for other steps): the outcome of that step's effects (repeatable)")
			o.cassetteFlags.define(fs, cassetteHelp, replayOnlyHelp)
			fs.StringVar(&o.model, "model", "", modelHelp)
			fs.BoolVar(&o.prune, "prune", false, "with --cassette: once the run has succeeded, drop the exchanges it did not use (what the flow no longer asks)")
			o.engineFlags.define(fs)
			fs.BoolVar(&o.detach, "detach", false, "with --engine temporal, print the run's workflow id and return without waiting")
			fs.DurationVar(&o.heartbeat, "heartbeat-timeout", limits.DefaultHeartbeatTimeout, "with --engine temporal, how long a running task may go without a heartbeat before its worker counts as lost and the task runs again on another")
		}, runRun, runHelp),
	})
}

// runHelp lists the inputs of the flow named before --help.
func runHelp(sio stdio, opts *runOptions, args []string) int {
	if len(args) == 0 {
		return exitOK
	}
	f := frontend.Load(args[0], frontend.Options{Root: opts.root})
	if f.Graph == nil {
		fmt.Fprintf(sio.err, "skein run: cannot list the inputs of %s:\n", args[0])
		check.WriteText(sio.err, f.Diagnostics)
		return exitUsage
	}
	writeInputs(sio.out, f.Graph)
	return exitOK
}

// writeInputs lists a flow's inputs with their types, defaults and help.
func writeInputs(w io.Writer, g *graphir.Graph) {
	if len(g.Inputs) == 0 {
		fmt.Fprintf(w, "\nFlow %s (%s) has no inputs.\n", g.Name, g.File)
		return
	}
	fmt.Fprintf(w, "\nInputs of flow %s (%s), given with --input NAME=VALUE:\n", g.Name, g.File)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, in := range g.Inputs {
		dflt := "required"
		if !in.Required {
			dflt = "default " + graphir.ValueString(in.Default)
		}
		help := in.Help
		if len(in.Choices) > 0 {
			var cs []string
			for _, c := range in.Choices {
				cs = append(cs, graphir.ValueString(c))
			}
			if help != "" {
				help += "; "
			}
			help += "one of " + strings.Join(cs, ", ")
		}
		if help != "" {
			help = "\t" + help
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", in.Name, in.TypeName(), dflt, help)
	}
	tw.Flush()
}

func runRun(ctx context.Context, io stdio, opts *runOptions, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(io.err, "skein run: want exactly one flow\nusage: skein run FLOW [--input k=v]... [--json | --events]")
		return exitUsage
	}
	if err := opts.limitFlags.check(opts.fs); err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitUsage
	}
	if err := opts.outputFlags.check(); err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitUsage
	}
	if err := opts.recordFlags.conflict("run"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	if err := opts.engineFlags.check("run"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	if opts.detach && opts.engine != "temporal" {
		fmt.Fprintln(io.err, "skein run: --detach needs --engine temporal")
		return exitUsage
	}
	if opts.fs.Changed("heartbeat-timeout") {
		if opts.engine != "temporal" {
			fmt.Fprintln(io.err, "skein run: --heartbeat-timeout needs --engine temporal")
			return exitUsage
		}
		if opts.heartbeat < limits.MinHeartbeatTimeout {
			fmt.Fprintf(io.err, "skein run: --heartbeat-timeout must be at least %s (tasks heartbeat every second), got %s\n", limits.MinHeartbeatTimeout, opts.heartbeat)
			return exitUsage
		}
	}
	if opts.engine == "temporal" && (opts.cassette != "" || opts.dryRun) {
		flag := "--cassette"
		if opts.dryRun {
			flag = "--dry-run"
		}
		fmt.Fprintf(io.err, "skein run: %s does not work with --engine temporal: model calls run on the workers (skein worker --cassette FILE records and replays them there)\n", flag)
		return exitUsage
	}
	if opts.replayOnly && opts.cassette == "" {
		fmt.Fprintln(io.err, "skein run: --replay-only needs --cassette FILE, the recorded exchanges to answer from")
		return exitUsage
	}
	var err error
	if opts.model, err = parseModelFlag(opts.model); err != nil {
		fmt.Fprintf(io.err, "skein run: %v\n", err)
		return exitUsage
	}
	if opts.prune && (opts.cassette == "" || opts.replayOnly) {
		fmt.Fprintln(io.err, "skein run: --prune needs --cassette FILE (and not --replay-only): it drops the exchanges a recording run did not use")
		return exitUsage
	}
	if opts.model != "" && (opts.cassette != "" || opts.engine == "temporal") {
		fmt.Fprintln(io.err, "skein run: --model stub answers every model call itself: it does not go with --cassette or --engine temporal")
		return exitUsage
	}
	lo := loadOptions(opts.root, opts.maxLoad)
	lo.Print = printTo(io.err)
	loaded := frontend.Load(args[0], lo)
	g, ds := loaded.Graph, loaded.Diagnostics
	errs, _ := check.Count(ds)
	if errs > 0 || g == nil {
		if opts.json {
			writeInvalid(io.out, args[0], ds)
		}
		check.WriteText(io.err, ds)
		fmt.Fprintf(io.err, "skein: %s not run: it has %s\n", args[0], plural(max(errs, 1), "error"))
		return exitUsage
	}
	if opts.engine == "temporal" {
		ds = check.Sort(append(ds, limits.Warnings(g, 0)...))
	}
	check.WriteText(io.err, ds)
	given, err := opts.inputFlags.parse()
	var inputs *stdlib.Map
	if err == nil {
		inputs, err = given.Bind(g)
	}
	if err != nil {
		if opts.json {
			writeInvalid(io.out, args[0], append(ds, inputDiagnostic(err)))
		}
		printInputError(io.err, err)
		return exitUsage
	}

	if opts.engine != "local" {
		ctx, exitCtx, stop := interrupts(ctx)
		defer stop()
		return runOnEngine(ctx, exitCtx, io, opts, &runs.Spec{Graph: g, Inputs: inputs, Named: loaded.Sources.ByName(), Options: opts.recorded(), Heartbeat: opts.heartbeat, Detach: opts.detach})
	}

	models, err := opts.models(g)
	if err != nil {
		if opts.json {
			writeInvalid(io.out, args[0], append(ds, check.Diagnostic{Code: codes.ModelConfig, Severity: check.Error, Message: err.Error()}))
		}
		fmt.Fprintf(io.err, "skein: %s not run: %v\n", args[0], err)
		var mce *modelConfigError
		if errors.As(err, &mce) {
			fmt.Fprint(io.err, offlineHint(args[0]))
		}
		return exitUsage
	}

	ctx, exitCtx, stop := interrupts(ctx)
	defer stop()

	spec := &runs.Spec{Graph: g, Inputs: inputs, Options: opts.recorded(), Models: models, NoDecision: noDecision}
	var dry *dryRun
	if opts.dryRun {
		var err error
		if dry, err = newDryRun(g, opts.mocks); err != nil {
			fmt.Fprintf(io.err, "skein run: %v\n", err)
			return exitUsage
		}
		spec.Effects, spec.SecretsUnread = dry.producer, true
	} else if len(opts.mocks) > 0 {
		fmt.Fprintln(io.err, "skein run: --mock needs --dry-run")
		return exitUsage
	}
	svc := &runs.Service{Load: lo}
	if !opts.noStore && dry == nil {
		st, err := openStore(opts.store, g.Root)
		if err != nil {
			fmt.Fprintf(io.err, "skein run: %v\nskein: %s not run (--no-store runs it without recording)\n", err, args[0])
			return exitFail
		}
		defer st.Close()
		svc.Store = st
	}
	prompt := newPrompter(io, opts.noPrompt)
	if prompt != nil {
		spec.Ask = prompt
	}
	spec.Sources = loaded.Sources.List()
	run, err := svc.Start(spec)
	if err != nil {
		fmt.Fprintf(io.err, "skein run: %v\nskein: %s not run (--no-store runs it without recording)\n", err, args[0])
		return exitFail
	}
	run.ExitCtx = exitCtx
	hooks := runHooks{dry: dry, prompt: prompt}
	if opts.prune {
		hooks.prune, _ = models.(*model.Cassette)
	}
	return execute(ctx, io, svc, run, hooks, opts.json, opts.events)
}

// noDecision is why an approval fails in a run without a store when
// nobody can decide it.
const noDecision = "run on a terminal, or with the run store (without --no-store) to park the run"

// execute runs run, showing progress, events or the result as asked.
func execute(ctx context.Context, io stdio, svc *runs.Service, run *runs.Run, hooks runHooks, asJSON, events bool) int {
	defer runtime.KeepAlive(heapFloor())
	dry := hooks.dry
	recorded := run.ID != ""
	var prog *progress
	switch {
	case events:
		enc := newEventWriter(io.out)
		run.OnEvent, run.Stream = enc.write, true
		defer enc.close()
	case !asJSON:
		prog = newProgress(io.out, isTerminal(io.out))
		// Model replies stream where someone watches them come.
		run.OnEvent, run.Stream = prog.event, prog.tty
		prog.start()
		if hooks.prompt != nil {
			hooks.prompt.hold = prog.hold
		}
		if dry != nil {
			dry.show = prog.note
			prog.note("dry run: no effect is executed")
		}
	}
	res, err := run.Run(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein: %v\n", err)
	}
	if prog != nil {
		prog.stop()
		prog.summary(res)
		if recorded {
			// The id skein show, logs, resume and approve take, as the
			// REPL and watch print it.
			fmt.Fprintf(io.out, "  run:    %s\n", res.RunID)
		}
	}
	if asJSON {
		if err := res.WriteJSON(io.out, "  "); err != nil {
			fmt.Fprintf(io.err, "skein: cannot encode the result: %v\n", err)
			return exitFail
		}
	}
	if recorded && res.Error != nil && res.Error.Code == codes.StoreError {
		fmt.Fprintf(io.err, "skein: run %s stopped: its record could not be written; once the store can be written again, continue it with:\n  skein resume %s\n", res.RunID, res.RunID)
	}
	if c := hooks.prune; c != nil {
		if res.Status != vm.Succeeded {
			fmt.Fprintf(io.err, "skein: cassette %s not pruned: the run did not succeed, so some of its exchanges may still be needed\n", c.Path)
		} else if n, err := c.Prune(); err != nil {
			fmt.Fprintf(io.err, "skein: %v\n", err)
		} else if n > 0 {
			fmt.Fprintf(io.err, "skein: cassette %s: dropped %s the run did not use\n", c.Path, plural(n, "exchange"))
		}
	}
	if res.Status == vm.Waiting && recorded {
		open, closed := svc.Parked(res)
		if len(open) > 0 {
			fmt.Fprintf(io.err, "run %s is waiting for a decision; decide with:\n", res.RunID)
			for _, p := range open {
				fmt.Fprintf(io.err, "  skein approve %s %s --resume\n", res.RunID, approveArg(runs.PendingPath(p), p.Step))
			}
		}
		if len(closed) > 0 {
			// skein approve decided just as the run parked (a run still
			// going takes the decision): approving again is refused.
			var decided []string
			for _, a := range closed {
				if !a.Expired.IsZero() {
					// Its timer timed it out just as the run parked.
					decided = append(decided, fmt.Sprintf("%q timed out", a.Step))
					continue
				}
				what := "rejected"
				if a.Approved {
					what = "approved"
				}
				decided = append(decided, fmt.Sprintf("%q %s by %s", a.Step, what, a.By))
			}
			fmt.Fprintf(io.err, "run %s parked, but a decision came while it went on (%s); continue it with:\n  skein resume %s\n",
				res.RunID, strings.Join(decided, ", "), res.RunID)
		}
		return exitWaiting
	}
	if res.Status != vm.Succeeded {
		return exitFail
	}
	return exitOK
}

// heapFloorSize is the floor under the collector's target while a run
// goes on (see heapFloor).
const heapFloorSize = 8 << 20

// heapFloor returns a block of heapFloorSize bytes that holds the
// collector's target above twice its size for as long as it is kept alive,
// unless the user tuned the collector ($GOGC, $GOMEMLIMIT): then nil.
//
// A run's own live data is small (a few MB for a loop of fn steps), and
// the target follows it: twice the live heap, at least 4 MB. A loop whose
// steps return dicts allocates 1.4 KB an iteration, so the collector ran
// every couple of thousand iterations, and between cycles the scavenger
// gave freed pages back to the system, to be faulted in again: a third
// of skein run's CPU time for that loop went to the collector, the
// scavenger and page faults (perf), which the VM in a long-lived process
// with a larger heap does not pay. Skein never writes the block, and
// memory new from the system is not cleared, so its pages are not
// faulted in: it costs address space, and the heap grows to some 20 MB
// before a collection instead of 4. (A larger floor cost more in page
// faults of the heap's growth than it saved in collections: 32 MB was
// slower than none for 50,000 iterations.) A run whose live data is
// large is collected at about twice it plus 16 MB.
func heapFloor() []byte {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return make([]byte, heapFloorSize)
}

// runHooks are what execute wires to the progress display: a dry run's
// notes and the approval prompt.
type runHooks struct {
	dry    *dryRun
	prompt *prompter
	// prune, when set, is the cassette --prune trims once the run has
	// succeeded.
	prune *model.Cassette
}

// newPrompter returns the approval prompt when stdin and stdout are a
// terminal and prompting is not turned off, else nil.
func newPrompter(io stdio, off bool) *prompter {
	if off || !isTerminal(io.out) {
		return nil
	}
	in, ok := io.in.(*os.File)
	if !ok || !isTerminal(in) {
		return nil
	}
	return &prompter{in: bufio.NewReader(in), out: io.out}
}

// loadOptions are the options skein loads flows with: in root (empty: each
// flow's directory), with the load-time step budget (0: the default).
func loadOptions(root string, maxSteps uint64) frontend.Options {
	return frontend.Options{Root: root, MaxSteps: maxSteps, BudgetHint: budgetHint, LeanGC: true}
}

// printTo shows a print() of a flow's load on w, after its position
// (file:line:col: text), so that it neither vanishes nor mixes with the
// command's own output (docs/language.md).
func printTo(w io.Writer) func(graphir.Pos, string) {
	return func(pos graphir.Pos, msg string) {
		fmt.Fprintf(w, "%s: %s\n", pos, msg)
	}
}

// budgetHint is the hint of a flow whose load exceeds its step budget.
const budgetHint = "a flow that generates this many steps can raise the budget with --max-load-steps"

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

// parse reads --inputs-file and collects each --input name=value: the
// file's values already have their types; the texts, which win, are
// converted by each input's declared type when the flow binds them.
func (f *inputFlags) parse() (*frontend.Inputs, error) {
	pairs, file := f.inputs, f.inputsFile
	in := &frontend.Inputs{}
	if file != "" {
		data, err := lang.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--inputs-file: %v", err)
		}
		if err := in.SetJSON(data); err != nil {
			return nil, fmt.Errorf("--inputs-file %s: %w", file, err)
		}
	}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--input %q: want name=value", p)
		}
		in.SetText(name, value)
	}
	return in, nil
}

// writeInvalid prints what run --json prints for a flow that does not
// load, does not check, or is given inputs that do not fit: the report of
// check --json with "status": "invalid" and the flow's file first, so a
// tool reading stdout always gets one object.
func writeInvalid(w io.Writer, file string, ds []check.Diagnostic) {
	var b bytes.Buffer
	check.WriteJSON(&b, ds)
	head, _ := json.Marshal(file)
	fmt.Fprintf(w, "{\n  \"status\": \"invalid\",\n  \"file\": %s,%s", head, strings.TrimPrefix(b.String(), "{"))
}

// inputDiagnostic turns an input error into a diagnostic for writeInvalid.
func inputDiagnostic(err error) check.Diagnostic {
	d := check.Diagnostic{Code: codes.BadInput, Severity: check.Error, Message: err.Error()}
	var ge *graphir.Error
	if errors.As(err, &ge) {
		d.Message, d.Hint, d.Pos = ge.Msg, ge.Hint, ge.Pos
		if ge.Code != "" {
			d.Code = ge.Code
		}
	}
	return d
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
	w     *runOutput
	buf   []byte // reused for each event
	enc   vm.EventEncoder
	flush *flusher
}

func newEventWriter(w io.Writer) *eventWriter {
	e := &eventWriter{w: newRunOutput(w)}
	e.flush = startFlusher(flushEvery, func() {
		e.mu.Lock()
		e.w.Flush()
		e.mu.Unlock()
	})
	return e
}

func (e *eventWriter) write(ev *vm.Event) {
	e.mu.Lock()
	e.buf = append(e.enc.Append(e.buf[:0], ev), '\n')
	e.w.Write(e.buf)
	if mustShow(ev) {
		e.w.sync()
	}
	e.mu.Unlock()
}

// close stops the tick and flushes what is left.
func (e *eventWriter) close() {
	e.flush.stop()
	e.mu.Lock()
	e.w.sync()
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
	} else if b, err := stdlib.AppendJSON(nil, v, "", 0); err == nil {
		s = string(b)
	} else {
		s = v.String()
	}
	s = strings.TrimRight(s, "\n")
	// Only the runes shown are decoded: an output can be tens of
	// megabytes, and four bytes a rune of all of it is more.
	if len(s) > max*utf8.UTFMax {
		s = s[:max*utf8.UTFMax+1]
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// interrupts returns a context that the first SIGINT or SIGTERM cancels
// (the run stops; its exit handler gets its grace period) and one that the
// second cancels (the exit handler stops at once). A SIGHUP (the terminal
// was closed) counts as one too, so that the run ends cancelled and its
// exit handler runs instead of skein dying on the spot, unless SIGHUP is
// ignored (nohup), which it leaves so.
func interrupts(parent context.Context) (run, exit context.Context, stop func()) {
	run, exit, next, stopCtx := twoStage(parent)
	sigs := make(chan os.Signal, 2)
	stopping := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		stopping = append(stopping, syscall.SIGHUP)
	}
	signal.Notify(sigs, stopping...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				next()
			case <-done:
				return
			}
		}
	}()
	return run, exit, func() {
		signal.Stop(sigs)
		close(done)
		stopCtx()
	}
}

// recorded are the options recorded with the run, which a resume reuses.
func (o *runOptions) recorded() store.RunOptions {
	ro := store.RunOptions{Parallel: o.parallel, Timeout: o.timeout, MaxLoadSteps: o.maxLoad, MaxTokens: o.maxTokens, ReplayOnly: o.replayOnly, Model: o.model, By: o.by}
	if ro.By == "" {
		ro.By = envUser()
	}
	if o.cassette != "" {
		ro.Cassette = confine.Abs(o.cassette)
	}
	return ro
}

// models returns what answers the run's model calls: the cassette when one
// is given (recording through a live client unless --replay-only), else nil
// for the VM's own client. Without --replay-only every model the flow calls
// must be usable before the run starts.
func (o *runOptions) models(g *graphir.Graph) (model.Provider, error) {
	if o.model != "" {
		return openStub(o.model)
	}
	if !o.replayOnly && !o.dryRun {
		if err := vm.CheckModels(g, os.Environ()); err != nil {
			return nil, &modelConfigError{err}
		}
	}
	return o.cassetteFlags.open()
}

// modelConfigError is a model the flow cannot call as configured.
type modelConfigError struct{ err error }

func (e *modelConfigError) Error() string { return e.err.Error() }

// offlineHint says how to run flow without a key: its cassette, when
// one sits where the examples keep theirs (cassettes/NAME.json beside
// it), and the offline stub model.
func offlineHint(flow string) string {
	var b strings.Builder
	base := strings.TrimSuffix(filepath.Base(flow), filepath.Ext(flow))
	tape := filepath.Join(filepath.Dir(flow), "cassettes", base+".json")
	if fi, err := os.Stat(tape); err == nil && fi.Mode().IsRegular() {
		fmt.Fprintf(&b, "  or replay its recorded answers: skein run %s --cassette %s --replay-only\n", flow, tape)
	}
	fmt.Fprintf(&b, "  or try it with Skein's offline model, no key needed: skein run %s --model stub (docs/models.md#the-offline-stub-model)\n", flow)
	return b.String()
}
