package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a buffer several goroutines write and read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeKilled: skein serve killed with SIGKILL while webhook runs
// are running and others queued, then started again: every run
// completes, once, and no step that had completed runs again.
func TestServeKilled(t *testing.T) { serveStopped(t, syscall.SIGKILL) }

// TestServeTerminated: the same with SIGTERM, which skein serve takes as
// a stop (docs/serve.md): it exits 1 naming the runs it leaves, which the
// store then holds as interrupted, and the next skein serve resumes.
func TestServeTerminated(t *testing.T) { serveStopped(t, syscall.SIGTERM) }

// serveStopped stops skein serve with sig while runs run and others wait
// in its queue, starts it again, and checks every run completes once.
func serveStopped(t *testing.T, sig syscall.Signal) {
	bin, err := exec.LookPath("skein") // the test binary, put in $PATH by TestMain
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "flows")
	out := filepath.Join(dir, "out")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(root, "work.star"), []byte(`
flow(name = "work", inputs = {"n": 0, "out": ""}, concurrency = 2)
trigger(webhook = "work", secret_env = "SKEIN_TEST_HOOK_SECRET", inputs = lambda e: e.body)
env = {"N": "{{ inputs.n }}", "OUT": "{{ inputs.out }}"}
first = step("first", shell = "echo $N >> $OUT/first", env = env)
second = step("second", shell = "touch $OUT/second.$N; while [ ! -f $OUT/go ]; do sleep 0.05; done; echo $N >> $OUT/second", env = env)
chain(START, first, second, END)
`), 0o644)
	os.WriteFile(filepath.Join(root, "direct.star"), []byte(`
flow(name = "direct", inputs = {"out": ""})
env = {"OUT": "{{ inputs.out }}"}
once = step("once", shell = "echo once >> $OUT/direct", env = env)
hold = step("hold", shell = "touch $OUT/held; while [ ! -f $OUT/go ]; do sleep 0.05; done; echo held >> $OUT/direct", env = env)
chain(START, once, hold, END)
`), 0o644)
	const secret = "kill-test-secret"
	var logs lockedBuffer // the servers' stderr
	serve := func() (*exec.Cmd, string) {
		cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--root", root, "--store", filepath.Join(dir, "runs.db"))
		cmd.Env = append(os.Environ(), "SKEIN_TEST_HOOK_SECRET="+secret)
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // a test that fails leaves no server behind
			cmd.Process.Kill()
			cmd.Wait()
		})
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := regexp.MustCompile(`http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				go io.Copy(&logs, stderr)
				return cmd, "http://" + m[1]
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("skein serve did not start")
		return nil, ""
	}
	queue := func(url string) []map[string]any {
		resp, err := http.Get(url + "/api/queue")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct{ Queue []map[string]any }
		json.NewDecoder(resp.Body).Decode(&m)
		return m.Queue
	}
	states := func(q []map[string]any) map[string]int {
		n := map[string]int{}
		for _, it := range q {
			n[it["state"].(string)]++
		}
		return n
	}

	cmd, url := serve()
	for i := 1; i <= 5; i++ {
		body := fmt.Sprintf(`{"n": %d, "out": %q}`, i, out)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		req, _ := http.NewRequest("POST", url+"/hooks/work", strings.NewReader(body))
		req.Header.Set("X-Skein-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("delivery %d: %s", i, resp.Status)
		}
	}
	// A run started from the API at once (not through the queue).
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(url + "/api/session")
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ CSRF string }
	json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	req, _ := http.NewRequest("POST", url+"/api/runs", strings.NewReader(fmt.Sprintf(`{"flow": "direct.star", "inputs": {"out": %q}}`, out)))
	req.Header.Set("X-Skein-CSRF", sess.CSRF)
	req.Header.Set("Origin", url)
	if resp, err = client.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /api/runs: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	// Two runs in their second step, three queued (concurrency = 2),
	// the direct one held.
	waitFor := func(what string, done func() bool) {
		// Not a timing assertion: a bound so that a hang fails with
		// what the queue looked like.
		for deadline := time.Now().Add(2 * time.Minute); !done(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: queue %v\n%s", what, queue(url), logs.String())
			}
		}
	}
	waitFor("two runs in their second step", func() bool {
		started, _ := filepath.Glob(filepath.Join(out, "second.*"))
		_, held := os.Stat(filepath.Join(out, "held"))
		s := states(queue(url))
		return len(started) == 2 && held == nil && s["running"] == 3 && s["queued"] == 3
	})
	cmd.Process.Signal(sig)
	err = cmd.Wait()
	if sig == syscall.SIGTERM {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("skein serve after SIGTERM: %v, want exit status 1\n%s", err, logs.String())
		}
		// The runs it ran are interrupted in the store, none left running.
		st, err := exec.Command(bin, "runs", "--store", filepath.Join(dir, "runs.db"), "--json").Output()
		if err != nil {
			t.Fatalf("skein runs: %v", err)
		}
		var listed []struct{ Status string }
		if err := json.Unmarshal(st, &listed); err != nil {
			t.Fatalf("skein runs --json: %v\n%s", err, st)
		}
		n := map[string]int{}
		for _, r := range listed {
			n[r.Status]++
		}
		if n["interrupted"] != 3 || n["running"] != 0 {
			t.Fatalf("after SIGTERM the store holds %v, want the 3 runs it ran interrupted\n%s", n, logs.String())
		}
	}

	cmd, url = serve()
	defer cmd.Process.Signal(syscall.SIGTERM) // then killed, if need be, by the cleanup
	os.WriteFile(filepath.Join(out, "go"), nil, 0o644)
	var q []map[string]any
	waitFor("every item to end", func() bool {
		q = queue(url)
		s := states(q)
		return s["done"]+s["failed"] == 6
	})
	for _, it := range q {
		if it["state"] != "done" {
			t.Errorf("item %v: %v %v", it["n"], it["state"], it["error"])
			continue
		}
		resp, err := http.Get(url + "/api/runs/" + it["run"].(string))
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Run struct{ Status string } }
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if m.Run.Status != "succeeded" {
			t.Errorf("run %v: %s", it["run"], m.Run.Status)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "direct")); string(b) != "once\nheld\n" {
		t.Errorf("the run started from the API wrote %q, want its steps once each", b)
	}
	for _, name := range []string{"first", "second"} {
		b, _ := os.ReadFile(filepath.Join(out, name))
		lines := strings.Fields(string(b))
		slices.Sort(lines)
		if !slices.Equal(lines, []string{"1", "2", "3", "4", "5"}) {
			t.Errorf("step %s completed for %q, want each run once", name, bytes.TrimSpace(b))
		}
	}
}
