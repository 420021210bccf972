package main

// This file defines what `skein run --dry-run` prints: each effect a step
// would start, rendered, in the order the walk reaches it.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/flowtest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

type dryRun struct {
	mu       sync.Mutex
	producer *flowtest.DryRun
	show     func(text string) // nil: print nothing (--json, --events)
	base     string            // the flow's directory, to show dir= relative to it
}

// newDryRun makes the producer of a dry run of g, with the outcomes of
// --mock STEP=ok|fail|OUTPUT.
func newDryRun(g *graphir.Graph, mocks []string) (*dryRun, error) {
	d := &dryRun{producer: &flowtest.DryRun{Outcomes: map[string]*flowtest.Outcome{}}, base: filepath.Dir(g.File)}
	names := g.StepNames()
	sort.Strings(names)
	for _, m := range mocks {
		step, what, ok := strings.Cut(m, "=")
		if !ok || step == "" {
			return nil, fmt.Errorf("--mock %q: want STEP=ok, STEP=fail or STEP=OUTPUT", m)
		}
		if g.Node(step) == nil {
			msg := fmt.Sprintf("--mock %q: flow %s has no step %q", m, g.Name, step)
			msg += spell.Suggest(step, names)
			return nil, fmt.Errorf("%s", msg)
		}
		if kind := flowtest.NoEffect(g.Node(step)); kind != "" {
			return nil, fmt.Errorf("--mock %q: step %q is %s, which always runs in a dry run: it has no effect to mock", m, step, kind)
		}
		o := flowtest.OK
		switch what {
		case "ok":
		case "fail":
			o = flowtest.Fail
		default:
			if g.Node(step).Kind == graphir.KindApproval {
				return nil, fmt.Errorf("--mock %q: step %q is an approval: --mock takes ok (approved) or fail (rejected) for it", m, step)
			}
			var err error
			if o, err = mockOutput(what); err != nil {
				return nil, fmt.Errorf("--mock %q: %v", m, err)
			}
		}
		d.producer.Outcomes[step] = o
	}
	d.producer.Report = d.report
	return d, nil
}

// mockOutput is the outcome of --mock STEP=TEXT: any step's output but a
// task's is TEXT read as JSON, or TEXT itself when it is not JSON (as
// resume --set reads it); a task or shell prints TEXT on stdout, or the
// string a JSON string TEXT holds. A JSON string ('"ok"') is how to give
// the text ok or fail.
func mockOutput(text string) (*flowtest.Outcome, error) {
	var out starlark.Value = starlark.String(text)
	if json.Valid([]byte(text)) {
		v, err := stdlib.FromJSON([]byte(text))
		if err != nil {
			return nil, err
		}
		out = v
	}
	stdout := text
	if s, isStr := out.(starlark.String); isStr {
		stdout = string(s) // '"ok"' prints ok
	}
	return &flowtest.Outcome{Kind: "ok", Stdout: stdout, Output: out}, nil
}

func (d *dryRun) report(req *vm.EffectRequest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.show == nil {
		return
	}
	d.show(d.describe(req))
}

// describe renders what the effect of req would do.
func (d *dryRun) describe(req *vm.EffectRequest) string {
	var b strings.Builder
	where := strings.Join(append(append([]string(nil), req.Scope...), req.Step), " › ")
	if len(req.Flow) > 0 {
		where = strings.Join(req.Flow, " › ") + " › " + where
	}
	switch req.Kind {
	case graphir.KindShell:
		fmt.Fprintf(&b, "would run  %s: sh -c %s", where, quoteArg(req.Argv[len(req.Argv)-1]))
	case graphir.KindTask:
		args := make([]string, len(req.Argv))
		for i, a := range req.Argv {
			args[i] = quoteArg(a)
		}
		fmt.Fprintf(&b, "would run  %s: %s", where, strings.Join(args, " "))
	case graphir.KindWait:
		fmt.Fprintf(&b, "would wait %s: %s", where, req.Wait)
	case graphir.KindApproval:
		fmt.Fprintf(&b, "would ask  %s: %s", where, strconv.Quote(req.Message))
	case graphir.KindSubflow:
		fmt.Fprintf(&b, "would run  %s: child flow %s", where, d.rel(req.ChildPath))
		keys := make([]string, 0, len(req.ChildInputs))
		for k := range req.ChildInputs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "\n    input: %s = %s", k, visible.Text(valueText(req.ChildInputs[k], 200), false))
		}
	default:
		if req.Chat != nil {
			fmt.Fprintf(&b, "would call %s: model %s", where, req.Chat.Model)
			break
		}
		fmt.Fprintf(&b, "would run  %s: a %s step", where, req.Kind)
	}
	for _, kv := range flowtest.AddedEnv(req) {
		fmt.Fprintf(&b, "\n    env: %s", visible.Text(kv, false))
	}
	if req.Kind == graphir.KindTask || req.Kind == graphir.KindShell {
		if dir := d.rel(req.Dir); dir != "." {
			fmt.Fprintf(&b, "\n    dir: %s", dir)
		}
	}
	if req.Stdin != nil {
		fmt.Fprintf(&b, "\n    stdin: %s", visible.Text(strconv.Quote(*req.Stdin), false))
	}
	for _, x := range dryExtras(req) {
		fmt.Fprintf(&b, "\n    %s: %s", x[0], visible.Text(x[1], true))
	}
	if o := d.producer.Outcomes[req.Step]; o != nil {
		what := o.Kind
		if o != flowtest.OK && o.Kind == "ok" {
			what = "output " + valueText(o.Output, 200)
			if req.Kind == graphir.KindTask || req.Kind == graphir.KindShell {
				what = "stdout " + strconv.Quote(o.Stdout)
			}
		}
		fmt.Fprintf(&b, "\n    outcome: %s (--mock)", visible.Text(what, false))
	}
	return visible.Text(req.Mask(b.String()), true)
}

// dryExtras are the texts of model and approval requests.
func dryExtras(req *vm.EffectRequest) [][2]string {
	if req.Chat != nil {
		return [][2]string{{"prompt", strconv.Quote(req.Prompt)}}
	}
	return nil
}

func (d *dryRun) rel(path string) string {
	if path == "" {
		return "."
	}
	if r, err := filepath.Rel(d.base, path); err == nil {
		return r
	}
	return path
}

// quoteArg writes one argv element so a reader sees where it begins and
// ends: bare when it is plain, else in single quotes.
func quoteArg(a string) string {
	if a != "" && strings.IndexFunc(a, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' || r == '@' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
