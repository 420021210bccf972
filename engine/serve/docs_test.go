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

// TestDocsStepStatuses checks that the step statuses docs/serve.md names
// are the ones the server sends: the word for a step not reached, and
// every status of a run waiting at an approval.
func TestDocsStepStatuses(t *testing.T) {
	b, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	list := regexp.MustCompile("`status` \\((`\\w+` for a step not reached[^)]*)\\)").FindStringSubmatch(doc)
	unreached := regexp.MustCompile("`(\\w+)` for a step not reached").FindStringSubmatch(doc)
	if list == nil || unreached == nil {
		t.Fatal("docs/serve.md: no list of step statuses with the word for a step not reached: has the page changed shape?")
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(\\w+)`").FindAllStringSubmatch(list[1], -1) {
		documented[m[1]] = true
	}
	ts := newServer(t, "")
	ts.session()
	id := ts.start("gate.star", "")
	m := ts.run(id)
	got := map[string]string{}
	for _, s := range m["steps"].([]any) {
		st := s.(map[string]any)
		got[st["name"].(string)] = st["status"].(string)
		if !documented[st["status"].(string)] {
			t.Errorf("step %s: status %q is not among docs/serve.md's %v", st["name"], st["status"], documented)
		}
	}
	if got["ask"] != "waiting" || got["ship"] != unreached[1] {
		t.Errorf("steps %v: want ask waiting and ship %q (docs/serve.md's word for a step not reached)", got, unreached[1])
	}
}
