//go:build linux

package vm

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// A connection reset (skein killed with bytes it never read) is an error
// for the keeper's recv, not a panic: the keeper must go on to kill what
// the tasks left. recvmsg reports n = -1 with ECONNRESET, which recv used
// to slice by.
func TestFrameConnRecvReset(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "keeper")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fc := &frameConn{c: c.(*net.UnixConn)}
	// The peer closes with our bytes unread: a reset.
	if err := fc.send(map[string]int{"id": 1}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fds[1])
	var v map[string]any
	if err := fc.recv(&v); err == nil {
		t.Fatal("recv after a reset: no error")
	}
}
