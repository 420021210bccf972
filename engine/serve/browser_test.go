//go:build browser

package serve_test

// This file tests the web UI in a real Chromium (headless), driven by
// chromedp: the pages, their forms and actions against a real server and
// store, and every page's console free of errors. It runs with the build
// tag browser (make test-browser), so make test stays fast and needs no
// browser. $SKEIN_CHROMIUM names the browser (default: chromium on PATH);
// $SKEIN_SCREENSHOTS, when set, is a folder the tests write screenshots
// of the run and approvals pages into (docs/img is the one the docs show).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/skeinlang/skein/engine/serve"
	"github.com/skeinlang/skein/vm/store"
)

// The flows the tests start, written into a flow root of their own.
var browserFlows = map[string]string{
	// Three steps, each waiting for its gate file: the test opens one
	// gate at a time and watches the graph turn green step by step.
	"steps.star": `
flow(name = "steps", description = "three steps, each waiting for its gate", inputs = {"gate": input(type = "string", help = "the folder of gate files")})

def gated(name):
    return step(name, run = ["sh", "-c", 'echo "$1 waits for its gate"; while [ ! -e "$0/$1" ]; do sleep 0.02; done; echo "$1 passed"', "{{ inputs.gate }}", name])

a = gated("a")
b = gated("b")
c = gated("c")
edge(START, a)
edge(a, b)
edge(b, c)
edge(c, END)
`,
	// A task given a model key in an input: what it ran shows masked.
	"keyed.star": `
model("m", model = "m1", base_url = "http://127.0.0.1:9/v1", api_key_env = "BROWSER_TEST_KEY")
flow(name = "keyed", inputs = {"note": input(type = "string")})
say = step("say", run = ["echo", "note: {{ inputs.note }}"])
chain(START, say, END)
`,
	// A child flow given a templated input.
	"parent.star": `
flow(name = "parent", inputs = {"version": "1.4"})
kid = step("kid", flow = "kid.star", inputs = {"tag": "v{{ inputs.version }}"})
chain(START, kid, END)
`,
	"kid.star": `
flow(name = "kid", inputs = {"tag": input(type = "string")})
show = step("show", run = ["echo", "{{ inputs.tag }}"])
chain(START, show, END)
`,
	// An agent, answered by the offline stub model, that calls one tool.
	"agent.star": `
model("m", provider = "stub", answers = [{"match": "look", "turns": [
    {"tool_calls": [
        {"name": "say", "arguments": {"word": "hi there"}},
        {"name": "request_tool", "arguments": {"name": "shout", "reason": "to be heard", "confirmed": True}},
    ]},
    {"reply": "done"},
]}])
shout = tool("shout", run = ["echo", "HEY"], help = "shout")
flow(name = "agent", tools = [shout])
say = tool("say", run = ["echo", "{{ args.word }}"], params = {"word": "string"}, help = "say a word")
look = step("look", agent = "look around", tools = [say], model = "m")
chain(START, look, END)
`,
	// A compile that fails until its fix file exists; resumed from it once fixed.
	"crash.star": `
flow(name = "crash")
def half(n):
    return 10 // n
crash = step("crash", fn = lambda r: half(0))
chain(START, crash, END)
`,
	"compile.star": `
flow(name = "compile", inputs = {"fixed": ""})

prep = step("prep", run = ["echo", "sources ready"])
compile = step(
    "compile",
    run = ["sh", "-c", 'if [ ! -e "$0" ]; then printf "main.go:3:5: undefined: helper\\n\\033[31mred\\033[0m\\n" >&2; exit 1; fi; echo compiled', "{{ inputs.fixed }}"],
)
edge(START, prep)
edge(prep, compile)
edge(compile, END)
`,
	// An approval: approved it ships, rejected it rolls back.
	"deploy.star": `
flow(name = "deploy", inputs = {"version": "1.4"})

build = step("build", run = ["echo", "built {{ inputs.version }}"])
gate = step("gate", approve = "Deploy {{ inputs.version }} to production?")
ship = step("ship", run = ["echo", "shipped"])
rollback = step("rollback", run = ["echo", "not deployed: {{ gate.error }}"])
edge(START, build)
edge(build, gate)
edge(gate, ship)
edge(gate, rollback, on = "failure")
edge(ship, END)
edge(rollback, END)
`,
	// An approval that asks for values: the version to ship (required
	// text), how many replicas (a whole number with a default) and the
	// rollout (a choice, required); the ship step prints what was given.
	"release_gate.star": `
flow(name = "release_gate")

gate = step("gate", approve = "Ship the release?", fields = {
    "version": input(type = "string", help = "the version to ship"),
    "replicas": input(3),
    "rollout": input(choices = ["canary", "all"], help = "how far"),
})
ship = step("ship", run = ["echo", "shipping {{ gate.values.version }} x{{ gate.values.replicas }} to {{ gate.values.rollout }}"])
edge(START, gate)
edge(gate, ship)
edge(ship, END)
`,
	// A graph with a retried step, a loop body, a map body, a condition
	// and a failure edge, for the screenshot.
	"release.star": `
flow(name = "release", description = "test, package per platform, publish", inputs = {"platforms": ["linux", "darwin", "windows"]})

fetch = step("fetch", run = ["echo", "fetched"])
unit = step("unit_tests", run = ["sh", "-c", 'if [ "$SKEIN_ATTEMPT" = 1 ]; then echo "dial tcp 10.0.0.7:5432: connection reset" >&2; exit 1; fi; echo "ok  pkg/a  0.21s"; echo "ok  pkg/b  0.34s"'], retries = 1)
lint = step("lint", fn = lambda r: {"ok": False, "issues": 2})
fix = step("fix_lint", fn = lambda r: {"fixed": 2})
check = step("check_lint", fn = lambda r: {"clean": True})
tidy = loop("tidy", body = [fix, check], until = lambda r: True, max_iterations = 3)
build = step("build", run = ["echo", "built for {{ item }}"])
sign = step("sign", run = ["echo", "signed {{ item }}"])
edge(build, sign)
per = map("per_platform", over = "inputs.platforms", body = [build, sign])
publish = step("publish", run = ["echo", "published"])
notify = step("notify_failure", run = ["echo", "release failed"])
edge(START, fetch)
edge(fetch, unit)
edge(fetch, lint)
edge(lint, tidy, when = "not lint.ok")
edge(unit, per)
edge(tidy, per)
edge(per, publish)
edge(unit, notify, on = "failure")
edge(publish, END)
edge(notify, END)
`,
	// Typed inputs with help, a default, choices.
	"typed.star": `
flow(name = "typed", inputs = {
    "env": input("staging", choices = ["staging", "prod"], help = "where to deploy"),
    "replicas": input(type = "int", help = "how many to start"),
    "dry": input(False, help = "only say what would happen"),
    "tags": input(["a"], help = "labels for the release"),
})

say = step("say", run = ["echo", "{{ inputs.env }} {{ inputs.replicas }} {{ inputs.dry }} {{ inputs.tags }}"])
edge(START, say)
edge(say, END)
`,
	// A step nothing leads to: the checker's error, no start.
	"broken.star": `
flow(name = "broken")

a = step("a", run = ["echo", "a"])
lost = step("lost", run = ["echo", "never"])
edge(START, a)
edge(a, END)
`,
	// 200 steps in twenty loops: a graph that opens folded.
	"wide.star": `
flow(name = "wide", description = "twenty loops of nine steps")

prev = START
for i in range(20):
    body = [step("l%d_s%d" % (i, j), fn = lambda r: 1) for j in range(9)]
    l = loop("loop%d" % i, body = body, until = lambda r: True, max_iterations = 2)
    edge(prev, l)
    prev = l
edge(prev, END)
`,
}

// bigFlow is a flow of n steps in a chain: every fifth runs a command,
// the others are functions.
func bigFlow(n int) string {
	var b strings.Builder
	b.WriteString("flow(name = \"big\")\n\nprev = START\n")
	fmt.Fprintf(&b, "for i in range(%d):\n", n)
	b.WriteString("    if i % 5 == 0:\n        s = step(\"s%d\" % i, run = [\"true\"])\n")
	b.WriteString("    else:\n        s = step(\"s%d\" % i, fn = lambda r: 1)\n")
	b.WriteString("    edge(prev, s)\n    prev = s\nedge(prev, END)\n")
	return b.String()
}

// ui is one server and one browser tab on it.
type ui struct {
	t     *testing.T
	ctx   context.Context
	url   string
	root  string
	http  *http.Client
	token string // the server's, sent by the test's own requests
	csrf  string // the API's session, for the requests the test makes itself

	mu       sync.Mutex
	problems []string // console errors and warnings, uncaught exceptions
}

func newUI(t *testing.T) *ui { return newUIWith(t, "") }

// newUIWith is newUI for a server that needs token ("": none).
func newUIWith(t *testing.T, token string) *ui {
	t.Helper()
	root := t.TempDir()
	for name, src := range browserFlows {
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "big.star"), []byte(bigFlow(1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := serve.New(serve.Config{Store: st, Roots: []string{root}, By: "tester", Loopback: true, Token: token,
		Logf: func(format string, args ...any) { t.Logf("server: "+format, args...) }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	go srv.Schedule() // the flows' triggers (triggers_browser_test.go)
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
	})

	chrome := os.Getenv("SKEIN_CHROMIUM")
	if chrome == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				chrome = p
				break
			}
		}
	}
	if chrome == "" {
		t.Fatal("no Chromium: install it (apt-get install chromium) or set SKEIN_CHROMIUM")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)

	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := ts.Client()
	client.Jar = jar
	u := &ui{t: t, url: ts.URL, root: root, http: client, token: token}
	// The browser starts here, with the console's subscription (a message
	// before it would be lost); the test's time limit is on a context
	// derived from it, as chromedp asks.
	messages := chromedp.Console(bctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				u.problem(fmt.Sprintf("%s (%s:%d:%d)", m, m.URL, m.Line+1, m.Column+1))
			}
		}
	}()
	ctx, cancelT := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancelT)
	u.ctx = ctx
	return u
}

func (u *ui) problem(s string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.problems = append(u.problems, s)
}

// clean fails the test if a page logged an error or a warning, or threw,
// since the last call.
func (u *ui) clean(page string) {
	u.t.Helper()
	// A message is sent as it happens; one round trip lets those in flight in.
	_, _ = chromedp.Run(u.ctx, chromedp.Evaluate[bool]("true"))
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range u.problems {
		u.t.Errorf("%s: %s", page, p)
	}
	u.problems = nil
}

// do runs steps in the tab, failing the test with the page's text when
// one fails.
func (u *ui) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		u.fail(what, err)
	}
}

// stepTimeout bounds one step of a test: a page that never shows what it
// should fails the test with what it shows instead.
const stepTimeout = 30 * time.Second

// fail ends the test with the page's text, what it logged, and (with
// $SKEIN_SCREENSHOTS) a screenshot.
func (u *ui) fail(what string, err error) {
	u.t.Helper()
	u.mu.Lock()
	logged := strings.Join(u.problems, "\n")
	u.mu.Unlock()
	u.screenshot("failed-" + strings.ReplaceAll(u.t.Name(), "/", "-"))
	u.t.Fatalf("%s: %v\npage text:\n%s\nconsole:\n%s", what, err, u.pageText(), logged)
}

func (u *ui) pageText() string {
	ctx, cancel := context.WithTimeout(u.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	return text
}

// text is the text of the element sel.
func (u *ui) text(sel string) string {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		u.fail("text of "+sel, err)
	}
	return s
}

// count is how many elements match sel now.
func (u *ui) count(sel string) int {
	u.t.Helper()
	n, err := chromedp.Run(u.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		u.t.Fatal(err)
	}
	return n
}

func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}
func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

// until waits until the JavaScript expression js is true.
func until(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](js)(ctx, t)
		return err
	})
}

// dark makes the page think the system prefers a dark theme, or not.
func dark(on bool) chromedp.Action[chromedp.Void] {
	v := "light"
	if on {
		v = "dark"
	}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
		return err
	})
}

// eval runs js in the page for what it does.
func eval(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](js)(ctx, t)
		return err
	})
}

// fitsPhone fails the test if the page is wider than the window (a phone
// would have to scroll sideways to read it); wide tables and the graph
// scroll inside their own boxes.
func (u *ui) fitsPhone(page string) {
	u.t.Helper()
	w, err := chromedp.Run(u.ctx, chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if err != nil {
		u.t.Fatal(err)
	}
	if w[0] > w[1] {
		u.t.Errorf("%s is %.0f px wide on a %.0f px phone", page, w[0], w[1])
	}
}

// open navigates to path and waits for sel.
func (u *ui) open(path, sel string) {
	u.t.Helper()
	u.do("open "+path, chromedp.Navigate(u.url+path), visible(sel))
}

// confirm clicks the button sel, then the confirmation dialog's OK.
func (u *ui) confirm(sel string) {
	u.t.Helper()
	u.do("click "+sel+" and confirm", click(sel), visible("#confirm-ok"), click("#confirm-ok"),
		chromedp.WaitNotVisible(chromedp.CSS("#confirm")))
}

// node is the graph's box of a step in a status.
func node(step, status string) string {
	return fmt.Sprintf(`#graph [data-step=%q][data-status=%q]`, step, status)
}

// runBadge is the run page's status badge when the run has status.
func runBadge(status string) string {
	return fmt.Sprintf(`main h1 + .badge[data-status=%q]`, status)
}

// runID is the id of the run the page shows.
func (u *ui) runID() string {
	u.t.Helper()
	loc, err := chromedp.Run(u.ctx, chromedp.Location())
	if err != nil {
		u.t.Fatal(err)
	}
	_, id, ok := strings.Cut(loc, "/runs/")
	if !ok {
		u.t.Fatalf("not on a run's page: %s", loc)
	}
	id, _, _ = strings.Cut(id, "?")
	return id
}

// start starts flow with inputs through the API, as a script would.
func (u *ui) start(flow string, inputs map[string]any) string {
	u.t.Helper()
	var out struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	u.api("POST", "/api/runs", map[string]any{"flow": flow, "inputs": inputs}, &out)
	return out.Run.ID
}

// api calls the API as a script would, with a session of its own (no
// token: the server listens on loopback).
func (u *ui) api(method, path string, body any, out any) {
	u.t.Helper()
	if u.csrf == "" && path != "/api/session" {
		var s struct {
			CSRF string `json:"csrf"`
		}
		u.api("GET", "/api/session", nil, &s)
		u.csrf = s.CSRF
	}
	b, err := json.Marshal(body)
	if err != nil {
		u.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(u.ctx, method, u.url+path, bytes.NewReader(b))
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Skein-CSRF", u.csrf)
	if u.token != "" {
		req.Header.Set("Authorization", "Bearer "+u.token)
	}
	res, err := u.http.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		u.t.Fatal(err)
	}
	if res.StatusCode >= 300 {
		u.t.Fatalf("%s %s: %s %s", method, path, res.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			u.t.Fatal(err)
		}
	}
}

// waitRun waits until run id has status, through the API.
func (u *ui) waitRun(id, status string) {
	u.t.Helper()
	for {
		var out struct {
			Run struct {
				Status string `json:"status"`
			} `json:"run"`
		}
		u.api("GET", "/api/runs/"+id, nil, &out)
		if out.Run.Status == status {
			return
		}
		select {
		case <-u.ctx.Done():
			u.t.Fatalf("run %s never got to %s (it is %s)", id, status, out.Run.Status)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// screenshot writes the tab as name.png into $SKEIN_SCREENSHOTS, when set.
func (u *ui) screenshot(name string) {
	u.t.Helper()
	dir := os.Getenv("SKEIN_SCREENSHOTS")
	if dir == "" {
		return
	}
	// Without the toasts, and the fonts settled.
	_ = chromedp.Do(u.ctx, eval(`document.getElementById("toasts").replaceChildren(); window.scrollTo(0, 0); true`), chromedp.Sleep(200*time.Millisecond))
	png, err := chromedp.Run(u.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		u.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		u.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		u.t.Fatal(err)
	}
}

func TestBrowserStartAndWatch(t *testing.T) {
	u := newUI(t)
	gate := t.TempDir()
	u.open("/flows/steps.star", "#start-form")
	u.clean("flow page")
	u.do("fill the form", chromedp.SendKeys(chromedp.CSS("#in-gate"), gate))
	u.confirm("#start")
	u.do("the run page", visible("#graph svg"))
	// Each step turns green when its gate opens, and not before.
	steps := []string{"a", "b", "c"}
	for i, s := range steps {
		u.do("step "+s+" runs", visible(node(s, "running")))
		for _, later := range steps[i+1:] {
			u.do(later+" waits", visible(node(later, "pending")))
		}
		if err := os.WriteFile(filepath.Join(gate, s), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		u.do("step "+s+" succeeds", visible(node(s, "succeeded")))
	}
	u.do("the run succeeds", visible(runBadge("succeeded")))
	// A step's record, with what it printed.
	u.do("open step c", click(`#graph [data-step="c"]`), visible(`#step-panel [data-stream="stdout"] pre`))
	if out := u.text(`#step-panel [data-stream="stdout"] pre`); !strings.Contains(out, "c passed") {
		t.Errorf("step c's stdout shows %q, want it to say c passed", out)
	}
	// ... and the command it ran, its input filled in.
	if ran := u.text(`#step-panel [data-rendered="argv"]`); !strings.Contains(ran, gate+" c") || strings.Contains(ran, "{{") {
		t.Errorf("step c's command shows %q, want it with the gate folder %s filled in", ran, gate)
	}
	u.clean("run page")
	u.open("/runs", "tr[data-run]")
	if n := u.count(`tr[data-run] .badge[data-status="succeeded"]`); n != 1 {
		t.Errorf("the runs list shows %d succeeded runs, want 1", n)
	}
	u.clean("runs page")
}

// TestBrowserStepRecord opens the record of a task given a model key in
// an input (what it ran shows, the key masked), of an agent step (the
// prompt it sent, its tool calls with their results, what each call ran)
// and of a child flow (the inputs it was given).
func TestBrowserStepRecord(t *testing.T) {
	const key = "sk-browser-SECRET-3141"
	t.Setenv("BROWSER_TEST_KEY", key)
	u := newUI(t)
	// A model key given in an input is masked in what the step ran.
	id := u.start("keyed.star", map[string]any{"note": "the key is " + key})
	u.waitRun(id, "succeeded")
	u.open("/runs/"+id+"?step=say", `#step-panel [data-rendered="argv"]`)
	if ran := u.text(`#step-panel [data-rendered="argv"]`); ran != `echo "note: the key is ***"` {
		t.Errorf("the keyed step's command shows %q, want the key masked", ran)
	}
	if panel := u.text("#step-panel"); strings.Contains(panel, key) {
		t.Errorf("the step panel shows the key:\n%s", panel)
	}
	u.clean("keyed run page")
	id = u.start("agent.star", nil)
	u.waitRun(id, "succeeded")
	u.open("/runs/"+id+"?step=look", "#step-panel #tool-calls")
	if calls := u.text("#step-panel #tool-calls tbody"); !strings.Contains(calls, "say") || !strings.Contains(calls, `{"word":"hi there"}`) || !strings.Contains(calls, "hi there") {
		t.Errorf("the agent's tool calls show %q, want say's call with its arguments and result", calls)
	}
	if g := u.text("#step-panel #grants"); !strings.Contains(g, "shout at turn 1: to be heard") {
		t.Errorf("the agent's grants show %q, want shout granted at turn 1 to be heard", g)
	}
	// Each turn and call is an attempt of the step, named in words.
	if names := u.text("#step-panel"); !strings.Contains(names, "look (turn 1)") || !strings.Contains(names, "look (turn 1, tool call 1)") ||
		!strings.Contains(names, "look (turn 2)") || strings.Contains(names, "look@") {
		t.Errorf("the agent's attempts are named as in:\n%s\nwant look (turn 1), look (turn 1, tool call 1), look (turn 2)", names)
	}
	// Open them all.
	u.do("open the attempts", eval(`document.querySelectorAll("#step-panel details.attempt").forEach((d) => { d.open = true; }); true`))
	if sent := u.text(`#step-panel [data-rendered="user"]`); sent != "look around" {
		t.Errorf("the agent's first prompt shows %q, want look around", sent)
	}
	if ran := u.text(`#step-panel [data-rendered="argv"]`); ran != `echo "hi there"` {
		t.Errorf("the tool call's command shows %q, want echo \"hi there\"", ran)
	}
	u.clean("agent run page")
	id = u.start("parent.star", map[string]any{"version": "2.0"})
	u.waitRun(id, "succeeded")
	u.open("/runs/"+id+"?step=kid", `#step-panel [data-rendered="inputs"]`)
	if in := u.text(`#step-panel [data-rendered="inputs"]`); !strings.Contains(in, `"tag": "v2.0"`) {
		t.Errorf("the child flow's inputs show %q, want tag v2.0", in)
	}
	u.clean("child flow run page")
}

// TestBrowserLiveOutput watches a task's output arrive while it runs,
// then cancels the run from its page.
func TestBrowserLiveOutput(t *testing.T) {
	u := newUI(t)
	gate := t.TempDir()
	id := u.start("steps.star", map[string]any{"gate": gate})
	u.open("/runs/"+id+"?step=a", node("a", "running"))
	// What a printed so far, while it still runs (it waits for its gate):
	// only the event stream brings that.
	u.do("a's output while it runs", visible(`#step-panel [data-stream="stdout"]`),
		until(`document.querySelector('#step-panel [data-stream="stdout"] pre').textContent.includes("a waits for its gate")`),
		visible(node("a", "running")))
	if err := os.WriteFile(filepath.Join(gate, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	u.do("a ends, b runs", visible(node("a", "succeeded")), visible(node("b", "running")))
	u.confirm("#cancel")
	u.do("the run is cancelled", visible(runBadge("cancelled")), visible(node("b", "cancelled")), visible(node("c", "pending")))
	u.clean("live run page")
}

func TestBrowserFailedStepAndResumeFrom(t *testing.T) {
	u := newUI(t)
	fixed := filepath.Join(t.TempDir(), "fixed")
	id := u.start("compile.star", map[string]any{"fixed": fixed})
	u.waitRun(id, "failed")
	u.open("/runs/"+id, node("compile", "failed"))
	u.do("the failed step's record", visible("#run-error"), click(`#graph [data-step="compile"]`),
		visible(`#step-panel [data-stream="stderr"] pre`))
	if stderr := u.text(`#step-panel [data-stream="stderr"] pre`); !strings.Contains(stderr, "main.go:3:5: undefined: helper") || !strings.Contains(stderr, `\x1b[31mred\x1b[0m`) {
		t.Errorf("stderr shows %q, want the compiler's message and its escapes written out", stderr)
	}
	if pos := u.text(`#step-panel .kv .pos`); !strings.HasSuffix(pos, "/compile.star:5:11") {
		t.Errorf("the step's position reads %q, want compile.star:5:11", pos)
	}
	if e := u.text("#run-error"); !strings.Contains(e, "compile") {
		t.Errorf("the run's error reads %q, want it to name the step", e)
	}
	u.screenshot("serve-failed")
	u.clean("failed run page")

	// Fixed: run it again from the step before.
	if err := os.WriteFile(fixed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	u.do("choose prep", click(`#graph [data-step="prep"]`), visible("#resume-from"))
	u.confirm("#resume-from")
	u.do("the new run succeeds", visible(runBadge("succeeded")), visible(node("compile", "succeeded")))
	if got := u.runID(); got == id {
		t.Errorf("resuming an ended run stayed on it (%s), want the new run that continues it", got)
	}
	u.do("it names the run it continues", visible(`.facts a[href="/runs/`+id+`"]`))
	u.clean("resumed run page")

	// A fn step's runtime error: its trace is in the step's panel,
	// collapsed until asked for.
	crash := u.start("crash.star", nil)
	u.waitRun(crash, "failed")
	u.open("/runs/"+crash, node("crash", "failed"))
	u.do("the crashed step's error", click(`#graph [data-step="crash"]`), visible("#step-error"),
		until(`document.querySelector("#step-trace") && !document.querySelector("#step-trace").open`),
		click("#step-trace summary"), visible("#step-trace pre"))
	if tr := u.text("#step-trace pre"); !strings.Contains(tr, "crash.star:4:") || !strings.Contains(tr, "half") {
		t.Errorf("the trace reads %q, want the helper half's line crash.star:4", tr)
	}
	u.clean("crashed run page")
}

func TestBrowserApproveAndReject(t *testing.T) {
	u := newUI(t)
	approve := u.start("deploy.star", map[string]any{"version": "2.0"})
	reject := u.start("deploy.star", map[string]any{"version": "2.1"})
	u.waitRun(approve, "waiting")
	u.waitRun(reject, "waiting")
	card := func(id, sel string) string { return fmt.Sprintf(`[data-run=%q] %s`, id, sel) }
	u.open("/approvals", card(approve, `[data-decide="approve"]`))
	if q := u.text(card(approve, ".question")); q != "Deploy 2.0 to production?" {
		t.Errorf("the approval asks %q", q)
	}
	u.screenshot("serve-approvals")
	u.clean("approvals page")

	u.do("a reason", chromedp.SendKeys(chromedp.CSS(card(approve, `input[name="reason"]`)), "checked the diff"))
	u.confirm(card(approve, `[data-decide="approve"]`))
	u.do("follow the approved run", visible(card(approve, ".result a")), click(card(approve, ".result a")),
		visible(runBadge("succeeded")), visible(node("ship", "succeeded")), visible(node("rollback", "skipped")))
	u.clean("approved run page")

	// Rejected from the run's own page: the rejection is routed to the rollback.
	u.open("/runs/"+reject, `[data-decide="reject"]`)
	u.do("a reason", chromedp.SendKeys(chromedp.CSS(`input[name="reason"]`), "not today"))
	u.confirm(`[data-decide="reject"]`)
	u.do("the rollback runs", visible(node("rollback", "succeeded")), visible(node("ship", "skipped")))
	u.do("the rollback's record", click(`#graph [data-step="rollback"]`), visible(`#step-panel [data-stream="stdout"] pre`))
	if out := u.text(`#step-panel [data-stream="stdout"] pre`); !strings.Contains(out, "rejected by tester") {
		t.Errorf("the rollback printed %q, want the rejection", out)
	}
	u.do("the decision's record", click(`#graph [data-step="gate"]`), visible(`#step-panel .decision`))
	if d := u.text(`#step-panel .decision`); !strings.Contains(d, "rejected by tester") || !strings.Contains(d, "not today") {
		t.Errorf("the gate's record says %q, want who rejected it and why", d)
	}
	u.clean("rejected run page")
}

// TestBrowserApprovalFields decides an approval that asks for values:
// the form has a field of each type, a value the server refuses shows its
// error and keeps the approval open, and the values given reach the step
// after it.
func TestBrowserApprovalFields(t *testing.T) {
	u := newUI(t)
	id := u.start("release_gate.star", nil)
	u.waitRun(id, "waiting")
	card := func(sel string) string { return fmt.Sprintf(`[data-run=%q] %s`, id, sel) }
	u.open("/approvals", card(`[data-decide="approve"]`))
	u.do("the fields", visible(card(`input#ap-gate-version[type="text"]`)), visible(card(`input#ap-gate-replicas[type="number"]`)),
		visible(card(`select#ap-gate-rollout`)))
	if v := u.text(card(`label[for="ap-gate-version"] .help`)); v != "the version to ship" {
		t.Errorf("version's help reads %q", v)
	}
	opts, err := chromedp.Run(u.ctx, chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll(%q)].map((o) => o.textContent)`, card(`select#ap-gate-rollout option`))))
	if err != nil {
		t.Fatal(err)
	}
	if l := u.text(card(`label[for="ap-gate-rollout"] small`)); l != "a choice, required" {
		t.Errorf("the rollout is labelled %q, want a choice, required", l)
	}
	if strings.Join(opts, ",") != "choose…,canary,all" {
		t.Errorf("the rollout offers %q, want choose…, canary, all", opts)
	}
	if v, err := chromedp.Run(u.ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).value`, card(`#ap-gate-replicas`)))); err != nil || v != "3" {
		t.Errorf("replicas starts at %q (%v), want its default 3", v, err)
	}
	u.screenshot("serve-approval-fields")
	u.clean("approval with fields")

	// No version, no rollout: the server refuses, the card says why, the
	// approval stays open.
	u.confirm(card(`[data-decide="approve"]`))
	u.do("the server's refusal", visible(card(".result .error-box")))
	if e := u.text(card(".result .error-box")); !strings.Contains(e, `needs a value for field "version"`) {
		t.Errorf("approving without a version says %q, want the server's error about the required version", e)
	}
	u.mu.Lock()
	u.problems = nil // the refused request, logged by Chromium itself
	u.mu.Unlock()
	var st struct {
		Run struct {
			Status string `json:"status"`
		} `json:"run"`
	}
	u.api("GET", "/api/runs/"+id, nil, &st)
	if st.Run.Status != "waiting" {
		t.Errorf("after a refused approval the run is %s, want it still waiting", st.Run.Status)
	}

	// Good values: approved, the run ships the version given.
	u.do("the values", chromedp.SendKeys(chromedp.CSS(card("#ap-gate-version")), "2.7.1"),
		chromedp.SetValue(chromedp.CSS(card("#ap-gate-rollout")), `"all"`),
		eval(fmt.Sprintf(`document.querySelector(%q).value = "5"; true`, card("#ap-gate-replicas"))))
	u.confirm(card(`[data-decide="approve"]`))
	u.do("follow the approved run", visible(card(".result a")), click(card(".result a")),
		visible(runBadge("succeeded")), visible(node("ship", "succeeded")))
	u.do("the ship step's output", click(`#graph [data-step="ship"]`), visible(`#step-panel [data-stream="stdout"] pre`))
	if out := strings.TrimSpace(u.text(`#step-panel [data-stream="stdout"] pre`)); out != "shipping 2.7.1 x5 to all" {
		t.Errorf("ship printed %q, want %q", out, "shipping 2.7.1 x5 to all")
	}
	u.do("the decision's values", click(`#graph [data-step="gate"]`), visible(`#step-panel .decision pre`))
	if d := u.text(`#step-panel .decision pre`); !strings.Contains(d, "2.7.1") || !strings.Contains(d, "all") {
		t.Errorf("the gate's record shows the values %q", d)
	}
	u.clean("approved run page")
}

func TestBrowserPages(t *testing.T) {
	u := newUI(t)
	id := u.start("release.star", nil)
	u.waitRun(id, "succeeded")
	u.open("/runs/"+id, node("publish", "succeeded"))
	u.do("choose a step", click(`#graph [data-step="unit_tests"]`), visible(`#step-panel [data-stream="stdout"]`))
	if n := u.count(`#step-panel details.attempt`); n != 2 {
		t.Errorf("unit_tests shows %d attempts, want 2 (it failed once and was retried)", n)
	}
	u.screenshot("serve-run")
	u.clean("run page")
	// Dark, and on a phone: the same page, legible (looked at in the
	// screenshots), and without errors.
	u.do("dark", dark(true))
	u.screenshot("serve-run-dark")
	u.do("a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), eval("window.scrollTo(0, 0), true"))
	u.screenshot("serve-run-phone")
	u.fitsPhone("the run page")
	for _, p := range []struct{ path, sel string }{{"/runs", "tr[data-run]"}, {"/approvals", "#approvals"}, {"/flows/release.star", "#start-form"}} {
		u.open(p.path, p.sel)
		u.fitsPhone(p.path)
	}
	u.do("light, on a laptop", dark(false), chromedp.EmulateViewport(1280, 1000))
	u.clean("run page, dark and on a phone")
	u.open("/flows", `tr[data-flow="release.star"]`)
	u.clean("flows page")
	u.open("/flows/release.star", "#graph svg")
	u.screenshot("serve-flow")
	u.clean("flow page")
	u.start("compile.star", nil)
	u.open("/runs", `tr[data-run] .badge[data-status="failed"]`)
	u.screenshot("serve-runs")
	u.open("/runs?status=succeeded", `tr[data-run]`)
	if n := u.count(`tr[data-run]`); n != 1 {
		t.Errorf("the succeeded runs are %d, want 1", n)
	}
	u.open("/runs?text=compile", `tr[data-run]`)
	if n, f := u.count(`tr[data-run]`), u.text(`tr[data-run] td[data-label="Flow"]`); n != 1 || f != "compile" {
		t.Errorf("searching for compile lists %d runs (the first of flow %q), want the one of flow compile", n, f)
	}
	u.clean("runs page")
	u.open("/approvals", "#approvals .empty")
	u.clean("approvals page")
	// A flow that does not check shows why, and cannot be started.
	u.open("/flows/broken.star", "#diagnostics")
	if d := u.text("#diagnostics"); !strings.Contains(d, `step "lost" is not reachable from START`) || !strings.Contains(d, "broken.star:5:8") {
		t.Errorf("the diagnostics read %q", d)
	}
	if n := u.count("#start:disabled"); n != 1 {
		t.Error("a flow with errors can be started")
	}
	u.clean("a broken flow's page")
	// Typed inputs: a choice, a whole number, yes or no, a list.
	u.open("/flows/typed.star", "#start-form")
	if help := u.text(`label[for="in-replicas"] .help`); help != "how many to start" {
		t.Errorf("replicas's help reads %q", help)
	}
	u.do("fill the form", chromedp.SetValue(chromedp.CSS("#in-env"), `"prod"`), chromedp.SendKeys(chromedp.CSS("#in-replicas"), "3"),
		click("#in-dry"), eval(`document.querySelector("#in-tags").value = '["x", "y"]'; true`))
	u.confirm("#start")
	u.do("the run", visible(node("say", "succeeded")), click(`#graph [data-step="say"]`), visible(`#step-panel [data-stream="stdout"] pre`))
	if out := strings.TrimSpace(u.text(`#step-panel [data-stream="stdout"] pre`)); out != `prod 3 true ["x","y"]` {
		t.Errorf("the run was given %q, want %q", out, `prod 3 true ["x","y"]`)
	}
	u.clean("a typed flow's run")
	// 200 steps open folded into their loops; one unfolds.
	u.open("/flows/wide.star", `#graph [data-step="loop19"]`)
	if n := u.count(`#graph .gnode`); n != 22 {
		t.Errorf("the folded graph of 200 steps shows %d boxes, want 22 (start, end, twenty loops)", n)
	}
	u.do("unfold loop7", click(`#graph [data-step="loop7"] .fold`), visible(`#graph [data-step="l7_s8"]`))
	if n := u.count(`#graph .gnode`); n != 31 {
		t.Errorf("with one loop unfolded the graph shows %d boxes, want 31", n)
	}
	u.clean("a folded flow's page")
	u.open("/nowhere", ".empty")
	u.clean("a page that is not there")
}

// TestBrowserLogin opens a server that needs its token: the page asks for
// it once, then works (a decision, a change of state, included), and its
// console stays free of errors.
func TestBrowserLogin(t *testing.T) {
	const token = "a-token-of-this-test-0123456789"
	u := newUIWith(t, token)
	id := u.start("deploy.star", nil)
	u.waitRun(id, "waiting")
	u.open("/approvals", ".login input[type=password]")
	// The page learnt it must ask for the token from GET /api/session,
	// not from refused requests: nothing is logged.
	u.clean("the login form")
	u.do("a wrong token", chromedp.SendKeys(chromedp.CSS(".login input"), "wrong"), click(".login button"),
		until(`document.querySelector(".login .muted").textContent.includes("wrong token")`))
	// The wrong token's refusal is the one thing the browser logs (every
	// refused request is logged by Chromium, not by the page).
	u.mu.Lock()
	if len(u.problems) != 1 || !strings.Contains(u.problems[0], "status of 401") || !strings.Contains(u.problems[0], "/api/login") {
		t.Errorf("after a wrong token, the console has %q, want the login's 401 alone", u.problems)
	}
	u.problems = nil
	u.mu.Unlock()
	u.do("the token", eval(`document.querySelector(".login input").value = ""; true`), chromedp.SendKeys(chromedp.CSS(".login input"), token),
		click(".login button"), visible(`[data-decide="approve"]`))
	u.confirm(`[data-decide="approve"]`)
	u.do("approved", visible(".approval.decided .result a"))
	u.waitRun(id, "succeeded")
	u.clean("after the login")
}

// TestBrowserBigRun measures how long the page of a 1,000-step run takes
// to show in Chromium (the API call, the layout, the drawing). It reports,
// it does not assert: a loaded machine is slower.
func TestBrowserBigRun(t *testing.T) {
	u := newUI(t)
	id := u.start("big.star", nil)
	u.waitRun(id, "succeeded")
	for i := range 3 {
		t0 := time.Now()
		u.open("/runs/"+id, node("s995", "succeeded"))
		wall := time.Since(t0)
		ms, err := chromedp.Run(u.ctx, chromedp.Evaluate[map[string]float64](`window.skeinTiming`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("1,000-step run page, load %d: %v from navigation to the steps shown; %.0f ms from asking the API to drawn (the API %.0f, dagre's layout %.0f, drawing %.0f)",
			i+1, wall.Round(time.Millisecond), ms["total"], ms["fetch"], ms["layout"], ms["draw"])
	}
	u.clean("big run page")
}
