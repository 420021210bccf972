// Package servertest runs Skein on a real Temporal server: the Temporal
// CLI's dev server (found in $TEMPORAL_CLI, on PATH or in
// $(go env GOPATH)/bin; `make test-temporal` installs it) started by
// TestMain on a free port with an in-memory database, and the skein
// binary built once from this checkout, driven as a user drives it:
// `skein worker` processes and `skein run --engine temporal`.
//
// It is a module of its own so that the main module's `go test ./...`
// (make test) never builds or needs any of it. Run it with
// `make test-temporal`, or `cd engine/temporal/servertest && go test .`.
package servertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// The server and binaries every test shares, set by TestMain.
var (
	// address is the dev server's frontend, HOST:PORT.
	address string
	// skeinBin is the skein binary built from this checkout.
	skeinBin string
	// temporalBin is the Temporal CLI.
	temporalBin string
)

// TemporalVersion is the Temporal CLI the suite is tested with (what
// make test-temporal installs).
const TemporalVersion = "v1.5.1"

func TestMain(m *testing.M) {
	// Children get SIGKILL when the thread that started them dies
	// (procAttr); keep this one alive for the life of the process so a
	// test binary killed by -timeout does not leave a server behind.
	runtime.LockOSThread()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	temporalBin, err = findTemporal()
	if err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "skein-servertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	skeinBin = filepath.Join(tmp, "skein")
	// The Temporal engine is opt-in at build time (cmd/skein/engine.go).
	args := []string{"build", "-tags", "temporal", "-o", skeinBin}
	if raceEnabled {
		// The workers then run the workflow and activities under the
		// race detector, against a real server.
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/skein")...)
	build.Dir = filepath.Join("..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "servertest: go build ./cmd/skein: %v\n%s", err, out)
		return 1
	}

	stop, err := startServer(tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", err)
		return 1
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// findTemporal finds the Temporal CLI: $TEMPORAL_CLI, else temporal on
// PATH, else $(go env GOPATH)/bin/temporal.
func findTemporal() (string, error) {
	if p := os.Getenv("TEMPORAL_CLI"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$TEMPORAL_CLI is %s: %v", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	tried := "$TEMPORAL_CLI (unset), temporal on PATH"
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "temporal")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			tried += ", " + p
		}
	}
	return "", fmt.Errorf("no Temporal CLI found (looked at %s)\n"+
		"install it with: go install github.com/temporalio/cli/cmd/temporal@%s\n"+
		"or run make test-temporal, which installs it, or set TEMPORAL_CLI to its path", tried, TemporalVersion)
}

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts the dev server every test shares, on a free port,
// in memory, and waits until it answers; stop kills it and waits for it
// to exit.
func startServer(tmp string) (stop func() error, err error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// Skein's search attributes, as docs/temporal.md has an operator
	// register them.
	s, err := launchServer(filepath.Join(tmp, "server.log"), port,
		"--search-attribute", temporal.StatusAttribute.GetName()+"=Keyword", "--search-attribute", temporal.FlowAttribute.GetName()+"=Keyword")
	if err != nil {
		return nil, err
	}
	address = s.address
	return s.stop, nil
}

// devServer is a running dev server.
type devServer struct {
	address string
	cmd     *exec.Cmd
	exited  chan error
	log     *os.File
	once    sync.Once
}

// launchServer starts a dev server on port, its log in logPath, with
// more flags (--db-filename to keep its state across a restart), and
// waits until it answers.
func launchServer(logPath string, port int, args ...string) (*devServer, error) {
	s := &devServer{address: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan error, 1)}
	var err error
	if s.log, err = os.Create(logPath); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(temporalBin, append([]string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(port),
		"--headless", "--log-level", "warn"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = procAttr()
	if err := s.cmd.Start(); err != nil {
		s.log.Close()
		return nil, fmt.Errorf("start %s server start-dev: %v", temporalBin, err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	// Wait for the frontend to answer (the server is usually up in well
	// under a second; the machine may be busy).
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-s.exited:
			s.log.Close()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the dev server exited: %v\n%s", err, log)
		default:
		}
		c, err := dialAt(s.address, 2*time.Second)
		if err == nil {
			_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the dev server at %s did not answer within 60s: %v\n%s", s.address, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the server (SIGTERM, then SIGKILL after 10s) and waits for
// it to exit.
func (s *devServer) stop() error {
	s.once.Do(func() {
		defer s.log.Close()
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT) // a paused one cannot stop
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	})
	return nil
}

// dial connects a client to the dev server.
func dial(timeout time.Duration) (client.Client, error) { return dialAt(address, timeout) }

// dialAt connects a client to the server at addr.
func dialAt(addr string, timeout time.Duration) (client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return client.DialContext(ctx, client.Options{HostPort: addr,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
}

// newClient is a client for the test, closed at its end.
func newClient(t testing.TB) client.Client {
	t.Helper()
	c, err := dial(10 * time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", address, err)
	}
	t.Cleanup(c.Close)
	return c
}

// queue is a task queue of the test's own, so no other test's workers
// take its work.
func queue(t testing.TB) string {
	return "q-" + regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-") + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// buffer is a bytes.Buffer safe to write from a process's output copier
// while the test reads it.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// proc is a process the test started.
type proc struct {
	cmd    *exec.Cmd
	stdout buffer
	stderr buffer
	done   chan struct{}
	err    error // Wait's, once done is closed
}

// start starts bin with args in dir (the test's temporary directory when
// empty), with extra environment variables; the process is killed at the
// test's end if still running.
func start(t testing.TB, dir string, env []string, bin string, args ...string) *proc {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = procAttr()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop interrupts the process (a worker stops and kills its tasks) and
// kills it if it is still there after 20s.
func (p *proc) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Errorf("%s did not stop on SIGINT within 20s; killing it\nstderr:\n%s", p.cmd.Path, p.stderr.String())
		p.cmd.Process.Kill()
		<-p.done
	}
}

// wait waits for the process to exit (at most limit) and returns its exit
// code.
func (p *proc) wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s %s did not finish within %s\nstdout:\n%s\nstderr:\n%s", p.cmd.Path, strings.Join(p.cmd.Args[1:], " "), limit, p.stdout.String(), p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.cmd.Path, p.err)
	}
	return 0
}

// skein runs the skein binary to its end in dir and returns its stdout,
// stderr and exit code.
func skein(t testing.TB, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := start(t, dir, nil, skeinBin, args...)
	code = p.wait(t, 5*time.Minute)
	return p.stdout.String(), p.stderr.String(), code
}

// writeFlow writes src as dir/flow.star and returns its path.
func writeFlow(t testing.TB, dir, src string) string {
	t.Helper()
	flow, err := (&temporaltest.Scenario{Files: map[string]string{"flow.star": src}}).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	return flow
}

// detach starts flow in dir on the dev server with skein run --detach,
// on task queue q, and returns the run's id.
func detach(t testing.TB, dir, flow, q string) string {
	t.Helper()
	out, stderr, code := skein(t, dir, "run", flow, "--engine", "temporal", "--address", address, "--task-queue", q, "--detach")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("skein run --detach: exit %d, stdout %q\nstderr:\n%s", code, out, stderr)
	}
	return id
}

// worker starts a skein worker on the dev server serving queue q, with
// extra environment variables (the worker's tasks inherit them), and
// waits until it serves.
func worker(t testing.TB, q string, env []string, args ...string) *proc {
	t.Helper()
	return workerAt(t, address, q, env, args...)
}

// workerAt is worker on the server at addr.
func workerAt(t testing.TB, addr, q string, env []string, args ...string) *proc {
	t.Helper()
	args = append([]string{"worker", "--engine", "temporal", "--address", addr, "--task-queue", q}, args...)
	p := start(t, "", env, skeinBin, args...)
	waitFor(t, 60*time.Second, "the worker to serve", func() bool {
		select {
		case <-p.done:
			t.Fatalf("skein worker exited: %v\n%s", p.err, p.stderr.String())
		default:
		}
		return strings.Contains(p.stderr.String(), "serving task queue")
	})
	return p
}

// waitFor polls cond every 50ms until it holds, failing the test after
// limit (a bound on a hang, not a speed expectation).
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// readPid reads a pid a task wrote into file.
func readPid(t testing.TB, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return atoiPid(t, string(b))
}

// atoiPid reads a pid.
func atoiPid(t testing.TB, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || pid <= 1 {
		t.Fatalf("not a pid: %q", s)
	}
	return pid
}

// killGroup kills what is left of a task's process group.
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }
