package frontend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
)

// write puts files (by slash path) under a new directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// outcome is what a test compares of a load: whether it gave a graph,
// its diagnostics in compiler form with their hints, and the files it
// read, relative to the directory of the test's files.
type outcome struct {
	Loaded bool
	Diags  []string
	Read   []string
}

func outcomeOf(dir string, f *Flow) outcome {
	o := outcome{Loaded: f.Graph != nil}
	for _, d := range f.Diagnostics {
		s := d.String()
		if d.Hint != "" {
			s += " (hint: " + d.Hint + ")"
		}
		o.Diags = append(o.Diags, strings.ReplaceAll(s, dir+string(filepath.Separator), ""))
	}
	for _, s := range f.Sources.List() {
		rel, _ := filepath.Rel(dir, s.Path)
		o.Read = append(o.Read, filepath.ToSlash(rel))
	}
	return o
}

// rootHint is the loader's hint for a module outside the flow root.
const rootHint = "load() and child flows stay inside the flow root, the main flow's directory unless --root says otherwise: widen it with --root DIR (skein check --root DIR, skein run --root DIR), DIR holding both the flow and lib.star"

const good = `load("lib.star", "cmd")
a = step("a", run = cmd)
edge(START, a)
edge(a, END)
`

func TestLoad(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		opts  Options
		want  outcome
	}{{
		name:  "a flow and its module",
		files: map[string]string{"flow.star": good, "lib.star": `cmd = ["true"]`},
		want:  outcome{Loaded: true, Read: []string{"flow.star", "lib.star"}},
	}, {
		name: "a checker error and a warning",
		files: map[string]string{"flow.star": `a = step("a")
b = step("b")
edge(START, a)
edge(a, END)
`},
		want: outcome{Loaded: true, Read: []string{"flow.star"},
			Diags: []string{`flow.star:2:5: error: step "b" is not reachable from START [unreachable_step] (hint: no edge leads to it: add one, e.g. edge(START, b) or from the step before it)`}},
	}, {
		name:  "a parse error",
		files: map[string]string{"flow.star": "step(\"x\", run =\n"},
		want: outcome{Read: []string{"flow.star"},
			Diags: []string{"flow.star:2:1: error: got end of file, want primary expression [parse_error]"}},
	}, {
		name:  "a module outside the root",
		files: map[string]string{"flows/flow.star": `load("../lib.star", "cmd")`, "lib.star": `cmd = 1`},
		opts:  Options{BudgetHint: "not this one"},
		want: outcome{Read: []string{"flows/flow.star"},
			Diags: []string{`flows/flow.star:1:1: error: cannot load ../lib.star: lib.star is outside the flow root "flows" [load_error] (hint: ` + rootHint + `)`}},
	}, {
		name:  "the load budget, with the caller's hint",
		files: map[string]string{"flow.star": "x = [i for i in range(100000)]\n"},
		opts:  Options{MaxSteps: 1000, BudgetHint: "raise it"},
		want: outcome{Read: []string{"flow.star"},
			Diags: []string{"flow.star:1:8: error: load-time step budget of 1000 steps exceeded (is there an endless or huge computation?) [load_error] (hint: raise it)"}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			dir := write(t, c.files)
			file := "flow.star"
			if _, ok := c.files["flows/flow.star"]; ok {
				file = "flows/flow.star"
			}
			f := Load(filepath.Join(dir, file), c.opts)
			got := outcomeOf(dir, f)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("load (-want +got):\n%s", diff)
			}
			if (f.Err() == nil) != (f.Errors() == 0) {
				t.Errorf("Err() = %v with %d errors", f.Err(), f.Errors())
			}
		})
	}
}

// The flow of an editor's buffer is loaded from its text, which its
// sources hold, and its modules from ReadFile.
func TestLoadSource(t *testing.T) {
	dir := write(t, map[string]string{"lib.star": `cmd = ["true"]`})
	f := LoadSource(filepath.Join(dir, "flow.star"), []byte(good), Options{})
	want := outcome{Loaded: true, Read: []string{"flow.star", "lib.star"}}
	if diff := cmp.Diff(want, outcomeOf(dir, f)); diff != "" {
		t.Errorf("load (-want +got):\n%s", diff)
	}
	byName := f.Sources.ByName()
	if byName[filepath.Join(dir, "flow.star")] != good || byName[filepath.Join(dir, "lib.star")] != `cmd = ["true"]` {
		t.Errorf("sources by name: %q", byName)
	}
}

// A device or a named pipe is a load error, not a read that never ends.
func TestLoadBounded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.star")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"/dev/zero", fifo} {
		err := Load(file, Options{}).Err()
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v, want a load error saying it is not a regular file", file, err)
		}
	}
}

const parent = `flow(inputs = {"child": "kids/ok.star"})
c = step("c", flow = "{{ inputs.child }}")
edge(START, c)
edge(c, END)
`

var kids = map[string]string{
	"parent.star": parent,
	"kids/ok.star": `load("lib.star", "cmd")
a = step("a", run = cmd)
edge(START, a)
edge(a, END)
`,
	"kids/lib.star":    `cmd = ["true"]`,
	"kids/broken.star": "step(\"x\", run =\n",
	"kids/unreachable.star": `a = step("a")
b = step("b")
edge(START, a)
`,
	"kids/big.star":    "x = [i for i in range(100000)]\n",
	"kids/escape.star": `load("../lib.star", "cmd")`,
	"lib.star":         `cmd = 1`,
	"outside.star":     `step("a")`,
}

// Child flows named at run time load and check as their parent did, with
// its budget, inside the root the VM gives; what they read is recorded;
// one that does not load or check is its first error on one line.
func TestChildLoader(t *testing.T) {
	dir := write(t, kids)
	root := filepath.Join(dir, "kids")
	for _, c := range []struct {
		child   string
		opts    Options
		wantErr string
		want    []string // files recorded
	}{
		{child: "ok.star", want: []string{"kids/ok.star", "kids/lib.star"}},
		{child: "broken.star", wantErr: "kids/broken.star:2:1: got end of file, want primary expression [parse_error]",
			want: []string{"kids/broken.star"}},
		{child: "unreachable.star", wantErr: "kids/unreachable.star:1:5: END cannot be reached from START [exit_unreachable] (and 1 more error)",
			want: []string{"kids/unreachable.star"}},
		{child: "missing.star", wantErr: "cannot read kids/missing.star: no such file or directory [load_error]"},
		{child: "big.star", opts: Options{MaxSteps: 1000}, wantErr: "kids/big.star:1:8: load-time step budget of 1000 steps exceeded (is there an endless or huge computation?) [load_error]",
			want: []string{"kids/big.star"}},
		{child: "big.star", want: []string{"kids/big.star"}},
		{child: "escape.star", wantErr: `kids/escape.star:1:1: cannot load ../lib.star: lib.star is outside the flow root "kids" [load_error]`,
			want: []string{"kids/escape.star"}},
	} {
		t.Run(c.child, func(t *testing.T) {
			var recorded []string
			load := c.opts.ChildLoader(func(s graphir.Source) error {
				rel, _ := filepath.Rel(dir, s.Path)
				recorded = append(recorded, filepath.ToSlash(rel))
				return nil
			})
			t.Chdir(dir)
			g, err := load(context.Background(), filepath.Join("kids", c.child), "kids")
			if c.wantErr == "" {
				if err != nil || g == nil {
					t.Fatalf("load: %v", err)
				}
			} else {
				var fe *Error
				if g != nil || !errors.As(err, &fe) || err.Error() != c.wantErr {
					t.Errorf("load: %v\nwant *Error %s", err, c.wantErr)
				}
			}
			if diff := cmp.Diff(c.want, recorded); diff != "" {
				t.Errorf("recorded (-want +got):\n%s", diff)
			}
		})
	}
	// A failure to record fails the load.
	boom := errors.New("the store is read-only")
	_, err := Options{}.ChildLoader(func(graphir.Source) error { return boom })(context.Background(), filepath.Join(root, "ok.star"), root)
	if !errors.Is(err, boom) {
		t.Errorf("a record that fails: %v, want %v", err, boom)
	}
}

// What a run records it loads again from its record (resume): the same
// graph and the same sources, whatever the disk now holds; a child the
// record has is not recorded again, one it lacks is read from the disk
// and recorded.
func TestRecordedRoundTrip(t *testing.T) {
	dir := write(t, kids)
	first := Load(filepath.Join(dir, "kids", "ok.star"), Options{})
	if first.Err() != nil {
		t.Fatal(first.Err())
	}
	sources := first.Sources.List()
	// The disk changes after the run.
	if err := os.WriteFile(filepath.Join(dir, "kids", "lib.star"), []byte(`cmd = ["false"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "kids", "ok.star")); err != nil {
		t.Fatal(err)
	}
	opts := Options{Recorded: RecordedSources(sources)}
	again := Load(filepath.Join(dir, "kids", "ok.star"), opts)
	if again.Err() != nil {
		t.Fatal(again.Err())
	}
	if d := graphir.Diff(first.Graph, again.Graph); !d.Empty() {
		t.Errorf("the graph loaded from the record differs:\n%s", d)
	}
	if diff := cmp.Diff(sources, again.Sources.List()); diff != "" {
		t.Errorf("sources (-recorded +loaded again):\n%s", diff)
	}

	var recorded []string
	load := opts.ChildLoader(func(s graphir.Source) error {
		recorded = append(recorded, filepath.Base(s.Path))
		return nil
	})
	if _, err := load(context.Background(), filepath.Join(dir, "kids", "ok.star"), dir); err != nil {
		t.Errorf("a recorded child: %v", err)
	}
	if _, err := load(context.Background(), filepath.Join(dir, "outside.star"), dir); err != nil {
		t.Errorf("a child the record lacks: %v", err)
	}
	if diff := cmp.Diff([]string{"outside.star"}, recorded); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}

	// A run that recorded no sources still loads only from its record.
	err := Load(filepath.Join(dir, "outside.star"), Options{Recorded: RecordedSources(nil)}).Err()
	if err == nil || !strings.Contains(err.Error(), "not among the run's recorded sources") {
		t.Errorf("a file the record lacks: %v", err)
	}
}
