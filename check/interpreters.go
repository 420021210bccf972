package check

// This file finds templates that reach an interpreter through run=
// (interpreter_interpolation, a warning): run= never splits or re-parses
// its arguments, but `["sh", "-c", "echo {{ inputs.v }}"]` hands the value
// to a shell that does, and so do `python3 -c`, `node -e`, `perl -e` and
// their kin.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/skeinlang/skein/graphir"
)

// interpreters maps a program to the flags after which its next argument
// is code, and how a script reads an environment variable V.
var interpreters = func() map[string]interpreter {
	m := map[string]interpreter{}
	shell := interpreter{flags: []string{"-c"}, shellFlags: true, read: `"$%s"`}
	for _, sh := range []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "fish", "csh", "tcsh"} {
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

// checkInterpreters warns of each template inside the code argument of an
// interpreter run by run=.
func checkInterpreters(p *pass) {
	for _, n := range p.g.Steps() {
		if n.Kind != graphir.KindTask || len(n.Argv) == 0 {
			continue
		}
		argv := n.Argv
		lit := func(i int) (string, bool) {
			if i < len(argv) && argv[i].IsLiteral() {
				return argv[i].Src, true
			}
			return "", false
		}
		i := 0
		// env [-i] [-u NAME] [NAME=VALUE]... PROGRAM ...
		if s, ok := lit(0); ok && filepath.Base(s) == "env" {
			for i = 1; i < len(argv); i++ {
				s, ok := lit(i)
				if !ok || !(strings.HasPrefix(s, "-") || strings.Contains(s, "=")) {
					break
				}
				if s == "-u" || s == "--unset" || s == "-C" || s == "--chdir" || s == "-S" {
					i++
				}
			}
		}
		prog, ok := lit(i)
		if !ok {
			continue
		}
		name := filepath.Base(prog)
		in, known := interpreters[name]
		if !known && strings.HasPrefix(name, "python") {
			in, known = interpreters["python"], true // python3.12
		}
		if !known {
			continue
		}
		for j := i + 1; j < len(argv); j++ {
			s, ok := lit(j)
			if !ok || !strings.HasPrefix(s, "-") && !in.codeFlag(s) {
				break // a script file: what follows are its arguments
			}
			if !in.codeFlag(s) || j+1 >= len(argv) {
				continue
			}
			code := argv[j+1]
			for _, part := range code.Parts {
				if part.X == nil {
					continue
				}
				v := envName(part.X)
				p.report("interpreter_interpolation", n, part.X.Pos,
					fmt.Sprintf("run= of step %q passes the template {{ %s }} inside the code given to %s %s: its value would run as code", n.Name, part.X.Src, name, s),
					fmt.Sprintf(`pass the value through env (env = {"%s": "{{ %s }}"}) and read it in the script as %s`, v, part.X.Src, fmt.Sprintf(in.read, v)))
			}
			break
		}
	}
}
