//go:build linux

package proc

// This file is skein's side of the task keeper (package vm/keeper says
// what the keeper is): starting it, asking it for tasks and their ends,
// and stopping it.

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/skeinlang/skein/vm/keeper"
)

func fileConn(fd int) (*keeper.Conn, *net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "keeper")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, nil, errors.New("keeper: not a unix socket")
	}
	return keeper.NewConn(unixSocket{uc}), uc, nil
}

// unixSocket is skein's end of the keeper's socket.
type unixSocket struct{ c *net.UnixConn }

func (s unixSocket) ReadMsg(p, oob []byte) (int, int, error) {
	n, oobn, _, _, err := s.c.ReadMsgUnix(p, oob)
	return n, oobn, err
}

func (s unixSocket) WriteMsg(p, oob []byte) (int, error) {
	n, _, err := s.c.WriteMsgUnix(p, oob, nil)
	return n, err
}

// keeperProc is skein's connection to its keeper; nil until the first task,
// and again after a keeper that died (the next task starts a new one).
var keeperProc struct {
	mu      sync.Mutex
	conn    *keeper.Conn
	sock    *net.UnixConn // conn's socket
	proc    *os.Process
	gone    chan struct{} // closed once the keeper has exited and been reaped
	nextID  uint64
	pending map[uint64]chan keeper.Reply
	warming sync.WaitGroup // WarmKeeper's starts under way
	// stopping says that StopKeeper asked the keeper to end, which it
	// does after it killed what the tasks left.
	stopping bool
}

// keeperConn returns the connection to the keeper, starting it if need
// be, or nil if it cannot be started (tasks then start directly).
func keeperConn() *keeper.Conn {
	keeperProc.mu.Lock()
	defer keeperProc.mu.Unlock()
	if keeperProc.conn != nil {
		return keeperProc.conn
	}
	inherited.Do(closeInherited) // the keeper gets the socket only
	// /proc/self/exe is this program even if its file was replaced.
	const self = "/proc/self/exe"
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	theirs := os.NewFile(uintptr(fds[1]), "keeper")
	cmd := exec.Command(self)
	cmd.Args = []string{"skein-keeper"} // what ps shows
	cmd.Env = append(os.Environ(), keeper.Env+"=1", keeper.Env+"_FD=3")
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
	conn, sock, err := fileConn(fds[0])
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil
	}
	keeperProc.conn, keeperProc.sock, keeperProc.proc, keeperProc.gone = conn, sock, cmd.Process, make(chan struct{})
	keeperProc.pending = map[uint64]chan keeper.Reply{}
	go readReplies(conn, sock, cmd, keeperProc.gone)
	return conn
}

// readReplies routes the keeper's replies to the tasks waiting for them.
// If the keeper dies, its tasks died with it (their parent-death signal):
// each is reported killed.
func readReplies(conn *keeper.Conn, sock *net.UnixConn, cmd *exec.Cmd, gone chan struct{}) {
	for {
		var r keeper.Reply
		if err := conn.Recv(&r); err != nil {
			break
		}
		keeperProc.mu.Lock()
		ch := keeperProc.pending[r.ID]
		if r.Exited || len(r.Err) > 0 {
			delete(keeperProc.pending, r.ID)
		}
		keeperProc.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	keeperProc.mu.Lock()
	// Once the keeper is reaped, everything it held has come to skein
	// (a subreaper): its tasks, killed by their parent-death signal, and
	// what they left, in their groups or out of them (setsid). A keeper
	// that was killed did not end them: skein does, before it reports
	// the tasks, so that none outlives skein's control and none is left
	// a zombie. (No new keeper starts meanwhile: that takes mu.)
	sock.Close()
	cmd.Wait()
	if !keeperProc.stopping {
		killKeptOrphans()
	}
	for id, ch := range keeperProc.pending {
		ch <- keeper.Reply{ID: id, Err: "the task keeper died", Exited: true, Status: uint32(syscall.SIGKILL)}
		delete(keeperProc.pending, id)
	}
	if keeperProc.conn == conn {
		keeperProc.conn = nil
	}
	keeperProc.stopping = false
	keeperProc.mu.Unlock()
	close(gone)
}

// killKeptOrphans kills and reaps the children of skein, and the
// children they leave it, round after round until none is left, unless
// tasks started directly run (their own end kills the orphans then:
// taskEnded).
func killKeptOrphans() {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if !reaper.enabled || reaper.live > 0 {
		return
	}
	for round := 0; round < 100 && len(keeper.Children()) > 0; round++ {
		keeper.KillOrphans()
	}
}

// keptProcess is a task the keeper started.
type keptProcess struct {
	pgid    int
	replies chan keeper.Reply
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
	p = &keptProcess{replies: make(chan keeper.Reply, 2)}
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
	keeperProc.mu.Lock()
	keeperProc.nextID++
	id := keeperProc.nextID
	keeperProc.pending[id] = p.replies
	keeperProc.mu.Unlock()
	serr := conn.Send(&keeper.Request{ID: id, Path: path, Argv: argv, Env: env, Dir: dir},
		int(childIn.Fd()), int(outW.Fd()), int(errW.Fd()))
	childIn.Close()
	outW.Close()
	errW.Close()
	p.outR = []*os.File{outR, errR}
	if serr != nil {
		// The keeper is gone: start the task directly.
		keeperProc.mu.Lock()
		delete(keeperProc.pending, id)
		keeperProc.mu.Unlock()
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
	keeperProc.warming.Add(1)
	go func() {
		defer keeperProc.warming.Done()
		keeperConn()
	}()
}

// StopKeeper ends the keeper, if one runs, and waits (a few seconds at
// most) until it has killed what tasks left behind and exited; it reports
// whether one ran. skein calls it before it exits, so that what its tasks
// left is gone by then.
func StopKeeper() bool {
	keeperProc.warming.Wait() // a keeper being started is stopped too
	keeperProc.mu.Lock()
	conn, sock, gone := keeperProc.conn, keeperProc.sock, keeperProc.gone
	if conn != nil {
		keeperProc.stopping = true
	}
	keeperProc.mu.Unlock()
	if conn == nil {
		return false
	}
	sock.CloseWrite()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
	}
	return true
}
