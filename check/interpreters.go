package check

// This file finds templates that reach an interpreter through run=
// (interpreter_interpolation, a warning): run= never splits or re-parses
// its arguments, but `["sh", "-c", "echo {{ inputs.v }}"]` hands the value
// to a shell that does, and so do `python3 -c`, `node -e`, `perl -e` and
// their kin.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// interpreters maps a program to the flags after which its next argument
// is code, and how a script reads an environment variable V.
var interpreters = func() map[string]interpreter {
	m := map[string]interpreter{}
	shell := interpreter{flags: []string{"-c"}, shellFlags: true, read: `"$%s"`}
	for _, sh := range []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"} {
		m[sh] = shell
	}
	py := interpreter{flags: []string{"-c"}, read: `os.environ["%s"]`}
	for _, p := range []string{"python", "python2", "python3", "pypy", "pypy3"} {
		m[p] = py
	}
	node := interpreter{flags: []string{"-e", "--eval", "-p", "--print"}, read: "process.env.%s"}
	m["node"], m["nodejs"], m["bun"] = node, node, node
	m["deno"] = interpreter{flags: []string{"eval"}, read: `Deno.env.get("%s")`}
	m["perl"] = interpreter{flags: []string{"-e", "-E"}, read: "$ENV{%s}"}
	m["ruby"] = interpreter{flags: []string{"-e"}, read: `ENV["%s"]`}
	m["php"] = interpreter{flags: []string{"-r"}, read: `getenv("%s")`}
	m["lua"] = interpreter{flags: []string{"-e"}, read: `os.getenv("%s")`}
	m["Rscript"] = interpreter{flags: []string{"-e"}, read: `Sys.getenv("%s")`}
	m["osascript"] = interpreter{flags: []string{"-e"}, read: `system attribute "%s"`}
	m["pwsh"] = interpreter{flags: []string{"-c", "-Command"}, read: "$env:%s"}
	return m
}()

type interpreter struct {
	flags      []string
	shellFlags bool   // -c may be combined with other one-letter flags (-ec, -lc)
	read       string // how the script reads variable %s
}

// codeFlag reports whether arg introduces the code argument.
func (in interpreter) codeFlag(arg string) bool {
	for _, f := range in.flags {
		if arg == f {
			return true
		}
	}
	return in.shellFlags && len(arg) > 1 && arg[0] == '-' && arg[1] != '-' && strings.HasSuffix(arg, "c")
}

// wrapper is a program that runs the rest of its argv as a command
// (sudo, timeout, nice, xargs, docker exec...): the options that take a
// value as the next argument, how many arguments come before the command,
// and for docker-like programs the subcommands that run one.
type wrapper struct {
	values     []string
	positional int
	sub        []string // docker exec|run: the wrapper is "docker exec"
	dashC      bool     // flock FILE -c CMD: -c after the positionals is shell code
}

var dockerValues = []string{"-e", "--env", "-u", "--user", "-w", "--workdir", "--name", "-v", "--volume", "-p", "--publish",
	"--network", "--entrypoint", "--platform", "-l", "--label", "--mount", "--env-file", "-h", "--hostname", "--detach-keys", "-m", "--memory", "--cpus"}

var wrappers = map[string]wrapper{
	"sudo":     {values: []string{"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-R", "-T", "--user", "--group", "--chdir", "--prompt", "--role", "--type", "--other-user", "--host", "--close-from"}},
	"doas":     {values: []string{"-u", "-C"}},
	"timeout":  {values: []string{"-s", "-k", "--signal", "--kill-after"}, positional: 1},
	"nice":     {values: []string{"-n", "--adjustment"}},
	"nohup":    {},
	"busybox":  {},
	"setsid":   {},
	"time":     {values: []string{"-f", "--format", "-o", "--output"}},
	"unbuffer": {},
	"exec":     {},
	"command":  {},
	"stdbuf":   {values: []string{"-i", "-o", "-e", "--input", "--output", "--error"}},
	"ionice":   {values: []string{"-c", "-n", "--class", "--classdata"}},
	"taskset":  {positional: 1},
	"chroot":   {positional: 1},
	"xargs":    {values: []string{"-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter", "--eof", "--arg-file", "--replace"}},
	"strace":   {values: []string{"-o", "-e", "-p", "-s", "-u", "-a", "-b", "-E", "-I", "-O", "-P", "-S", "-X"}},
	"flock":    {values: []string{"-w", "-E", "--timeout", "--wait", "--conflict-exit-code"}, positional: 1, dashC: true},
	"docker":   {sub: []string{"exec", "run"}, values: dockerValues, positional: 1},
	"podman":   {sub: []string{"exec", "run"}, values: dockerValues, positional: 1},
	"nerdctl":  {sub: []string{"exec", "run"}, values: dockerValues, positional: 1},
}

// remote are the programs whose command arguments, all of them, are
// joined into one line for a shell to parse: ssh's remote shell, watch's
// sh -c. The options that take a value, and how many arguments (the
// host) come before the command.
var remote = map[string]wrapper{
	"ssh":   {values: []string{"-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p", "-Q", "-R", "-S", "-W", "-w", "-B"}, positional: 1},
	"watch": {values: []string{"-n", "--interval", "-q", "--equexit"}},
}

// shellCommand are the programs whose -c (or --command) argument is a
// command line that a shell parses: su -c, script -c.
var shellCommand = map[string]bool{"su": true, "script": true, "runuser": true}

// codeArg is one argument of a run= argv that a program runs as code.
type codeArg struct {
	at   int    // its index in argv
	what string // "sh -c", "the remote shell of ssh"
	read string // how the code reads variable %s, or "" where env= cannot reach it
}

// codeArgs finds the arguments of argv that a program runs as code,
// following the wrappers in front of it (env, sudo, timeout, docker exec,
// a "--" before the command...). It follows literal arguments only: a
// template where a program or option is expected stops it.
func codeArgs(argv []*graphir.Template) []codeArg {
	lit := func(i int) (string, bool) {
		if i < len(argv) && argv[i].IsLiteral() {
			return argv[i].Src, true
		}
		return "", false
	}
	var found []codeArg
	i := 0
	for depth := 0; depth < 16 && i >= 0 && i < len(argv); depth++ {
		prog, ok := lit(i)
		if !ok {
			return found
		}
		name := filepath.Base(prog)
		if name == "env" {
			i = skipEnv(argv, i)
			continue
		}
		if w, ok := wrappers[name]; ok {
			if len(w.sub) > 0 {
				sub, ok := lit(i + 1)
				if !ok || !slices.Contains(w.sub, sub) {
					return found
				}
				i++
			}
			i = skipOptions(argv, i, w.values, w.positional)
			if s, ok := lit(i); ok && w.dashC && (s == "-c" || s == "--command") && i+1 < len(argv) {
				return append(found, codeArg{at: i + 1, what: name + " " + s, read: `"$%s"`})
			}
			continue
		}
		if w, ok := remote[name]; ok {
			j := skipOptions(argv, i, w.values, w.positional)
			what := "ssh (the remote shell runs its command line)"
			read := ""
			if name == "watch" {
				what, read = "watch (sh -c runs its command line)", `"$%s"`
				for k := i + 1; k < j; k++ {
					if s, _ := lit(k); s == "-x" || s == "--exec" {
						i = j // watch -x runs its argv directly
						goto next
					}
				}
			}
			for ; j < len(argv); j++ {
				found = append(found, codeArg{at: j, what: what, read: read})
			}
			return found
		}
		if shellCommand[name] {
			for j := i + 1; j+1 < len(argv); j++ {
				if s, ok := lit(j); ok && (s == "-c" || s == "--command") {
					found = append(found, codeArg{at: j + 1, what: name + " " + s, read: `"$%s"`})
				}
			}
			return found
		}
		if in, known := interpreterOf(name); known {
			for j := i + 1; j < len(argv); j++ {
				s, ok := lit(j)
				if !ok || !in.option(s) && !in.codeFlag(s) {
					break // a script file: what follows are its arguments
				}
				if in.shellFlags && (s == "-o" || s == "+o" || s == "-O" || s == "+O") {
					j++ // -o pipefail
					continue
				}
				if !in.codeFlag(s) || j+1 >= len(argv) {
					continue
				}
				return append(found, codeArg{at: j + 1, what: name + " " + s, read: in.read})
			}
			return found
		}
		// Some other program: what follows a "--" may be a command it
		// runs (kubectl exec POD -- sh -c ...).
		i = -1
		for k := i + 1; k < len(argv); k++ {
			if s, ok := lit(k); ok && s == "--" && k+1 < len(argv) {
				i = k + 1
				break
			}
			if !argv[k].IsLiteral() {
				break
			}
		}
	next:
	}
	return found
}

func interpreterOf(name string) (interpreter, bool) {
	in, known := interpreters[name]
	if !known && strings.HasPrefix(name, "python") {
		in, known = interpreters["python"], true // python3.12
	}
	return in, known
}

// option reports whether arg is an option of the interpreter (as opposed
// to a script file).
func (in interpreter) option(arg string) bool {
	return strings.HasPrefix(arg, "-") || in.shellFlags && strings.HasPrefix(arg, "+")
}

// checkInterpreters warns of each template inside an argument of run=
// that a program runs as code.
func checkInterpreters(p *pass) {
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindTask || len(n.Argv) == 0 {
			continue
		}
		for _, c := range codeArgs(n.Argv) {
			for _, part := range n.Argv[c.at].Parts {
				if part.X == nil {
					continue
				}
				v := envName(part.X)
				hint := fmt.Sprintf(`pass the value through env (env = {"%s": "{{ %s }}"}) and read it in the script as %s`, v, part.X.Src, fmt.Sprintf(c.read, v))
				if c.read == "" {
					hint = fmt.Sprintf(`send it as data instead: stdin = "{{ %s }}", read on the other side (read -r %s)`, part.X.Src, v)
				}
				p.report(codes.InterpreterInterpolation, n, part.X.Pos,
					fmt.Sprintf("run= of step %q passes the template {{ %s }} inside the code given to %s: its value would run as code", n.Name, part.X.Src, c.what), hint)
			}
		}
	}
}

// stdinRunners are the programs that, given no code argument and no
// script file (or "-" for one), run their stdin as code; with the
// options after which stdin is the script whatever follows (sh -s).
var stdinRunners = map[string][]string{
	"sh": {"-s"}, "bash": {"-s"}, "zsh": {"-s"}, "dash": {"-s"}, "ksh": {"-s"}, "mksh": {"-s"}, "ash": {"-s"},
	"fish": nil, "csh": {"-s"}, "tcsh": {"-s"},
	"python": nil, "node": nil, "nodejs": nil, "perl": nil, "ruby": nil, "lua": nil, "php": nil, "pwsh": nil,
}

// stdinCode says what runs the stdin of argv as code ("sh", "ssh host's
// remote shell", "xargs into sh -c"), following env and the wrappers in
// front of it; "" when nothing surely does. read is how the code would
// read variable %s ("" where env= cannot reach it).
func stdinCode(argv []*graphir.Template) (what, read string) {
	lit := func(i int) (string, bool) {
		if i < len(argv) && argv[i].IsLiteral() {
			return argv[i].Src, true
		}
		return "", false
	}
	i := 0
	for depth := 0; depth < 16; depth++ {
		prog, ok := lit(i)
		if !ok {
			return "", ""
		}
		name := filepath.Base(prog)
		switch w, wrapped := wrappers[name]; {
		case name == "env":
			i = skipEnv(argv, i)
			continue
		case name == "xargs":
			// xargs hands the items it reads to its command: into code
			// when that command is sh -c and its kin.
			if c := codeArgs(argv[i:]); len(c) > 0 {
				return "xargs, which passes the items it reads into the code given to " + c[0].what, ""
			}
			return "", ""
		case wrapped && len(w.sub) == 0 && !w.dashC:
			i = skipOptions(argv, i, w.values, w.positional)
			continue
		case name == "ssh":
			if j := skipOptions(argv, i, remote["ssh"].values, 1); j >= len(argv) {
				return "ssh (with no command, the remote shell runs its stdin)", ""
			}
			return "", ""
		}
		in, known := interpreterOf(name)
		scriptOpts, runs := stdinRunners[name]
		if !runs && strings.HasPrefix(name, "python") {
			runs = true
		}
		if !known || !runs {
			return "", ""
		}
		for j := i + 1; j < len(argv); j++ {
			s, ok := lit(j)
			switch {
			case !ok:
				return "", "" // a template: a script file, perhaps
			case s == "-":
				return name + " -", in.read
			case in.codeFlag(s) || s == "-m" || s == "-f" || s == "--file":
				return "", "" // code, a module or a file given
			case slices.Contains(scriptOpts, s):
				return name + " " + s, in.read
			case !in.option(s):
				return "", "" // a script file; what follows are its arguments
			case in.shellFlags && (s == "-o" || s == "+o" || s == "-O" || s == "+O"):
				j++
			}
		}
		return name, in.read
	}
	return "", ""
}

// skipEnv passes env's options and assignments at argv[i]
// (env [-i] [-u NAME] [NAME=VALUE]... PROGRAM ...): the index of the
// program.
func skipEnv(argv []*graphir.Template, i int) int {
	for i++; i < len(argv); i++ {
		if !argv[i].IsLiteral() {
			break
		}
		s := argv[i].Src
		if !(strings.HasPrefix(s, "-") || strings.Contains(s, "=")) {
			break
		}
		if s == "-u" || s == "--unset" || s == "-C" || s == "--chdir" || s == "-S" {
			i++
		}
	}
	return i
}

// skipOptions passes the options of the program at argv[i] (those in
// values take the next argument) and then n positionals: the index of
// what follows.
func skipOptions(argv []*graphir.Template, i int, values []string, n int) int {
	for i++; i < len(argv); i++ {
		if !argv[i].IsLiteral() {
			break // a template: a positional or the command
		}
		s := argv[i].Src
		if s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		if slices.Contains(values, s) {
			i++
		}
	}
	return i + n
}

// checkStdinCode warns of each template in the stdin= of a step whose
// program runs its stdin as code (run = ["sh"], stdin = "{{ x }}").
func checkStdinCode(p *pass) {
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindTask || len(n.Argv) == 0 || n.Stdin == nil {
			continue
		}
		what, read := stdinCode(n.Argv)
		if what == "" {
			continue
		}
		for _, part := range n.Stdin.Parts {
			if part.X == nil {
				continue
			}
			v := envName(part.X)
			hint := fmt.Sprintf(`give the script as code that does not change (run = ["sh", "-c", "..."]), pass the value through env (env = {"%s": "{{ %s }}"}) and read it as %s`, v, part.X.Src, fmt.Sprintf(read, v))
			if read == "" {
				hint = fmt.Sprintf(`give a fixed command, and the value as data it reads: run = ["ssh", "host", "read -r %s; ..."], stdin = "{{ %s }}"`, v, part.X.Src)
				if strings.HasPrefix(what, "xargs") {
					hint = `have the code read the items as its arguments ("$1"), not written into it, or give it the value through env=`
				}
			}
			p.report(codes.InterpreterInterpolation, n, part.X.Pos,
				fmt.Sprintf("stdin= of step %q passes the template {{ %s }} to %s, which runs it as code: its value would run as code", n.Name, part.X.Src, what), hint)
		}
	}
}

// knownPrograms are programs a run= item names with its arguments often
// enough, in a flow, that an item holding one and a space is surely the
// mistake argv_one_string warns of (the interpreters count too).
var knownPrograms = map[string]bool{
	"npm": true, "npx": true, "yarn": true, "pnpm": true, "make": true, "go": true, "cargo": true,
	"rustc": true, "gcc": true, "cc": true, "clang": true, "mvn": true, "gradle": true, "dotnet": true,
	"pip": true, "pip3": true, "uv": true, "poetry": true, "pytest": true, "tox": true, "bundle": true,
	"rake": true, "gem": true, "composer": true, "git": true, "docker": true, "podman": true,
	"kubectl": true, "helm": true, "terraform": true, "ansible-playbook": true, "curl": true,
	"wget": true, "echo": true, "printf": true, "cat": true, "ls": true, "cp": true, "mv": true,
	"rm": true, "mkdir": true, "grep": true, "sed": true, "awk": true, "jq": true, "tar": true,
	"ssh": true, "scp": true, "rsync": true, "sleep": true, "test": true, "true": true, "false": true,
	"env": true, "sudo": true, "timeout": true, "xargs": true, "find": true, "touch": true,
	"eslint": true, "tsc": true, "jest": true, "vitest": true, "ruff": true, "black": true, "mypy": true,
}

// checkOneString warns of a run= whose first item is a known program and
// its arguments in one string (run = ["npm test"]): run= never splits, so
// the step would look for a program called "npm test".
func checkOneString(p *pass) {
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindTask || len(n.Argv) == 0 || !n.Argv[0].IsLiteral() {
			continue
		}
		words := strings.Fields(n.Argv[0].Src)
		if len(words) < 2 {
			continue
		}
		prog := words[0]
		_, interp := interpreterOf(prog)
		path := strings.HasPrefix(prog, "./") || strings.HasPrefix(prog, "../") || strings.HasPrefix(prog, "/")
		if !knownPrograms[prog] && !interp && !path {
			continue
		}
		items := make([]string, len(words))
		for i, w := range words {
			items[i] = fmt.Sprintf("%q", w)
		}
		hint := fmt.Sprintf("give each argument as an item of its own: run = [%s]", strings.Join(items, ", "))
		if strings.ContainsAny(n.Argv[0].Src, "|&;<>$`*") {
			hint = fmt.Sprintf("a command line with pipes, && or redirections needs a shell: shell = %q", n.Argv[0].Src)
		}
		at := n.Argv[0].Pos
		if !at.IsValid() {
			at = n.Pos
		}
		p.report(codes.ArgvOneString, n, at,
			fmt.Sprintf("run= of step %q starts with %q, one item holding a program and its arguments: run= never splits it, so the step would look for a program called %q", n.Name, n.Argv[0].Src, n.Argv[0].Src), hint)
	}
}
