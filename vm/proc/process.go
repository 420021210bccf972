// Package proc starts, supervises and reaps task processes: one attempt
// of a task or shell step, described by a [Job] (plain data, so that an
// engine can send it to another machine), runs as a process with its argv
// executed directly, in a process group of its own so that a timeout or a
// cancellation reaches every process the task started (SIGTERM, then
// SIGKILL after a grace period), and nothing of the group outlives the
// attempt. On Linux the attempt starts through the task keeper (package
// vm/keeper) when skein is a child subreaper ([EnableSubreaper]).
//
// It decides nothing about a run: what to start, when to retry and what an
// attempt's outcome means are package vm's. It imports nothing of Skein's
// but the keeper.
package proc

// This file runs one attempt ([Run]) and keeps the tail of its output.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skeinlang/skein/graphir/codes"
)

// Job is one attempt of a task or shell step, rendered: everything its
// process needs, as plain data. Its JSON field names are its Go names;
// engines send it between machines and keep it in histories, so they do
// not change. As JSON, its strings (and an [Outcome]'s) are text: bytes
// that are not UTF-8 arrive as U+FFFD.
type Job struct {
	// RunID, Step, Visit and Attempt say which attempt this is; the
	// process sees them as SKEIN_RUN_ID, SKEIN_STEP, SKEIN_VISIT and
	// SKEIN_ATTEMPT, so that a task can make itself idempotent.
	RunID   string
	Step    string
	Visit   int
	Attempt int
	// Argv is the command and its arguments (a shell step's is
	// ["/bin/sh", "-c", script]); Argv[0] is looked up on PATH unless it
	// holds a slash.
	Argv []string
	// Env is the process's environment; nil means this process's own.
	Env []string `json:",omitempty"`
	// Dir is the directory it runs in; empty means this process's own.
	Dir string
	// Stdin is the text read on its standard input; nil means none
	// (/dev/null).
	Stdin *string `json:",omitempty"`
	// Timeout bounds the attempt; 0 means none. KillGrace is the time
	// between SIGTERM and SIGKILL when it is stopped.
	Timeout   time.Duration `json:",omitempty"`
	KillGrace time.Duration `json:",omitempty"`
	// MaxOutput is how many bytes of the tail of stdout and of stderr
	// are kept.
	MaxOutput int `json:",omitempty"`
}

// Outcome is how an attempt ended, as plain data.
type Outcome struct {
	// OK: the process exited with status 0.
	OK bool `json:",omitempty"`
	// Cancelled: ctx ended before the process did.
	Cancelled bool `json:",omitempty"`
	// Error and Code describe a failure: Code is "step_failed", or
	// "timeout" when Job.Timeout ran out.
	Error string     `json:",omitempty"`
	Code  codes.Code `json:",omitempty"`
	// ExitCode is the exit status; -1 when a signal ended the process,
	// 127 when it could not start.
	ExitCode int
	// Stdout and Stderr are the tails of what it wrote; Truncated says
	// either was cut.
	Stdout    string `json:",omitempty"`
	Stderr    string `json:",omitempty"`
	Truncated bool   `json:",omitempty"`
}

// Run runs one attempt of job and says how it ended. stdout and stderr,
// when not nil, are also given what the process writes, as it writes it,
// each from one goroutine of its own (they must not share state
// unguarded); their errors are ignored, and every byte is given before
// Run returns. Cancelling ctx stops the process as a timeout does; a ctx
// already done starts nothing.
func Run(ctx context.Context, job *Job, stdout, stderr io.Writer) *Outcome {
	actx := ctx
	if job.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, job.Timeout)
		defer cancel()
	}
	if ctx.Err() != nil {
		// No longer wanted before it started: start nothing.
		return &Outcome{Cancelled: true, Error: "cancelled", ExitCode: -1}
	}
	if len(job.Argv) == 0 {
		const msg = "cannot start a task without a command (its argv is empty)"
		return &Outcome{Code: codes.StepFailed, Error: msg, Stderr: msg, ExitCode: 127}
	}
	outBuf, errBuf := &tailBuffer{max: job.MaxOutput}, &tailBuffer{max: job.MaxOutput}
	var outW, errW io.Writer = outBuf, errBuf
	if stdout != nil || stderr != nil {
		outW, errW = teeWriter{outBuf, stdout}, teeWriter{errBuf, stderr}
	}
	p, err := startProcess(job, outW, errW)
	if err != nil {
		msg := startFailure(job, err)
		return &Outcome{Code: codes.StepFailed, Error: msg, Stderr: msg, ExitCode: 127}
	}
	pgid := p.pid()
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
		t := time.NewTimer(job.KillGrace)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	ws, err := p.wait()
	close(exited)
	killed.Wait()
	// Whatever the task started in its group ends with it.
	syscall.Kill(-pgid, syscall.SIGKILL)
	p.ended()

	code := ws.ExitStatus()
	if ws.Signaled() {
		code = -1
	}
	o := &Outcome{Stdout: outBuf.String(), Stderr: errBuf.String(), ExitCode: code,
		Truncated: outBuf.truncated || errBuf.truncated}
	switch {
	case ctx.Err() != nil:
		o.Cancelled = true
		o.Error = "cancelled"
	case actx.Err() != nil:
		o.Code, o.Error = codes.Timeout, fmt.Sprintf("timed out after %s", job.Timeout)
	case ws.Exited() && code == 0 && (err == nil || errors.Is(err, exec.ErrWaitDelay)):
		o.OK = true
	default:
		o.Code = codes.StepFailed
		switch {
		case ws.Signaled():
			o.Error = fmt.Sprintf("killed by signal %s", ws.Signal())
		case code != 0:
			o.Error = fmt.Sprintf("exit status %d", code)
		default:
			o.Error = err.Error()
		}
	}
	return o
}

// waitDelay is how long a task's output is still read after it exited,
// if something it left behind holds the output open.
const waitDelay = 500 * time.Millisecond

// process is a started attempt of a task.
type process interface {
	pid() int
	// wait waits for the process to exit and its output to be read: its
	// wait status, and an error reading the output (exec.ErrWaitDelay
	// when it was given up on).
	wait() (syscall.WaitStatus, error)
	ended() // counts it as waited for
}

// startProcess starts an attempt: through the keeper where there is one
// (keeper_linux.go), else directly in a process group of its own.
func startProcess(job *Job, stdout, stderr io.Writer) (process, error) {
	inherited.Do(closeInherited)
	cmd := exec.Command(job.Argv[0], job.Argv[1:]...)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if kp, err, ok := startKeptTask(cmd.Path, job.Argv, taskEnv(job), job.Dir, job.Stdin, stdout, stderr); ok {
		if err != nil {
			return nil, err
		}
		return kp, nil
	}
	cmd.Dir = job.Dir
	cmd.Env = taskEnv(job)
	if job.Stdin != nil {
		cmd.Stdin = strings.NewReader(*job.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = taskAttr()
	cmd.WaitDelay = waitDelay
	if err := startTask(cmd.Start); err != nil {
		return nil, err
	}
	return directProcess{cmd}, nil
}

// inherited marks, once, before the first task or keeper starts, the
// descriptors skein inherited close-on-exec (closeInherited).
var inherited sync.Once

// directProcess is an attempt skein started itself.
type directProcess struct{ cmd *exec.Cmd }

func (p directProcess) pid() int { return p.cmd.Process.Pid }
func (p directProcess) ended()   { taskEnded() }

func (p directProcess) wait() (syscall.WaitStatus, error) {
	err := p.cmd.Wait()
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = nil // the status says it
	}
	return ws, err
}

// taskEnv is the environment of a task's process: the job's, and the
// run, step, visit and attempt, so that a task can make itself idempotent.
func taskEnv(job *Job) []string {
	env := job.Env
	if env == nil {
		env = os.Environ()
	}
	return append(env[:len(env):len(env)],
		"SKEIN_RUN_ID="+job.RunID, "SKEIN_STEP="+job.Step,
		"SKEIN_VISIT="+strconv.Itoa(job.Visit), "SKEIN_ATTEMPT="+strconv.Itoa(job.Attempt))
}

// startFailure says why a task's process could not start, in the user's
// terms: which directory or file is missing, rather than Go's "fork/exec
// PATH: ..." or "chdir ...".
func startFailure(job *Job, err error) string {
	name := job.Argv[0]
	// A NUL byte (from a template's value) cannot be passed to a process:
	// the system call fails with a bare "invalid argument".
	const nul = "contains a NUL byte, which no process argument, environment variable or path can hold"
	for i, a := range job.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Sprintf("cannot start %q: argument %d %s", name, i, nul)
		}
	}
	for _, kv := range taskEnv(job) {
		if strings.IndexByte(kv, 0) >= 0 {
			k, _, _ := strings.Cut(kv, "=")
			return fmt.Sprintf("cannot start %q: environment variable %s %s", name, k, nul)
		}
	}
	if strings.IndexByte(job.Dir, 0) >= 0 {
		return fmt.Sprintf("cannot start %q: dir %s", name, nul)
	}
	if job.Dir != "" {
		fi, serr := os.Stat(job.Dir)
		switch {
		case errors.Is(serr, fs.ErrNotExist):
			return fmt.Sprintf("cannot start %q: directory %s does not exist", name, job.Dir)
		case serr != nil:
			return fmt.Sprintf("cannot start %q: directory %s: %v", name, job.Dir, unwrapPath(serr))
		case !fi.IsDir():
			return fmt.Sprintf("cannot start %q: dir %s is a file, not a directory", name, job.Dir)
		}
	}
	if strings.Contains(name, "/") {
		// A path: the kernel resolves a relative one in the task's
		// directory, which is where the user must look.
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(job.Dir, path)
		}
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			return fmt.Sprintf("cannot start %q: %s does not exist%s", name, path, oneString(name))
		}
	}
	msg := unwrapPath(unwrapExec(err)).Error()
	// Through the keeper the error is text: drop Go's "fork/exec PATH: ".
	if rest, ok := strings.CutPrefix(msg, "fork/exec "); ok {
		if i := strings.LastIndex(rest, ": "); i >= 0 {
			msg = rest[i+2:]
		}
	}
	switch msg {
	case "permission denied":
		msg += " (it must be an executable file: chmod +x it, or run it with its interpreter)"
	case "exec format error":
		msg += " (not a program this machine runs: a script run directly needs a #! line)"
	}
	return fmt.Sprintf("cannot start %q: %s%s", name, msg, oneString(name))
}

// oneString says how to write a program that was given with its
// arguments in one string (run = ["npm test"]): run= never splits.
func oneString(name string) string {
	words := strings.Fields(name)
	if len(words) < 2 {
		return ""
	}
	for i, w := range words {
		words[i] = strconv.Quote(w)
	}
	return fmt.Sprintf(" (run= takes the program and each argument as items of their own: [%s])", strings.Join(words, ", "))
}

// unwrapPath is the errno of a path error ("no such file or directory"),
// without the operation and path Go puts before it.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// teeWriter writes to the attempt's buffer and to a writer given to
// [Run], whose errors never stop the task's output being read.
type teeWriter struct {
	buf *tailBuffer
	w   io.Writer
}

// ReadFrom is the tail buffer's, without a copy buffer per stream (see
// tailBuffer.ReadFrom), passing each piece on to the tee's writer too.
func (t teeWriter) ReadFrom(r io.Reader) (int64, error) { return t.buf.readFrom(r, t.w) }

func (t teeWriter) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if t.w != nil {
		t.w.Write(p)
	}
	return len(p), nil
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

// ReadFrom reads r to its end, keeping the tail as Write does. io.Copy
// (and exec.Cmd's copying) uses it instead of a buffer of 32 KiB of its
// own for each stream of each task: most tasks write little or nothing.
func (b *tailBuffer) ReadFrom(r io.Reader) (int64, error) { return b.readFrom(r, nil) }

// readFrom is ReadFrom, also writing each piece read to tee (if not nil)
// before the tail is trimmed; tee's errors are ignored.
func (b *tailBuffer) readFrom(r io.Reader, tee io.Writer) (int64, error) {
	var total int64
	for {
		if cap(b.buf)-len(b.buf) < minRead {
			b.buf = slices.Grow(b.buf, min(max(len(b.buf), minRead), 64<<10))
		}
		n, err := r.Read(b.buf[len(b.buf):cap(b.buf)])
		if n > 0 {
			if tee != nil {
				tee.Write(b.buf[len(b.buf) : len(b.buf)+n])
			}
			b.buf = b.buf[:len(b.buf)+n]
			total += int64(n)
			if len(b.buf) > 2*b.max {
				keep := copy(b.buf, b.buf[len(b.buf)-b.max:])
				b.buf = b.buf[:keep]
				b.truncated = true
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// minRead is the least room ReadFrom reads into.
const minRead = 512

func (b *tailBuffer) String() string {
	if len(b.buf) > b.max {
		b.truncated = true
		return string(b.buf[len(b.buf)-b.max:])
	}
	return string(b.buf)
}
