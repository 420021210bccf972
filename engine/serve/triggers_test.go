package serve

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/vm/store"
)

const pushFlow = `
flow(name = "push", inputs = {"repo": input(type = "string"), "ref": "", "marks": ""})
trigger(
    webhook = "push",
    secret_env = "SKEIN_TEST_PUSH_SECRET",
    inputs = lambda e: {"repo": e.body["repository"]["full_name"], "ref": e.body["ref"], "marks": e.headers["x-marks"]},
)
build = step("build", shell = "echo built $REPO $REF >> $MARKS", env = {"REPO": "{{ inputs.repo }}", "REF": "{{ inputs.ref }}", "MARKS": "{{ inputs.marks }}"})
chain(START, build, END)
`

const nosecretFlow = `
trigger(webhook = "deploy", secret_env = "SKEIN_TEST_UNSET_SECRET")
a = step("a", run = ["true"])
chain(START, a, END)
`

// A GitHub push event's body, cut down to what a flow reads and a bit
// around it.
const githubPush = `{"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246","after":"59b20b8d5c6ff8d09518454d4dd8b7a30f095ab5",
"repository":{"id":1296269,"name":"hello-world","full_name":"octo/hello-world","private":false,"owner":{"login":"octo"},"default_branch":"main"},
"pusher":{"name":"octo","email":"octo@example.com"},"head_commit":{"id":"59b20b8d5c6ff8d09518454d4dd8b7a30f095ab5","message":"fix the build"}}`

// newTriggerServer serves a fresh store and a root holding files, with
// the token, its scheduler running.
func newTriggerServer(t *testing.T, token string, files map[string]string) *testServer {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "flows")
	os.MkdirAll(root, 0o755)
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Store: st, Roots: []string{root}, Token: token, By: "alice", Loopback: true, Logf: t.Logf, MaxRuns: 2})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := make(chan struct{})
	go func() { srv.Schedule(); close(scheduled) }()
	hs := httptest.NewServer(srv.Handler())
	jar, _ := cookiejar.New(nil)
	ts := &testServer{t: t, srv: srv, http: hs, dir: root, token: token, client: &http.Client{Jar: jar, Timeout: time.Minute}}
	t.Cleanup(func() {
		srv.Close()
		<-scheduled
		srv.sched.Wait()
		srv.CancelRuns()
		hs.Close()
		st.Close()
	})
	return ts
}

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// deliver posts body to /hooks/name without the server's token, with
// headers, and returns the status and the answer.
func (ts *testServer) deliver(name, body string, hdr ...string) (int, map[string]any) {
	ts.t.Helper()
	r, _ := http.NewRequest("POST", ts.http.URL+"/hooks/"+name, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// waitQueue waits until the queue has no item queued or running.
func (ts *testServer) waitQueue() []*store.QueueItem {
	ts.t.Helper()
	for {
		changed := ts.srv.sched.Changed()
		pending, err := ts.srv.cfg.Store.Pending()
		if err != nil {
			ts.t.Fatal(err)
		}
		if len(pending) == 0 {
			q, err := ts.srv.cfg.Store.Queue(0)
			if err != nil {
				ts.t.Fatal(err)
			}
			return q
		}
		<-changed
	}
}

// TestWebhookGitHubPush: a GitHub push delivery over real HTTP, signed
// as GitHub signs it, starts a run with the inputs its function maps
// from the payload, without the server's token; a replay of the same
// delivery is not run again; bad, missing and foreign signatures,
// oversized bodies, unknown hooks and hooks without a secret are refused.
func TestWebhookGitHubPush(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	t.Setenv("SKEIN_TEST_PUSH_SECRET", secret)
	ts := newTriggerServer(t, "a-token-of-sixteen-chars", map[string]string{"push.star": pushFlow, "nosecret.star": nosecretFlow})
	marks := filepath.Join(t.TempDir(), "marks")
	hdr := []string{"X-GitHub-Event", "push", "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		"X-Hub-Signature-256", sign(secret, githubPush), "X-Marks", marks}

	code, m := ts.deliver("push", githubPush, hdr...)
	if code != http.StatusAccepted {
		t.Fatalf("delivery: %d %v", code, m)
	}
	q := ts.waitQueue()
	if len(q) != 1 || q[0].State != store.QueueDone || q[0].Run == "" || q[0].Trigger != "webhook push" {
		t.Fatalf("queue after the delivery: %+v", q)
	}
	var in map[string]any
	json.Unmarshal(q[0].Inputs, &in)
	if in["repo"] != "octo/hello-world" || in["ref"] != "refs/heads/main" {
		t.Errorf("inputs %v", in)
	}
	run, err := ts.srv.cfg.Store.Get(q[0].Run)
	if err != nil || run.Status != "succeeded" || run.Options.By != "webhook push" {
		t.Fatalf("run: %+v %v", run, err)
	}
	if b, _ := os.ReadFile(marks); string(b) != "built octo/hello-world refs/heads/main\n" {
		t.Errorf("the step wrote %q", b)
	}

	// The same delivery again (GitHub's redelivery, or a replay).
	code, m = ts.deliver("push", githubPush, hdr...)
	if code != http.StatusOK || m["duplicate"] != true {
		t.Errorf("replayed delivery: %d %v", code, m)
	}
	for _, tc := range []struct {
		name, body string
		hdr        []string
		want       int
		code       string
	}{
		{"wrong signature", githubPush, []string{"X-Hub-Signature-256", sign("another secret", githubPush)}, 401, "bad_signature"},
		{"signature of another body", githubPush, []string{"X-Hub-Signature-256", sign(secret, githubPush+" ")}, 401, "bad_signature"},
		{"no signature", githubPush, nil, 401, "bad_signature"},
		{"not hex", githubPush, []string{"X-Hub-Signature-256", "sha256=zz"}, 401, "bad_signature"},
		{"sha1 only", githubPush, []string{"X-Hub-Signature", "sha1=0000"}, 401, "bad_signature"},
		{"too large", strings.Repeat("x", maxHookBody+1), nil, 413, "too_large"},
		{"inputs function fails", `{"ref": "x"}`, []string{"X-Hub-Signature-256", sign(secret, `{"ref": "x"}`)}, 422, "bad_input"},
	} {
		code, m := ts.deliver("push", tc.body, tc.hdr...)
		if code != tc.want || errCode(m) != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, code, m, tc.want, tc.code)
		}
	}
	if code, m := ts.deliver("nope", "{}"); code != 404 {
		t.Errorf("unknown hook: %d %v", code, m)
	}
	if code, m := ts.deliver("deploy", "{}", "X-Hub-Signature-256", sign("", "{}")); code != 503 {
		t.Errorf("hook without a secret: %d %v", code, m)
	}
	// The skein header and an idempotency key of one's own.
	body := `{"ref": "refs/tags/v1", "repository": {"full_name": "octo/other"}}`
	for range 2 {
		code, m = ts.deliver("push", body, "X-Skein-Signature", sign(secret, body), "Idempotency-Key", "k1", "X-Marks", marks)
	}
	if code != http.StatusOK || m["duplicate"] != true {
		t.Errorf("second delivery of k1: %d %v", code, m)
	}
	q = ts.waitQueue()
	if len(q) != 2 {
		t.Errorf("%d items queued, want 2", len(q))
	}
	// The queue's API needs the token.
	m = ts.must(200, "GET", "/api/queue", "")
	if items := m["queue"].([]any); len(items) != 2 || items[0].(map[string]any)["trigger"] != "webhook push" {
		t.Errorf("GET /api/queue: %v", m)
	}
	if b, _ := os.ReadFile(marks); !bytes.Contains(b, []byte("octo/other refs/tags/v1")) {
		t.Errorf("marks %q", b)
	}
}

// TestMetrics: GET /metrics, with the token, reports the runs by status,
// the queue, and the steps of the runs the server ran, in Prometheus'
// text format; without the token it is refused.
func TestMetrics(t *testing.T) {
	const secret = "metrics-secret"
	t.Setenv("SKEIN_TEST_PUSH_SECRET", secret)
	ts := newTriggerServer(t, "a-token-of-sixteen-chars", map[string]string{"push.star": pushFlow})
	marks := filepath.Join(t.TempDir(), "marks")
	if code, m := ts.deliver("push", githubPush, "X-Hub-Signature-256", sign(secret, githubPush), "X-Marks", marks); code != 202 {
		t.Fatalf("delivery: %d %v", code, m)
	}
	ts.waitQueue()
	get := func(token string) (int, string) {
		r, _ := http.NewRequest("GET", ts.http.URL+"/metrics", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, _ := get(""); code != 401 {
		t.Errorf("/metrics without the token: %d", code)
	}
	code, text := get(ts.token)
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, text)
	}
	for _, want := range []string{
		`skein_runs{status="succeeded"} 1`,
		`skein_runs_finished_total{status="succeeded"} 1`,
		`skein_step_duration_seconds_count{kind="shell",status="succeeded"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, text)
		}
	}
	// An item taken (as a server that died while starting its run left
	// it, which the running scheduler leaves alone): the queue's depth.
	ts.srv.cfg.Store.Enqueue(&store.QueueItem{File: "x.star", Name: "later", Trigger: "api", State: store.QueueRunning, Enqueued: time.Now()})
	if _, text := get(ts.token); !strings.Contains(text, `skein_queue_items{flow="later",state="running"} 1`) {
		t.Errorf("/metrics lacks the queued item:\n%s", text)
	}
}

// TestStartQueued: a start from the API of a flow with concurrency = 1
// runs at once when nothing else of it runs (201, the run), else waits
// in the queue (202, the item) and runs after.
func TestStartQueued(t *testing.T) {
	gates := t.TempDir()
	ts := newTriggerServer(t, "", map[string]string{"one.star": `
flow(name = "one", inputs = {"n": 0, "gates": "", "meta": {"a": [1, 2]}}, concurrency = 1)
wait = step("wait", shell = "while [ ! -e $GATES/$N ]; do sleep 0.02; done", env = {"N": "{{ inputs.n }}", "GATES": "{{ inputs.gates }}"})
chain(START, wait, END)
`})
	ts.session()
	first := ts.must(201, "POST", "/api/runs", fmt.Sprintf(`{"flow": "one.star", "inputs": {"n": 1, "gates": %q}}`, gates))
	second := ts.must(202, "POST", "/api/runs", fmt.Sprintf(`{"flow": "one.star", "inputs": {"n": 2, "gates": %q}}`, gates))
	if first["run"].(map[string]any)["started_by"] != "alice" || second["queued"].(map[string]any)["state"] != "queued" {
		t.Fatalf("first %v, second %v", first, second)
	}
	os.WriteFile(filepath.Join(gates, "1"), nil, 0o644)
	os.WriteFile(filepath.Join(gates, "2"), nil, 0o644)
	q := ts.waitQueue()
	if len(q) != 2 || q[0].State != store.QueueDone || q[1].State != store.QueueDone || !strings.Contains(string(q[0].Inputs), `"meta":{"a":[1,2]}`) {
		t.Errorf("queue %+v", q)
	}
}

// TestRunParentChildren: a run's JSON names the run that emitted it and
// lists the runs it emitted (the hopper), and the runs list and a run
// say which trigger started each run.
func TestRunParentChildren(t *testing.T) {
	ts := newTriggerServer(t, "", map[string]string{"split.star": `
flow(name = "split", inputs = {"q": "root"}, emit = "split.star", max_depth = 1, output = "s")

def parts(r):
    return {"emit": [{"q": r.inputs.q + "." + str(i)} for i in [1, 2]]}

s = step("s", fn = parts)
chain(START, s, END)
`})
	ts.session()
	root := ts.start("split.star", "")
	q := ts.waitQueue()
	ts.srv.Wait()
	if len(q) != 7 {
		t.Fatalf("queue %+v, want the root, 2 children and 4 skipped grandchildren", q)
	}
	m := ts.must(200, "GET", "/api/runs/"+root, "")
	r := m["run"].(map[string]any)
	if r["parent"] != "" || r["trigger"] != "api" {
		t.Errorf("root: parent %v, trigger %v", r["parent"], r["trigger"])
	}
	kids := r["children"].([]any)
	if len(kids) != 2 {
		t.Fatalf("root's children %v, want 2", kids)
	}
	for _, k := range kids {
		k := k.(map[string]any)
		id, _ := k["run"].(string)
		if k["state"] != store.QueueDone || id == "" || k["parent"] != root {
			t.Fatalf("child %v", k)
		}
		c := ts.must(200, "GET", "/api/runs/"+id, "")["run"].(map[string]any)
		if c["parent"] != root || c["depth"] != 1.0 || c["trigger"] != "emit" {
			t.Errorf("child %s: parent %v, depth %v, trigger %v", id, c["parent"], c["depth"], c["trigger"])
		}
		// Its own items are past max_depth: listed, skipped, with no run.
		gk := c["children"].([]any)
		if len(gk) != 2 || gk[0].(map[string]any)["state"] != store.QueueSkipped || gk[0].(map[string]any)["run"] != nil {
			t.Errorf("child %s's children %v, want 2 skipped", id, gk)
		}
	}
	list := ts.must(200, "GET", "/api/runs", "")["runs"].([]any)
	triggers := map[string]int{}
	for _, r := range list {
		triggers[r.(map[string]any)["trigger"].(string)]++
	}
	if triggers["api"] != 1 || triggers["emit"] != 2 || len(list) != 3 {
		t.Errorf("the runs list's triggers %v", triggers)
	}
}
