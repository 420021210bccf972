package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDefaultBuildLinks: the skein that `go install` builds (no build
// tags) links none of what only the opt-in engines and exporters need:
// no Temporal SDK, no gRPC, no protobuf (which prometheus/client_golang
// brought for /metrics, now written by hand), no Prometheus client. Each
// is tens of seconds of CPU on a cold first build and megabytes of
// binary; bench/NOTES.md has the figures.
func TestDefaultBuildLinks(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages:\n%s", len(deps), out)
	}
	for _, p := range deps {
		for _, heavy := range []string{
			"go.temporal.io/", "google.golang.org/grpc", "google.golang.org/protobuf/",
			"github.com/gogo/protobuf/", "github.com/prometheus/", "go.opentelemetry.io/proto/",
			"go.opentelemetry.io/otel/exporters/",
		} {
			if strings.HasPrefix(p, heavy) {
				t.Errorf("the default skein links %s", p)
			}
		}
	}
}
