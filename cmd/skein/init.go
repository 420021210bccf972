package main

// This file is skein init: a new flow started from a proven shape (a
// repair loop, fan-out then synthesize, draft and critique, a gated
// deploy, an agent fixer), with its flow test and a README, each shape a
// small template under shapes/ that passes check, test and fmt --check as
// written (TestInitShapes).

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/internal/spell"
)

//go:embed shapes
var shapes embed.FS

type initOptions struct {
	shape string
	list  bool
}

func init() {
	register(&command{
		name:    "init",
		args:    "[DIR] [--shape NAME] [--list]",
		summary: "start a flow from a proven shape, with its test and a README",
		long: `Writes flow.star, its test flow_test.star and a README.md into DIR (default:
the current directory), from a shape that fits the task (--list shows them;
default basic). Each passes skein check, skein test and skein fmt --check as
written; its model steps use the offline stub model until you name a real one.
Files that exist are never overwritten.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *initOptions) {
			fs.StringVar(&o.shape, "shape", "basic", "the shape to start from (--list shows them)")
			fs.BoolVar(&o.list, "list", false, "list the shapes")
		}, runInit, nil),
	})
}

// shapeNames are the shapes, sorted.
func shapeNames() []string {
	ents, _ := shapes.ReadDir("shapes")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// shapeSummary is the first sentence of a shape's leading comment.
func shapeSummary(name string) string {
	b, _ := shapes.ReadFile("shapes/" + name + "/flow.star")
	var words []string
	for _, l := range strings.Split(string(b), "\n") {
		text, ok := strings.CutPrefix(l, "#")
		if !ok {
			break
		}
		words = append(words, strings.Fields(text)...)
	}
	s := strings.Join(words, " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return s
}

func runInit(_ context.Context, io stdio, opts *initOptions, args []string) int {
	if opts.list {
		for _, n := range shapeNames() {
			fmt.Fprintf(io.out, "%-15s %s\n", n, shapeSummary(n))
		}
		return exitOK
	}
	if len(args) > 1 {
		fmt.Fprintln(io.err, "skein init: want at most one directory\nusage: skein init [DIR] [--shape NAME] [--list]")
		return exitUsage
	}
	names := shapeNames()
	if _, err := fs.Stat(shapes, "shapes/"+opts.shape); err != nil || strings.ContainsAny(opts.shape, "/.") {
		fmt.Fprintf(io.err, "skein init: no shape %q%s; skein init --list shows them (%s)\n", opts.shape, spell.Suggest(opts.shape, names), strings.Join(names, ", "))
		return exitUsage
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	files := map[string][]byte{}
	for _, f := range []string{"flow.star", "flow_test.star"} {
		b, err := shapes.ReadFile("shapes/" + opts.shape + "/" + f)
		if err != nil {
			fmt.Fprintf(io.err, "skein init: %v\n", err)
			return exitFail
		}
		files[f] = b
	}
	files["README.md"] = []byte(initReadme(dir, opts.shape))
	for f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			fmt.Fprintf(io.err, "skein init: %s exists: nothing was written (skein init never overwrites a file)\n", filepath.Join(dir, f))
			return exitFail
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(io.err, "skein init: %v\n", err)
			return exitFail
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(io.err, "skein init: %v\n", err)
		return exitFail
	}
	for _, f := range []string{"flow.star", "flow_test.star", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), files[f], 0o644); err != nil {
			fmt.Fprintf(io.err, "skein init: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(io.out, "wrote %s\n", filepath.Join(dir, f))
	}
	fmt.Fprintf(io.out, "next: skein check %s && skein test %s\n", filepath.Join(dir, "flow.star"), dir)
	return exitOK
}

// initReadme is the README of a new flow of shape in dir.
func initReadme(dir, shape string) string {
	flow := filepath.Join(dir, "flow.star")
	return fmt.Sprintf(`# flow

%s Started from skein init's %q shape.

    skein check %s   # the checker's diagnostics
    skein test %s   # the tests in flow_test.star, effects mocked
    skein run %s   # run it for real
    skein graph %s | dot -Tsvg > flow.svg   # draw it
`, shapeSummary(shape), shape, flow, dir, flow, flow)
}
