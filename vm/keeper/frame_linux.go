//go:build linux

package keeper

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"syscall"
)

// This file is what both ends of the keeper's socket speak: frames of a
// 4-byte length and a message, with descriptors riding on a frame's first
// byte.

// Request asks the keeper to start a task; its three descriptors
// (stdin, stdout, stderr) travel with it. Strings travel as bytes: an
// argument need not be UTF-8.
type Request struct {
	ID   uint64
	Path string
	Argv []string
	Env  []string
	Dir  string
}

// Reply is the keeper's answer about task ID: started (Pid), not
// started (Err), or ended (Exited, with its wait status).
type Reply struct {
	ID     uint64
	Pid    int
	Err    string // it may quote a path
	Exited bool
	Status uint32
}

// The two messages are encoded by hand, lengths before bytes, both ends
// being this program: a request carries the task's whole environment, which
// JSON (base64 for bytes) made the larger part of a start's cost.

func (r *Request) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, r.ID)
	b = appendBytes(b, r.Path)
	b = appendList(b, r.Argv)
	b = appendList(b, r.Env)
	return appendBytes(b, r.Dir)
}

func (r *Request) Decode(b []byte) error {
	d := decoder{b: b}
	r.ID = d.uint64()
	r.Path = d.bytes()
	r.Argv = d.list()
	r.Env = d.list()
	r.Dir = d.bytes()
	return d.done()
}

func (r *Reply) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, r.ID)
	b = binary.BigEndian.AppendUint32(b, uint32(r.Pid))
	exited := byte(0)
	if r.Exited {
		exited = 1
	}
	b = append(b, exited)
	b = binary.BigEndian.AppendUint32(b, r.Status)
	return appendBytes(b, r.Err)
}

func (r *Reply) Decode(b []byte) error {
	d := decoder{b: b}
	r.ID = d.uint64()
	r.Pid = int(d.uint32())
	r.Exited = d.byte() == 1
	r.Status = d.uint32()
	r.Err = d.bytes()
	return d.done()
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

func appendList(b []byte, ss []string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	for _, s := range ss {
		b = appendBytes(b, s)
	}
	return b
}

// decoder reads what append wrote; a short or malformed Message is an
// error at done, never a panic.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) take(n int) []byte {
	if d.bad || n < 0 || n > len(d.b) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	if v := d.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) byte() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) bytes() string { return string(d.take(int(d.uint32()))) }

func (d *decoder) list() []string {
	n := int(d.uint32())
	if n > len(d.b)/4 { // each entry has at least its length
		d.bad = true
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.bytes()
	}
	return out
}

func (d *decoder) done() error {
	if d.bad || len(d.b) != 0 {
		return errors.New("keeper: malformed message")
	}
	return nil
}

// --- the framing both sides use: a 4-byte length, then the message;
// descriptors ride on the frame's first byte.

// Conn is one end of the keeper's socket, framed.
type Conn struct {
	c    Socket
	wmu  sync.Mutex
	wbuf []byte // the frame being sent, reused (under wmu)
	buf  []byte // received; buf[off:] is not yet taken
	off  int
	rbuf []byte // what one read fills, reused
	oob  []byte
	fds  []int // received, not yet taken

}

// Message is a Request or a Reply.
type Message interface {
	Append([]byte) []byte
	Decode([]byte) error
}

func (f *Conn) Send(m Message, fds ...int) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	frame := m.Append(append(f.wbuf[:0], 0, 0, 0, 0))
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	f.wbuf = frame
	if cap(f.wbuf) > 1<<20 {
		f.wbuf = nil // one huge environment need not stay
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	n, err := f.c.WriteMsg(frame, oob)
	if err != nil {
		return err
	}
	for n < len(frame) && err == nil { // a stream socket may take less
		var m int
		m, err = f.c.WriteMsg(frame[n:], nil)
		n += m
	}
	return err
}

// recv reads the next frame into m, and keeps the descriptors received
// up to its end (a request's three) for TakeFDs.
func (f *Conn) Recv(m Message) error {
	for {
		if rest := f.buf[f.off:]; len(rest) >= 4 {
			n := int(binary.BigEndian.Uint32(rest))
			if len(rest)-4 >= n {
				err := m.Decode(rest[4 : 4+n])
				f.off += 4 + n
				if f.off == len(f.buf) {
					f.buf, f.off = f.buf[:0], 0
				}
				return err
			}
		}
		if f.rbuf == nil {
			f.rbuf, f.oob = make([]byte, 64<<10), make([]byte, syscall.CmsgSpace(3*4*16))
		}
		n, oobn, err := f.c.ReadMsg(f.rbuf, f.oob)
		if oobn > 0 {
			msgs, perr := syscall.ParseSocketControlMessage(f.oob[:oobn])
			if perr == nil {
				for _, m := range msgs {
					if fds, err := syscall.ParseUnixRights(&m); err == nil {
						for _, fd := range fds {
							syscall.CloseOnExec(fd) // never into another task
						}
						f.fds = append(f.fds, fds...)
					}
				}
			}
		}
		if n > 0 {
			// n is -1 with some errors (ECONNRESET: skein died with
			// bytes it never read); slicing by it panicked the keeper,
			// which then left the tasks' processes running.
			f.buf = append(f.buf, f.rbuf[:n]...)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.EOF
		}
	}
}

// TakeFDs takes the first n descriptors received, or nil if fewer came.
func (f *Conn) TakeFDs(n int) []int {
	if len(f.fds) < n {
		return nil
	}
	fds := f.fds[:n:n]
	f.fds = f.fds[n:]
	return fds
}

// NewConn frames the socket c.
func NewConn(c Socket) *Conn { return &Conn{c: c} }

// Socket is what a Conn reads and writes through: a Unix stream socket.
// skein's end is a net.UnixConn (see vm), the keeper's a descriptor it
// reads with plain system calls (rawSocket), so that the keeper needs
// nothing of the net package and starts before most of skein's
// packages are initialized.
type Socket interface {
	ReadMsg(p, oob []byte) (n, oobn int, err error)
	WriteMsg(p, oob []byte) (n int, err error)
}

// rawSocket is a blocking socket descriptor.
type rawSocket int

func (s rawSocket) ReadMsg(p, oob []byte) (int, int, error) {
	for {
		n, oobn, _, _, err := syscall.Recvmsg(int(s), p, oob, syscall.MSG_CMSG_CLOEXEC)
		if err != syscall.EINTR {
			return n, oobn, err
		}
	}
}

func (s rawSocket) WriteMsg(p, oob []byte) (int, error) {
	for {
		n, err := syscall.SendmsgN(int(s), p, oob, nil, 0)
		if err != syscall.EINTR {
			return n, err
		}
	}
}
