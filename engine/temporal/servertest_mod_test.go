package temporal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServertestModuleInSync: the server tests' module
// (servertest/go.mod) requires the main module's versions of the modules
// both use, so make test-temporal builds what make test tested (and does
// not stop on a go.mod that needs updating).
func TestServertestModuleInSync(t *testing.T) {
	main := requires(t, filepath.Join("..", "..", "go.mod"))
	st := requires(t, filepath.Join("servertest", "go.mod"))
	for mod, v := range st {
		if mv, ok := main[mod]; ok && mv != v {
			t.Errorf("servertest/go.mod requires %s %s, the main module %s; run: cd engine/temporal/servertest && go get %s@%s && go mod tidy", mod, v, mv, mod, mv)
		}
	}
}

// requires reads the module versions a go.mod file requires.
func requires(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	block := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			block = true
			continue
		case line == ")":
			block = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !block:
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 {
			out[f[0]] = f[1]
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s requires nothing?", file)
	}
	return out
}
