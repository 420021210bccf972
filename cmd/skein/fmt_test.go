package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
)

// flowFile is one flow to format: a file, or one "---" chunk of an
// annotated checker test file, padded with blank lines so that its lines
// are numbered as in the file.
type flowFile struct {
	name string // file name, with #N for a chunk
	file string
	src  string
}

// repoFlows returns every .star file of the examples, the checker's
// testdata and the standard modules, split into chunks where a file has
// them.
func repoFlows(t *testing.T) []flowFile {
	var out []flowFile
	for _, dir := range []string{"../../examples", "../../testdata", "../../stdlib/std"} {
		files, err := starFiles([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			chunks := splitChunks(string(b))
			for i, c := range chunks {
				name := f
				if len(chunks) > 1 {
					name = f + "#" + string(rune('0'+i/10)) + string(rune('0'+i%10))
				}
				out = append(out, flowFile{name: name, file: f, src: c})
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("found only %d flows", len(out))
	}
	return out
}

// splitChunks splits an annotated test file at lines of "---", as the
// checker's tests do, padding each chunk to its first line.
func splitChunks(src string) []string {
	var out []string
	var b strings.Builder
	line := 1
	start := 1
	for _, l := range strings.SplitAfter(src, "\n") {
		if strings.TrimRight(l, "\r\n") == "---" {
			out = append(out, strings.Repeat("\n", start-1)+b.String())
			b.Reset()
			start = line + 1
		} else {
			b.WriteString(l)
		}
		line++
	}
	return append(out, strings.Repeat("\n", start-1)+b.String())
}

// annotated counts the diagnostics found on a line with a # want comment.
var annotated int

var positionInText = regexp.MustCompile(`[\w./-]+\.star:\d+(:\d+)?`)

// TestFmtKeepsMeaning formats every flow of the repository and checks that
// formatting is idempotent, that the frozen graph (its JSON, positions
// aside) is the same before and after, and that every diagnostic still
// lands on the line that carries its # want comment.
func TestFmtKeepsMeaning(t *testing.T) {
	annotated = 0
	flows := repoFlows(t)
	formatted := map[string]string{} // whole files only, for the overlay
	for _, f := range flows {
		if f.name != f.file {
			continue
		}
		if out, err := lang.Format(f.file, []byte(f.src)); err == nil {
			formatted[filepath.Clean(f.file)] = string(out)
		}
	}
	// Loads of the formatted flows read the formatted modules and children.
	overlay := lang.Options{ReadFile: func(name string) ([]byte, error) {
		if s, ok := formatted[filepath.Clean(name)]; ok {
			return []byte(s), nil
		}
		return os.ReadFile(name)
	}}
	skipped := 0
	for _, f := range flows {
		out, err := lang.Format(f.file, []byte(f.src))
		if err != nil {
			// Only flows that are meant not to parse may fail.
			_, lerr := lang.LoadSource(f.file, []byte(f.src), lang.Options{})
			if lerr == nil || graphir.AsError(lerr).Code != "parse_error" {
				t.Errorf("%s: format failed but the flow parses: %v", f.name, err)
			}
			skipped++
			continue
		}
		again, err := lang.Format(f.file, out)
		if err != nil || string(again) != string(out) {
			t.Errorf("%s: formatting is not idempotent (%v):\n%s", f.name, err, cmp.Diff(string(out), string(again)))
		}
		before, bd := frozen(t, f.file, f.src, lang.Options{})
		after, ad := frozen(t, f.file, string(out), overlay)
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("%s: the frozen graph changed (-before +after):\n%s", f.name, diff)
		}
		if diff := cmp.Diff(wantLines(bd, f.file, f.src), wantLines(ad, f.file, string(out))); diff != "" {
			t.Errorf("%s: diagnostics moved off their annotated lines (-before +after):\n%s", f.name, diff)
		}
	}
	if annotated < 100 {
		t.Errorf("only %d diagnostics found on annotated lines", annotated)
	}
	if skipped > 10 {
		t.Errorf("%d flows could not be formatted", skipped)
	}
}

// frozen loads src as file and returns its graph's JSON without line and
// column numbers (or the load error, positions taken out), and its
// diagnostics.
func frozen(t *testing.T, file, src string, opts lang.Options) (any, []check.Diagnostic) {
	g, err := lang.LoadSource(file, []byte(src), opts)
	if err != nil {
		e := graphir.AsError(err)
		return "error " + string(e.Code) + ": " + positionInText.ReplaceAllString(e.Msg, "POS"), []check.Diagnostic{check.FromError(e)}
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return dropPositions(v), check.Graph(g)
}

func dropPositions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "line" || k == "col" {
				delete(v, k)
			} else {
				v[k] = dropPositions(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = dropPositions(x)
		}
	}
	return v
}

// wantLines pairs each diagnostic in src's file with the comment on the
// line it lands on, sorted.
func wantLines(ds []check.Diagnostic, file, src string) []string {
	lines := strings.Split(src, "\n")
	var out []string
	for _, d := range ds {
		comment := ""
		if d.Pos.Line >= 1 && d.Pos.Line <= len(lines) && filepath.Clean(d.Pos.File) == filepath.Clean(file) {
			if i := strings.Index(lines[d.Pos.Line-1], "# want"); i >= 0 {
				comment = lines[d.Pos.Line-1][i:]
			}
		}
		if comment != "" {
			annotated++
		}
		out = append(out, string(d.Code)+" "+comment)
	}
	sort.Strings(out)
	return out
}

// skein fmt refuses a file, or standard input, over the size limit of a
// flow file instead of reading it whole.
func TestFmtSizeLimit(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.star")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, lang.MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		in   io.Reader
		want string
	}{
		{"file", []string{"fmt", big}, strings.NewReader(""), "skein fmt: read " + big + ": larger than the limit of 8 MiB\n"},
		{"stdin", []string{"fmt", "-"}, io.LimitReader(spaces{}, lang.MaxFileSize+100), "skein fmt: standard input: larger than the limit of 8 MiB\n"},
	} {
		var o, e strings.Builder
		code := Main(context.Background(), c.args, stdio{c.in, &o, &e})
		if code != exitUsage || e.String() != c.want || o.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", c.name, code, o.String(), e.String(), exitUsage, c.want)
		}
	}
}

// spaces reads as an endless run of spaces.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
