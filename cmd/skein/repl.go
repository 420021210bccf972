package main

// This file defines `skein repl` (docs/cli.md): a Starlark prompt whose steps
// and edges accumulate into a flow that :check, :graph and :run work on. On
// a terminal it edits lines with github.com/peterh/liner (history, tab
// completion, Ctrl-C to drop the input); otherwise it reads plain lines, so
// a script can be piped in.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/peterh/liner"
	"github.com/spf13/pflag"
	"go.starlark.net/starlark"
	"golang.org/x/term"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

type replOptions struct {
	recordFlags
	root     string
	noPrompt bool
}

func init() {
	register(&command{
		name:    "repl",
		args:    "[FLOW]",
		summary: "an interactive prompt that builds, checks and runs a flow",
		long: fmt.Sprintf(`A Starlark prompt with the Skein builtins. Steps and edges entered accumulate
into the session's flow; an expression's value is printed; an error is printed
with its position (<stdin>:LINE:COL counts the lines entered) and the session
goes on. Compound statements (def, if, for) continue on "... " lines and end
with a blank line. With FLOW, the session starts from that file: its globals
are available, its steps are in the graph, and load() and child flows resolve
relative to it.

Commands:
%s
On a terminal: line editing, tab completion of names, step names and
commands, history kept in $XDG_STATE_HOME/skein/history (default
~/.local/state/skein/history). Ctrl-C drops the current input, or cancels
a running :run (its processes included) without leaving; a second Ctrl-C
stops its exit handler at once instead of giving it 30s; Ctrl-D exits.

:run checks the flow's models as skein run does, then records the run in the
run store as skein run does (--store, $SKEIN_STORE, else .skein/runs.db at or
above the flow root; --no-store records nothing) and prints its id, for skein
runs, show, logs and approve. An approval is asked inline: y approves, n
rejects and asks for an optional reason (n REASON gives it at once), and the
decision is recorded as skein approve records it; --no-prompt parks the run
instead. A run of a flow that was typed in (not exactly a file loaded) is
recorded, but skein resume cannot rebuild its flow.

When stdin is not a terminal, lines are read plainly and no prompt is shown,
so a session can be scripted: printf 'step("a")\n:check\n' | skein repl; an
approval's answer is then the next line.`, replCommandList()),
		flags: withOptions(func(fs *pflag.FlagSet, o *replOptions) {
			fs.StringVar(&o.root, "root", "", "flow root that load() and child flows may not leave (default: the flow's directory)")
			o.recordFlags.define(fs, ":run's runs", "$SKEIN_STORE, else .skein/runs.db at or above the flow root")
			fs.BoolVar(&o.noPrompt, "no-prompt", false, "never ask for approvals: park the run instead (it needs the store)")
		}, runRepl, nil),
	})
}

// replCommands are the : commands, for help and completion.
var replCommands = []struct{ name, args, help string }{
	{"check", "", "check the session's flow"},
	{"graph", "[dot|mermaid]", "draw the session's flow"},
	{"run", "[name=value]...", "check, then run the flow (Ctrl-C cancels the run)"},
	{"steps", "", "list the steps: name, kind, position"},
	{"show", "[STEP]", "the last run's summary, or one step's record"},
	{"drop", "STEP", "remove a step and its edges, to declare it again"},
	{"load", "FILE", "start over from FILE: its globals and steps"},
	{"reload", "", "load the last file again, fresh"},
	{"reset", "", "forget everything entered"},
	{"help", "", "show this help"},
	{"quit", "", "leave (so does Ctrl-D)"},
}

// errAbort is what reading returns when Ctrl-C drops the input.
var errAbort = liner.ErrPromptAborted

// repl is one interactive session.
type repl struct {
	ctx   context.Context
	io    stdio
	root  string
	sess  *lang.Session
	tty   bool                                // line editing on a terminal
	read  func(prompt string) (string, error) // one line, without its newline
	carry []string                            // lines read but not yet used
	// skipped counts the input lines not given to the session (blank
	// lines, commands), so that positions count every line read.
	skipped int
	sigint  chan os.Signal
	// remember adds an input to the line history (terminal only): a
	// compound statement is one entry.
	remember func(entry string)
	hist     []string   // the entries, for the history file
	last     *vm.Result // the last :run, for :show

	opts *replOptions
	// answers reads the answer to an approval: the terminal in its
	// normal mode, or the next line of a script.
	answers lineReader
	// usual puts the terminal in its usual mode for an approval's
	// question (nil without a terminal); see inlineAsker.usual.
	usual func() (restore func(), err error)
}

func runRepl(ctx context.Context, sio stdio, opts *replOptions, args []string) int {
	if len(args) > 1 {
		fmt.Fprintln(sio.err, "skein repl: want at most one flow\nusage: skein repl [FLOW]")
		return exitUsage
	}
	if err := opts.recordFlags.conflict("repl"); err != nil {
		fmt.Fprintln(sio.err, err)
		return exitUsage
	}
	r := &repl{ctx: ctx, io: sio, root: opts.root, opts: opts}
	r.sess = lang.NewSession(".", lang.Options{Root: opts.root, Print: r.print})

	// Ctrl-C outside line editing cancels what runs (a chunk, a :run);
	// while a line is edited liner sees it as a key.
	r.sigint = make(chan os.Signal, 1)
	signal.Notify(r.sigint, os.Interrupt)
	defer signal.Stop(r.sigint)

	if in, ok := sio.in.(*os.File); ok && in == os.Stdin && sio.out == os.Stdout &&
		term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(os.Stdout.Fd())) && liner.TerminalSupported() {
		r.tty = true
		// Line editing keeps the terminal in a mode of its own; an
		// approval's answer is read in the terminal's usual mode (echo,
		// erase, Ctrl-C), restored for the time of the question.
		fd := int(in.Fd())
		usual, err := term.GetState(fd)
		if err != nil {
			fmt.Fprintf(sio.err, "skein repl: %v\n", err)
			return exitFail
		}
		ln := liner.NewLiner()
		defer ln.Close()
		ln.SetCtrlCAborts(true)
		ln.SetTabCompletionStyle(liner.TabPrints)
		ln.SetWordCompleter(r.complete)
		hist := historyFile()
		r.remember = func(entry string) {
			if strings.TrimSpace(entry) == "" || len(r.hist) > 0 && r.hist[len(r.hist)-1] == entry {
				return
			}
			ln.AppendHistory(entry)
			r.hist = append(r.hist, entry)
			if len(r.hist) > liner.HistoryLimit {
				r.hist = r.hist[1:]
			}
		}
		for _, e := range readHistory(hist) {
			r.remember(e)
		}
		defer func() { writeHistory(hist, r.hist) }()
		r.read = ln.Prompt
		r.answers = fdLine(fd)
		r.usual = func() (func(), error) {
			editing, err := term.GetState(fd)
			if err != nil {
				return nil, err
			}
			if err := term.Restore(fd, usual); err != nil {
				return nil, err
			}
			return func() { term.Restore(fd, editing) }, nil
		}
		fmt.Fprintln(sio.out, "skein repl: Skein builtins are predeclared; :help lists the commands, Ctrl-D leaves")
	} else {
		// A goroutine reads the lines, so that an approval's question can
		// stop waiting for its answer (a cancelled run) and the line goes
		// to the prompt instead.
		lines := chanLines(sio.in)
		r.read = func(string) (string, error) { return lines(context.Background()) }
		r.answers = lines
	}

	if len(args) == 1 {
		r.loaded(args[0], r.sess.LoadFile(args[0]))
	}
	for {
		err := r.step()
		if err == io.EOF || errors.Is(err, errQuit) {
			break
		}
		if err != nil && err != errAbort {
			fmt.Fprintf(sio.err, "skein repl: %v\n", err)
			break
		}
	}
	if r.tty {
		fmt.Fprintln(sio.out)
	}
	return exitOK
}

// historyFile is where the line history is kept between sessions.
func historyFile() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "skein", "history")
}

// historyHeader starts a history file whose entries are escaped: a
// compound statement is one entry of several lines, kept on one line of
// the file with "\n" for its line breaks and "\\" for a backslash. A file
// without it (an older one) holds one plain line per entry.
const historyHeader = "# skein history v2"

// readHistory returns the entries of the history file at path.
func readHistory(path string) []string {
	data, err := lang.ReadFile(path)
	if path == "" || err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) == 0 || lines[0] != historyHeader {
		return lines
	}
	var out []string
	for _, l := range lines[1:] {
		var b strings.Builder
		for i := 0; i < len(l); i++ {
			if l[i] == '\\' && i+1 < len(l) {
				i++
				if l[i] == 'n' {
					b.WriteByte('\n')
				} else {
					b.WriteByte(l[i])
				}
				continue
			}
			b.WriteByte(l[i])
		}
		out = append(out, b.String())
	}
	return out
}

// writeHistory writes entries to the history file at path.
func writeHistory(path string, entries []string) {
	if path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	var b strings.Builder
	b.WriteString(historyHeader + "\n")
	esc := strings.NewReplacer("\\", "\\\\", "\n", "\\n")
	for _, e := range entries {
		b.WriteString(esc.Replace(e))
		b.WriteByte('\n')
	}
	os.WriteFile(path, []byte(b.String()), 0o600)
}

var errQuit = errors.New("quit")

// next returns the next input line: one carried over, else one read.
func (r *repl) next(prompt string) (string, error) {
	if len(r.carry) > 0 {
		line := r.carry[0]
		r.carry = r.carry[1:]
		return line, nil
	}
	return r.read(prompt)
}

// step reads and handles one input: a command, or a chunk of Starlark (a
// simple statement, or a compound one and its continuation lines).
func (r *repl) step() error {
	first, err := r.next(">>> ")
	if err != nil {
		return err
	}
	if before, after, ok := strings.Cut(first, "\n"); ok {
		// A compound statement recalled from the history: its lines, and
		// the blank line that ends it.
		first = before
		r.carry = append(append(strings.Split(after, "\n"), ""), r.carry...)
	}
	trimmed := strings.TrimSpace(first)
	switch {
	case trimmed == "":
		r.skipped++
		return nil
	case strings.HasPrefix(trimmed, ":"):
		r.skipped++
		r.remembered([]string{first})
		return r.command(trimmed)
	}

	// Let the parser say where the chunk ends, the way go.starlark.net's
	// REPL drives it from readline.
	lines := []string{first}
	var readErr error
	pending := true
	readline := func() ([]byte, error) {
		if pending {
			pending = false
			return []byte(first + "\n"), nil
		}
		line, err := r.next("... ")
		if err != nil {
			readErr = err
			return nil, err
		}
		lines = append(lines, line)
		return []byte(line + "\n"), nil
	}
	f, perr := lang.ParseChunk(readline)
	switch {
	case readErr == errAbort:
		r.skipped += len(lines)
		return nil
	case readErr != nil:
		// End of input inside a statement: run what there is, then stop.
		r.exec(lines)
		return readErr
	case perr != nil:
		r.exec(lines) // the session reports the error at its line
		return nil
	}
	if len(f.Stmts) == 0 { // a comment
		r.skipped += len(lines)
		return nil
	}
	// The parser may have read the line after the statement to see that it
	// ended: that line starts the next input.
	_, end := f.Stmts[len(f.Stmts)-1].Span()
	if n := int(end.Line); n < len(lines) {
		r.carry = append(append([]string(nil), lines[n:]...), r.carry...)
		lines = lines[:n]
	}
	r.remembered(lines)
	r.exec(lines)
	return nil
}

// remembered adds the lines of one input to the history, as one entry.
func (r *repl) remembered(lines []string) {
	if r.remember == nil {
		return
	}
	for len(lines) > 1 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	r.remember(strings.Join(lines, "\n"))
}

// exec runs a chunk of input lines in the session and prints its value or
// its error.
func (r *repl) exec(lines []string) {
	src := strings.Repeat("\n", r.skipped) + strings.Join(lines, "\n") + "\n"
	r.skipped = 0
	var v starlark.Value
	err := r.interruptible(func(ctx context.Context) error {
		var err error
		v, err = r.sess.Exec(ctx, src)
		return err
	})
	if err != nil {
		r.printError(err)
		return
	}
	if v != nil && v != starlark.None {
		fmt.Fprintln(r.io.out, v)
	}
}

// interruptible runs fn with a context that Ctrl-C cancels.
func (r *repl) interruptible(fn func(ctx context.Context) error) error {
	for len(r.sigint) > 0 { // a Ctrl-C from before is not for this
		<-r.sigint
	}
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-r.sigint:
			cancel()
		case <-done:
		}
	}()
	return fn(ctx)
}

func (r *repl) print(_ graphir.Pos, msg string) {
	fmt.Fprintln(r.io.out, msg)
}

func (r *repl) printError(err error) { writeError(r.io.err, err) }

// writeError prints an error in compiler form, or as "error: ..." when it
// has no position (a bad input, say).
func writeError(w io.Writer, err error) {
	d := check.FromError(graphir.AsError(err))
	if d.Pos.IsValid() {
		check.WriteText(w, []check.Diagnostic{d})
		return
	}
	fmt.Fprintf(w, "error: %s [%s]\n", d.Message, d.Code)
	if d.Hint != "" {
		fmt.Fprintf(w, "    hint: %s\n", d.Hint)
	}
}

// command runs one : command.
func (r *repl) command(line string) error {
	fields := strings.Fields(strings.TrimPrefix(line, ":"))
	if len(fields) == 0 {
		fmt.Fprintln(r.io.err, "error: a command name must follow \":\" (:help lists them)")
		return nil
	}
	name, args := fields[0], fields[1:]
	want := func(max int, usage string) bool {
		if len(args) > max {
			fmt.Fprintf(r.io.err, "error: usage: :%s %s\n", name, usage)
			return false
		}
		return true
	}
	switch name {
	case "q", "quit", "exit":
		return errQuit
	case "h", "help", "?":
		r.help()
	case "check":
		if want(0, "") {
			r.check()
		}
	case "graph":
		if !want(1, "[dot|mermaid]") {
			break
		}
		format := "dot"
		if len(args) == 1 {
			format = args[0]
		}
		switch format {
		case "dot":
			fmt.Fprint(r.io.out, r.sess.Graph().DOT())
		case "mermaid":
			fmt.Fprint(r.io.out, r.sess.Graph().Mermaid())
		default:
			fmt.Fprintf(r.io.err, "error: unknown format %q: want dot or mermaid\n", format)
		}
	case "run":
		r.run(args)
	case "steps":
		if want(0, "") {
			r.steps()
		}
	case "load":
		if len(args) != 1 {
			fmt.Fprintln(r.io.err, "error: usage: :load FILE")
			break
		}
		r.loaded(args[0], r.sess.LoadFile(args[0]))
	case "reload":
		if !want(0, "") {
			break
		}
		if r.sess.File() == "" {
			fmt.Fprintln(r.io.err, "error: no file loaded yet: use :load FILE")
			break
		}
		r.loaded(r.sess.File(), r.sess.Reload())
	case "reset":
		if want(0, "") {
			r.sess.Reset()
			r.skipped = 0 // line numbers start again
			fmt.Fprintln(r.io.out, "the session is empty")
		}
	case "show":
		if want(1, "[STEP]") {
			r.show(args)
		}
	case "drop":
		if len(args) != 1 {
			fmt.Fprintln(r.io.err, "error: usage: :drop STEP")
			break
		}
		gone, err := r.sess.Drop(args[0])
		if err != nil {
			fmt.Fprintf(r.io.err, "error: %s\n", graphir.AsError(err).Msg)
			break
		}
		fmt.Fprintf(r.io.out, "dropped %s\n", strings.Join(gone, ", "))
	default:
		names := make([]string, len(replCommands))
		for i, c := range replCommands {
			names[i] = c.name
		}
		hint := ""
		if n := spell.Nearest(name, names); n != "" {
			hint = fmt.Sprintf(" (did you mean :%s?)", n)
		}
		fmt.Fprintf(r.io.err, "error: unknown command :%s%s; :help lists them\n", name, hint)
	}
	return nil
}

func (r *repl) help() {
	fmt.Fprintln(r.io.out, "Enter Starlark: the Skein builtins are predeclared, steps and edges build the session's flow.")
	fmt.Fprintln(r.io.out, "End a def, if or for with a blank line.")
	fmt.Fprint(r.io.out, replCommandList())
}

// replCommandList lists the : commands, one per line.
func replCommandList() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range replCommands {
		fmt.Fprintf(w, "  :%s %s\t%s\n", c.name, c.args, c.help)
	}
	w.Flush()
	return b.String()
}

// loaded reports the outcome of starting the session over from file.
func (r *repl) loaded(file string, err error) {
	if err != nil {
		r.printError(err)
		return
	}
	g := r.sess.Graph()
	fmt.Fprintf(r.io.out, "loaded %s: %s, %s\n", file, plural(len(g.Steps()), "step"), plural(len(g.Edges), "edge"))
}

// check checks the session's flow and prints what it finds.
func (r *repl) check() {
	g := r.sess.Graph()
	ds := check.Graph(g)
	check.WriteText(r.io.out, ds)
	errs, warns := check.Count(ds)
	if errs+warns == 0 {
		fmt.Fprintf(r.io.out, "ok: %s, %s\n", plural(len(g.Steps()), "step"), plural(len(g.Edges), "edge"))
		return
	}
	fmt.Fprintf(r.io.out, "%s, %s\n", plural(errs, "error"), plural(warns, "warning"))
}

// run checks the session's flow and runs it with progress. Ctrl-C cancels
// the run and its processes, and the session goes on.
func (r *repl) run(args []string) {
	given := &frontend.Inputs{}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			fmt.Fprintf(r.io.err, "error: input %q: want name=value\n", a)
			return
		}
		given.SetText(name, value)
	}
	g := r.sess.Graph()
	ds := check.Graph(g)
	if errs, _ := check.Count(ds); errs > 0 {
		check.WriteText(r.io.err, ds)
		fmt.Fprintf(r.io.err, "not run: the flow has %s\n", plural(errs, "error"))
		return
	}
	check.WriteText(r.io.err, ds)
	inputs, err := given.Bind(g)
	if err != nil {
		r.printError(err)
		return
	}
	// Ctrl-C cancels the run; a second one stops its exit handler.
	ctx, exitCtx, interrupt, stop := twoStage(r.ctx)
	defer stop()
	setup := &runSetup{out: r.io.out, errw: r.io.err, tty: isTerminal(r.io.out), echo: !r.tty, exitCtx: exitCtx,
		record: !r.opts.noStore, store: r.opts.store, noStoreFlag: "skein repl --no-store"}
	if !r.opts.noPrompt {
		setup.answers, setup.usual = r.answers, r.usual
	}
	if setup.record {
		setup.file, setup.sources = r.recordedAs(g)
		setup.typed = filepath.Base(setup.file) == lang.ChunkFile
	}
	sr := newSessionRun(setup, g, inputs)
	if sr == nil {
		return
	}
	for len(r.sigint) > 0 { // a Ctrl-C from before is not for this run
		<-r.sigint
	}
	done := sr.start(ctx)
	var res *vm.Result
	for n := 0; res == nil; {
		select {
		case res = <-done:
		case <-r.sigint:
			if n++; n == 1 && g.OnExit != graphir.None {
				sr.prog.note("cancelling the run: its exit handler has up to 30s (Ctrl-C again stops it)")
			}
			interrupt()
		}
	}
	sr.report(res)
	r.last = res
}

// recordedAs returns the file and the sources to record a run of g with.
// When g is exactly the flow of the file the session loaded, they are that
// file and the texts it loads from now, so that skein resume can rebuild
// it. Otherwise (steps typed in, dropped, or the file changed since) the
// file is "<stdin>" beside it, which no recorded source provides: the
// record keeps the texts of g's files for reference, and skein resume says
// it cannot rebuild the flow.
func (r *repl) recordedAs(g *graphir.Graph) (string, []store.Source) {
	if f := r.sess.File(); f != "" && confine.Abs(f) == confine.Abs(g.File) {
		if fresh := frontend.Load(f, frontend.Options{Root: r.root}); fresh.Graph != nil && graphir.Diff(fresh.Graph, g).Empty() {
			return confine.Abs(g.File), fresh.Sources.List()
		}
	}
	return confine.Abs(filepath.Join(filepath.Dir(g.File), lang.ChunkFile)), diskSources(g)
}

// show prints the last run's summary, or the record of one of its steps.
func (r *repl) show(args []string) {
	res := r.last
	if res == nil {
		fmt.Fprintln(r.io.err, "error: nothing has run yet: use :run")
		return
	}
	if len(args) == 0 {
		p := newProgress(r.io.out, false)
		p.summary(res)
		return
	}
	rec := res.Step(args[0])
	if rec == nil {
		var names []string
		for _, s := range res.Steps {
			names = append(names, s.Name)
		}
		hint := spell.Suggest(args[0], names)
		fmt.Fprintf(r.io.err, "error: the last run has no step %q%s\n", args[0], hint)
		return
	}
	writeStepRecord(r.io.out, rec)
}

// writeStepRecord prints one step's record for people: status, visits,
// duration, then what it produced and how it failed.
func writeStepRecord(w io.Writer, rec *vm.StepRecord) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s, %s", rec.Name, rec.Kind, rec.Status, plural(rec.Visits, "visit"))
	if rec.Duration > 0 {
		fmt.Fprintf(&b, ", %s", formatDuration(rec.Duration))
	}
	switch rec.Kind {
	case graphir.KindLoop:
		fmt.Fprintf(&b, ", %s", plural(rec.Iterations, "iteration"))
		if rec.Exhausted {
			b.WriteString(", exhausted")
		}
	case graphir.KindMap:
		fmt.Fprintf(&b, ", %s", plural(rec.Items, "item"))
	}
	b.WriteByte('\n')
	if rec.Error != "" {
		fmt.Fprintf(&b, "  error:  %s%s [%s]\n", visible.Text(traceAt(rec.Trace), false), visible.Text(rec.Error, false), rec.Code)
	}
	task := rec.Kind == graphir.KindTask || rec.Kind == graphir.KindShell
	if task && rec.Output != nil {
		m, _ := rec.Output.(starlark.HasAttrs)
		for _, name := range []string{"stdout", "stderr"} {
			var text string
			if m != nil {
				if v, err := m.Attr(name); err == nil {
					if s, ok := v.(starlark.String); ok {
						text = string(s)
					}
				}
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			fmt.Fprintf(&b, "  %s:\n", name)
			for _, l := range textTail(text) {
				fmt.Fprintf(&b, "    | %s\n", l)
			}
		}
		if m != nil {
			if v, err := m.Attr("exit_code"); err == nil && v != nil {
				fmt.Fprintf(&b, "  exit:   %s\n", v)
			}
		}
	} else if rec.Output != nil && rec.Status != vm.StepNotRun {
		fmt.Fprintf(&b, "  output: %s\n", visible.Text(valueText(rec.Output, 2000), false))
	}
	for _, l := range rec.Log {
		fmt.Fprintf(&b, "  print:  %s\n", visible.Text(l, false))
	}
	if len(rec.Trace) > 0 {
		b.WriteString("  trace:\n")
		for _, t := range rec.Trace {
			fmt.Fprintf(&b, "    %s\n", visible.Text(t, false))
		}
	}
	io.WriteString(w, b.String())
}

// steps lists the steps of the session's flow.
func (r *repl) steps() {
	g := r.sess.Graph()
	if len(g.Steps()) == 0 {
		fmt.Fprintln(r.io.out, "no steps yet")
		return
	}
	w := tabwriter.NewWriter(r.io.out, 0, 0, 2, ' ', 0)
	for _, n := range g.Steps() {
		scope := ""
		if n.Parent != graphir.None {
			scope = fmt.Sprintf(" (in %s %s)", g.Nodes[n.Parent].Kind, g.Nodes[n.Parent].Name)
		}
		fmt.Fprintf(w, "%s\t%s\t%s%s\n", n.Name, n.Kind, n.Pos, scope)
	}
	w.Flush()
}

// complete completes the word before the cursor: a command after ":", a
// file after ":load ", else a name (predeclared, global, step) or an
// attribute of a global.
func (r *repl) complete(line string, pos int) (head string, completions []string, tail string) {
	before, tail := line[:pos], line[pos:]
	trimmed := strings.TrimLeft(before, " ")
	if strings.HasPrefix(trimmed, ":") {
		if cmd, arg, ok := strings.Cut(trimmed, " "); ok {
			if cmd == ":load" {
				arg = strings.TrimLeft(arg, " ")
				return before[:len(before)-len(arg)], completeFile(arg), tail
			}
			return before, nil, tail
		}
		for _, c := range replCommands {
			if strings.HasPrefix(":"+c.name, trimmed) {
				completions = append(completions, ":"+c.name)
			}
		}
		return before[:len(before)-len(trimmed)], completions, tail
	}

	start := len(before)
	for start > 0 {
		c := rune(before[start-1])
		if c != '_' && c != '.' && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			break
		}
		start--
	}
	head, word := before[:start], before[start:]
	var candidates []string
	prefix := ""
	if dot := strings.LastIndex(word, "."); dot >= 0 {
		v := r.attrPath(word[:dot])
		if v == nil {
			return head, nil, tail
		}
		candidates = v.AttrNames()
		prefix, word = word[:dot+1], word[dot+1:]
	} else {
		candidates = append(r.sess.Names(), r.sess.StepNames()...)
	}
	seen := map[string]bool{}
	for _, c := range candidates {
		if strings.HasPrefix(c, word) && !seen[c] {
			seen[c] = true
			completions = append(completions, prefix+c)
		}
	}
	sort.Strings(completions)
	return head, completions, tail
}

// attrPath looks up a dotted name (json, a.b) among the session's names.
func (r *repl) attrPath(path string) starlark.HasAttrs {
	names := strings.Split(path, ".")
	v := r.sess.Lookup(names[0])
	for _, n := range names[1:] {
		ha, ok := v.(starlark.HasAttrs)
		if !ok {
			return nil
		}
		var err error
		if v, err = ha.Attr(n); err != nil {
			return nil
		}
	}
	ha, _ := v.(starlark.HasAttrs)
	return ha
}

// completeFile completes a path to a directory or a .star file.
func completeFile(prefix string) []string {
	dir, base := filepath.Split(prefix)
	entries, err := os.ReadDir(filepath.Join(".", dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		if e.IsDir() {
			out = append(out, dir+name+"/")
		} else if strings.HasSuffix(name, ".star") {
			out = append(out, dir+name)
		}
	}
	return out
}
