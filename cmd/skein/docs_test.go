package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// codeDirs are the packages whose diagnostic and runtime error codes
// docs/codes.md must describe, relative to this package.
var codeDirs = []string{"../../engine", "../../stdlib", "../../lsp", "../../check", "../../vm", "../../lang", "../../builtins", "../../graphir", "../../flowtest", "."}

var codeShape = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// sourceCodes scans the Go source under dirs (tests excluded) for the
// codes it produces: string literals given as a code (an argument with an
// underscore of a call whose name has report, diag or fail in it, a Code:
// or code: field, an assignment to a variable or field named code, a
// constant named Code..., the keys of the checker's warnings map).
// Deriving them from the code, not from a list kept by hand, is what makes
// a new code without documentation fail the test.
func sourceCodes(t *testing.T, dirs []string) map[string]string {
	t.Helper()
	codes := map[string]string{} // code -> where it was found
	fset := token.NewFileSet()
	add := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || !codeShape.MatchString(s) {
			return
		}
		if _, seen := codes[s]; !seen {
			codes[s] = fset.Position(lit.Pos()).String()
		}
	}
	isCodeName := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == "code" || e.Name == "Code"
		case *ast.SelectorExpr:
			return e.Sel.Name == "code" || e.Sel.Name == "Code"
		}
		return false
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != dir && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			// cmd/skein: only this directory, not the packages below it.
			if dir == "." && filepath.Dir(path) != "." {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					name := ""
					switch fn := n.Fun.(type) {
					case *ast.Ident:
						name = fn.Name
					case *ast.SelectorExpr:
						name = fn.Sel.Name
					}
					lower := strings.ToLower(name)
					if strings.Contains(lower, "report") || strings.Contains(lower, "diag") || strings.Contains(lower, "fail") {
						// The code among the arguments: the literal with
						// an underscore (messages have spaces).
						for _, a := range n.Args {
							if lit, ok := a.(*ast.BasicLit); ok && strings.Contains(lit.Value, "_") {
								add(a)
							}
						}
					}
				case *ast.KeyValueExpr:
					if isCodeName(n.Key) {
						add(n.Value)
					}
				case *ast.AssignStmt:
					for i, l := range n.Lhs {
						if isCodeName(l) && len(n.Rhs) == len(n.Lhs) {
							add(n.Rhs[i])
						}
					}
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if name.Name == "warnings" && i < len(n.Values) {
							if cl, ok := n.Values[i].(*ast.CompositeLit); ok {
								for _, el := range cl.Elts {
									if kv, ok := el.(*ast.KeyValueExpr); ok {
										add(kv.Key)
									}
								}
							}
						}
						if (name.Name == "code" || strings.HasPrefix(name.Name, "Code")) && i < len(n.Values) {
							add(n.Values[i])
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return codes
}

// Every diagnostic and runtime error code the source can produce has an
// entry in docs/codes.md, a heading "### `code`", and every entry is a code
// the source produces.
func TestDocsCodes(t *testing.T) {
	codes := sourceCodes(t, codeDirs)
	for _, must := range []string{"unreachable_step", "loop_unbounded", "step_failed", "max_visits_exceeded", "until_error", "maybe_unmet"} {
		if _, ok := codes[must]; !ok {
			t.Fatalf("the scan missed %q: it no longer finds the codes in the source", must)
		}
	}
	doc, err := os.ReadFile("../../docs/codes.md")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for code, where := range codes {
		if !strings.Contains(string(doc), "\n### `"+code+"`") {
			missing = append(missing, code+" (from "+where+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/codes.md has no entry (### `code`) for:\n  %s", strings.Join(missing, "\n  "))
	}
	// And the other way: every entry is a code the source can produce, so
	// a code renamed or removed does not leave its entry behind.
	var stale []string
	for _, m := range regexp.MustCompile("\n### `([a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		if _, ok := codes[m[1]]; !ok {
			stale = append(stale, m[1])
		}
	}
	if len(stale) > 0 {
		t.Errorf("docs/codes.md has entries for codes no source produces: %s", strings.Join(stale, ", "))
	}
}

// The docs index lists every page in docs/, and every page it links to
// exists.
func TestDocsIndex(t *testing.T) {
	index, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name != "README.md" && !strings.Contains(string(index), "("+name+")") {
			t.Errorf("docs/README.md does not link to %s", name)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(([a-z-]+\.md)\)`).FindAllStringSubmatch(string(index), -1) {
		if _, err := os.Stat(filepath.Join("../../docs", m[1])); err != nil {
			t.Errorf("docs/README.md links to %s, which does not exist", m[1])
		}
	}
}

// flagDocs says where each command's flags are documented: the section of
// docs/cli.md headed "## skein NAME" (its subsections included), else the
// section named here, else the page named here.
var flagDocs = map[string]string{
	"runs": "## The run store", "show": "## The run store", "logs": "## The run store",
	"gc": "## The run store", "resume": "## The run store", "approve": "## The run store",
	"compose": "compose.md",
}

// TestDocsFlags keeps docs/cli.md and the commands in step: every command
// has a row in the table of commands, and every flag of a command (and its
// one-letter form) is named where the command is documented.
func TestDocsFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	cli := string(b)
	section := func(head string) string {
		i := strings.Index(cli, "\n"+head+"\n")
		if i < 0 {
			return ""
		}
		s := cli[i+len(head)+2:]
		if j := strings.Index(s, "\n## "); j >= 0 {
			s = s[:j]
		}
		return s
	}
	head := "| command | does | exit status |\n"
	i := strings.Index(cli, head)
	if i < 0 {
		t.Fatal("docs/cli.md has no table of commands")
	}
	table := cli[i:]
	table = table[:strings.Index(table, "\n\n")]
	for name, c := range commands {
		// A row names it as `skein NAME ...`, or among others as `NAME`.
		if !strings.Contains(table, "`skein "+name+"`") && !strings.Contains(table, "`skein "+name+" ") && !strings.Contains(table, " `"+name+"`") {
			t.Errorf("docs/cli.md: the table of commands has no row for skein %s", name)
		}
		if c.flags == nil {
			continue
		}
		where := "## skein " + name
		if w, ok := flagDocs[name]; ok {
			where = w
		}
		var text string
		if strings.HasSuffix(where, ".md") {
			p, err := os.ReadFile("../../docs/" + where)
			if err != nil {
				t.Fatal(err)
			}
			text = string(p)
		} else if text = section(where); text == "" {
			t.Errorf("docs/cli.md has no section %q for skein %s", where, name)
			continue
		}
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		c.flags(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(text) {
				t.Errorf("skein %s --%s is not documented in %s (%s)", name, f.Name, where, f.Usage)
			}
			if f.Shorthand != "" && !regexp.MustCompile("[`\\[ ]-"+f.Shorthand+"[,` \\]|]").MatchString(text) {
				t.Errorf("skein %s -%s (--%s) is not documented in %s", name, f.Shorthand, f.Name, where)
			}
		})
	}
}
