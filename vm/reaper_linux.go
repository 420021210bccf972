//go:build linux

package vm

// This file is the Linux half of process-tree cleanup beyond the process
// group (process.go): a task dies with a killed skein (its parent-death
// signal), and when skein is a child subreaper ([EnableSubreaper]), the
// descendants that left their group (setsid, daemons) and were orphaned
// reparent to skein, and are killed and reaped once no task is running.

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, <linux/prctl.h>

var reaper struct {
	enabled bool
	mu      sync.Mutex // held while a task starts, and while orphans are killed
	live    int        // tasks started and not yet waited for
}

// EnableSubreaper makes this process a child subreaper, so that processes
// a task leaves behind outside its process group reparent to it and are
// ended when no task runs any more. Only a program that owns its process
// (skein) should call it, before it runs anything.
func EnableSubreaper() error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	reaper.enabled = true
	return nil
}

// taskAttr is how a task's process starts: in a group of its own, killed
// if the thread that started it (the Go runtime keeps its threads; none of
// Skein's goroutines lock one) or skein dies.
func taskAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startTask starts a task's process, counted among the live tasks.
func startTask(start func() error) error {
	if !reaper.enabled {
		return start()
	}
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	err := start()
	if err == nil {
		reaper.live++
	}
	return err
}

// taskEnded counts a task's process as waited for; the last one to end
// kills and reaps every orphan that reparented to skein.
func taskEnded() {
	if !reaper.enabled {
		return
	}
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	reaper.live--
	if reaper.live == 0 {
		killOrphans()
	}
}

// killOrphans kills and reaps the children of this process. With no task
// live, every child is an orphan a task left behind.
func killOrphans() {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != self {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
}
