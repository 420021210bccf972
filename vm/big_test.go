package vm_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// skipBigUnderRace skips a test that builds values of many megabytes to
// prove a bound: under -race it takes 15-40 times as long and has little
// concurrency for the detector to watch. make test runs these tests again
// without -race (BIG_TESTS in the Makefile).
func skipBigUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("builds values of many megabytes, slow under -race; make test runs it without (BIG_TESTS)")
	}
}

// TestBigTestsListed: every test in vm and stdlib that skips under -race
// as big is in the Makefile's BIG_TESTS, which runs it without -race (a
// test left out would run nowhere).
func TestBigTestsListed(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BIG_TESTS = \^\((.*)\)\$\$$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no BIG_TESTS = ^(...)$$ line in the Makefile")
	}
	listed := map[string]bool{}
	for _, name := range strings.Split(string(m[1]), "|") {
		listed[name] = true
	}
	var skipping []string
	for _, dir := range []string{".", "../stdlib"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, file := range files {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") && !strings.HasPrefix(fn.Name.Name, "Fuzz") {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					name := ""
					switch f := call.Fun.(type) {
					case *ast.Ident:
						name = f.Name
					case *ast.SelectorExpr:
						name = f.Sel.Name
					}
					if strings.EqualFold(name, "skipBigUnderRace") {
						skipping = append(skipping, fn.Name.Name)
					}
					return true
				})
			}
		}
	}
	if len(skipping) == 0 {
		t.Fatal("found no test calling skipBigUnderRace")
	}
	for _, name := range skipping {
		if !listed[name] {
			t.Errorf("%s skips under -race but is not in the Makefile's BIG_TESTS: it runs nowhere", name)
		}
	}
}
