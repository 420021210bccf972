//go:build linux

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm/keeper"
)

// The keeper (skein re-executed) becomes the keeper before the packages
// that make most of a start are initialized: Temporal's, protobuf's
// registries, gRPC's, SQLite's and skein's own inits never run in it. Without a socket it says so and exits
// 1, right after the inits that ran before it.
func TestKeeperStartsBeforeHeavyInits(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), keeper.Env+"=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "skein keeper: no socket") {
		t.Fatalf("the keeper without a socket: %v\n%s", err, out)
	}
	inits := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		inits++
		// (A few small internal packages of protobuf, gRPC and libc may
		// come first: their inits are tiny.)
		for _, heavy := range []string{"go.temporal.io/", "google.golang.org/grpc ", "google.golang.org/protobuf/reflect/", "modernc.org/sqlite", "github.com/skeinlang/skein/"} {
			if strings.HasPrefix(line, "init "+heavy) {
				t.Errorf("initialized before the keeper started: %s", line)
			}
		}
	}
	if inits == 0 {
		t.Fatalf("no init trace:\n%s", out)
	}
}
