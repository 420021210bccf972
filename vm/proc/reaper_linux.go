//go:build linux

package proc

// This file is the Linux half of process-tree cleanup beyond the process
// group (process.go). When skein is a child subreaper ([EnableSubreaper]),
// its tasks start through the keeper (package vm/keeper), which does the
// cleanup and outlives a killed skein long enough to finish it. Without a
// keeper (it could not start), tasks start directly: a task dies with a
// killed skein (its parent-death signal), and the descendants that left
// their group (setsid, daemons) and were orphaned reparent to skein, and
// are killed and reaped once no task is running.

import (
	"sync"
	"syscall"

	"github.com/skeinlang/skein/vm/keeper"
)

var reaper struct {
	enabled  bool
	noKeeper bool       // tasks start directly (benchmarks compare)
	mu       sync.Mutex // held while a task starts, and while orphans are killed
	live     int        // tasks started and not yet waited for
}

// EnableSubreaper makes this process a child subreaper, so that processes
// a task leaves behind outside its process group reparent to it and are
// ended when no task runs any more. Only a program that owns its process
// (skein) should call it, before it runs anything.
func EnableSubreaper() error {
	if err := keeper.SetSubreaper(); err != nil {
		return err
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
func killOrphans() { keeper.KillOrphans() }

// closeInherited marks close-on-exec what skein inherited (see
// [keeper.CloseOnExecFrom]): no task, and not the keeper, gets a
// descriptor but 0, 1 and 2.
func closeInherited() { keeper.CloseOnExecFrom(3) }
