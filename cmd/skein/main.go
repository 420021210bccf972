// Command skein checks, draws and runs Skein flows.
//
// This package is the only one that knows about terminals, flags, signals
// and the file system layout of a user's project; everything below it takes
// plain values.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/vm/proc"
)

func main() { os.Exit(process()) }

// process runs skein as a process of its own: a child subreaper (Linux),
// so that tasks start through the keeper (package vm/keeper) and what a
// task leaves running outside its process group is still ended, then the
// command line; the keeper is stopped before skein exits.
func process() int {
	proc.EnableSubreaper() // best effort: elsewhere, only the group is cleaned up
	code := Main(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})
	proc.StopKeeper() // what tasks left behind is gone before skein exits
	// The spans of the runs (an interrupted one's too) are exported
	// before skein exits.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := telemetry.Shutdown(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "skein: traces: %v\n", err)
	}
	return code
}

// stdio is where a command reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand.
type command struct {
	name    string
	args    string // usage after the name, e.g. "FLOW..."
	summary string
	long    string
	// flags defines the command's flags and returns the command bound to
	// the options they fill ([withOptions]); nil for a command without
	// flags, which run runs.
	flags func(fs *pflag.FlagSet) *bound
	run   func(ctx context.Context, io stdio, args []string) int
}

// bound is a command bound to the options its flags fill.
type bound struct {
	run func(ctx context.Context, io stdio, args []string) int
	// help, if set, adds to the help that --help prints (on io.out), given
	// the arguments before it (run lists the inputs of FLOW); it returns
	// the exit status.
	help func(io stdio, args []string) int
}

// withOptions is the flags of a command whose options are an O: define
// adds the flags that fill one, run runs the command with it, and help,
// when not nil, adds to what --help prints.
func withOptions[O any](define func(fs *pflag.FlagSet, o *O), run func(ctx context.Context, io stdio, o *O, args []string) int, help func(io stdio, o *O, args []string) int) func(*pflag.FlagSet) *bound {
	return func(fs *pflag.FlagSet) *bound {
		o := new(O)
		define(fs, o)
		b := &bound{run: func(ctx context.Context, io stdio, args []string) int { return run(ctx, io, o, args) }}
		if help != nil {
			b.help = func(io stdio, args []string) int { return help(io, o, args) }
		}
		return b
	}
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// Exit statuses (docs/cli.md).
const (
	exitOK    = 0
	exitFail  = 1 // a run failed or was cancelled; check found errors
	exitUsage = 2 // bad usage, or a flow that does not load
)

// Main runs the skein command line and returns the exit status.
func Main(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 {
		printHelp(io.err)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help":
		printHelp(io.out)
		return exitOK
	case "--version":
		name = "version"
	}
	if name == completeCommand {
		// Hidden; its arguments are a command line being typed.
		return runComplete(ctx, io, args[1:])
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(io.err, "skein: unknown command %q%s\n", name, suggestCommand(name))
		fmt.Fprintln(io.err, "run 'skein help' for the list of commands")
		return exitUsage
	}
	fs := pflag.NewFlagSet("skein "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.err)
	fs.SortFlags = false
	// pflag calls Usage only for --help (with ContinueOnError a bad flag
	// is returned, not printed), and help asked for goes to stdout, as
	// 'skein help COMMAND' does: skein run --help | less works.
	fs.Usage = func() { printCommandHelp(io.out, c, fs) }
	b := &bound{run: c.run}
	if c.flags != nil {
		b = c.flags(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			if b.help != nil {
				return b.help(io, helpArgs(fs.Args(), args[1:]))
			}
			return exitOK
		}
		fmt.Fprintf(io.err, "skein %s: %v%s\n", c.name, err, suggestFlag(fs, err))
		return exitUsage
	}
	return b.run(ctx, io, fs.Args())
}

// helpArgs returns the arguments --help was given with: those parsed
// before it, else (for `skein run --help FLOW`, where parsing stopped at
// --help) the .star files among the raw arguments.
func helpArgs(parsed, raw []string) []string {
	if len(parsed) > 0 {
		return parsed
	}
	var out []string
	for _, a := range raw {
		if !strings.HasPrefix(a, "-") && strings.HasSuffix(a, ".star") {
			out = append(out, a)
		}
	}
	return out
}

// suggestCommand is the did-you-mean for an unknown command, or "".
func suggestCommand(name string) string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names) // Nearest keeps the first of equally near names
	return spell.Suggest(name, names)
}

// suggestFlag is the did-you-mean for a flag that pflag does not know, or
// "": " (did you mean --json?)".
func suggestFlag(fs *pflag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	if best := spell.Nearest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean --%s?)", best)
	}
	return ""
}

func printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString("skein: a workflow language whose flows are checked before they run\n\nUsage:\n  skein COMMAND [ARGS]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'skein help COMMAND' for the details of one, 'skein help step' (or any\nbuiltin) for a builtin's parameters.\n")
	io.WriteString(w, b.String())
}

func printCommandHelp(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", strings.TrimSpace("skein "+c.name+" "+c.args), c.summary)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.long))
	}
	if fs != nil && fs.HasFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
}

// printBuiltinHelp prints a builtin's signature, summary and parameters
// from the doc table the language server and the docs share.
func printBuiltinHelp(w io.Writer, d *builtins.Doc) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n", d.Signature(), d.Summary)
	if len(d.Params) > 0 {
		b.WriteString("\nParameters:\n")
		for _, p := range d.Params {
			fmt.Fprintf(&b, "  %-15s %s\n", p.Name, p.Doc)
		}
	}
	io.WriteString(w, b.String())
}

func init() {
	register(&command{
		name:    "help",
		args:    "[COMMAND | BUILTIN]",
		summary: "show help for skein, one command or one builtin",
		run: func(_ context.Context, io stdio, args []string) int {
			if len(args) == 0 {
				printHelp(io.out)
				return exitOK
			}
			c, ok := commands[args[0]]
			if d := builtins.DocOf(args[0]); !ok && d != nil {
				printBuiltinHelp(io.out, d)
				return exitOK
			}
			if !ok {
				// skein help takes builtins too: suggest among both.
				names := []string{}
				for n := range commands {
					names = append(names, n)
				}
				for _, d := range builtins.Docs() {
					names = append(names, d.Name)
				}
				sort.Strings(names)
				hint := spell.Suggest(args[0], names)
				fmt.Fprintf(io.err, "skein help: no command or builtin %q%s\n", args[0], hint)
				fmt.Fprintln(io.err, "run 'skein help' for the commands; the builtins are in docs/language.md")
				return exitUsage
			}
			fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
			fs.SortFlags = false
			if c.flags != nil {
				c.flags(fs)
			}
			printCommandHelp(io.out, c, fs)
			return exitOK
		},
	})
}
