package proc

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A task whose context is done before it starts (its map item or loop
// ended, the run was cancelled) is not started at all: it is cancelled,
// and its process never ran.
func TestCancelledJobNotStarted(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "ran")
	// A process started anyway would inherit SIGTERM ignored and so
	// outlive the cancellation's TERM long enough to leave its mark.
	signal.Ignore(syscall.SIGTERM)
	defer signal.Reset(syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := Run(ctx, &Job{Argv: []string{"sh", "-c", "touch " + mark}, Dir: t.TempDir(), MaxOutput: 1 << 10, KillGrace: 5 * time.Second}, nil, nil)
	if !c.Cancelled || c.OK {
		t.Errorf("outcome %+v, want cancelled", c)
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Errorf("the task's process ran: %v", err)
	}
}
