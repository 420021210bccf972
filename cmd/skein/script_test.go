package main

import (
	"fmt"
	"github.com/skeinlang/skein/engine/runs"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The scripts in testdata/script run the skein command line the way a
// user would (exec skein check flow.star) and compare what it prints.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"skein": func() { os.Exit(process()) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/script"))
}

// scriptParams are the settings every script directory of this package
// runs with.
func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE") == "1",
		Setup: func(env *testscript.Env) error {
			// A race-enabled skein otherwise waits a second on exit.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "crashtest" { // skein has the crash hooks (crash_test.go)
				return builtWith("-tags", crashTag), nil
			}
			if cond == "temporal" { // skein has the Temporal engine (-tags temporal)
				return runs.HasEngine("temporal"), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	}
}

// TestFlowTestScripts runs the scripts in testdata/flowtest: skein test's
// output, exit statuses and mocks.
func TestFlowTestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/flowtest"))
}
