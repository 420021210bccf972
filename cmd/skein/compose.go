package main

// This file defines `skein compose`: a model drafts a flow from a
// description, Skein loads and checks the draft, and the checker's report
// goes back to the model for a bounded number of repair rounds. Only a draft
// with no errors is written.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/docs"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/model"
)

type composeOptions struct {
	output     string
	model      string
	maxRepairs int
	allowRun   []string
	allowShell bool
	cassetteFlags
	force bool
	shape string
}

func init() {
	register(&command{
		name:    "compose",
		args:    `"DESCRIPTION" [-o FILE] [--model M] [--max-repairs N] [--allow-run CMD,...] [--allow-shell] [--shape NAME|none]`,
		summary: "have a model draft a flow, repaired until it checks",
		long: `Sends the description and Skein's language reference to a model, which
answers with a .star file. The draft starts from the skein init shape
closest to the description (--shape names one; none starts from nothing). Skein loads and checks the draft; its errors go
back to the model, printed as 'skein check' prints them, for at most
--max-repairs rounds. Only a draft without errors is written to FILE
(default flow.star; an existing file is kept unless --force); warnings are
shown. When the rounds run out, the last draft is kept beside the target as
FILE.draft for a person to read, and the exit status is 1.

A safety floor on top of the checker: with --allow-run, tasks and agents'
tools may only run the commands listed (run[0], as written); shell= steps
and tools need --allow-shell;
loops are bounded by construction (the checker refuses any that is not).

The model is --model (a model id), else $SKEIN_MODEL, at $SKEIN_BASE_URL
(else $OPENAI_BASE_URL, else OpenAI's) with the key from $OPENAI_API_KEY.
--cassette FILE records the exchanges (and answers from them after);
--replay-only answers only from the cassette.

Exit status: 0 written, 1 no draft checked within the rounds, 2 usage or no
usable model.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *composeOptions) {
			fs.StringVarP(&o.output, "output", "o", "flow.star", "the file to write")
			fs.StringVar(&o.model, "model", "", "the model id (default $SKEIN_MODEL)")
			fs.IntVar(&o.maxRepairs, "max-repairs", 3, "repair rounds after the first draft")
			fs.StringSliceVar(&o.allowRun, "allow-run", nil, "the only commands tasks may run (comma-separated; default: any)")
			fs.BoolVar(&o.allowShell, "allow-shell", false, "allow shell= steps")
			o.cassetteFlags.define(fs, cassetteHelp, "with --cassette: answer only from the cassette")
			fs.BoolVar(&o.force, "force", false, "overwrite FILE if it exists")
			fs.StringVar(&o.shape, "shape", "", "the skein init shape the draft starts from (default: the closest to the description; none: from nothing)")
		}, runCompose, nil),
	})
}

func runCompose(ctx context.Context, io stdio, opts *composeOptions, args []string) int {
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		fmt.Fprintln(io.err, `skein compose: want one description, in quotes: skein compose "build, test, and deploy on success"`)
		return exitUsage
	}
	if opts.maxRepairs < 0 {
		fmt.Fprintln(io.err, "skein compose: --max-repairs must be 0 or more")
		return exitUsage
	}
	if opts.replayOnly && opts.cassette == "" {
		fmt.Fprintln(io.err, "skein compose: --replay-only needs --cassette FILE")
		return exitUsage
	}
	if !strings.HasSuffix(opts.output, ".star") {
		fmt.Fprintf(io.err, "skein compose: -o %s: a flow file ends in .star\n", opts.output)
		return exitUsage
	}
	if _, err := os.Stat(opts.output); err == nil && !opts.force {
		fmt.Fprintf(io.err, "skein compose: %s exists: choose another -o, or --force to overwrite it\n", opts.output)
		return exitUsage
	}
	cfg := model.Resolve(nil, os.Getenv)
	if opts.model != "" {
		cfg.Model = opts.model
	}
	shape := opts.shape
	switch {
	case shape == "":
		shape = closestShape(args[0])
	case shape == "none":
		shape = ""
	case !slices.Contains(shapeNames(), shape):
		fmt.Fprintf(io.err, "skein compose: no shape %q%s; skein init --list shows them\n", shape, spell.Suggest(shape, shapeNames()))
		return exitUsage
	}
	var provider model.Provider = &model.Client{}
	if !opts.replayOnly {
		if cfg.Model == "" {
			// Not the message of model.Config.Usable: a description has no
			// model() to declare.
			fmt.Fprintf(io.err, "skein compose: no model configured: give --model ID, or set %s (with %s for its key, and %s for a server other than OpenAI)\n", model.EnvModel, model.EnvKey, model.EnvBaseURL)
			return exitUsage
		}
		if err := cfg.Usable(os.Getenv); err != nil {
			fmt.Fprintf(io.err, "skein compose: %v\n", err)
			return exitUsage
		}
	} else if cfg.Model == "" {
		cfg.Model = "replay"
	}
	if opts.cassette != "" {
		c, err := openCassette(opts.cassette, opts.replayOnly)
		if err != nil {
			fmt.Fprintf(io.err, "skein compose: %v\n", err)
			return exitUsage
		}
		provider = c
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	c := &composer{
		provider: provider, req: cfg.Request(), target: opts.output, maxRepairs: opts.maxRepairs,
		floor: floor{allowRun: opts.allowRun, allowShell: opts.allowShell}, log: io.out, shape: shape,
	}
	if shape != "" {
		fmt.Fprintf(io.out, "starting from the %s shape (skein init --list)\n", shape)
	}
	res, err := c.compose(ctx, args[0])
	if err != nil {
		fmt.Fprintf(io.err, "skein compose: %v\n", err)
		if res != nil && res.draft != "" {
			c.keepDraft(io, res.draft)
		}
		return exitFail
	}
	if !res.ok {
		fmt.Fprintf(io.out, "no draft checked clean in %s\n", plural(res.rounds, "round"))
		c.keepDraft(io, res.draft)
		return exitFail
	}
	if err := writeFileAtomic(opts.output, []byte(res.draft), 0o644); err != nil {
		fmt.Fprintf(io.err, "skein compose: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(io.out, "wrote %s: %s, %s, in %s\n\n", opts.output, plural(len(res.graph.Steps()), "step"), plural(len(res.graph.Edges), "edge"), plural(res.rounds, "round"))
	fmt.Fprint(io.out, res.graph.Mermaid())
	return exitOK
}

// keepDraft writes the last draft beside the target for a person to read.
func (c *composer) keepDraft(io stdio, draft string) {
	path := c.target + ".draft"
	if err := writeFileAtomic(path, []byte(draft), 0o644); err != nil {
		fmt.Fprintf(io.err, "skein compose: cannot keep the last draft: %v\n", err)
		return
	}
	fmt.Fprintf(io.out, "the last draft is in %s\n", path)
}

// composer runs the draft, check, repair loop.
type composer struct {
	provider   model.Provider
	req        model.Request // the model, endpoint and parameters
	target     string        // where the flow will live: drafts load as if there
	maxRepairs int
	floor      floor
	log        io.Writer // each round's report
	shape      string    // the skein init shape the draft starts from, or ""
}

type composeResult struct {
	ok     bool
	draft  string // the last draft
	graph  *graphir.Graph
	rounds int
}

// compose asks for a draft and repairs it until it checks or the rounds
// run out.
func (c *composer) compose(ctx context.Context, description string) (*composeResult, error) {
	req := c.req
	req.Messages = []model.Message{
		{Role: "system", Content: composeSystem(c.floor)},
		{Role: "user", Content: composeAsk(description, c.shape)},
	}
	res := &composeResult{}
	abs, err := filepath.Abs(c.target)
	if err != nil {
		return nil, err
	}
	for round := 1; round <= c.maxRepairs+1; round++ {
		res.rounds = round
		rep, err := model.Call(ctx, c.provider, req, model.Policy{Retries: 2, Backoff: time.Second})
		if err != nil {
			return res, fmt.Errorf("round %d: %v", round, err)
		}
		draft := extractDraft(rep.Text)
		res.draft = draft
		g, ds := c.checkDraft(abs, draft)
		errs, warns := check.Count(ds)
		verdict := countText(errs, warns)
		if errs == 0 {
			verdict = "no errors"
			if warns > 0 {
				verdict += ", " + plural(warns, "warning")
			}
		}
		fmt.Fprintf(c.log, "round %d: a draft of %s: %s\n", round, plural(strings.Count(strings.TrimRight(draft, "\n"), "\n")+1, "line"), verdict)
		var report strings.Builder
		check.WriteText(&report, ds)
		text := strings.ReplaceAll(report.String(), abs, c.target)
		for _, line := range strings.SplitAfter(text, "\n") {
			if line != "" {
				fmt.Fprintf(c.log, "  %s", line)
			}
		}
		if errs == 0 {
			res.ok, res.graph = true, g
			return res, nil
		}
		// The model sees the file by its name only: where it will live is
		// none of its business, and a recorded session replays anywhere.
		forModel := strings.ReplaceAll(report.String(), abs, filepath.Base(c.target))
		req.Messages = append(req.Messages,
			model.Message{Role: "assistant", Content: rep.Text},
			model.Message{Role: "user", Content: "skein check found errors in that draft:\n\n" + forModel +
				"\nAnswer with the whole corrected file, and nothing else."})
	}
	return res, nil
}

// checkDraft loads and checks a draft as if it were the file at path, and
// applies the safety floor.
func (c *composer) checkDraft(path, draft string) (*graphir.Graph, []check.Diagnostic) {
	loaded := frontend.LoadSource(path, []byte(draft), frontend.Options{})
	g, ds := loaded.Graph, loaded.Diagnostics
	if g == nil {
		return nil, ds
	}
	ds = append(ds, c.floor.check(g)...)
	ds = append(ds, c.floor.checkTools(g)...)
	return g, check.Sort(ds)
}

// floor is what compose refuses on top of the checker.
type floor struct {
	allowRun   []string // nil: any command
	allowShell bool
}

// check returns a not_allowed diagnostic for each task that runs a command
// outside allowRun and each shell step without allowShell, in the flow and
// its literal child flows.
func (f floor) check(g *graphir.Graph) []check.Diagnostic {
	var ds []check.Diagnostic
	g.EachStep(func(n *graphir.Node) {
		switch n.Kind {
		case graphir.KindShell:
			if !f.allowShell {
				ds = append(ds, notAllowed(n, fmt.Sprintf("step %q is a shell step, and shell steps are not allowed here", n.Name),
					`write run=["cmd", "arg", ...] instead (or compose with --allow-shell)`))
			}
		case graphir.KindTask:
			if f.allowRun == nil || len(n.Argv) == 0 {
				break
			}
			cmd := n.Argv[0]
			if !cmd.IsLiteral() {
				ds = append(ds, notAllowed(n, fmt.Sprintf("step %q computes its command with a template; the command must be one of %s", n.Name, strings.Join(f.allowRun, ", ")), "write the command literally as run[0]"))
				break
			}
			if name := literalText(cmd); !slices.Contains(f.allowRun, name) {
				ds = append(ds, notAllowed(n, fmt.Sprintf("step %q runs %q, which is not allowed; allowed commands: %s", n.Name, name, strings.Join(f.allowRun, ", ")),
					"use one of the allowed commands"))
			}
		}
	})
	return ds
}

// checkTools returns a not_allowed diagnostic for each tool, in the flow
// and its literal child flows, that the floor refuses as it would a step:
// a shell= tool without allowShell, a run= tool whose command is outside
// allowRun. An agent's tools run commands just as tasks do.
func (f floor) checkTools(g *graphir.Graph) []check.Diagnostic {
	var ds []check.Diagnostic
	refuse := func(t *graphir.Tool, msg, hint string) {
		ds = append(ds, check.FromError(&graphir.Error{Code: codes.NotAllowed, Msg: msg, Hint: hint, Pos: t.Pos}))
	}
	g.EachGraph(func(c *graphir.Graph) {
		for _, t := range c.Tools {
			switch t.Kind {
			case graphir.KindShell:
				if !f.allowShell {
					refuse(t, fmt.Sprintf("tool %q is a shell tool, and shell scripts are not allowed here", t.Name),
						`write run=["cmd", "{{ args.NAME }}", ...] instead (or compose with --allow-shell)`)
				}
			case graphir.KindTask:
				if f.allowRun == nil || len(t.Argv) == 0 {
					break
				}
				if cmd := t.Argv[0]; !cmd.IsLiteral() {
					refuse(t, fmt.Sprintf("tool %q computes its command with a template; the command must be one of %s", t.Name, strings.Join(f.allowRun, ", ")), "write the command literally as run[0]")
				} else if name := literalText(cmd); !slices.Contains(f.allowRun, name) {
					refuse(t, fmt.Sprintf("tool %q runs %q, which is not allowed; allowed commands: %s", t.Name, name, strings.Join(f.allowRun, ", ")),
						"use one of the allowed commands")
				}
			}
		}
	})
	return ds
}

func notAllowed(n *graphir.Node, msg, hint string) check.Diagnostic {
	return check.FromError(&graphir.Error{Code: codes.NotAllowed, Msg: msg, Hint: hint, Step: n.Name, Pos: n.Pos})
}

// literalText is the text of a template without holes.
func literalText(t *graphir.Template) string {
	if len(t.Parts) == 0 {
		return t.Src
	}
	var b strings.Builder
	for _, p := range t.Parts {
		b.WriteString(p.Lit)
	}
	return b.String()
}

// extractDraft takes the flow out of a reply: the text inside the first
// fenced code block when there is one, else the whole reply.
func extractDraft(reply string) string {
	s := strings.TrimSpace(reply)
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:] // drop the info string (```python)
			if j := strings.Index(rest, "```"); j >= 0 {
				return strings.TrimRight(rest[:j], " \t\n") + "\n"
			}
		}
	}
	return s + "\n"
}

// composeAsk is the first request: the description, and the shape the
// draft starts from, if any.
func composeAsk(description, shape string) string {
	ask := "Write a Skein flow for this:\n\n" + strings.TrimSpace(description)
	if shape == "" {
		return ask
	}
	src, err := shapes.ReadFile("shapes/" + shape + "/flow.star")
	if err != nil {
		return ask
	}
	return ask + "\n\nStart from this proven shape, and adapt its names, commands and steps to the description:\n\n```python\n" + string(src) + "```"
}

// shapeWords are the words of a description that point at a shape.
var shapeWords = map[string][]string{
	"repair-loop":    {"fix", "repair", "retry", "again", "until it builds", "until it passes"},
	"fan-out":        {"parallel", "side by side", "at once", "fan", "each of", "summar", "combine"},
	"draft-critique": {"draft", "critique", "revise", "write a", "essay", "paragraph", "article", "polish"},
	"gated-deploy":   {"deploy", "approv", "sign-off", "sign off", "roll back", "rollback", "a person", "someone"},
	"agent-fixer":    {"agent", "tool", "investigate", "diagnose", "debug"},
}

// closestShape is the shape whose words the description has most of, or
// basic.
func closestShape(description string) string {
	d := strings.ToLower(description)
	best, score := "basic", 0
	for _, name := range shapeNames() {
		n := 0
		for _, w := range shapeWords[name] {
			if strings.Contains(d, w) {
				n++
			}
		}
		if n > score {
			best, score = name, n
		}
	}
	return best
}

// composeSystem is the system message: what to write, the floor, and the
// language reference.
func composeSystem(f floor) string {
	var b strings.Builder
	b.WriteString(`You write flows for Skein, a workflow language whose programs are Starlark files (.star).
Answer with the complete .star file only: no prose before or after it.
Rules:
- Declare steps with step(), connect them with edge() or chain(), from START to END.
- Every cycle needs a bound: max_visits on a step in it, or use loop(..., max_iterations=N).
- Pass data to tasks as whole arguments: run=["cmd", "{{ step.field }}"], never by building a shell string.
`)
	if !f.allowShell {
		b.WriteString("- Do not use shell= steps or shell= tools.\n")
	}
	if f.allowRun != nil {
		fmt.Fprintf(&b, "- Tasks and tools may only run these commands (run[0]): %s.\n", strings.Join(f.allowRun, ", "))
	}
	b.WriteString("\nThe language reference follows.\n")
	for _, name := range []string{"language.md", "runs.md"} {
		if page := docs.Page(name); page != "" {
			b.WriteString("\n")
			b.WriteString(page)
		}
	}
	return b.String()
}
