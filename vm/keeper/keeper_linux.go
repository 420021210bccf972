//go:build linux

package keeper

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env, set to 1 in its environment, makes a process (skein re-executed)
// the keeper; Env+"_FD" is the descriptor of its end of the socket.
const Env = "SKEIN_INTERNAL_KEEPER"

// The keeper becomes the keeper here, in its package's init: this package
// imports only packages that are initialized first (not net), so the
// keeper does not wait for the rest of skein's packages (Temporal's and
// protobuf's among them) to be initialized, which is most of a start.
func init() {
	if os.Getenv(Env) == "1" {
		os.Exit(run())
	}
}

// run is the keeper's life: start what skein asks for, report each
// task's end, and once skein is gone, end whatever is left.
func run() int {
	// Ctrl-C and kill reach skein, which decides; the keeper only ends
	// when skein is gone. Caught, not ignored, so tasks get the default.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()
	if err := SetSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "skein keeper: %v\n", err)
		return 1
	}
	fd, err := strconv.Atoi(os.Getenv(Env + "_FD"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "skein keeper: no socket: %v\n", err)
		return 1
	}
	// The socket (fd 3, passed without close-on-exec) and whatever skein
	// itself inherited stay here: a task gets 0, 1 and 2 only. (A task
	// that wrote to the socket would wedge both ends.)
	CloseOnExecFrom(3)
	conn := NewConn(rawSocket(fd))
	var mu sync.Mutex // held while a task starts, and while orphans are killed
	live := 0
	for {
		var req Request
		if err := conn.Recv(&req); err != nil {
			break // skein is gone
		}
		fds := conn.TakeFDs(3)
		if fds == nil {
			break // a request without its descriptors: not skein
		}
		files := []*os.File{os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdout"), os.NewFile(uintptr(fds[2]), "stderr")}
		mu.Lock()
		p, err := os.StartProcess(req.Path, req.Argv, &os.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files,
			Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}})
		if err == nil {
			live++
		}
		mu.Unlock()
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			conn.Send(&Reply{ID: req.ID, Err: err.Error()})
			continue
		}
		conn.Send(&Reply{ID: req.ID, Pid: p.Pid})
		go func(id uint64, p *os.Process) {
			st, _ := p.Wait()
			var status uint32
			if st != nil {
				status = uint32(st.Sys().(syscall.WaitStatus))
			}
			conn.Send(&Reply{ID: id, Exited: true, Status: status})
			mu.Lock()
			live--
			if live == 0 {
				KillOrphans()
			}
			mu.Unlock()
		}(req.ID, p)
	}
	mu.Lock() // no task starts any more
	killDescendants()
	return 0
}

// killDescendants kills every descendant of this process and reaps its
// children until none is left. A killed process's children reparent here
// (a subreaper), so each round finds what the last one orphaned.
func killDescendants() {
	// The usual end: every task was waited for and nothing was left
	// behind, which the keeper's own children files say without reading
	// every process's entry in /proc.
	if kids, ok := directChildren(); ok && len(kids) == 0 {
		return
	}
	self := os.Getpid()
	for round := 0; round < 200; round++ {
		parent := procParents()
		var kill []int
		var mine func(pid int) bool
		memo := map[int]bool{}
		mine = func(pid int) bool {
			if v, ok := memo[pid]; ok {
				return v
			}
			memo[pid] = false // a cycle (pid reuse mid-read) is not ours
			pp, ok := parent[pid]
			v := ok && (pp == self || pp > 1 && mine(pp))
			memo[pid] = v
			return v
		}
		for pid := range parent {
			if pid != self && mine(pid) {
				kill = append(kill, pid)
			}
		}
		if len(kill) == 0 {
			return
		}
		for _, pid := range kill {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procParents maps each process's pid to its parent's, from /proc.
func procParents() map[int]int {
	out := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			out[pid] = ppid
		}
	}
	return out
}

// parentOf reads a process's parent from /proc/PID/stat: "pid (comm) state
// ppid ...", where comm may hold spaces and parentheses.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// SetSubreaper makes this process a child subreaper: orphans among its
// descendants reparent to it, not to init.
func SetSubreaper() error {
	const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, <linux/prctl.h>
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// KillOrphans kills and reaps the children of this process. With no task
// live, every child is an orphan a task left behind.
func KillOrphans() {
	for _, pid := range Children() {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
}

// Children lists the children of this process: from each of its threads'
// /proc children file (cheap), else by reading every process's parent.
func Children() []int {
	if out, ok := directChildren(); ok {
		return out
	}
	var out []int
	self := os.Getpid()
	for pid, ppid := range procParents() {
		if ppid == self {
			out = append(out, pid)
		}
	}
	return out
}

// directChildren lists the children of this process from each of its
// threads' /proc children file; false if the kernel has none.
func directChildren() ([]int, bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			return nil, false
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out, true
}

// CloseOnExecFrom marks every descriptor of this process from first up
// close-on-exec, so that no process it starts inherits one it did not
// pass on purpose (exec.Cmd's ExtraFiles and the keeper's task files are
// put in place after the mark, and keep theirs). Go opens its own
// descriptors close-on-exec; those it inherited (a socket, a pipe that
// skein's parent left open) it does not: this is for them.
func CloseOnExecFrom(first int) {
	const sysCloseRange = 436        // close_range(2), Linux 5.11: the same number on every architecture
	const closeRangeCloexec = 1 << 2 // CLOSE_RANGE_CLOEXEC
	if _, _, errno := syscall.Syscall(sysCloseRange, uintptr(first), ^uintptr(0), closeRangeCloexec); errno == 0 {
		return
	}
	// An older kernel: one fcntl per descriptor open.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			syscall.CloseOnExec(fd)
		}
	}
}
