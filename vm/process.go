package vm

// This file runs task and shell steps as processes: argv executed
// directly, each attempt in its own process group so that a timeout or a
// cancellation reaches every process the task started (SIGTERM, then
// SIGKILL after a grace period), and nothing of the group outlives the
// step.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procSpec is a rendered task: everything needed to start its process.
type procSpec struct {
	argv    []string
	env     []string
	stdin   *string
	dir     string
	timeout time.Duration
	retries int
	backoff time.Duration
	grace   time.Duration
	maxOut  int
}

// runTask runs a task's attempts until one succeeds, the retries are used
// up, or ctx is done.
func runTask(ctx context.Context, spec *procSpec, onRetry func(attempt int, err string)) *outcome {
	for attempt := 1; ; attempt++ {
		o := runOnce(ctx, spec)
		if o.ok || o.cancelled || attempt > spec.retries {
			return o
		}
		onRetry(attempt+1, o.err)
		t := time.NewTimer(backoff(spec.backoff, attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			o.cancelled = true
			return o
		}
	}
}

// runOnce runs one attempt of a task.
func runOnce(ctx context.Context, spec *procSpec) *outcome {
	actx := ctx
	if spec.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, spec.timeout)
		defer cancel()
	}
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	if spec.stdin != nil {
		cmd.Stdin = strings.NewReader(*spec.stdin)
	}
	stdout, stderr := &tailBuffer{max: spec.maxOut}, &tailBuffer{max: spec.maxOut}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// If the process exits but something it left behind still holds its
	// output open, stop waiting for the output soon after.
	cmd.WaitDelay = 500 * time.Millisecond

	if err := cmd.Start(); err != nil {
		msg := fmt.Sprintf("cannot start %q: %v", spec.argv[0], unwrapExec(err))
		if _, serr := os.Stat(spec.dir); serr != nil {
			msg = fmt.Sprintf("cannot start %q: directory %s: %v", spec.argv[0], spec.dir, unwrapExec(serr))
		}
		return &outcome{ok: false, task: true, code: "step_failed", err: msg, value: taskOutput("", msg, 127)}
	}
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	var killed sync.WaitGroup
	killed.Add(1)
	go func() {
		defer killed.Done()
		select {
		case <-exited:
			return
		case <-actx.Done():
		}
		syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(spec.grace)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	err := cmd.Wait()
	close(exited)
	killed.Wait()
	// Whatever the task started in its group ends with it.
	syscall.Kill(-pgid, syscall.SIGKILL)

	code := cmd.ProcessState.ExitCode()
	o := &outcome{task: true, value: taskOutput(stdout.String(), stderr.String(), code),
		trunc: stdout.truncated || stderr.truncated}
	switch {
	case ctx.Err() != nil:
		o.cancelled = true
		o.err = "cancelled"
	case actx.Err() != nil:
		o.code, o.err = "timeout", fmt.Sprintf("timed out after %s", spec.timeout)
	case err == nil || code == 0 && errors.Is(err, exec.ErrWaitDelay):
		o.ok = true
	default:
		o.code = "step_failed"
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				o.err = fmt.Sprintf("killed by signal %s", ws.Signal())
			} else {
				o.err = fmt.Sprintf("exit status %d", code)
			}
		} else {
			o.err = err.Error()
		}
	}
	return o
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.max {
		b.truncated = b.truncated || len(b.buf) > 0 || len(p) > b.max
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		copy(b.buf, b.buf[len(b.buf)-b.max:])
		b.buf = b.buf[:b.max]
		b.truncated = true
	}
	return n, nil
}

func (b *tailBuffer) String() string {
	if len(b.buf) > b.max {
		b.truncated = true
		return string(b.buf[len(b.buf)-b.max:])
	}
	return string(b.buf)
}
