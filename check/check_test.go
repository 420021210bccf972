package check_test

// The checker's tests are annotated flows, in the manner of
// golang.org/x/tools' analysistest: a flow under testdata/check carries a
// comment
//
//	# want "code"               a diagnostic with this code on this line
//	# want "code" "regexp"      ... whose message matches the regexp
//	# want "code1" "code2"      several diagnostics on one line
//
// (a quoted string, in Go syntax, that is a docs/codes.md code starts a new want;
// any other one is a regexp for the want before it, matched against the
// message followed by a line "hint: <the hint>"). A file may hold several
// flows separated by lines of "---", each loaded and checked on its own
// with its lines numbered as in the file. Every diagnostic must be wanted
// and every want met. Files under testdata/check/valid, the examples and the
// child flows named sub/ok_*.star must check with no diagnostic at all.
//
// Wants in files other than the flow being checked (child flows, loaded
// modules) are matched only for errors, the diagnostics that a parent's
// check carries over from its children.

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	codetable "github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/lang"
)

const testRoot = "../testdata/check"

// codes lists every diagnostic code of the table of codes (docs/codes.md)
// that the checker reports: fn_timeout_ignored is the Temporal engine's.
var codes = func() []string {
	var cs []string
	for _, in := range codetable.All() {
		if in.Kind == codetable.Diagnostic && in.Code != codetable.FnTimeoutIgnored {
			cs = append(cs, string(in.Code))
		}
	}
	return cs
}()

func isCode(s string) bool {
	for _, c := range codes {
		if c == s {
			return true
		}
	}
	return false
}

type want struct {
	file  string
	line  int
	code  string
	msg   *regexp.Regexp
	met   bool
	raw   string
	chunk int // the chunk of the flow file it belongs to, -1 in other files
}

var (
	wantComment = regexp.MustCompile(`#\s*want\s+(".*)$`)
	quoted      = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

// chunk is one flow of a test file.
type chunk struct {
	start, end int // 1-based line range, inclusive
	src        string
}

// splitChunks splits a test file at lines of "---".
func splitChunks(src string) []chunk {
	lines := strings.SplitAfter(src, "\n")
	var out []chunk
	start := 1
	var b strings.Builder
	flush := func(end int) {
		out = append(out, chunk{start: start, end: end, src: strings.Repeat("\n", start-1) + b.String()})
		b.Reset()
	}
	for i, l := range lines {
		if strings.TrimRight(l, "\r\n") == "---" {
			flush(i)
			start = i + 2
			continue
		}
		b.WriteString(l)
	}
	flush(len(lines))
	return out
}

// parseWants reads the want comments of a file, tagging each with the chunk
// its line falls in.
func parseWants(t *testing.T, file string, chunks []chunk) []*want {
	f, err := os.Open(file)
	if os.IsNotExist(err) && chunks == nil {
		return nil // a child flow that is missing on purpose
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ws []*want
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		m := wantComment.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ci := -1
		for i, c := range chunks {
			if line >= c.start && line <= c.end {
				ci = i
			}
		}
		var cur *want
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			s, err := strconv.Unquote(q[0])
			if err != nil {
				t.Fatalf("%s:%d: bad want string %s: %v", file, line, q[0], err)
			}
			if isCode(s) {
				cur = &want{file: filepath.Clean(file), line: line, code: s, raw: q[0], chunk: ci}
				ws = append(ws, cur)
				continue
			}
			if cur == nil {
				t.Fatalf("%s:%d: want %q before any code", file, line, s)
			}
			re, err := regexp.Compile(s)
			if err != nil {
				t.Fatalf("%s:%d: bad regexp %q: %v", file, line, s, err)
			}
			cur.msg = re
			cur.raw += " " + q[0]
		}
	}
	return ws
}

// checkFile loads and checks one chunk, returning its diagnostics and the
// other files it read.
func checkChunk(file string, c chunk) ([]check.Diagnostic, []string) {
	g, err := lang.LoadSource(file, []byte(c.src), lang.Options{Root: testRoot})
	if err != nil {
		ge, ok := err.(*graphir.Error)
		if !ok {
			ge = &graphir.Error{Code: "load_error", Msg: err.Error()}
		}
		return []check.Diagnostic{check.FromError(ge)}, nil
	}
	return check.Graph(g), g.Files
}

func TestAnnotatedFlows(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testRoot, "*.star"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test flows in %s: %v", testRoot, err)
	}
	seen := map[string]bool{}
	ran := 0
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ran++
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			chunks := splitChunks(string(src))
			main := parseWants(t, file, chunks)
			others := map[string][]*want{}
			for ci, c := range chunks {
				diags, read := checkChunk(file, c)
				var ws []*want
				for _, w := range main {
					if w.chunk == ci {
						ws = append(ws, w)
					}
				}
				// Error wants of the other files this flow read or reports on.
				extra := map[string]bool{}
				for _, f := range read {
					extra[filepath.Clean(f)] = true
				}
				for _, d := range diags {
					extra[filepath.Clean(d.Pos.File)] = true
				}
				delete(extra, filepath.Clean(file))
				for f := range extra {
					if strings.HasPrefix(f, graphir.StdPrefix) || f == "." {
						continue
					}
					if _, ok := others[f]; !ok {
						others[f] = parseWants(t, f, nil)
					}
					for _, w := range others[f] {
						if check.SeverityOf(codetable.Code(w.code)) == check.Error {
							c := *w
							ws = append(ws, &c)
						}
					}
				}
				match(t, file, c, diags, ws)
				for _, w := range ws {
					seen[w.code] = true
				}
			}
		})
	}
	if t.Failed() || ran < len(files) {
		return
	}
	for _, c := range codes {
		if !seen[c] {
			t.Errorf("no annotated flow wants %s", c)
		}
	}
}

// match pairs diagnostics with wants and reports the ones left over.
func match(t *testing.T, file string, c chunk, diags []check.Diagnostic, ws []*want) {
	t.Helper()
	for _, d := range diags {
		if testing.Verbose() {
			t.Logf("%s", d)
		}
		found := false
		for _, w := range ws {
			if w.met || w.file != filepath.Clean(d.Pos.File) || w.line != d.Pos.Line || w.code != string(d.Code) {
				continue
			}
			if w.msg != nil && !w.msg.MatchString(d.Message+"\nhint: "+d.Hint) {
				continue
			}
			w.met, found = true, true
			break
		}
		if !found {
			t.Errorf("%s: unexpected diagnostic (flow at lines %d-%d): %s\n    hint: %s", file, c.start, c.end, d, d.Hint)
		}
	}
	for _, w := range ws {
		if !w.met {
			t.Errorf("%s:%d: missing diagnostic %s", w.file, w.line, w.raw)
		}
	}
}

// TestValidFlows checks that real flows produce no diagnostic at all.
func TestValidFlows(t *testing.T) {
	var files []string
	for i, pattern := range []string{
		filepath.Join(testRoot, "valid", "*.star"),
		filepath.Join(testRoot, "sub", "ok_*.star"),
		"../examples/*.star",
		"../examples/flows/*.star",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && len(m) < 20 {
			t.Fatalf("want at least 20 valid flows in %s, found %d", pattern, len(m))
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	for _, file := range files {
		t.Run(strings.TrimPrefix(file, "../"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if wantComment.Match(src) {
				t.Fatalf("a valid flow may not want diagnostics")
			}
			root := testRoot
			if strings.HasPrefix(file, "../examples") {
				root = "../examples"
			}
			g, err := lang.LoadSource(file, src, lang.Options{Root: root})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			var b strings.Builder
			ds := check.Graph(g)
			check.WriteText(&b, ds)
			if len(ds) > 0 {
				t.Errorf("want no diagnostics, got:\n%s", b.String())
			}
		})
	}
}
