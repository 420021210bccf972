package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// crashTag is the build tag of a skein with the crash-injection hooks
// (the SKEIN_TEST_CRASH_* variables, vm/store's faults_on.go): a test's
// build only, never the shipped one.
const crashTag = "skein_crashtest"

// TestCrashScripts runs the scripts in testdata/crash, which kill skein at
// chosen points of recording a run and then resume it. Unless this test
// binary was itself built with the crash hooks (go test -tags
// skein_crashtest), the scripts' skein is one this test builds with them.
func TestCrashScripts(t *testing.T) {
	p := scriptParams("testdata/crash")
	if !builtWith("-tags", crashTag) {
		dir := buildCrashSkein(t)
		setup := p.Setup
		p.Setup = func(env *testscript.Env) error {
			if err := setup(env); err != nil {
				return err
			}
			env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		}
	}
	testscript.Run(t, p)
}

// builtWith reports whether this binary was built with value among the
// values of the build setting key (-tags, -race).
func builtWith(key, value string) bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == key && slices.Contains(strings.Split(s.Value, ","), value) {
			return true
		}
	}
	return false
}

// buildCrashSkein builds skein with the crash hooks (and the race
// detector when this test has it) and returns the directory it is in.
func buildCrashSkein(t *testing.T) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building a skein with the crash hooks needs the go command on $PATH: %v", err)
	}
	dir := t.TempDir()
	args := []string{"build", "-tags", crashTag, "-o", filepath.Join(dir, "skein")}
	if builtWith("-race", "true") {
		args = append(args, "-race")
	}
	out, err := exec.Command(gotool, append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}
