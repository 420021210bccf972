//go:build !linux

package vm

import (
	"errors"
	"syscall"
)

// EnableSubreaper is only available on Linux.
func EnableSubreaper() error { return errors.New("child subreapers are a Linux feature") }

func taskAttr() *syscall.SysProcAttr     { return &syscall.SysProcAttr{Setpgid: true} }
func startTask(start func() error) error { return start() }
func taskEnded()                         {}
