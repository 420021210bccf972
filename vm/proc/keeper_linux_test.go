//go:build linux

package proc_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/vm/keeper"
	"github.com/skeinlang/skein/vm/proc"
)

// job is a job as a task step's, with the VM's default output bound.
func job(argv ...string) *proc.Job {
	return &proc.Job{RunID: "r1", Step: "a", Visit: 1, Attempt: 1, Argv: argv,
		KillGrace: 300 * time.Millisecond, MaxOutput: 1 << 20}
}

// An attempt started through the keeper ends as one started directly:
// input, output, exit status, signals, timeouts of a task that ignores
// SIGTERM, output held open by what it left behind, and start failures
// (issue 9).
func TestKeeperSameAsDirect(t *testing.T) {
	in := "in put"
	for _, tc := range []struct {
		name string
		job  *proc.Job
		exit int // the exit code both must give
	}{
		{"io", with(job("sh", "-c", "cat; echo to-err >&2"), func(j *proc.Job) { j.Stdin = &in }), 0},
		{"no stdin", job("sh", "-c", "cat; echo end"), 0},
		{"exit status", job("sh", "-c", "echo partial; exit 3"), 3},
		{"signal", job("sh", "-c", "kill -9 $$"), -1},
		// The timeout leaves the shell a wide margin to set its trap and
		// print before it is signalled, on a busy machine too.
		{"timeout ignoring TERM", with(job("sh", "-c", "trap '' TERM; echo started; sleep 30"), func(j *proc.Job) { j.Timeout = time.Second }), -1},
		{"output held open", job("sh", "-c", "sleep 5 & echo done"), 0},
		{"not found", job("no-such-command-h9"), 127},
		{"not executable", job("/etc/hostname"), 127},
		{"missing dir", with(job("true"), func(j *proc.Job) { j.Dir = "/no/such/dir" }), 127},
		{"bytes", with(job("sh", "-c", `printf '%s|%s' "$1" "$B"`, "x", "a\377b"), func(j *proc.Job) { j.Env = []string{"B=a\377b"} }), 0},
		{"env", job("sh", "-c", "echo $SKEIN_STEP $SKEIN_ATTEMPT"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]*proc.Outcome{}
			for _, mode := range []string{"direct", "keeper"} {
				restore := proc.SetReaper(true, mode == "keeper")
				if mode == "keeper" && tc.name == "timeout ignoring TERM" {
					// The timeout counts from the attempt's start, and a
					// keeper's first start (a re-executed, race-enabled
					// test binary) can take most of a second on a busy
					// machine: start it first, so the task is as far
					// along at its timeout as a directly started one.
					warmKeeper(t)
				}
				o := proc.Run(t.Context(), tc.job, nil, nil)
				restore()
				// A command not found on PATH never reaches the keeper.
				if ran := proc.StopKeeper(); ran != (mode == "keeper" && tc.name != "not found") {
					t.Fatalf("%s: a keeper ran: %v", mode, ran)
				}
				if o.ExitCode != tc.exit {
					t.Errorf("%s: exit code %d, want %d (%+v)", mode, o.ExitCode, tc.exit, o)
				}
				got[mode] = o
			}
			if diff := cmp.Diff(got["direct"], got["keeper"]); diff != "" {
				t.Errorf("keeper differs from direct (-direct +keeper):\n%s", diff)
			}
		})
	}
}

func with(j *proc.Job, f func(*proc.Job)) *proc.Job {
	f(j)
	return j
}

// warmKeeper starts the keeper by running a task through it, and leaves
// it running for the next one.
func warmKeeper(t *testing.T) {
	t.Helper()
	if o := proc.Run(t.Context(), job("true"), nil, nil); !o.OK {
		t.Fatalf("warming the keeper: %+v", o)
	}
}

// signalWriter is a writer that closes seen once what it was given
// contains want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

// Cancelling an attempt signals a task started through the keeper and
// keeps its output.
func TestKeeperCancelled(t *testing.T) {
	defer proc.SetReaper(true, true)()
	ctx, cancel := context.WithCancel(t.Context())
	out := &signalWriter{want: "begun", seen: make(chan struct{})}
	go func() {
		<-out.seen // it is under way: stop it
		cancel()
	}()
	o := proc.Run(ctx, job("sh", "-c", "echo begun; exec sleep 30"), out, nil)
	if !proc.StopKeeper() {
		t.Error("no keeper ran")
	}
	if !o.Cancelled || o.OK || o.Stdout != "begun\n" {
		t.Errorf("outcome %+v, want cancelled with its output", o)
	}
}

// WarmKeeper starts the keeper before any task asks for it, and the task
// then runs through that keeper; StopKeeper ends it. Without a subreaper
// (a library, a test), WarmKeeper starts nothing.
func TestWarmKeeper(t *testing.T) {
	proc.StopKeeper()
	restore := proc.SetReaper(false, true)
	proc.WarmKeeper()
	if proc.KeeperRunning() {
		t.Fatal("WarmKeeper started a keeper without a subreaper")
	}
	restore()
	defer proc.SetReaper(true, true)()
	proc.WarmKeeper()
	if !proc.KeeperRunning() {
		t.Fatal("WarmKeeper started no keeper")
	}
	if o := proc.Run(t.Context(), job("sh", "-c", "echo $PPID"), nil, nil); !o.OK {
		t.Fatalf("run: %+v", o)
	}
	if !proc.StopKeeper() {
		t.Fatal("StopKeeper found no keeper after the task")
	}
	if proc.KeeperRunning() {
		t.Fatal("a keeper runs after StopKeeper")
	}
}

// No task gets a descriptor but 0, 1 and 2: not the keeper's socket (fd
// 3 in the keeper), nor one skein inherited from its parent; and a task
// that writes to fd 3 writes nowhere, so the next task still runs (issue
// 26: a write to the inherited socket wedged skein for good).
func TestTaskDescriptors(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil { // not close-on-exec, as a parent's would be
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	for _, mode := range []string{"direct", "keeper"} {
		t.Run(mode, func(t *testing.T) {
			defer proc.SetReaper(true, mode == "keeper")()
			defer proc.StopKeeper()
			proc.StopKeeper()
			proc.ForgetInherited()
			// ls lists the shell's descriptors, not its own (; true keeps
			// a shell that would exec its last command from doing so).
			o := proc.Run(t.Context(), job("sh", "-c", "ls /proc/$$/fd; true"), nil, nil)
			if got := strings.Fields(o.Stdout); !o.OK || !slices.Equal(got, []string{"0", "1", "2"}) {
				t.Errorf("a task's descriptors: %q (%+v), want 0 1 2", got, o)
			}
			j := job("sh", "-c", "printf 'garbage\\000\\377' >&3 && echo wrote")
			j.Timeout = 20 * time.Second
			if o := proc.Run(t.Context(), j, nil, nil); o.Stdout != "" {
				t.Errorf("a task wrote to fd 3: %+v", o)
			}
			if o := proc.Run(t.Context(), j, nil, nil); o.Stdout != "" || o.ExitCode == -1 {
				t.Errorf("the next task: %+v", o)
			}
		})
	}
}

// Losing the keeper (kill -9) while a task's setsid escapee lives does
// not lose skein's control: the task is reported killed, and the escapee
// and the task, which came to skein, are killed and reaped before that,
// none left running or a zombie (issue 26). The scenario runs in a child
// test process, a subreaper as skein is.
func TestKeeperKilledWithEscapee(t *testing.T) {
	if os.Getenv("SKEIN_TEST_KEEPER_KILLED") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeeperKilledWithEscapee$", "-test.v")
		cmd.Env = append(os.Environ(), "SKEIN_TEST_KEEPER_KILLED=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if err := proc.EnableSubreaper(); err != nil {
		t.Skip(err)
	}
	defer proc.SetReaper(true, true)()
	pidFile := filepath.Join(t.TempDir(), "escapee")
	j := job("sh", "-c", `setsid sh -c 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 60' "$1" & exec sleep 60`, "sh", pidFile)
	j.Timeout = time.Minute
	done := make(chan *proc.Outcome)
	go func() { done <- proc.Run(t.Context(), j, nil, nil) }()
	var escapee int
	for escapee == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			escapee, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(proc.KeeperPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.OK || o.ExitCode != -1 {
		t.Errorf("the task: %+v, want killed", o)
	}
	if err := syscall.Kill(escapee, 0); err != syscall.ESRCH {
		t.Errorf("the escapee %d: %v, want it gone (killed and reaped)", escapee, err)
	}
	if kids := keeper.Children(); len(kids) > 0 {
		t.Errorf("children left to skein: %v", kids)
	}
}
