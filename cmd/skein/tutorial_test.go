package main

// This file runs docs/tutorial.md: the files it shows are written, the
// commands it shows are run by skein, and what they print is compared
// with what the page says they print, so the page and skein cannot drift
// apart.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A docAction is one thing a page asks the reader to do, in order: write
// a file, edit lines of one, or run a command and see what it prints.
type docAction struct {
	line int    // of the page, for messages
	kind string // "file", "edit" or "command"
	name string // the file written or edited
	text string // the file's text, the edited lines, or the expected output
	args []string
	exit int // the expected exit status of a command
}

var (
	// <!-- file: NAME --> or <!-- edit: NAME --> on the line before a fence.
	docMarker = regexp.MustCompile(`^<!-- (file|edit): ([A-Za-z0-9_.-]+) -->$`)
	// The last line of a console block's output, when the command fails.
	docExit = regexp.MustCompile(`^\[exit status (\d+)\]$`)
)

// readDocActions reads the actions of a Markdown page: a fenced block
// right after a file or edit marker is a file's text or the lines to
// replace in it; a ```console block holds commands, each a line "$ skein
// ARGS" followed by what it prints (stdout and stderr as one stream,
// ending with "[exit status N]" when N is not 0). Other blocks are prose.
func readDocActions(page string) ([]docAction, error) {
	var (
		acts   []docAction
		marker []string // the marker before the block, if any
		fence  string   // the open fence's info, "" outside a block
		start  int
		body   []string
	)
	sc := bufio.NewScanner(strings.NewReader(page))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence == "" {
			if m := docMarker.FindStringSubmatch(line); m != nil {
				marker = m[1:]
				continue
			}
			if strings.HasPrefix(line, "```") {
				fence, start, body = strings.TrimPrefix(line, "```"), n, nil
				if fence == "" {
					fence = "text"
				}
				continue
			}
			if strings.TrimSpace(line) != "" {
				marker = nil
			}
			continue
		}
		if line != "```" {
			body = append(body, line)
			continue
		}
		switch {
		case marker != nil:
			acts = append(acts, docAction{line: start, kind: marker[0], name: marker[1], text: strings.Join(body, "\n") + "\n"})
		case fence == "console":
			cmds, err := consoleActions(start, body)
			if err != nil {
				return nil, err
			}
			acts = append(acts, cmds...)
		}
		marker, fence = nil, ""
	}
	if fence != "" {
		return nil, fmt.Errorf("line %d: the block is never closed", start)
	}
	return acts, sc.Err()
}

// consoleActions reads the commands of one console block that starts at
// line start.
func consoleActions(start int, body []string) ([]docAction, error) {
	var acts []docAction
	for i, line := range body {
		n := start + 1 + i
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			args := strings.Fields(cmd)
			if args[0] != "skein" || strings.ContainsAny(cmd, `'"|<>&;$`) {
				return nil, fmt.Errorf("line %d: only plain skein commands can be run: %q", n, line)
			}
			acts = append(acts, docAction{line: n, kind: "command", args: args[1:]})
			continue
		}
		if len(acts) == 0 {
			return nil, fmt.Errorf("line %d: output before any command: %q", n, line)
		}
		a := &acts[len(acts)-1]
		if m := docExit.FindStringSubmatch(line); m != nil {
			a.exit, _ = strconv.Atoi(m[1])
			continue
		}
		if a.exit != 0 {
			return nil, fmt.Errorf("line %d: output after the exit status", n)
		}
		a.text += line + "\n"
	}
	return acts, nil
}

// editLines replaces, for each line "NAME = ..." of edit, the line of
// text that starts with the same "NAME = ".
func editLines(text, edit string) (string, error) {
	lines := strings.Split(text, "\n")
	for _, e := range strings.Split(strings.TrimSuffix(edit, "\n"), "\n") {
		lhs, _, ok := strings.Cut(e, " = ")
		if !ok {
			return "", fmt.Errorf("an edited line must be an assignment: %q", e)
		}
		found := false
		for i, l := range lines {
			if strings.HasPrefix(l, lhs+" = ") {
				lines[i], found = e, true
				break
			}
		}
		if !found {
			return "", fmt.Errorf("no line assigns %s", lhs)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// docVarying is what changes from one run to the next in skein's output:
// run ids, durations and times of day. normalizeDocOutput replaces them
// in the page's output and skein's alike.
var docVarying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}`), "RUN"},
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}`), "TIME"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m)\b`), "DURATION"},
}

func normalizeDocOutput(s string) string {
	for _, v := range docVarying {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// TestTutorial does what docs/tutorial.md says, in a directory of its
// own, and checks that skein prints what the page shows.
func TestTutorial(t *testing.T) {
	page, err := os.ReadFile("../../docs/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	acts, err := readDocActions(string(page))
	if err != nil {
		t.Fatalf("docs/tutorial.md: %v", err)
	}
	// TestMain puts the test binary on PATH as skein (script_test.go).
	skein, err := exec.LookPath("skein")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var commands int
	for _, a := range acts {
		at := fmt.Sprintf("docs/tutorial.md:%d", a.line)
		path := filepath.Join(dir, a.name)
		switch a.kind {
		case "file":
			if err := os.WriteFile(path, []byte(a.text), 0o644); err != nil {
				t.Fatal(err)
			}
		case "edit":
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%s: %v", at, err)
			}
			text, err := editLines(string(old), a.text)
			if err != nil {
				t.Fatalf("%s: %s: %v", at, a.name, err)
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		case "command":
			commands++
			cmd := exec.Command(skein, a.args...)
			cmd.Dir = dir
			// The run store is the one the page speaks of, .skein/ beside
			// the flow, whatever .skein/ the temporary directory has above.
			cmd.Env = append(os.Environ(), "SKEIN_STORE="+filepath.Join(dir, ".skein", "runs.db"), "GORACE=atexit_sleep_ms=0", "NO_COLOR=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatalf("%s: skein %s: %v", at, strings.Join(a.args, " "), err)
			}
			if code != a.exit {
				t.Errorf("%s: skein %s exited %d, the page says %d; it printed:\n%s", at, strings.Join(a.args, " "), code, a.exit, out.String())
			}
			if diff := cmp.Diff(normalizeDocOutput(a.text), normalizeDocOutput(out.String())); diff != "" {
				t.Errorf("%s: skein %s printed other than the page shows (- page + skein):\n%s", at, strings.Join(a.args, " "), diff)
			}
		}
	}
	// What the page must do, so that it cannot lose its commands unseen.
	if commands < 6 {
		t.Errorf("docs/tutorial.md runs %d commands; it should check, run, test, resume and graph", commands)
	}
}

// The reader of the page finds what the page's commands need, and reports
// what it cannot run.
func TestReadDocActions(t *testing.T) {
	page := "text\n\n<!-- file: a.star -->\n```python\nx = 1\n```\n\n```console\n$ skein check a.star\nok: 1 flow\n$ skein run a.star\nboom\n[exit status 1]\n```\n\n```python\nnot a file\n```\n"
	acts, err := readDocActions(page)
	if err != nil {
		t.Fatal(err)
	}
	want := []docAction{
		{line: 4, kind: "file", name: "a.star", text: "x = 1\n"},
		{line: 9, kind: "command", args: []string{"check", "a.star"}, text: "ok: 1 flow\n"},
		{line: 11, kind: "command", args: []string{"run", "a.star"}, text: "boom\n", exit: 1},
	}
	if diff := cmp.Diff(want, acts, cmp.AllowUnexported(docAction{})); diff != "" {
		t.Errorf("(- want + got):\n%s", diff)
	}
	for _, bad := range []string{
		"```console\n$ rm -rf x\n```\n",
		"```console\n$ skein run 'a b'\n```\n",
		"```console\nout first\n```\n",
		"```console\n$ skein x\n[exit status 1]\nmore\n```\n",
		"```python\nnever closed\n",
	} {
		if _, err := readDocActions(bad); err == nil {
			t.Errorf("readDocActions(%q) gave no error", bad)
		}
	}
	got, err := editLines("a = 1\nb = 2\n", "b = 3\n")
	if err != nil || got != "a = 1\nb = 3\n" {
		t.Errorf("editLines = %q, %v", got, err)
	}
	if _, err := editLines("a = 1\n", "c = 3\n"); err == nil {
		t.Error("editLines of a line no one assigns gave no error")
	}
	if got := normalizeDocOutput("ok    greet 101µs\n  run:    20261202T030436.268Z-9ba2b974\nsucceeded in 1.5s"); got != "ok    greet DURATION\n  run:    RUN\nsucceeded in DURATION" {
		t.Errorf("normalizeDocOutput = %q", got)
	}
}
