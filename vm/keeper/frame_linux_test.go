//go:build linux

package keeper

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A connection reset (skein killed with bytes it never read) is an error
// for the keeper's Recv, not a panic: the keeper must go on to kill what
// the tasks left. recvmsg reports n = -1 with ECONNRESET, which Recv used
// to slice by.
func TestFrameConnRecvReset(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	fc := NewConn(rawSocket(fds[0]))
	// The peer closes with our bytes unread: a reset.
	if err := fc.Send(&Reply{ID: 1}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fds[1])
	var r Reply
	if err := fc.Recv(&r); err == nil {
		t.Fatal("recv after a reset: no error")
	}
}

// framePair is two ends of a socket pair as Conns.
func framePair(t *testing.T) (a, b *Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ends [2]*Conn
	for i, fd := range fds {
		t.Cleanup(func() { syscall.Close(fd) })
		ends[i] = NewConn(rawSocket(fd))
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
	reqs := []Request{
		{ID: 1, Path: "/bin/true", Argv: []string{"true"}, Env: []string{}, Dir: ""},
		{ID: 2, Path: "/tmp/a b/\xfe", Argv: []string{"x", "", "\x00"}, Env: big, Dir: "/tmp"},
		{ID: 1 << 40, Argv: []string{}, Env: []string{"A=1"}},
	}
	go func() {
		for i := range reqs {
			a.Send(&reqs[i])
		}
		a.Send(&Reply{ID: 7, Pid: 1234, Err: "no such file: \xff"})
		a.Send(&Reply{ID: 8, Exited: true, Status: 0x0f00})
	}()
	for _, want := range reqs {
		var got Request
		if err := b.Recv(&got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request (-sent +received):\n%s", diff)
		}
	}
	for _, want := range []Reply{{ID: 7, Pid: 1234, Err: "no such file: \xff"}, {ID: 8, Exited: true, Status: 0x0f00}} {
		var got Reply
		if err := b.Recv(&got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reply (-sent +received):\n%s", diff)
		}
	}
}

// A message cut short or with trailing bytes is an error, never a panic.
func TestKeeperMessageMalformed(t *testing.T) {
	full := (&Request{ID: 3, Path: "/bin/echo", Argv: []string{"echo", "hi"}, Env: []string{"A=1"}, Dir: "/"}).Append(nil)
	for n := 0; n < len(full); n++ {
		var r Request
		if err := r.Decode(full[:n]); err == nil {
			t.Errorf("decode of %d of %d bytes: no error", n, len(full))
		}
	}
	var r Request
	if err := r.Decode(append(full, 0)); err == nil {
		t.Error("decode with a trailing byte: no error")
	}
	// A list length far past the message.
	huge := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if err := r.Decode(huge); err == nil {
		t.Error("decode of a huge list length: no error")
	}
}

func FuzzKeeperMessage(f *testing.F) {
	f.Add((&Request{ID: 3, Path: "/bin/echo", Argv: []string{"echo", "hi"}, Env: []string{"A=1"}, Dir: "/"}).Append(nil))
	f.Add((&Reply{ID: 3, Pid: 9, Err: "x"}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req Request
		if req.Decode(b) == nil {
			if got := req.Append(nil); string(got) != string(b) {
				t.Errorf("request re-encodes differently")
			}
		}
		var rep Reply
		if rep.Decode(b) == nil && len(b) >= 17 && (b[12] == 0 || b[12] == 1) {
			if got := rep.Append(nil); string(got) != string(b) {
				t.Errorf("reply re-encodes differently")
			}
		}
	})
}
