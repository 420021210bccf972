package servertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestDocsTryIt runs the skein commands of docs/temporal.md's "Try it on
// one machine" as written, from the repository's root, against the
// suite's server (its address for 127.0.0.1:7233) on a task queue of the
// test's own: the workers serve, and the run succeeds.
func TestDocsTryIt(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "temporal.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Try it on one machine\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/temporal.md has no "## Try it on one machine" with a sh block`)
	}
	q := queue(t)
	var workers, runs int
	for _, line := range strings.Split(block, "\n") {
		args := strings.Fields(line)
		if len(args) < 2 || args[0] != "skein" {
			continue
		}
		for i, a := range args {
			if a == "127.0.0.1:7233" {
				args[i] = address
			}
		}
		args = append(args[1:], "--task-queue", q)
		switch args[0] {
		case "worker":
			w := start(t, "", nil, skeinBin, args...)
			waitFor(t, time.Minute, "the worker to serve", func() bool {
				select {
				case <-w.done:
					t.Fatalf("%s: exited: %v\n%s", line, w.err, w.stderr.String())
				default:
				}
				return strings.Contains(w.stderr.String(), "serving task queue "+q)
			})
			workers++
		case "run":
			stdout, stderr, code := skein(t, root, args...)
			res, err := temporaltest.Decode([]byte(stdout))
			if code != 0 || err != nil || res.Status != "succeeded" {
				t.Errorf("%s: exit %d, status %s (%v)\nstdout:\n%s\nstderr:\n%s", line, code, res.Status, err, stdout, stderr)
			}
			runs++
		default:
			t.Errorf("a command the test does not know: %s", line)
		}
	}
	if workers != 2 || runs != 1 {
		t.Errorf("ran %d workers and %d runs from the docs, want 2 and 1:\n%s", workers, runs, block)
	}
}
