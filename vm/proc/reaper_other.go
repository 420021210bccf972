//go:build !linux

package proc

// This file stands in for the Linux-only keeper and subreaper elsewhere:
// tasks start directly, and only their process group is cleaned up.

import (
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"
)

// EnableSubreaper is only available on Linux.
func EnableSubreaper() error { return errors.New("child subreapers are a Linux feature") }

func taskAttr() *syscall.SysProcAttr     { return &syscall.SysProcAttr{Setpgid: true} }
func startTask(start func() error) error { return start() }
func taskEnded()                         {}

// startKeptTask: there is no keeper outside Linux; tasks start directly.
func startKeptTask(string, []string, []string, string, *string, io.Writer, io.Writer) (process, error, bool) {
	return nil, nil, false
}

// WarmKeeper: there is no keeper outside Linux.
func WarmKeeper() {}

// StopKeeper: there is no keeper outside Linux.
func StopKeeper() bool { return false }

// closeInherited marks close-on-exec every descriptor from 3 up that
// skein inherited: no task gets a descriptor but 0, 1 and 2.
func closeInherited() {
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= 3 {
			syscall.CloseOnExec(fd)
		}
	}
}
