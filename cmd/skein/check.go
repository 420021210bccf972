package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/engine/temporal/limits"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
)

type checkOptions struct {
	engine   string
	json     bool
	envelope bool
	strict   bool
	root     string
	maxLoad  uint64
}

func init() {
	register(&command{
		name:    "check",
		args:    "PATH... [--json] [--envelope] [--strict] [--engine temporal]",
		summary: "check flows and print their diagnostics",
		long: `Loads each flow and proves it sane without running it: names, reachability,
termination, joins, scopes, routers, until functions, nested flows and
injection safety. Diagnostics print in compiler form (file:line:col: ...);
several flows merge into one report.

A directory means every flow file under it, recursively (hidden directories
are skipped). A file that another flow there loads with load() or names as a
literal child flow is checked through that flow, not on its own. Test files
(*_test.star) are skipped: 'skein test' runs them.

With --engine temporal, what holds only on Temporal is reported too: a
fn step's timeout= that is not applied there (fn_timeout_ignored).

With --envelope, each flow without errors is followed by its envelope:
the most one run may spend (model calls, completion tokens, output cost,
processes, tool calls, approvals, time), for the run and per step,
computed from the bounds the checker proved (docs/envelope.md). With
--strict, a flow whose envelope may exceed its own max_tokens or
max_cost (envelope_exceeds_budget) is an error, not a warning.

Exit status: 0 when no flow has errors (warnings are fine), 1 when one has,
2 on bad usage.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *checkOptions) {
			fs.StringVar(&o.engine, "engine", "local", "the engine the flows will run on: local, or temporal (adds the warnings that hold only there)")
			fs.BoolVar(&o.json, "json", false, `print {"diagnostics": [...], "errors": N, "warnings": N}`)
			fs.BoolVar(&o.envelope, "envelope", false, "print each flow's envelope: the most one run may spend (docs/envelope.md)")
			fs.BoolVar(&o.strict, "strict", false, "an envelope that may exceed the flow's max_tokens or max_cost is an error")
			fs.StringVar(&o.root, "root", "", "flow root that load() and child flows may not leave (default: each flow's directory)")
			defineMaxLoadSteps(fs, &o.maxLoad)
		}, runCheck, nil),
	})
}

func runCheck(_ context.Context, io stdio, opts *checkOptions, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(io.err, "skein check: no flow given\nusage: skein check PATH... [--json]")
		return exitUsage
	}
	if opts.engine != "local" && opts.engine != "temporal" {
		fmt.Fprintf(io.err, "skein check: unknown --engine %q; want local or temporal\n", opts.engine)
		return exitUsage
	}
	set, err := findFlows(args)
	if err != nil {
		fmt.Fprintf(io.err, "skein check: %v\n", err)
		return exitUsage
	}
	lo := loadOptions(opts.root, opts.maxLoad)
	lo.Print = printTo(io.err)
	all, checked, triggers, envs := set.check(lo, opts.engine, opts.envelope)
	all = check.Sort(all)
	if opts.strict {
		for i := range all {
			if all[i].Code == codes.EnvelopeExceedsBudget {
				all[i].Severity = check.Error
			}
		}
	}
	errs, warns := check.Count(all)
	if opts.json {
		check.WriteJSONEnvelopes(io.out, all, envs)
	} else {
		check.WriteText(io.out, all)
		for _, fe := range envs {
			check.WriteEnvelope(io.out, fe)
		}
		if n := len(set.tests); n > 0 {
			fmt.Fprintf(io.err, "skipped %s (*_test.star): flow tests are run by 'skein test', not checked as flows\n", plural(n, "test file"))
		}
		switch {
		case errs+warns == 0:
			fmt.Fprintf(io.err, "ok: %s\n", countFlows(checked))
		default:
			fmt.Fprintf(io.err, "%s, %s in %s\n", plural(errs, "error"), plural(warns, "warning"), countFlows(checked))
		}
		for _, t := range triggers {
			fmt.Fprintln(io.err, t)
		}
	}
	if errs > 0 {
		return exitFail
	}
	return exitOK
}

// flowSet is what `skein check PATH...` checks: the files named, and the
// flow files found under the directories named.
type flowSet struct {
	files []checkTarget
	tests []string // *_test.star files found under directories, skipped
}

type checkTarget struct {
	path  string
	found bool // found under a directory, not named
}

// findFlows expands the paths given to skein check: a directory stands for
// every .star file under it (recursively, skipping hidden directories),
// except test files (*_test.star).
func findFlows(args []string) (*flowSet, error) {
	set := &flowSet{}
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil || !st.IsDir() {
			set.files = append(set.files, checkTarget{path: arg}) // a missing file is a finding about it
			continue
		}
		before := len(set.files)
		err = filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if path != arg && strings.HasPrefix(name, ".") {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case !strings.HasSuffix(name, ".star"):
			case strings.HasSuffix(name, "_test.star"):
				set.tests = append(set.tests, path)
			default:
				set.files = append(set.files, checkTarget{path: path, found: true})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(set.files) == before {
			return nil, fmt.Errorf("no flow files (*.star) under %s", arg)
		}
	}
	return set, nil
}

// check loads and checks every file of the set and returns the
// diagnostics and how many flows were checked. A file found under a
// directory that another file of the set loads with load() or names as a
// literal child flow is checked through that file only: on its own a
// module is not a flow, and a child's errors reach its parents.
//
// For engine temporal, each flow's diagnostics include those that hold
// only on Temporal. The lines it returns last say the triggers of each
// checked flow that declares some and has no error, as "triggers of
// PATH: cron 0 3 * * * (Europe/Berlin); webhook push". With envelopes, it
// also returns each such flow's envelope (computed only then: on a
// million-step flow it takes more memory than the check).
func (set *flowSet) check(lo frontend.Options, engine string, envelopes bool) ([]check.Diagnostic, int, []string, []*check.FlowEnvelope) {
	type result struct {
		ds       []check.Diagnostic
		read     map[string]bool
		triggers string
		env      *check.FlowEnvelope
	}
	results := make([]result, len(set.files))
	used := map[string]bool{} // absolute paths read by the load of another file
	for i, f := range set.files {
		read := map[string]bool{}
		opts := lo
		opts.ReadFile = func(name string) ([]byte, error) {
			read[confine.Abs(name)] = true
			return lang.ReadFile(name)
		}
		fl := frontend.Load(f.path, opts)
		ds := fl.Diagnostics
		if fl.Graph != nil && engine == "temporal" {
			ds = append(ds, limits.Warnings(fl.Graph, 0)...)
		}
		self := confine.Abs(f.path)
		for p := range read {
			if p != self {
				used[p] = true
			}
		}
		results[i] = result{ds: ds, read: read}
		if errs, _ := check.Count(ds); envelopes && errs == 0 && fl.Graph != nil {
			results[i].env = check.ComputeEnvelope(fl.Graph)
			results[i].env.File = f.path
		}
		if errs, _ := check.Count(ds); errs == 0 && fl.Graph != nil && len(fl.Graph.Triggers) > 0 {
			keys := make([]string, len(fl.Graph.Triggers))
			for j := range fl.Graph.Triggers {
				keys[j] = fl.Graph.Triggers[j].Key()
			}
			results[i].triggers = fmt.Sprintf("triggers of %s: %s", f.path, strings.Join(keys, "; "))
		}
	}
	var all []check.Diagnostic
	var triggers []string
	var envs []*check.FlowEnvelope
	checked := 0
	for i, f := range set.files {
		if abs, _ := filepath.Abs(f.path); f.found && used[abs] {
			continue
		}
		checked++
		all = append(all, results[i].ds...)
		if results[i].triggers != "" {
			triggers = append(triggers, results[i].triggers)
		}
		if results[i].env != nil {
			envs = append(envs, results[i].env)
		}
	}
	return all, checked, triggers, envs
}

func countFlows(n int) string { return plural(n, "flow") }

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
