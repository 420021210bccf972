package temporal

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	sdklog "go.temporal.io/sdk/log"
)

// TestStopQuiet: of the SDK's warnings, only a poll failed because the
// worker is stopping is left out of a worker's log (it printed on about
// one stop in fifty: TestCancelFromCLI on a real server).
func TestStopQuiet(t *testing.T) {
	var buf bytes.Buffer
	l := sdklog.With(sdklog.NewStructuredLogger(slog.New(stopQuiet{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})})),
		"Namespace", "default", "TaskQueue", "q")
	l.Warn("Failed to poll for task.", "Error", errors.New("worker stopping"))
	l.Warn("Failed to poll for task.", "Error", errors.New("context deadline exceeded"))
	l.Warn("Workflow task failed", "Error", errors.New("worker stopping"))
	l.Info("Started Worker")
	got := buf.String()
	if strings.Contains(got, `Failed to poll for task." Namespace=default TaskQueue=q Error="worker stopping"`) {
		t.Errorf("the stopping poll was logged:\n%s", got)
	}
	for _, want := range []string{`Error="context deadline exceeded"`, `msg="Workflow task failed"`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in the log:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 2 {
		t.Errorf("%d lines logged, want 2:\n%s", n, got)
	}
}
