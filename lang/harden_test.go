package lang

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skeinlang/skein/graphir"
)

// writeLinkTree writes files under dir; a value starting with "->" makes a
// symbolic link to the rest.
func writeLinkTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(src, "->"); ok {
			err = os.Symlink(target, path)
		} else {
			err = os.WriteFile(path, []byte(src), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Symbolic links are resolved before the flow root is enforced: a link
// inside the root to a file or directory outside is outside (issue 9).
func TestLoadSymlinksConfined(t *testing.T) {
	dir := t.TempDir()
	writeLinkTree(t, dir, map[string]string{
		"outside/lib.star":    `x = "outside"`,
		"outside/child.star":  `step("c")`,
		"root/inside.star":    `x = "inside"`,
		"root/lib.star":       "->../outside/lib.star",
		"root/d":              "->../outside",
		"root/child.star":     "->../outside/child.star",
		"root/ok.star":        "->inside.star",
		"root/load_file.star": "load(\"lib.star\", \"x\")\nstep(x)",
		"root/load_dir.star":  "load(\"d/lib.star\", \"x\")\nstep(x)",
		"root/load_ok.star":   "load(\"ok.star\", \"x\")\nstep(x)",
		"root/child_lit.star": `step("a", flow = "child.star")`,
		"root/tool_lit.star":  "t = tool(\"t\", flow = \"child.star\")\nstep(\"a\", agent = \"go\", tools = [t])",
	})
	root := filepath.Join(dir, "root")
	for _, f := range []string{"load_file.star", "load_dir.star"} {
		_, err := Load(filepath.Join(root, f), Options{})
		var ge *graphir.Error
		if !errors.As(err, &ge) || ge.Code != "load_error" || !strings.Contains(ge.Msg, "outside the flow root") || !strings.Contains(ge.Msg, "symbolic link") {
			t.Errorf("%s: got %v, want a load_error: outside the flow root through a symbolic link", f, err)
		}
	}
	// A link that stays inside is fine.
	if g, err := Load(filepath.Join(root, "load_ok.star"), Options{}); err != nil || g.Node("inside") == nil {
		t.Errorf("load_ok.star: %v", err)
	}
	g, err := Load(filepath.Join(root, "child_lit.star"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := g.Node("a").Subflow.ChildErr; e == nil || e.Code != "subflow_not_found" || !strings.Contains(e.Msg, "outside the flow root") {
		t.Errorf("linked child flow: %v", e)
	}
	if g.Node("a").Subflow.Child != nil {
		t.Error("the linked child flow was loaded")
	}
	// The same for a flow= tool's child.
	g, err = Load(filepath.Join(root, "tool_lit.star"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tl := g.Tool("t"); tl.ChildErr == nil || tl.ChildErr.Code != "subflow_not_found" || !strings.Contains(tl.ChildErr.Msg, "outside the flow root") || tl.Child != nil {
		t.Errorf("linked child flow of a tool: %v (loaded: %v)", tl.ChildErr, tl.Child != nil)
	}
}

// Flow and module files are regular files of at most 8 MiB.
func TestLoadBoundedFiles(t *testing.T) {
	dir := t.TempDir()
	big := append([]byte("x = 1\n#"), bytes.Repeat([]byte("a"), MaxFileSize)...)
	writeLinkTree(t, dir, map[string]string{"big.star": string(big), "uses_big.star": "load(\"big.star\", \"x\")\nstep(\"s\")"})
	// A named pipe nobody writes to: opening it to read must not wait
	// for a writer.
	fifo := filepath.Join(dir, "pipe.star")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, frag string }{
		{filepath.Join(dir, "big.star"), "larger than the limit of 8 MiB"},
		{filepath.Join(dir, "uses_big.star"), "larger than the limit of 8 MiB"},
		{"/dev/zero", "not a regular file (a character device)"},
		{fifo, "not a regular file (a named pipe)"},
	} {
		_, err := Load(tc.file, Options{})
		var ge *graphir.Error
		if !errors.As(err, &ge) || ge.Code != "load_error" || !strings.Contains(ge.Msg, tc.frag) {
			t.Errorf("%s: got %v, want a load_error saying %q", tc.file, err, tc.frag)
		}
	}
	// Source given as it is (an editor's buffer, a drafted flow) is
	// bounded the same: loading or formatting it says what reading a
	// file that size would.
	for name, run := range map[string]func() error{
		"LoadSource": func() error { _, err := LoadSource("buf.star", big, Options{}); return err },
		"Format":     func() error { _, err := Format("buf.star", big); return err },
	} {
		var ge *graphir.Error
		if err := run(); !errors.As(err, &ge) || ge.Code != "load_error" || ge.Msg != "cannot read buf.star: larger than the limit of 8 MiB" {
			t.Errorf("%s of %d bytes: got %v", name, len(big), err)
		}
	}
	if _, err := LoadSource("buf.star", big[:MaxFileSize], Options{}); err != nil {
		t.Errorf("LoadSource of exactly MaxFileSize bytes: %v", err)
	}
}

// A UTF-8 byte-order mark before the first line (Notepad writes one) is
// not part of the flow: it loads, formats and checks as without it, and
// positions on its first line count as editors count them.
func TestByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	src := "\xef\xbb\xbfa = step(\"a\", run = 3)\n"
	file := filepath.Join(dir, "bom.star")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file, Options{})
	var ge *graphir.Error
	if !errors.As(err, &ge) || ge.Pos.Line != 1 || ge.Pos.Col != 5 || !strings.Contains(ge.Msg, "run must be a list of strings") {
		t.Errorf("Load: %v at %v, want the run= error at 1:5", err, ge)
	}
	if _, err := LoadSource(file, []byte("\xef\xbb\xbfa = step(\"a\")\n"), Options{}); err != nil {
		t.Errorf("LoadSource: %v", err)
	}
	out, err := Format(file, []byte("\xef\xbb\xbfa=step('a')\n"))
	if err != nil || string(out) != "a = step(\"a\")\n" {
		t.Errorf("Format: %q, %v", out, err)
	}
}

// A fail() or print() of a megabyte at load time is kept, shown and
// recorded as its first 16 KiB: a 60 MB fail() took skein check 23 s and
// 1.1 GB, and wrote 240 MB of escapes.
func TestLoadMessagesBounded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.star")
	var printed []string
	_, err := LoadSource(file, []byte("print(\"p\" * 1000000)\nfail(\"x\" * 1000000)\n"), Options{Print: func(_ graphir.Pos, msg string) {
		printed = append(printed, msg)
	}})
	var ge *graphir.Error
	if !errors.As(err, &ge) {
		t.Fatalf("Load: %v, want a load error", err)
	}
	if ge.Pos.Line != 2 || len(ge.Msg) > 17<<10 || !strings.Contains(ge.Msg, "bytes cut) …") {
		t.Errorf("Load: a %d-byte error %.60q…, want the fail() at line 2 cut to 16 KiB", len(ge.Msg), ge.Msg)
	}
	if len(printed) != 1 || len(printed[0]) > 17<<10 || !strings.HasPrefix(printed[0], "ppp") {
		t.Errorf("print(): %d lines, want one cut to 16 KiB", len(printed))
	}
}
