package servertest

import (
	"fmt"
	"strings"
	"testing"
)

// TestConnectionErrors: a wrong address (nothing listening there) is an
// error naming the address and saying what to start, for skein run and
// skein worker; a namespace the server does not have is named too.
func TestConnectionErrors(t *testing.T) {
	dir := t.TempDir()
	flow := writeFlow(t, dir, `a = step("a", run = ["touch", "ran"])`)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	wrong := fmt.Sprintf("127.0.0.1:%d", port)
	for _, args := range [][]string{
		{"run", flow, "--engine", "temporal", "--address", wrong},
		{"worker", "--engine", "temporal", "--address", wrong},
	} {
		_, stderr, code := skein(t, dir, args...)
		want := fmt.Sprintf("skein %s: cannot reach Temporal at %s (namespace default): ", args[0], wrong)
		if code != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "start a server (for a local one: temporal server start-dev) or pass --address HOST:PORT") {
			t.Errorf("skein %s --address %s: exit %d, stderr:\n%s\nwant exit 1 and %q, then how to start a server", args[0], wrong, code, stderr, want)
		}
	}

	_, stderr, code := skein(t, dir, "run", flow, "--engine", "temporal", "--address", address, "--namespace", "nope")
	if code != 1 || !strings.Contains(stderr, "nope") {
		t.Errorf("skein run --namespace nope: exit %d, stderr:\n%s\nwant exit 1 and the namespace named", code, stderr)
	}
}
