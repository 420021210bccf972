package servertest

import "syscall"

// procAttr puts a child in a process group of its own (so it can be
// interrupted alone) and has the kernel kill it if this process dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
