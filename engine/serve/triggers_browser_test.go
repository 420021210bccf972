//go:build browser

package serve_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrowserWebhookQueue: webhook deliveries appear on the runs page's
// queue, the second queued behind the first (concurrency = 1), then
// running with its run, then done; the runs list shows each run's
// trigger; from a run's page, a click leads to the run it emitted (the
// hopper), whose page links back.
func TestBrowserWebhookQueue(t *testing.T) {
	const secret = "browser-hook-secret"
	t.Setenv("SKEIN_BROWSER_HOOK_SECRET", secret)
	u := newUI(t)
	gates := t.TempDir()
	os.WriteFile(filepath.Join(u.root, "hooked.star"), []byte(`
flow(name = "hooked", inputs = {"n": 0, "gates": ""}, concurrency = 1, emit = "hooked_child.star", max_depth = 1, output = "fan")
trigger(webhook = "hooked", secret_env = "SKEIN_BROWSER_HOOK_SECRET", inputs = lambda e: e.body)
wait = step("wait", shell = "while [ ! -e $GATES/$N ]; do sleep 0.02; done", env = {"N": "{{ inputs.n }}", "GATES": "{{ inputs.gates }}"})
fan = step("fan", fn = lambda r: {"emit": [{"from": r.inputs.n}]})
chain(START, wait, fan, END)
`), 0o644)
	os.WriteFile(filepath.Join(u.root, "hooked_child.star"), []byte(`
flow(name = "hooked_child", inputs = {"from": 0})
a = step("a", run = ["true"])
chain(START, a, END)
`), 0o644)
	u.open("/runs", "#queue h2")
	for n := 1; n <= 2; n++ {
		body := fmt.Sprintf(`{"n": %d, "gates": %q}`, n, gates)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		req, _ := http.NewRequest("POST", u.url+"/hooks/hooked", strings.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := u.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("delivery %d: %s", n, resp.Status)
		}
	}
	item := func(n int, state string) string {
		return fmt.Sprintf(`document.querySelector('#queue tr[data-item="%d"][data-state="%s"]') !== null`, n, state)
	}
	u.do("the first delivery running, the second queued", until(item(1, "running")+" && "+item(2, "queued")))
	if got := u.text(`#queue tr[data-item="2"]`); !strings.Contains(got, "webhook hooked") {
		t.Errorf("the queued item shows %q, want its trigger", got)
	}
	os.WriteFile(filepath.Join(gates, "1"), nil, 0o644)
	u.do("the second delivery running with its run", until(item(1, "done")+" && "+item(2, "running")),
		visible(`#queue tr[data-item="2"] a[href^="/runs/"]`))
	os.WriteFile(filepath.Join(gates, "2"), nil, 0o644)
	u.do("the second delivery done", until(item(2, "done")))
	u.do("the emitted runs done", until(item(3, "done")+" && "+item(4, "done")))
	u.do("the runs list shows the emitted runs", until(`document.querySelectorAll('main .runs-table:not(.queue-table) tr[data-run]').length === 4`))
	if n := u.count(`main .runs-table:not(.queue-table) tr[data-run] td.trigger`); n != 4 {
		t.Fatalf("the runs list has %d trigger cells, want 4", n)
	}
	for _, tr := range []string{"webhook hooked", "emit"} {
		if got := u.text(`main .runs-table:not(.queue-table) tbody`); !strings.Contains(got, tr) {
			t.Errorf("the runs list does not show the trigger %q: %q", tr, got)
		}
	}
	u.clean("runs")
	// From the first delivery's run to the run it emitted, and back.
	var q struct {
		Queue []struct {
			N      int    `json:"n"`
			Run    string `json:"run"`
			Parent string `json:"parent"`
		} `json:"queue"`
	}
	u.api("GET", "/api/queue", nil, &q)
	runs := map[int]string{}
	for _, it := range q.Queue {
		runs[it.N] = it.Run
	}
	first, child := runs[1], runs[3]
	if first == "" || child == "" {
		t.Fatalf("queue %+v: want runs for items 1 and 3", q.Queue)
	}
	u.open("/runs/"+first, "#run-children")
	u.do("click the emitted run", click(`#run-children a[href="/runs/`+child+`"]`),
		visible(`#run-parent a[href="/runs/`+first+`"]`))
	if got := u.text("h1"); got != "hooked_child" {
		t.Errorf("the child's page is titled %q, want hooked_child", got)
	}
	if got := u.text("#run-trigger"); !strings.Contains(got, "emit") {
		t.Errorf("the child's trigger shows %q, want emit", got)
	}
	u.do("back to the parent", click(`#run-parent a`), visible(`#run-children a[href="/runs/`+child+`"]`))
	if got := u.text("#run-trigger"); !strings.Contains(got, "webhook hooked") {
		t.Errorf("the parent's trigger shows %q, want webhook hooked", got)
	}
	u.clean("run pages")
}
