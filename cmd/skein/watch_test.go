package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/store"
)

// These tests run the watch loop in-process on a temporary directory and
// save files the ways editors do. They never assert on timing: they wait,
// with a generous deadline, for the report a save must produce.

const watchDeadline = 60 * time.Second

// syncBuffer is an io.Writer the watch loop and its runs write to while the
// test reads. It remembers where each report ended.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	ends []int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) reported() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends = append(s.ends, s.b.Len())
}

// reports returns the reports printed so far, without what followed them
// (a run's progress).
func (s *syncBuffer) reports() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := s.b.String()
	idx := reportHeader.FindAllStringIndex(text, -1)
	var out []string
	for i, end := range s.ends {
		out = append(out, text[idx[i][0]:end])
	}
	return out
}

// watchRun is a watch loop running in the background on a directory.
type watchRun struct {
	t    *testing.T
	dir  string
	out  *syncBuffer
	stop func()
	seen int // reports already looked at
}

var reportHeader = regexp.MustCompile(`(?m)^\[\d\d:\d\d:\d\d\] `)

// startWatch writes files into a new directory and watches flow.star in it.
func startWatch(t *testing.T, files map[string]string, configure func(*watchConfig)) *watchRun {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		saveInPlace(t, filepath.Join(dir, name), src)
	}
	out := &syncBuffer{}
	cfg := watchConfig{file: filepath.Join(dir, "flow.star"), out: out, err: out, debounce: defaultDebounce, reported: out.reported}
	if configure != nil {
		configure(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch(ctx, cfg) }()
	var once sync.Once
	w := &watchRun{t: t, dir: dir, out: out}
	w.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("watch: %v", err)
				}
			case <-time.After(watchDeadline):
				t.Errorf("watch did not return after cancel")
			}
		})
	}
	t.Cleanup(w.stop)
	return w
}

// path returns the absolute path of a file in the watched directory.
func (w *watchRun) path(name string) string { return filepath.Join(w.dir, name) }

// next waits for the next report that matches want (a regexp) and returns
// it. Reports in between that do not match are skipped: a save may be seen
// as two when the machine is slow, which is harmless. An in-place save
// (truncate, then write) may then first be reported with the file empty,
// so want names what the finished save must show, not only its file.
func (w *watchRun) next(want string) string {
	w.t.Helper()
	re := regexp.MustCompile(want)
	deadline := time.Now().Add(watchDeadline)
	for time.Now().Before(deadline) {
		reports := w.out.reports()
		for ; w.seen < len(reports); w.seen++ {
			if re.MatchString(reports[w.seen]) {
				w.seen++
				return reports[w.seen-1]
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Fatalf("no report matching %q; output:\n%s", want, w.out.String())
	return ""
}

// output waits for the whole output to match want.
func (w *watchRun) output(want string) string {
	w.t.Helper()
	re := regexp.MustCompile(want)
	deadline := time.Now().Add(watchDeadline)
	for time.Now().Before(deadline) {
		if out := w.out.String(); re.MatchString(out) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Fatalf("no output matching %q; output:\n%s", want, w.out.String())
	return ""
}

// saveInPlace writes the file where it is, as most editors do by default.
func saveInPlace(t *testing.T, path, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// saveByRename writes a temporary file next to path and renames it over
// path, as vim, JetBrains IDEs and atomic-save tools do.
func saveByRename(t testing.TB, path, src string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const watchFlow = `load("lib/util.star", "task")
a = task("a")
b = task("b")
chain(START, a, b, END)
`

const watchLib = `def task(name):
    return step(name, run = ["echo", name])
`

func TestWatchSaves(t *testing.T) {
	w := startWatch(t, map[string]string{"flow.star": watchFlow, "lib/util.star": watchLib}, nil)
	r := w.next(`ok  .*flow.star: 2 steps, 3 edges, checked in`)
	if !strings.Contains(r, "watching "+w.path("flow.star")+" (2 files)") {
		t.Errorf("first report:\n%s", r)
	}

	// Write-and-rename of the flow.
	saveByRename(t, w.path("flow.star"), strings.Replace(watchFlow, "chain(START, a, b, END)", `c = task("c")
chain(START, a, b, c, END)`, 1))
	r = w.next(`ok  .*: 3 steps, 4 edges`)
	for _, want := range []string{
		"changed: " + w.path("flow.star") + "\n",
		`  + step "c" (task) at ` + w.path("flow.star") + ":4:5\n",
		"  - edge b -> END\n  + edge b -> c\n  + edge c -> END\n",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("after a rename-save, want %q in:\n%s", want, r)
		}
	}
	if strings.Contains(r, ".swp") {
		t.Errorf("the temporary file was reported:\n%s", r)
	}

	// An in-place write of a loaded module.
	saveInPlace(t, w.path("lib/util.star"), strings.Replace(watchLib, `["echo", name]`, `["echo", "task", name]`, 1))
	r = w.next(`(?s)changed: [^\n]*lib/util\.star\n.*~ step "a"`)
	for _, want := range []string{
		"ok  ", `  ~ step "a": run ["echo","a"] → ["echo","task","a"]`,
	} {
		if !strings.Contains(r, want) {
			t.Errorf("after a module save, want %q in:\n%s", want, r)
		}
	}

	// A newly added load() is watched from then on.
	saveInPlace(t, w.path("flow.star"), `load("lib/util.star", "task")
load("lib/more.star", "extra")
a = task("a")
chain(START, a, extra(), END)
`)
	saveInPlace(t, w.path("lib/more.star"), "def extra():\n    return step(\"extra\")\n")
	w.next(`ok  .*: 2 steps, 3 edges`)
	saveByRename(t, w.path("lib/more.star"), "def extra():\n    return step(\"extra2\")\n")
	r = w.next(`(?s)changed: [^\n]*lib/more\.star\n.*step "extra2"`)
	if !strings.Contains(r, `  + step "extra2" (noop)`) || !strings.Contains(r, `  - step "extra" (noop)`) {
		t.Errorf("after saving a newly loaded module:\n%s", r)
	}

	// Files that are not the flow's are ignored.
	saveInPlace(t, w.path("notes.txt"), "hello")
	saveInPlace(t, w.path("lib/unused.star"), "x = 1")
	saveInPlace(t, w.path("flow.star"), "step(\"only\")\n")
	since := w.seen
	w.next(`changed: (?s).*1 step, 2 edges`)
	for _, r := range w.out.reports()[since:w.seen] {
		if strings.Contains(r, "notes.txt") || strings.Contains(r, "unused.star") {
			t.Errorf("unrelated files were reported:\n%s", r)
		}
	}
}

// TestWatchChildInputs: a parent is checked again when a child flow it
// names changes its inputs, so a new required input shows as input_missing
// in the parent, and a fix to the parent clears it.
func TestWatchChildInputs(t *testing.T) {
	parent := `deploy = step("deploy", flow = "lib/deploy.star", inputs = {"env": "dev"})
chain(START, deploy, END)
`
	child := `flow(inputs = {"env": "prod"})
step("go", run = ["echo", "{{ inputs.env }}"])
`
	w := startWatch(t, map[string]string{"flow.star": parent, "lib/deploy.star": child}, nil)
	w.next(`ok  .*flow.star: 1 step, 2 edges`)

	saveInPlace(t, w.path("lib/deploy.star"), strings.Replace(child, `{"env": "prod"}`, `{"env": "prod", "replicas": input(type = "int", help = "how many")}`, 1))
	r := w.next(`(?s)changed: [^\n]*lib/deploy\.star\n.*\[input_missing\]`)
	want := w.path("flow.star") + `:1:33: error: step "deploy" runs child flow deploy without its required input "replicas" [input_missing]`
	if !strings.Contains(r, want) || !strings.Contains(r, "FAIL ") {
		t.Errorf("after the child gained a required input, want %q in:\n%s", want, r)
	}

	saveByRename(t, w.path("flow.star"), strings.Replace(parent, `{"env": "dev"}`, `{"env": "dev", "replicas": "two"}`, 1))
	r = w.next(`(?s)changed: [^\n]*/flow\.star\n.*\[input_type\]`)
	if !strings.Contains(r, `[input_type]`) || !strings.Contains(r, `input "replicas" must be an int, got a string "two"`) {
		t.Errorf("after passing a string for an int:\n%s", r)
	}

	saveByRename(t, w.path("flow.star"), strings.Replace(parent, `{"env": "dev"}`, `{"env": "dev", "replicas": 2}`, 1))
	r = w.next(`changed: .*flow.star`)
	if !strings.Contains(r, "ok  ") || strings.Contains(r, "error:") {
		t.Errorf("after the fix:\n%s", r)
	}
}

func TestWatchErrorThenFix(t *testing.T) {
	w := startWatch(t, map[string]string{"flow.star": watchFlow, "lib/util.star": watchLib}, nil)
	w.next(`ok  `)

	// A syntax error in a module, then an unreachable step in the flow.
	saveInPlace(t, w.path("lib/util.star"), watchLib+"oops(\n")
	r := w.next(`(?s)\[parse_error\].*FAIL `)
	if !strings.Contains(r, w.path("lib/util.star")+":4:1: error: ") || !strings.Contains(r, "[parse_error]") {
		t.Errorf("module error:\n%s", r)
	}
	saveInPlace(t, w.path("lib/util.star"), watchLib)
	saveByRename(t, w.path("flow.star"), watchFlow+"stray = task(\"stray\")\n")
	r = w.next(`(?s)\[unreachable_step\].*FAIL .*: 1 error`)
	if !strings.Contains(r, `error: step "stray" is not reachable from START [unreachable_step]`) {
		t.Errorf("check error:\n%s", r)
	}

	// Fixed: ok, and the diff is against the last good load.
	saveByRename(t, w.path("flow.star"), watchFlow+"stray = task(\"stray\")\nedge(b, stray)\nedge(stray, END)\n")
	r = w.next(`ok  `)
	for _, want := range []string{`  + step "stray" (task)`, "  + edge b -> stray\n", "  + edge stray -> END\n"} {
		if !strings.Contains(r, want) {
			t.Errorf("after the fix, want %q in:\n%s", want, r)
		}
	}
	if strings.Contains(r, "- ") {
		t.Errorf("the fix removed something:\n%s", r)
	}

	// Saving without changing the graph says so. (By rename: an in-place
	// save seen half-done, the file empty, is a graph of its own.)
	saveByRename(t, w.path("flow.star"), "# a comment\n"+watchFlow+"stray = task(\"stray\")\nedge(b, stray)\nedge(stray, END)\n")
	w.next(`graph unchanged`)
}

func TestWatchDeleteRecreate(t *testing.T) {
	w := startWatch(t, map[string]string{"flow.star": watchFlow, "lib/util.star": watchLib}, nil)
	w.next(`ok  `)

	if err := os.Remove(w.path("flow.star")); err != nil {
		t.Fatal(err)
	}
	r := w.next(`FAIL `)
	if !strings.Contains(r, "cannot read "+w.path("flow.star")+": no such file or directory [load_error]") {
		t.Errorf("after delete:\n%s", r)
	}
	saveInPlace(t, w.path("flow.star"), watchFlow)
	w.next(`ok  .*: 2 steps, 3 edges`)

	// A module's whole directory goes away and comes back.
	if err := os.RemoveAll(w.path("lib")); err != nil {
		t.Fatal(err)
	}
	w.next(`FAIL `)
	saveInPlace(t, w.path("lib/util.star"), watchLib)
	w.next(`ok  .*: 2 steps, 3 edges`)
	saveByRename(t, w.path("lib/util.star"), strings.Replace(watchLib, "echo", "printf", 1))
	w.next(`~ step "a": run \["echo","a"\] → \["printf","a"\]`)
}

// pidFlow is a flow whose one task writes its pid to a file and then sleeps
// until it is killed.
func pidFlow(pidFile string) string {
	return fmt.Sprintf(`flow(inputs = {"who": None})
wait = step("wait", run = ["sh", "-c", "echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 600"])
`, pidFile, pidFile, pidFile)
}

// readPid waits for a task to write its pid to path.
func (w *watchRun) readPid(path string) int {
	t := w.t
	t.Helper()
	deadline := time.Now().Add(watchDeadline)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s; output:\n%s", path, w.out.String())
	return 0
}

// waitGroupGone waits for the process group pgid to have no process left.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(watchDeadline)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process group %d is still there", pgid)
}

func TestWatchRun(t *testing.T) {
	w := startWatch(t, map[string]string{"flow.star": `flow(inputs = {"who": "nobody"})
hi = step("hi", run = ["echo", "hi {{ inputs.who }}"])
`}, func(c *watchConfig) {
		c.run = true
		c.inputs = &frontend.Inputs{}
		c.inputs.SetText("who", "tests")
	})
	w.next(`ok  `)
	w.output(`(?m)^succeeded in .*\n  path:   hi\n  output: hi tests$`)

	// A flow with errors is not run.
	saveInPlace(t, w.path("flow.star"), "a = step(\"a\")\nb = step(\"b\")\nedge(START, a)\nedge(a, END)\n")
	r := w.next(`FAIL `)
	if !strings.Contains(r, "not run") {
		t.Errorf("a flow with errors:\n%s", r)
	}

	// A save during a run cancels it, processes included, and runs again.
	saveByRename(t, w.path("flow.star"), pidFlow(w.path("pid1")))
	pid1 := w.readPid(w.path("pid1"))
	saveByRename(t, w.path("flow.star"), pidFlow(w.path("pid2")))
	pid2 := w.readPid(w.path("pid2"))
	waitGroupGone(t, pid1)
	out := w.out.String()
	if !strings.Contains(out, "cancelled in") {
		t.Errorf("the first run was not reported cancelled:\n%s", out)
	}
	if syscall.Kill(-pid2, 0) != nil {
		t.Errorf("the second run's task is not running")
	}

	// Stopping the watch stops the run and leaves no goroutine behind.
	w.stop()
	waitGroupGone(t, pid2)
	waitNoGoroutines(t, "fsnotify", "skein.(*watcher)", "skeinlang/skein/vm.")
}

// waitNoGoroutines waits until no goroutine's stack mentions any of names.
func waitNoGoroutines(t *testing.T, names ...string) {
	t.Helper()
	deadline := time.Now().Add(watchDeadline)
	var stacks string
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		left := false
		for _, n := range names {
			left = left || strings.Contains(stacks, n)
		}
		if !left {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("goroutines left behind:\n%s", stacks)
}

// TestWatchInterrupt runs the command itself: Ctrl-C (SIGINT) ends it with
// status 0 and takes the running task's processes with it.
func TestWatchInterrupt(t *testing.T) {
	exe := skeinExe(t)
	dir := t.TempDir()
	saveInPlace(t, filepath.Join(dir, "flow.star"), pidFlow(filepath.Join(dir, "pid")))
	cmd := exec.Command(exe, "watch", "--run", "--input", "who=me", "flow.star")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watchRun{t: t, dir: dir, out: out}
	pid := w.readPid(filepath.Join(dir, "pid"))
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("skein watch after Ctrl-C: %v; output:\n%s", err, out)
		}
	case <-time.After(watchDeadline):
		cmd.Process.Kill()
		t.Fatalf("skein watch did not exit after Ctrl-C; output:\n%s", out)
	}
	waitGroupGone(t, pid)
	if !strings.Contains(out.String(), "cancelled in") {
		t.Errorf("the run was not reported cancelled:\n%s", out)
	}
}

// bigFlow is a chain of n task steps; step `changed` runs cmd.
func bigFlow(n, changed int, cmd string) string {
	return fmt.Sprintf(`prev = START
for i in range(%d):
    s = step("s%%d" %% i, run = ["%s" if i == %d else "echo", "{{ inputs.x }}"])
    edge(prev, s)
    prev = s
edge(prev, END)
flow(inputs = {"x": "1"})
`, n, cmd, changed)
}

// BenchmarkWatchReload measures the time from saving a 1,000-step flow to
// the end of the report it causes (load, check, graph diff, print), without
// the debounce.
func BenchmarkWatchReload(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "flow.star")
	if err := os.WriteFile(file, []byte(bigFlow(1000, 500, "echo")), 0o644); err != nil {
		b.Fatal(err)
	}
	out := &syncBuffer{}
	reports := make(chan struct{}, 16)
	cfg := watchConfig{file: file, out: out, err: out, debounce: 0, reported: func() { reports <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch(ctx, cfg) }()
	defer func() {
		cancel()
		<-done
	}()
	<-reports
	if !strings.Contains(out.String(), "ok  ") {
		b.Fatalf("the flow does not check:\n%s", out)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := []string{"printf", "echo"}[i%2]
		saveByRename(b, file, bigFlow(1000, 500, cmd))
		select {
		case <-reports:
		case <-time.After(watchDeadline):
			b.Fatalf("no report after a save:\n%s", out)
		}
	}
	b.StopTimer()
	if !strings.Contains(out.String(), `~ step "s500": run ["echo","{{ inputs.x }}"] → ["printf","{{ inputs.x }}"]`) {
		b.Errorf("the report does not show the change:\n%s", out.String()[max(0, len(out.String())-2000):])
	}
}

// watch --test runs the flow's tests after each clean check, and again
// when the test file changes.
func TestWatchTests(t *testing.T) {
	flow := `a = step("a", run = ["false"])
chain(START, a, END)
`
	tests := `def test_a(t):
    t.eq(t.run("flow.star", mocks = {"a": t.ok(stdout = "x")}).status, "succeeded")
`
	w := startWatch(t, map[string]string{"flow.star": flow, "flow_test.star": tests}, func(c *watchConfig) { c.test = true })
	r := w.next(`ok  .*flow.star`)
	if !strings.Contains(r, "flow_test.star  1 test  ") || !strings.HasPrefix(strings.SplitN(r, "\n", 4)[2], "ok    ") {
		t.Errorf("first report, want the test file passing:\n%s", r)
	}

	saveByRename(t, w.path("flow_test.star"), strings.Replace(tests, `"succeeded"`, `"failed"`, 1))
	r = w.next(`changed: .*flow_test.star`)
	if !strings.Contains(r, "--- FAIL: test_a (") || !strings.Contains(r, "FAIL  ") {
		t.Errorf("after breaking the test:\n%s", r)
	}

	// A flow change that breaks the test's mock name is reported by the test.
	saveInPlace(t, w.path("flow.star"), strings.ReplaceAll(flow, `"a"`, `"b"`)+"\n")
	r = w.next(`(?s)changed: [^\n]*/flow\.star\n.*has no step "a"`)
	if !strings.Contains(r, `has no step "a"`) {
		t.Errorf("after renaming the step:\n%s", r)
	}
}

// watch --run records its runs like skein run; a run that reaches an
// approval parks, and the report says how to decide it.
func TestWatchRunRecorded(t *testing.T) {
	w := startWatch(t, map[string]string{"flow.star": `
hi = step("hi", run = ["echo", "hi"])
gate = step("gate", approve = "Go?")
chain(START, hi, gate, END)
`}, func(c *watchConfig) { c.run = true })
	w.output(`(?m)^waiting: skein approve \S+ gate --resume$`)
	w.stop()
	st, err := store.Open(filepath.Join(w.dir, ".skein", store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get("last")
	if err != nil || r.Status != store.Waiting {
		t.Fatalf("run %+v, %v", r, err)
	}
	effects, err := st.Effects(r.ID, 0)
	if err != nil || len(effects) != 2 || effects[0].Stdout != "hi\n" || effects[1].Status != store.Waiting {
		t.Errorf("effects %+v, %v", effects, err)
	}
	srcs, err := st.Sources(r.ID)
	if err != nil || len(srcs) != 1 {
		t.Errorf("sources %v, %v", srcs, err)
	}
}
