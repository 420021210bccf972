package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinlang/skein/vm/store"
)

// The flows every test's root holds.
var testFlows = map[string]string{
	"ok.star": `
flow(name = "ok", inputs = {"who": input("world", help = "whom to greet"), "n": input(1, choices = [1, 2, 3])})
hello = step("hello", run = ["echo", "hello {{ inputs.who }} {{ inputs.n }}"])
chain(START, hello, END)
`,
	"fail.star": `
flow(name = "fail")
prep = step("prep", shell = "echo prepared")
broken = step("broken", shell = "echo oops >&2; test -f fixed")
chain(START, prep, broken, END)
`,
	"gate.star": `
flow(name = "gate")
build = step("build", shell = "echo built")
ask = step("ask", approve = "Ship it?")
ship = step("ship", env = {"BY": "{{ ask.by }}"}, shell = "echo shipped by $BY")
rollback = step("rollback", shell = "echo rolled back")
chain(START, build, ask, ship, END)
edge(ask, rollback, on = "failure")
edge(rollback, END)
`,
	"fields.star": `
flow(name = "fields")
gate = step("gate", approve = "Release?", fields = {
    "version": input(type = "string", help = "the version to ship"),
    "replicas": input(2),
    "rollout": input("canary", choices = ["canary", "all"]),
})
ship = step("ship", run = ["echo", "{{ gate.values.version }} x{{ gate.values.replicas }} {{ gate.values.rollout }}"])
chain(START, gate, ship, END)
`,
	"live.star": `
flow(name = "live")
talk = step("talk", shell = "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second; echo warn >&2")
after = step("after", shell = "echo after")
chain(START, talk, after, END)
`,
	"keyed.star": `
model("m", model = "m1", base_url = "http://127.0.0.1:9/v1", api_key_env = "SERVE_TEST_KEY")
flow(name = "keyed", inputs = {"note": input(type = "string")})
say = step("say", run = ["echo", "note: {{ inputs.note }}"])
chain(START, say, END)
`,
	"sub/bad.star": `
flow(name = "bad")
a = step("a", shell = "true")
edge(a, nowhere)
`,
}

type testServer struct {
	t      *testing.T
	srv    *Server
	http   *httptest.Server
	dir    string // the flow root
	token  string
	client *http.Client
	csrf   string
}

// newServer serves a fresh store and a root holding testFlows, with the
// token ("" for none), over loopback.
func newServer(t *testing.T, token string) *testServer {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "flows")
	for name, src := range testFlows {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "secret.star"), []byte(testFlows["ok.star"]), 0o644)
	st, err := store.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Store: st, Roots: []string{root}, Token: token, By: "alice", Loopback: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	jar, _ := cookiejar.New(nil)
	ts := &testServer{t: t, srv: srv, http: hs, dir: root, token: token, client: &http.Client{Jar: jar, Timeout: time.Minute}}
	t.Cleanup(func() {
		srv.CancelRuns()
		srv.Close()
		hs.Close()
		st.Close()
	})
	return ts
}

// req sends a request with the token (when the server has one), and
// returns the status and the decoded JSON answer.
func (ts *testServer) req(method, path, body string, hdr ...string) (int, map[string]any) {
	ts.t.Helper()
	r, err := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if ts.token != "" {
		r.Header.Set("Authorization", "Bearer "+ts.token)
	}
	if ts.csrf != "" {
		r.Header.Set(csrfHeader, ts.csrf)
	}
	for i := 0; i < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			r.Host = hdr[i+1]
			continue
		}
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.client.Do(r)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &m); err != nil {
			ts.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, m
}

// must sends a request that must answer want.
func (ts *testServer) must(want int, method, path, body string) map[string]any {
	ts.t.Helper()
	code, m := ts.req(method, path, body)
	if code != want {
		ts.t.Fatalf("%s %s: status %d, want %d: %v", method, path, code, want, m)
	}
	return m
}

// session takes a session and its CSRF token, as the page does.
func (ts *testServer) session() {
	ts.t.Helper()
	m := ts.must(200, "GET", "/api/session", "")
	ts.csrf = m["csrf"].(string)
}

// start starts flow with inputs (JSON) and returns the run's id.
func (ts *testServer) start(flow, inputs string) string {
	ts.t.Helper()
	body := `{"flow": "` + flow + `"`
	if inputs != "" {
		body += `, "inputs": ` + inputs
	}
	m := ts.must(201, "POST", "/api/runs", body+"}")
	return m["run"].(map[string]any)["id"].(string)
}

// run reads run id after the server's runs have ended.
func (ts *testServer) run(id string) map[string]any {
	ts.t.Helper()
	ts.srv.Wait()
	return ts.must(200, "GET", "/api/runs/"+id, "")
}

func status(m map[string]any) string { return m["run"].(map[string]any)["status"].(string) }

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func step(t *testing.T, m map[string]any, name string) map[string]any {
	t.Helper()
	for _, s := range m["steps"].([]any) {
		if s := s.(map[string]any); s["name"] == name {
			return s
		}
	}
	t.Fatalf("no step %q in %v", name, m["steps"])
	return nil
}

func TestHealthz(t *testing.T) {
	ts := newServer(t, "secret-token-0123456789")
	resp, err := http.Get(ts.http.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Fatalf("healthz: %d %q", resp.StatusCode, b)
	}
}

func TestStartShowList(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	id := ts.start("ok.star", `{"who": "web", "n": 3}`)
	m := ts.run(id)
	if status(m) != "succeeded" {
		t.Fatalf("run: %v", m["run"])
	}
	if by := m["run"].(map[string]any)["started_by"]; by != "alice" {
		t.Errorf("started_by = %v, want alice", by)
	}
	atts := m["attempts"].([]any)
	if len(atts) != 1 || atts[0].(map[string]any)["stdout"] != "hello web 3\n" {
		t.Errorf("attempts: %v", atts)
	}
	hello := step(t, m, "hello")
	if hello["status"] != "succeeded" || hello["visits"] != 1.0 || hello["attempts"] != 1.0 || hello["line"] != 3.0 {
		t.Errorf("step hello: %v", hello)
	}
	var node map[string]any
	for _, n := range m["graph"].(map[string]any)["nodes"].([]any) {
		if n := n.(map[string]any); n["id"] == "hello" {
			node = n
		}
	}
	if node == nil || node["status"] != "succeeded" || node["visits"] != 1.0 {
		t.Errorf("graph node hello: %v", node)
	}
	list := ts.must(200, "GET", "/api/runs?flow=ok", "")
	runs := list["runs"].([]any)
	if len(runs) != 1 || runs[0].(map[string]any)["id"] != id || list["next"] != "" {
		t.Errorf("list: %v", list)
	}
	if m := ts.must(200, "GET", "/api/runs?flow=nope", ""); len(m["runs"].([]any)) != 0 {
		t.Errorf("list of another flow: %v", m)
	}
	ts.must(404, "GET", "/api/runs/nope", "")
	ts.must(400, "GET", "/api/runs?status=bogus", "")
	ts.must(400, "GET", "/api/runs?limit=0", "")
}

// A run's attempts carry what each ran, after its templates, with the
// flow's model keys masked: the key given in an input is in the run's
// inputs as given, never in what its steps record.
func TestRenderedInRun(t *testing.T) {
	const key = "sk-serve-SECRET-2718"
	t.Setenv("SERVE_TEST_KEY", key)
	ts := newServer(t, "")
	ts.session()
	id := ts.start("keyed.star", `{"note": "the key is `+key+`"}`)
	m := ts.run(id)
	if status(m) != "succeeded" {
		t.Fatalf("run: %v", m["run"])
	}
	atts := m["attempts"].([]any)
	if len(atts) != 1 {
		t.Fatalf("attempts: %v", atts)
	}
	r, _ := atts[0].(map[string]any)["rendered"].(map[string]any)
	if fmt.Sprint(r["argv"]) != "[echo note: the key is ***]" {
		t.Errorf("rendered: %v, want the argv with the key masked", r)
	}
	b, _ := json.Marshal(atts)
	if strings.Contains(string(b), key) {
		t.Errorf("the key is in the run's attempts: %s", b)
	}
	// An attempt with nothing rendered says null.
	id = ts.start("gate.star", "")
	m = ts.run(id)
	for _, a := range m["attempts"].([]any) {
		a := a.(map[string]any)
		if r, ok := a["rendered"]; !ok || (a["step"] == "ask") != (r == nil) {
			t.Errorf("attempt %v: rendered %v", a["step"], r)
		}
	}
}

func TestStartRefused(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	m := ts.must(422, "POST", "/api/runs", `{"flow": "sub/bad.star"}`)
	if errCode(m) != "invalid_flow" || len(m["diagnostics"].([]any)) == 0 {
		t.Errorf("bad flow: %v", m)
	}
	m = ts.must(400, "POST", "/api/runs", `{"flow": "ok.star", "inputs": {"n": "three"}}`)
	if errCode(m) != "bad_input" || !strings.Contains(m["error"].(map[string]any)["message"].(string), "n") {
		t.Errorf("bad input: %v", m)
	}
	ts.must(400, "POST", "/api/runs", `{"flow": "ok.star", "inputs": {"nope": 1}}`)
	ts.must(400, "POST", "/api/runs", `{"flow": "ok.star", "extra": 1}`)
	ts.must(400, "POST", "/api/runs", `{"flow": `)
	ts.must(400, "POST", "/api/runs", `{}`)
}

func TestFlows(t *testing.T) {
	ts := newServer(t, "")
	m := ts.must(200, "GET", "/api/flows", "")
	var paths []string
	for _, f := range m["flows"].([]any) {
		paths = append(paths, f.(map[string]any)["path"].(string))
	}
	if got, want := strings.Join(paths, " "), "fail.star fields.star gate.star keyed.star live.star ok.star sub/bad.star"; got != want {
		t.Errorf("flows: %s, want %s", got, want)
	}
	f := ts.must(200, "GET", "/api/flows/ok.star", "")
	in := f["inputs"].([]any)
	if len(in) != 2 || in[0].(map[string]any)["name"] != "who" || in[0].(map[string]any)["help"] != "whom to greet" ||
		in[0].(map[string]any)["default"] != "world" || in[1].(map[string]any)["type"] != "int" || len(in[1].(map[string]any)["choices"].([]any)) != 3 {
		t.Errorf("inputs: %v", in)
	}
	bad := ts.must(200, "GET", "/api/flows/sub/bad.star", "")
	ds := bad["diagnostics"].([]any)
	if len(ds) == 0 || bad["errors"].(float64) < 1 || ds[0].(map[string]any)["line"] == nil {
		t.Errorf("diagnostics: %v", bad)
	}
}

func TestPathTraversal(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	// A link inside the root to a flow outside it.
	if err := os.Symlink(filepath.Join(filepath.Dir(ts.dir), "secret.star"), filepath.Join(ts.dir, "link.star")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../secret.star", "..%2fsecret.star", "%2e%2e/secret.star", "sub/../../secret.star", "link.star",
		"%2fetc%2fpasswd", "ok.star%00", "..\\secret.star", "nope.star", "sub"} {
		code, m := ts.req("GET", "/api/flows/"+p, "")
		if code != 404 {
			t.Errorf("GET /api/flows/%s: %d %v, want 404", p, code, m)
		}
		flow, _ := json.Marshal(p)
		code, m = ts.req("POST", "/api/runs", `{"flow": `+string(flow)+`}`)
		if code != 404 {
			t.Errorf("start %s: %d %v, want 404", p, code, m)
		}
	}
	m := ts.must(200, "GET", "/api/flows", "")
	for _, f := range m["flows"].([]any) {
		if p := f.(map[string]any)["path"]; p == "link.star" {
			// Listed as a file of the root, but never loaded from outside.
			t.Errorf("the flow list has a link out of the root: %v", f)
		}
	}
}

func TestAuth(t *testing.T) {
	const token = "secret-token-0123456789"
	ts := newServer(t, token)
	noToken := func(method, path, body string, hdr ...string) int {
		r, _ := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
		for i := 0; i < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, body string
		hdr                []string
		want               int
	}{
		{"GET", "/api/runs", "", nil, 401},
		{"GET", "/api/runs", "", []string{"Authorization", "Bearer wrong-token-0123456789"}, 401},
		{"GET", "/api/runs", "", []string{"Authorization", "Bearer " + token[:len(token)-1]}, 401},
		{"GET", "/api/runs", "", []string{"Authorization", "Basic " + token}, 401},
		{"GET", "/api/runs", "", []string{"Authorization", "Bearer " + token}, 200},
		{"GET", "/api/approvals", "", nil, 401},
		{"GET", "/api/flows", "", nil, 401},
		{"GET", "/api/runs/last/events", "", nil, 401},
		{"POST", "/api/runs", `{"flow": "ok.star"}`, nil, 401},
		{"POST", "/api/runs", `{"flow": "ok.star"}`, []string{"Authorization", "Bearer nope"}, 401},
		{"POST", "/api/login", `{"token": "nope"}`, nil, 401},
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/", "", nil, 200},
	} {
		if got := noToken(c.method, c.path, c.body, c.hdr...); got != c.want {
			t.Errorf("%s %s %v: %d, want %d", c.method, c.path, c.hdr, got, c.want)
		}
	}
	// The token over loopback, as a bearer: everything works, no CSRF.
	id := ts.start("ok.star", "")
	if m := ts.run(id); status(m) != "succeeded" {
		t.Fatalf("run: %v", m["run"])
	}
	// A browser: asks whether it is logged in (the only API answer
	// without the token, and it gives away nothing: no cookie, no CSRF
	// token, no name), logs in, then works with its cookie and CSRF token.
	ts.token = ""
	s := ts.must(200, "GET", "/api/session", "")
	if s["token_required"] != true || s["logged_in"] != false || s["csrf"] != nil || s["by"] != nil {
		t.Errorf("session before login: %v", s)
	}
	if u, _ := url.Parse(ts.http.URL); len(ts.client.Jar.Cookies(u)) != 0 {
		t.Errorf("session before login set a cookie")
	}
	ts.must(401, "GET", "/api/runs", "")
	m := ts.must(200, "POST", "/api/login", `{"token": "`+token+`"}`)
	ts.must(200, "GET", "/api/runs", "")
	if s := ts.must(200, "GET", "/api/session", ""); s["logged_in"] != true || s["csrf"] != m["csrf"] {
		t.Errorf("session after login: %v (login gave %v)", s, m)
	}
	ts.must(403, "POST", "/api/runs", `{"flow": "ok.star"}`) // no CSRF token
	ts.csrf = m["csrf"].(string)
	ts.start("ok.star", "")
	ts.srv.Wait()
}

func TestCSRF(t *testing.T) {
	ts := newServer(t, "")
	// Reading needs nothing on loopback without a token.
	ts.must(200, "GET", "/api/runs", "")
	// Changing state needs a session and its CSRF token.
	m := ts.must(403, "POST", "/api/runs", `{"flow": "ok.star"}`)
	if errCode(m) != "forbidden" {
		t.Errorf("no session: %v", m)
	}
	ts.session()
	good := ts.csrf
	ts.csrf = "forged"
	ts.must(403, "POST", "/api/runs", `{"flow": "ok.star"}`)
	ts.csrf = good
	if code, m := ts.req("POST", "/api/runs", `{"flow": "ok.star"}`, "Origin", "http://evil.example"); code != 403 {
		t.Errorf("another origin: %d %v", code, m)
	}
	if code, m := ts.req("POST", "/api/runs", `{"flow": "ok.star"}`, "Origin", "null"); code != 403 {
		t.Errorf("origin null: %d %v", code, m)
	}
	ts.start("ok.star", "") // same origin: no Origin header from a plain client
	if code, m := ts.req("POST", "/api/runs", `{"flow": "ok.star"}`, "Origin", ts.http.URL); code != 201 {
		t.Errorf("own origin: %d %v", code, m)
	}
	// The CSRF token of another session does not do.
	other := newServer(t, "")
	other.session()
	ts.csrf = other.csrf
	ts.must(403, "POST", "/api/runs", `{"flow": "ok.star"}`)
	// A token is not taken where none is set.
	ts.csrf = ""
	if code, _ := ts.req("POST", "/api/runs", `{"flow": "ok.star"}`, "Authorization", "Bearer anything"); code != 401 {
		t.Errorf("a bearer token on a server without one: %d", code)
	}
	// DNS rebinding: a loopback server answers only loopback names.
	for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.evil.example"} {
		if code, _ := ts.req("GET", "/api/runs", "", "Host", host); code != 403 {
			t.Errorf("Host %s: %d, want 403", host, code)
		}
	}
	for _, host := range []string{"localhost:7077", "127.0.0.1", "[::1]:7077"} {
		if code, _ := ts.req("GET", "/api/runs", "", "Host", host); code != 200 {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
	ts.srv.Wait()
}

func TestBoundedBody(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	big := `{"flow": "ok.star", "inputs": {"who": "` + strings.Repeat("x", 2<<20) + `"}}`
	m := ts.must(413, "POST", "/api/runs", big)
	if errCode(m) != "too_large" {
		t.Errorf("too large: %v", m)
	}
	ts.must(413, "POST", "/api/runs/last/approve", `{"reason": "`+strings.Repeat("y", 2<<20)+`"}`)
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7077": true, "localhost:7077": true, "[::1]:80": true, "127.1.2.3:1": true,
		"0.0.0.0:7077": false, ":7077": false, "192.168.1.2:7077": false, "example.com:80": false, "nonsense": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// events reads a run's event stream until end, calling see with each.
func (ts *testServer) events(ctx context.Context, id string, see func(event string, data map[string]any)) {
	ts.t.Helper()
	r, _ := http.NewRequestWithContext(ctx, "GET", ts.http.URL+"/api/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		ts.t.Fatalf("events: %s", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(line[len("data: "):]), &data); err != nil {
				ts.t.Fatalf("event %s: %v: %s", event, err, line)
			}
			see(event, data)
			if event == "end" {
				return
			}
		}
	}
	ts.t.Fatalf("the stream ended without end: %v", sc.Err())
}

func TestEventsLive(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	id := ts.start("live.star", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []string
	ts.events(ctx, id, func(event string, d map[string]any) {
		switch event {
		case "run":
			got = append(got, "run "+d["status"].(string))
		case "attempt":
			got = append(got, "attempt "+d["step"].(string)+" "+d["status"].(string))
		case "output":
			for _, line := range strings.SplitAfter(d["text"].(string), "\n") {
				if line != "" {
					got = append(got, d["stream"].(string)+" "+strings.TrimSpace(line))
				}
			}
			if strings.Contains(d["text"].(string), "first") {
				// Seen while the task runs: let it go on.
				os.WriteFile(filepath.Join(ts.dir, "go"), nil, 0o644)
			}
		case "end":
			got = append(got, "end")
		}
	})
	want := []string{
		"run running",
		"attempt talk running", "stdout first", "stdout second", "stderr warn", "attempt talk succeeded",
		"attempt after running", "stdout after", "attempt after succeeded",
		"run succeeded", "end",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A client that comes late gets the same story from the record.
	var late []string
	ts.events(ctx, id, func(event string, d map[string]any) {
		if event == "attempt" {
			late = append(late, d["step"].(string)+" "+d["status"].(string))
		}
	})
	if got, want := strings.Join(late, ","), "talk running,talk succeeded,after running,after succeeded"; got != want {
		t.Errorf("late events: %s, want %s", got, want)
	}
}

// A stream of a run that records nothing for a while (a task that
// prints nothing) does not read the run again at each look: only the
// store's data version, and the task's live output.
func TestEventsIdleReadsNothing(t *testing.T) {
	defer func(p, r time.Duration) { pollEvery, readEvery = p, r }(pollEvery, readEvery)
	pollEvery, readEvery = time.Millisecond, time.Hour
	ts := newServer(t, "")
	ts.session()
	var mu sync.Mutex
	looks, idle, most := 0, 0, 0
	polled = func(read bool) {
		mu.Lock()
		defer mu.Unlock()
		looks++
		if idle++; read {
			idle = 0
		}
		most = max(most, idle)
		if most == 50 || looks == 1000 {
			// Enough seen: let the task end.
			os.WriteFile(filepath.Join(ts.dir, "go"), nil, 0o644)
		}
	}
	defer func() { polled = nil }()
	id := ts.start("live.star", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	ts.events(ctx, id, func(event string, d map[string]any) {
		if event == "output" {
			for _, line := range strings.SplitAfter(d["text"].(string), "\n") {
				if line != "" {
					out = append(out, d["stream"].(string)+" "+strings.TrimSpace(line))
				}
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if most < 50 {
		t.Errorf("in %d looks at a run that recorded nothing, at most %d in a row did not read it again; want 50", looks, most)
	}
	if got, want := strings.Join(out, ", "), "stdout first, stdout second, stderr warn, stdout after"; got != want {
		t.Errorf("output: %s, want %s", got, want)
	}
}

// Close ends the event streams (a server stopping does not wait for the
// runs they follow), and leaves the runs it started running.
func TestCloseEndsStreams(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	id := ts.start("live.star", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, "GET", ts.http.URL+"/api/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"text":"first\n"`) {
			break
		}
	}
	ts.srv.Close()
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if strings.Contains(strings.Join(rest, "\n"), "event: end") {
		t.Errorf("the stream ended as if the run had: %v", rest)
	}
	if ids := ts.srv.Running(); len(ids) != 1 || ids[0] != id {
		t.Errorf("running after Close: %v", ids)
	}
}
