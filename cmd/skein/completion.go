package main

// This file is shell completion: skein completion bash|zsh|fish prints a
// script that asks skein itself, through the hidden command __complete,
// for the words that may come next (commands, flags, flow files, the
// steps of a flow for --from and --mock, run ids), so the scripts stay a
// few lines and what they offer is what skein knows.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/store"
)

func init() {
	register(&command{
		name:    "completion",
		args:    "bash|zsh|fish",
		summary: "print a shell's completion script",
		long: `Prints the script that completes skein's commands, flags, flow files, the
steps of a flow (--from, --mock, --set) and run ids in that shell:

  bash:  source <(skein completion bash)      (in ~/.bashrc)
  zsh:   source <(skein completion zsh)       (in ~/.zshrc, after compinit)
  fish:  skein completion fish > ~/.config/fish/completions/skein.fish`,
		run: runCompletion,
	})
}

// completeCommand is the hidden command the scripts call (Main runs it;
// it is not among commands, so help and did-you-means leave it out): its arguments
// are the words after skein, the last one the word being completed; it
// prints one candidate a line.
const completeCommand = "__complete"

var completionScripts = map[string]string{
	"bash": `# bash completion for skein (skein completion bash)
_skein() {
    local IFS=$'\n'
    COMPREPLY=($(skein __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
    if [[ ${#COMPREPLY[@]} -eq 1 && ( ${COMPREPLY[0]} == */ || ${COMPREPLY[0]} == *= ) ]]; then
        compopt -o nospace 2>/dev/null
    fi
}
complete -F _skein skein
`,
	"zsh": `#compdef skein
# zsh completion for skein (skein completion zsh)
_skein() {
    local -a c
    c=("${(@f)$(skein __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    [[ -n "$c" ]] && compadd -Q -S '' -- "${c[@]}"
}
compdef _skein skein
`,
	"fish": `# fish completion for skein (skein completion fish)
complete -c skein -f -a '(skein __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
}

func runCompletion(_ context.Context, io stdio, args []string) int {
	if len(args) != 1 || completionScripts[args[0]] == "" {
		fmt.Fprintln(io.err, "skein completion: want one shell: bash, zsh or fish\nusage: skein completion bash|zsh|fish")
		return exitUsage
	}
	fmt.Fprint(io.out, completionScripts[args[0]])
	return exitOK
}

// runComplete prints the candidates for the last of args, given the
// words before it. It never fails: what it cannot find, it leaves out.
func runComplete(_ context.Context, io stdio, args []string) int {
	if len(args) == 0 {
		args = []string{""}
	}
	cur, before := args[len(args)-1], args[:len(args)-1]
	for _, c := range complete(before, cur) {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(io.out, c)
		}
	}
	return exitOK
}

// complete returns what may follow words (the command and what came
// after it) as the word cur.
func complete(words []string, cur string) []string {
	if len(words) == 0 {
		var names []string
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		return names
	}
	c := commands[words[0]]
	if c == nil {
		return nil
	}
	switch c.name {
	case "help":
		return complete(nil, cur)
	case "completion":
		return []string{"bash", "fish", "zsh"}
	}
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.flags != nil {
		c.flags(fs)
	}
	fs.Parse(words[1:]) // for the values given so far (--store, --root)
	args := positional(fs, words[1:])

	// A flag's value: after the flag, or after its "=".
	flag, prefix := "", ""
	if name, _, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(name, "--") {
		flag, prefix = strings.TrimPrefix(name, "--"), name+"="
	} else if n := len(words); n > 1 && strings.HasPrefix(words[n-1], "-") && !strings.Contains(words[n-1], "=") {
		if f := lookupFlag(fs, words[n-1]); f != nil && f.NoOptDefVal == "" {
			flag = f.Name
		}
	}
	if flag != "" {
		if fs.Lookup(flag) == nil {
			return nil
		}
		var out []string
		for _, v := range flagValues(c.name, flag, fs, args, strings.TrimPrefix(cur, prefix)) {
			out = append(out, prefix+v)
		}
		return out
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				out = append(out, "--"+f.Name)
			}
		})
		return out
	}
	switch c.name {
	case "show", "logs", "resume", "approve", "cancel":
		if len(args) == 0 {
			return runIDs(fs)
		}
		if c.name == "logs" || c.name == "approve" {
			return runSteps(fs, args[0])
		}
		return nil
	case "runs", "gc", "version", "lsp", "serve", "worker":
		return nil
	}
	return flowFiles(cur, c.name == "test")
}

// positional returns the arguments among words that are not flags or
// their values, as fs reads them.
func positional(fs *pflag.FlagSet, words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			return append(out, words[i+1:]...)
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			out = append(out, w)
			continue
		}
		if f := lookupFlag(fs, w); f != nil && f.NoOptDefVal == "" && !strings.Contains(w, "=") {
			i++ // its value
		}
	}
	return out
}

// lookupFlag is the flag a word names (--name, -n), or nil.
func lookupFlag(fs *pflag.FlagSet, w string) *pflag.Flag {
	if name, ok := strings.CutPrefix(w, "--"); ok {
		name, _, _ = strings.Cut(name, "=")
		return fs.Lookup(name)
	}
	if len(w) == 2 {
		return fs.ShorthandLookup(w[1:])
	}
	return nil
}

// flagValues are the values flag of command cmd may take.
func flagValues(cmd, flag string, fs *pflag.FlagSet, args []string, cur string) []string {
	switch flag {
	case "from", "mock", "set":
		var steps []string
		if cmd == "resume" {
			if len(args) > 0 {
				steps = runSteps(fs, args[0])
			}
		} else if len(args) > 0 {
			steps = flowSteps(args[0], fs)
		}
		if flag == "from" {
			return steps
		}
		for i, s := range steps {
			steps[i] = s + "="
		}
		return steps
	case "format":
		return []string{"dot", "json", "mermaid"}
	case "shape":
		return shapeNames()
	case "engine":
		return []string{"local", "temporal"}
	case "store", "inputs-file", "cassette", "root", "token-file":
		return files(cur, func(string) bool { return true })
	}
	return nil
}

// flowSteps are the steps of the flow in file, as it loads now.
func flowSteps(file string, fs *pflag.FlagSet) []string {
	root := ""
	if f := fs.Lookup("root"); f != nil {
		root = f.Value.String()
	}
	f := frontend.Load(file, frontend.Options{Root: root})
	if f.Graph == nil {
		return nil
	}
	names := f.Graph.StepNames()
	sort.Strings(names)
	return names
}

// flagService is the run service on the store --store names, else the
// one found from the working directory, or nil.
func flagService(fs *pflag.FlagSet) *runs.Service {
	flag := ""
	if f := fs.Lookup("store"); f != nil {
		flag = f.Value.String()
	}
	svc, err := localService(flag)
	if err != nil {
		return nil
	}
	return svc
}

// runIDs are "last" and the ids of the newest runs.
func runIDs(fs *pflag.FlagSet) []string {
	svc := flagService(fs)
	if svc == nil {
		return nil
	}
	defer svc.Store.Close()
	list, err := svc.List(store.Filter{Limit: 100})
	if err != nil {
		return nil
	}
	out := []string{"last"}
	for _, r := range list {
		out = append(out, r.ID)
	}
	return out
}

// runSteps are the steps run ref recorded effects of, and the approvals
// it asked.
func runSteps(fs *pflag.FlagSet, ref string) []string {
	svc := flagService(fs)
	if svc == nil {
		return nil
	}
	defer svc.Store.Close()
	steps, _ := svc.Steps(ref)
	return steps
}

// flowFiles are the flow files (or, for test, test files) and folders
// that may complete cur.
func flowFiles(cur string, tests bool) []string {
	return files(cur, func(name string) bool {
		return strings.HasSuffix(name, ".star") && strings.HasSuffix(name, "_test.star") == tests
	})
}

// files are the files keep takes and the folders (with a trailing "/")
// in the folder cur names so far, written as cur writes it.
func files(cur string, keep func(name string) bool) []string {
	dir, _ := filepath.Split(cur)
	ents, err := os.ReadDir(filepath.Join(".", dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") && !strings.HasPrefix(filepath.Base(cur), ".") {
			continue
		}
		if e.IsDir() {
			out = append(out, dir+name+"/")
		} else if keep(name) {
			out = append(out, dir+name)
		}
	}
	return out
}
