//go:build linux

package vm

import (
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	if err := fc.send(&keeperReply{ID: 1}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fds[1])
	var r keeperReply
	if err := fc.recv(&r); err == nil {
		t.Fatal("recv after a reset: no error")
	}
}

// framePair is two ends of a socket pair as frameConns.
func framePair(t *testing.T) (a, b *frameConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ends [2]*frameConn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "end")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ends[i] = &frameConn{c: c.(*net.UnixConn)}
	}
	return ends[0], ends[1]
}

// Requests and replies arrive as sent, bytes that are not UTF-8 included,
// however many frames one read brings and however large a frame is.
func TestFrameRoundTrip(t *testing.T) {
	a, b := framePair(t)
	big := make([]string, 3000) // an environment larger than one read
	for i := range big {
		big[i] = "VAR=" + string(rune('a'+i%26)) + "\xff\x00 value"
	}
	reqs := []keeperRequest{
		{ID: 1, Path: "/bin/true", Argv: []string{"true"}, Env: []string{}, Dir: ""},
		{ID: 2, Path: "/tmp/a b/\xfe", Argv: []string{"x", "", "\x00"}, Env: big, Dir: "/tmp"},
		{ID: 1 << 40, Argv: []string{}, Env: []string{"A=1"}},
	}
	go func() {
		for i := range reqs {
			a.send(&reqs[i])
		}
		a.send(&keeperReply{ID: 7, Pid: 1234, Err: "no such file: \xff"})
		a.send(&keeperReply{ID: 8, Exited: true, Status: 0x0f00})
	}()
	for _, want := range reqs {
		var got keeperRequest
		if err := b.recv(&got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request (-sent +received):\n%s", diff)
		}
	}
	for _, want := range []keeperReply{{ID: 7, Pid: 1234, Err: "no such file: \xff"}, {ID: 8, Exited: true, Status: 0x0f00}} {
		var got keeperReply
		if err := b.recv(&got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reply (-sent +received):\n%s", diff)
		}
	}
}

// A message cut short or with trailing bytes is an error, never a panic.
func TestKeeperMessageMalformed(t *testing.T) {
	full := (&keeperRequest{ID: 3, Path: "/bin/echo", Argv: []string{"echo", "hi"}, Env: []string{"A=1"}, Dir: "/"}).append(nil)
	for n := 0; n < len(full); n++ {
		var r keeperRequest
		if err := r.decode(full[:n]); err == nil {
			t.Errorf("decode of %d of %d bytes: no error", n, len(full))
		}
	}
	var r keeperRequest
	if err := r.decode(append(full, 0)); err == nil {
		t.Error("decode with a trailing byte: no error")
	}
	// A list length far past the message.
	huge := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if err := r.decode(huge); err == nil {
		t.Error("decode of a huge list length: no error")
	}
}

func FuzzKeeperMessage(f *testing.F) {
	f.Add((&keeperRequest{ID: 3, Path: "/bin/echo", Argv: []string{"echo", "hi"}, Env: []string{"A=1"}, Dir: "/"}).append(nil))
	f.Add((&keeperReply{ID: 3, Pid: 9, Err: "x"}).append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req keeperRequest
		if req.decode(b) == nil {
			if got := req.append(nil); string(got) != string(b) {
				t.Errorf("request re-encodes differently")
			}
		}
		var rep keeperReply
		if rep.decode(b) == nil && len(b) >= 17 && (b[12] == 0 || b[12] == 1) {
			if got := rep.append(nil); string(got) != string(b) {
				t.Errorf("reply re-encodes differently")
			}
		}
	})
}
