package main

// This file defines `skein test`: flow tests in *_test.star files, printed
// the way `go test` prints.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/flowtest"
	"github.com/skeinlang/skein/internal/visible"
)

type testOptions struct {
	run     string
	verbose bool
	json    bool
	root    string
}

func init() {
	register(&command{
		name:    "test",
		args:    "[PATH...] [--run REGEX] [-v] [--json]",
		summary: "run flow tests (*_test.star files)",
		long: `Finds *_test.star files (directories are searched recursively; the default
is the current directory) and runs each test_*(t) function in them on a fresh
thread and VM, several files at once. t.run(flow, inputs={}, mocks={},
parallel=1) runs a flow (relative to the test file) and returns its result;
mocks script the outcomes of task, shell, child-flow, model, approval and
wait steps (t.ok, t.fail, t.answer, t.approve, t.reject; a list gives one
outcome per request, the last repeating; a function receives the request).
Assertions: t.eq, t.true, t.contains, t.fails, and fail().

Prints "ok  FILE  N tests  TIME" per passing file and "--- FAIL: test_name
(file:line:col)" with the message per failing test; -v prints every test;
--json prints one JSON object per test.

Exit status: 0 all passed, 1 a test failed, 2 usage or a test file that does
not load.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *testOptions) {
			fs.StringVar(&o.run, "run", "", "run only the tests whose names match this regular expression")
			fs.BoolVarP(&o.verbose, "verbose", "v", false, "print every test, and what tests print")
			fs.BoolVar(&o.json, "json", false, "print one JSON object per test")
			fs.StringVar(&o.root, "root", "", "root that test files and the flows they run may not leave (default: each test file's directory)")
		}, runTest, nil),
	})
}

func runTest(ctx context.Context, io stdio, opts *testOptions, args []string) int {
	topts := flowtest.Options{Root: opts.root}
	if opts.run != "" {
		re, err := regexp.Compile(opts.run)
		if err != nil {
			fmt.Fprintf(io.err, "skein test: --run: %v\n", err)
			return exitUsage
		}
		topts.Run = re
	}
	files, err := flowtest.Find(args)
	if err != nil {
		fmt.Fprintf(io.err, "skein test: %v\n", err)
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintf(io.err, "skein test: no %s files in %s\n", "*"+flowtest.Suffix, strings.Join(orDot(args), " "))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	status := exitOK
	passed, failed := 0, 0
	flowtest.RunFiles(ctx, files, topts, func(fr *flowtest.FileResult) {
		if fr.Err != nil {
			status = exitUsage
			if opts.json {
				writeTestJSON(io.out, fr.File, "", "error", 0, []flowtest.Failure{{Pos: fr.Err.Pos, Msg: fr.Err.Msg}}, nil)
			} else {
				fmt.Fprintf(io.out, "FAIL  %s  [does not load]\n    %s\n", fr.File, fr.Err.Error())
			}
			return
		}
		nf := fr.Failed()
		passed += len(fr.Tests) - nf
		failed += nf
		if nf > 0 && status == exitOK {
			status = exitFail
		}
		if opts.json {
			for _, t := range fr.Tests {
				st := "pass"
				if !t.Passed() {
					st = "fail"
				}
				writeTestJSON(io.out, fr.File, t.Name, st, t.Duration, t.Failures, t.Log)
			}
			return
		}
		writeTestText(io.out, fr, opts.verbose)
	})
	if !opts.json {
		fmt.Fprintf(io.out, "%d passed, %d failed\n", passed, failed)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(io.err, "skein test: interrupted: the tests after the one running were not run")
		if status == exitOK {
			status = exitFail
		}
	}
	return status
}

func orDot(args []string) []string {
	if len(args) == 0 {
		return []string{"."}
	}
	return args
}

// writeTestText prints one file's results the way go test does.
func writeTestText(w io.Writer, fr *flowtest.FileResult, verbose bool) {
	var b strings.Builder
	for _, t := range fr.Tests {
		if verbose {
			fmt.Fprintf(&b, "=== RUN   %s\n", t.Name)
			for _, l := range t.Log {
				fmt.Fprintf(&b, "    %s\n", visible.Text(l, false))
			}
		}
		if t.Passed() {
			if verbose {
				fmt.Fprintf(&b, "--- PASS: %s (%s)\n", t.Name, shortDuration(t.Duration))
			}
			continue
		}
		fmt.Fprintf(&b, "--- FAIL: %s (%s)\n", t.Name, t.Failures[0].Pos)
		for _, f := range t.Failures {
			fmt.Fprintf(&b, "    %s: %s\n", f.Pos, indentRest(visible.Text(f.Msg, true), "        "))
			for _, tr := range f.Trace {
				fmt.Fprintf(&b, "        %s\n", tr)
			}
		}
	}
	word := "ok  "
	if fr.Failed() > 0 {
		word = "FAIL"
	}
	fmt.Fprintf(&b, "%s  %s  %s  %s\n", word, fr.File, plural(len(fr.Tests), "test"), shortDuration(fr.Duration))
	io.WriteString(w, b.String())
}

func indentRest(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// shortDuration prints a duration the way test output does: 12ms, 1.2s.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

type testFailureJSON struct {
	File    string   `json:"file"`
	Line    int      `json:"line"`
	Col     int      `json:"col"`
	Message string   `json:"message"`
	Trace   []string `json:"trace,omitempty"`
}

type testJSON struct {
	File       string            `json:"file"`
	Test       string            `json:"test,omitempty"`
	Status     string            `json:"status"`
	DurationMS float64           `json:"duration_ms"`
	Failures   []testFailureJSON `json:"failures"`
	Log        []string          `json:"log,omitempty"`
}

func writeTestJSON(w io.Writer, file, name, status string, d time.Duration, fs []flowtest.Failure, log []string) {
	obj := testJSON{File: file, Test: name, Status: status, DurationMS: float64(d.Microseconds()) / 1000, Failures: []testFailureJSON{}, Log: log}
	for _, f := range fs {
		obj.Failures = append(obj.Failures, testFailureJSON{File: f.Pos.File, Line: f.Pos.Line, Col: f.Pos.Col, Message: f.Msg, Trace: f.Trace})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(obj)
}
