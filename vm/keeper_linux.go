//go:build linux

package vm

// This file is the keeper: on Linux, skein starts its tasks through one
// helper process, itself re-executed in a hidden mode, so that a skein
// killed by SIGKILL still leaves nothing behind. The keeper is a child
// subreaper: each task is its child, and whatever a task starts, even in a
// session of its own (setsid, a daemon), stays among its descendants. It
// holds one end of a socket whose other end only skein has; when skein
// dies, however it dies, the kernel closes that end, and the keeper kills
// every descendant it has, reaps them and exits. While skein lives, the
// keeper does what skein did as a subreaper: once no task runs, it kills
// and reaps the orphans that reparented to it.
//
// skein asks for a task with a request frame carrying the task's stdin,
// stdout and stderr as passed descriptors; the keeper starts it in a
// process group of its own (with a parent-death signal, should the keeper
// itself die) and answers with its pid, then with its wait status. skein
// signals the task's group directly, as it does without a keeper.
//
// The keeper is one process per skein, started with the first task: a
// re-executed skein costs some milliseconds, once, not per task.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// keeperEnv, set in its environment, makes a process the keeper.
const keeperEnv = "SKEIN_INTERNAL_KEEPER"

func init() {
	if os.Getenv(keeperEnv) == "1" {
		os.Exit(runKeeper())
	}
}

// keeperRequest asks the keeper to start a task; its three descriptors
// (stdin, stdout, stderr) travel with it. Strings travel as bytes: an
// argument need not be UTF-8.
type keeperRequest struct {
	ID   uint64
	Path string
	Argv []string
	Env  []string
	Dir  string
}

// keeperReply is the keeper's answer about task ID: started (Pid), not
// started (Err), or ended (Exited, with its wait status).
type keeperReply struct {
	ID     uint64
	Pid    int
	Err    string // it may quote a path
	Exited bool
	Status uint32
}

// The two messages are encoded by hand, lengths before bytes, both ends
// being this program: a request carries the task's whole environment, which
// JSON (base64 for bytes) made the larger part of a start's cost.

func (r *keeperRequest) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, r.ID)
	b = appendBytes(b, r.Path)
	b = appendList(b, r.Argv)
	b = appendList(b, r.Env)
	return appendBytes(b, r.Dir)
}

func (r *keeperRequest) decode(b []byte) error {
	d := decoder{b: b}
	r.ID = d.uint64()
	r.Path = d.bytes()
	r.Argv = d.list()
	r.Env = d.list()
	r.Dir = d.bytes()
	return d.done()
}

func (r *keeperReply) append(b []byte) []byte {
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

func (r *keeperReply) decode(b []byte) error {
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

// decoder reads what append wrote; a short or malformed message is an
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

type frameConn struct {
	c    *net.UnixConn
	wmu  sync.Mutex
	wbuf []byte // the frame being sent, reused (under wmu)
	buf  []byte // received; buf[off:] is not yet taken
	off  int
	rbuf []byte // what one read fills, reused
	oob  []byte
	fds  []int // received, not yet taken
}

// message is a keeperRequest or a keeperReply.
type message interface {
	append([]byte) []byte
	decode([]byte) error
}

func (f *frameConn) send(m message, fds ...int) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	frame := m.append(append(f.wbuf[:0], 0, 0, 0, 0))
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	f.wbuf = frame
	if cap(f.wbuf) > 1<<20 {
		f.wbuf = nil // one huge environment need not stay
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	n, _, err := f.c.WriteMsgUnix(frame, oob, nil)
	if err != nil {
		return err
	}
	_, err = f.c.Write(frame[n:])
	return err
}

// recv reads the next frame into m, and keeps the descriptors received
// up to its end (a request's three) in f.fds.
func (f *frameConn) recv(m message) error {
	for {
		if rest := f.buf[f.off:]; len(rest) >= 4 {
			n := int(binary.BigEndian.Uint32(rest))
			if len(rest)-4 >= n {
				err := m.decode(rest[4 : 4+n])
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
		n, oobn, _, _, err := f.c.ReadMsgUnix(f.rbuf, f.oob)
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

func fileConn(fd int) (*frameConn, error) {
	f := os.NewFile(uintptr(fd), "keeper")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("keeper: not a unix socket")
	}
	return &frameConn{c: uc}, nil
}

// --- the keeper's side.

func runKeeper() int {
	// Ctrl-C and kill reach skein, which decides; the keeper only ends
	// when skein is gone. Caught, not ignored, so tasks get the default.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "skein keeper: %v\n", errno)
		return 1
	}
	fd, _ := strconv.Atoi(os.Getenv(keeperEnv + "_FD"))
	conn, err := fileConn(fd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "skein keeper: %v\n", err)
		return 1
	}
	var mu sync.Mutex // held while a task starts, and while orphans are killed
	live := 0
	for {
		var req keeperRequest
		if err := conn.recv(&req); err != nil {
			break // skein is gone
		}
		if len(conn.fds) < 3 {
			break // a request without its descriptors: not skein
		}
		fds := conn.fds[:3]
		conn.fds = conn.fds[3:]
		files := []*os.File{os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdout"), os.NewFile(uintptr(fds[2]), "stderr")}
		mu.Lock()
		p, err := os.StartProcess(req.Path, req.Argv, &os.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files,
			Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}})
		if err == nil {
			live++
		}
		mu.Unlock()
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			conn.send(&keeperReply{ID: req.ID, Err: err.Error()})
			continue
		}
		conn.send(&keeperReply{ID: req.ID, Pid: p.Pid})
		go func(id uint64, p *os.Process) {
			st, _ := p.Wait()
			var status uint32
			if st != nil {
				status = uint32(st.Sys().(syscall.WaitStatus))
			}
			conn.send(&keeperReply{ID: id, Exited: true, Status: status})
			mu.Lock()
			live--
			if live == 0 {
				killOrphans()
			}
			mu.Unlock()
		}(req.ID, p)
	}
	mu.Lock() // no task starts any more
	killDescendants()
	return 0
}

// killDescendants kills every descendant of this process and reaps its
// children until none is left. A killed process's children reparent here
// (a subreaper), so each round finds what the last one orphaned.
func killDescendants() {
	// The usual end: every task was waited for and nothing was left
	// behind, which the keeper's own children files say without reading
	// every process's entry in /proc.
	if kids, ok := directChildren(); ok && len(kids) == 0 {
		return
	}
	self := os.Getpid()
	for round := 0; round < 200; round++ {
		parent := procParents()
		var kill []int
		var mine func(pid int) bool
		memo := map[int]bool{}
		mine = func(pid int) bool {
			if v, ok := memo[pid]; ok {
				return v
			}
			memo[pid] = false // a cycle (pid reuse mid-read) is not ours
			pp, ok := parent[pid]
			v := ok && (pp == self || pp > 1 && mine(pp))
			memo[pid] = v
			return v
		}
		for pid := range parent {
			if pid != self && mine(pid) {
				kill = append(kill, pid)
			}
		}
		if len(kill) == 0 {
			return
		}
		for _, pid := range kill {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procParents maps each process's pid to its parent's, from /proc.
func procParents() map[int]int {
	out := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			out[pid] = ppid
		}
	}
	return out
}

// parentOf reads a process's parent from /proc/PID/stat: "pid (comm) state
// ppid ...", where comm may hold spaces and parentheses.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// --- skein's side.

// keeper is skein's connection to its keeper; nil until the first task,
// and again after a keeper that died (the next task starts a new one).
var keeper struct {
	mu      sync.Mutex
	conn    *frameConn
	proc    *os.Process
	gone    chan struct{} // closed once the keeper has exited and been reaped
	nextID  uint64
	pending map[uint64]chan keeperReply
	warming sync.WaitGroup // WarmKeeper's starts under way
}

// keeperConn returns the connection to the keeper, starting it if need
// be, or nil if it cannot be started (tasks then start directly).
func keeperConn() *frameConn {
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	if keeper.conn != nil {
		return keeper.conn
	}
	// /proc/self/exe is this program even if its file was replaced.
	const self = "/proc/self/exe"
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	theirs := os.NewFile(uintptr(fds[1]), "keeper")
	cmd := exec.Command(self)
	cmd.Args = []string{"skein-keeper"} // what ps shows
	cmd.Env = append(os.Environ(), keeperEnv+"=1", keeperEnv+"_FD=3")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	// Its own group: Ctrl-C at the terminal is skein's to handle.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		syscall.Close(fds[0])
		return nil
	}
	conn, err := fileConn(fds[0])
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil
	}
	keeper.conn, keeper.proc, keeper.gone = conn, cmd.Process, make(chan struct{})
	keeper.pending = map[uint64]chan keeperReply{}
	go readReplies(conn, cmd, keeper.gone)
	return conn
}

// readReplies routes the keeper's replies to the tasks waiting for them.
// If the keeper dies, its tasks died with it (their parent-death signal):
// each is reported killed.
func readReplies(conn *frameConn, cmd *exec.Cmd, gone chan struct{}) {
	for {
		var r keeperReply
		if err := conn.recv(&r); err != nil {
			break
		}
		keeper.mu.Lock()
		ch := keeper.pending[r.ID]
		if r.Exited || len(r.Err) > 0 {
			delete(keeper.pending, r.ID)
		}
		keeper.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	keeper.mu.Lock()
	for id, ch := range keeper.pending {
		ch <- keeperReply{ID: id, Err: "the task keeper died", Exited: true, Status: uint32(syscall.SIGKILL)}
		delete(keeper.pending, id)
	}
	if keeper.conn == conn {
		keeper.conn = nil
	}
	keeper.mu.Unlock()
	conn.c.Close()
	cmd.Wait()
	close(gone)
}

// keptProcess is a task the keeper started.
type keptProcess struct {
	pgid    int
	replies chan keeperReply
	copies  sync.WaitGroup
	outR    []*os.File // skein's ends of stdout and stderr
	stdinW  *os.File
}

// startKeptTask starts a task through the keeper, or returns ok false if
// skein is not a subreaper (a library, a test) or there is no keeper (the
// caller then starts it directly).
func startKeptTask(path string, argv, env []string, dir string, stdin *string, stdout, stderr io.Writer) (process, error, bool) {
	if !reaper.enabled || reaper.noKeeper {
		return nil, nil, false
	}
	p, err, ok := startKept(path, argv, env, dir, stdin, stdout, stderr)
	if p == nil {
		return nil, err, ok
	}
	return p, err, ok
}

func (p *keptProcess) pid() int { return p.pgid }
func (p *keptProcess) ended()   {} // the keeper counts its tasks

// startKept starts the task through the keeper, or returns ok false if
// there is no keeper.
func startKept(path string, argv, env []string, dir string, stdin *string, stdout, stderr io.Writer) (p *keptProcess, err error, ok bool) {
	conn := keeperConn()
	if conn == nil {
		return nil, nil, false
	}
	var childIn *os.File
	p = &keptProcess{replies: make(chan keeperReply, 2)}
	if stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err, true
		}
		childIn, p.stdinW = r, w
	} else {
		childIn, err = os.Open(os.DevNull)
		if err != nil {
			return nil, err, true
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		childIn.Close()
		return nil, err, true
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		childIn.Close()
		outR.Close()
		outW.Close()
		return nil, err, true
	}
	keeper.mu.Lock()
	keeper.nextID++
	id := keeper.nextID
	keeper.pending[id] = p.replies
	keeper.mu.Unlock()
	serr := conn.send(&keeperRequest{ID: id, Path: path, Argv: argv, Env: env, Dir: dir},
		int(childIn.Fd()), int(outW.Fd()), int(errW.Fd()))
	childIn.Close()
	outW.Close()
	errW.Close()
	p.outR = []*os.File{outR, errR}
	if serr != nil {
		// The keeper is gone: start the task directly.
		keeper.mu.Lock()
		delete(keeper.pending, id)
		keeper.mu.Unlock()
		p.closeAll()
		return nil, nil, false
	}
	r := <-p.replies
	if len(r.Err) > 0 || r.Pid == 0 {
		p.closeAll()
		return nil, errors.New(r.Err), true
	}
	p.pgid = r.Pid
	for i, w := range []io.Writer{stdout, stderr} {
		p.copies.Add(1)
		go func(f *os.File, w io.Writer) {
			defer p.copies.Done()
			io.Copy(w, f)
		}(p.outR[i], w)
	}
	if p.stdinW != nil {
		go func(w *os.File, s string) {
			io.WriteString(w, s)
			w.Close()
		}(p.stdinW, *stdin)
	}
	return p, nil, true
}

func (p *keptProcess) closeAll() {
	for _, f := range p.outR {
		f.Close()
	}
	if p.stdinW != nil {
		p.stdinW.Close()
	}
}

// wait waits for the task to end and its output to be read: output still
// held open by something it left behind is given up on after waitDelay, as
// exec.Cmd's WaitDelay does (the error is then exec.ErrWaitDelay).
func (p *keptProcess) wait() (syscall.WaitStatus, error) {
	r := <-p.replies
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(waitDelay):
		err = exec.ErrWaitDelay
	}
	p.closeAll()
	<-done
	return syscall.WaitStatus(r.Status), err
}

// WarmKeeper starts the keeper in the background, if skein is a
// subreaper and none runs yet, so that it is ready by the first task: a
// start of the keeper (one more start of the skein binary) then overlaps
// what skein does before it, such as opening the run store. The first
// task waits for the start if it is still under way.
func WarmKeeper() {
	if !reaper.enabled || reaper.noKeeper {
		return
	}
	keeper.warming.Add(1)
	go func() {
		defer keeper.warming.Done()
		keeperConn()
	}()
}

// StopKeeper ends the keeper, if one runs, and waits (a few seconds at
// most) until it has killed what tasks left behind and exited; it reports
// whether one ran. skein calls it before it exits, so that what its tasks
// left is gone by then.
func StopKeeper() bool {
	keeper.warming.Wait() // a keeper being started is stopped too
	keeper.mu.Lock()
	conn, gone := keeper.conn, keeper.gone
	keeper.mu.Unlock()
	if conn == nil {
		return false
	}
	conn.c.CloseWrite()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
	}
	return true
}
