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
// running with its run, then done.
func TestBrowserWebhookQueue(t *testing.T) {
	const secret = "browser-hook-secret"
	t.Setenv("SKEIN_BROWSER_HOOK_SECRET", secret)
	u := newUI(t)
	gates := t.TempDir()
	os.WriteFile(filepath.Join(u.root, "hooked.star"), []byte(`
flow(name = "hooked", inputs = {"n": 0, "gates": ""}, concurrency = 1)
trigger(webhook = "hooked", secret_env = "SKEIN_BROWSER_HOOK_SECRET", inputs = lambda e: e.body)
wait = step("wait", shell = "while [ ! -e $GATES/$N ]; do sleep 0.02; done", env = {"N": "{{ inputs.n }}", "GATES": "{{ inputs.gates }}"})
chain(START, wait, END)
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
	if got := u.text(`main .runs-table:not(.queue-table) tbody`); !strings.Contains(got, "webhook hooked") {
		t.Errorf("the runs list does not show the trigger as who started the runs: %q", got)
	}
	u.clean("runs")
}
