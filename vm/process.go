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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runProcess runs one attempt of a task or shell step.
func runProcess(ctx context.Context, spec *EffectRequest) *EffectCompletion {
	actx := ctx
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = taskEnv(spec)
	if spec.Stdin != nil {
		cmd.Stdin = strings.NewReader(*spec.Stdin)
	}
	stdout, stderr := &tailBuffer{max: spec.MaxOutput}, &tailBuffer{max: spec.MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = taskAttr()
	// If the process exits but something it left behind still holds its
	// output open, stop waiting for the output soon after.
	cmd.WaitDelay = 500 * time.Millisecond

	if err := startTask(cmd.Start); err != nil {
		msg := fmt.Sprintf("cannot start %q: %v", spec.Argv[0], unwrapExec(err))
		if _, serr := os.Stat(spec.Dir); serr != nil {
			msg = fmt.Sprintf("cannot start %q: directory %s: %v", spec.Argv[0], spec.Dir, unwrapExec(serr))
		}
		return &EffectCompletion{Code: "step_failed", Error: msg, Stderr: msg, ExitCode: 127}
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
		t := time.NewTimer(spec.KillGrace)
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
	taskEnded()

	code := cmd.ProcessState.ExitCode()
	o := &EffectCompletion{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: code,
		Truncated: stdout.truncated || stderr.truncated}
	switch {
	case ctx.Err() != nil:
		o.Cancelled = true
		o.Error = "cancelled"
	case actx.Err() != nil:
		o.Code, o.Error = "timeout", fmt.Sprintf("timed out after %s", spec.Timeout)
	case err == nil || code == 0 && errors.Is(err, exec.ErrWaitDelay):
		o.OK = true
	default:
		o.Code = "step_failed"
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				o.Error = fmt.Sprintf("killed by signal %s", ws.Signal())
			} else {
				o.Error = fmt.Sprintf("exit status %d", code)
			}
		} else {
			o.Error = err.Error()
		}
	}
	return o
}

// taskEnv is the environment of a task's process: the request's, and the
// run, step, visit and attempt, so that a task can make itself idempotent.
func taskEnv(spec *EffectRequest) []string {
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	return append(env[:len(env):len(env)],
		"SKEIN_RUN_ID="+spec.RunID, "SKEIN_STEP="+spec.Step,
		"SKEIN_VISIT="+strconv.Itoa(spec.Visit), "SKEIN_ATTEMPT="+strconv.Itoa(spec.Attempt))
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
