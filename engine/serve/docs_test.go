package serve

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsEndpoints sends every request docs/serve.md shows (its table of
// endpoints and its curl examples) and fails on one the server has no
// route for.
func TestDocsEndpoints(t *testing.T) {
	b, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	ts := newServer(t, "secret-token-0123456789")
	id := ts.start("gate.star", "")
	ts.srv.Wait()
	type call struct{ method, path string }
	var calls []call
	for _, m := range regexp.MustCompile("\\| `(GET|POST) (/[^`]*)` \\|").FindAllStringSubmatch(doc, -1) {
		calls = append(calls, call{m[1], m[2]})
	}
	curls := 0
	for _, m := range regexp.MustCompile(`curl [^\n]*`).FindAllString(strings.ReplaceAll(doc, "\\\n", " "), -1) {
		u := regexp.MustCompile(`http://127\.0\.0\.1:7077(/[^\s']*)`).FindStringSubmatch(m)
		if u == nil {
			t.Errorf("a curl example without the server's address: %s", m)
			continue
		}
		method := "GET"
		if strings.Contains(m, "-X POST") {
			method = "POST"
		}
		calls = append(calls, call{method, u[1]})
		curls++
	}
	if len(calls) < 14 || curls < 8 {
		t.Fatalf("docs/serve.md: found %d requests, %d of them curl examples: has the page changed shape?", len(calls), curls)
	}
	for _, c := range calls {
		p := strings.NewReplacer("{id}", id, "{path...}", "ok.star", "{path}", "ok.star").Replace(c.path)
		body := "{}"
		switch {
		case p == "/api/runs" && c.method == "POST":
			body = `{"flow": "ok.star"}`
		case p == "/api/login":
			body = `{"token": "secret-token-0123456789"}`
		case strings.HasSuffix(p, "/events"):
			continue // a stream: TestEventsLive
		}
		code, m := ts.req(c.method, p, body)
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code == 405 || strings.HasPrefix(msg, "no such API") {
			t.Errorf("docs/serve.md: %s %s: %d %v", c.method, c.path, code, m)
		}
	}
	ts.srv.Wait()
}
