package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

type checkOptions struct {
	json bool
	root string
}

func init() {
	register(&command{
		name:    "check",
		args:    "FLOW... [--json]",
		summary: "check flows and print their diagnostics",
		long: `Loads each flow and proves it sane without running it: names, reachability,
termination, joins, scopes, routers, until functions, nested flows and
injection safety. Diagnostics print in compiler form (file:line:col: ...).

Exit status: 0 when no flow has errors (warnings are fine), 1 when one has,
2 on bad usage.`,
		flags: func(fs *pflag.FlagSet) any {
			o := &checkOptions{}
			fs.BoolVar(&o.json, "json", false, `print {"diagnostics": [...], "errors": N, "warnings": N}`)
			fs.StringVar(&o.root, "root", "", "flow root that load() and child flows may not leave (default: each flow's directory)")
			return o
		},
		run: runCheck,
	})
}

func runCheck(_ context.Context, io stdio, o any, args []string) int {
	opts := o.(*checkOptions)
	if len(args) == 0 {
		fmt.Fprintln(io.err, "skein check: no flow given\nusage: skein check FLOW... [--json]")
		return exitUsage
	}
	var all []check.Diagnostic
	for _, file := range args {
		_, ds := loadAndCheck(file, opts.root)
		all = append(all, ds...)
	}
	all = check.Sort(all)
	errs, warns := check.Count(all)
	if opts.json {
		check.WriteJSON(io.out, all)
	} else {
		check.WriteText(io.out, all)
		switch {
		case errs+warns == 0:
			fmt.Fprintf(io.err, "ok: %s\n", countFlows(len(args)))
		default:
			fmt.Fprintf(io.err, "%s, %s in %s\n", plural(errs, "error"), plural(warns, "warning"), countFlows(len(args)))
		}
	}
	if errs > 0 {
		return exitFail
	}
	return exitOK
}

func countFlows(n int) string { return plural(n, "flow") }

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// loadAndCheck loads file and checks it; a load failure is returned as its
// one diagnostic with a nil graph.
func loadAndCheck(file, root string) (*graphir.Graph, []check.Diagnostic) {
	g, err := lang.Load(file, lang.Options{Root: root})
	if err != nil {
		return nil, []check.Diagnostic{check.FromError(asError(err))}
	}
	return g, check.Graph(g)
}

func asError(err error) *graphir.Error {
	var ge *graphir.Error
	if errors.As(err, &ge) {
		return ge
	}
	return &graphir.Error{Code: "load_error", Msg: err.Error()}
}
