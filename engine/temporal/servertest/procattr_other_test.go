//go:build !linux

package servertest

import "syscall"

// procAttr puts a child in a process group of its own.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
