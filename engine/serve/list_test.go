package serve

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skeinlang/skein/vm/store"
)

// fill adds n ended runs to the store at path in one transaction: of
// three flows, every seventh failed (with a message naming its number),
// the rest succeeded. Their ids sort by their number.
func fill(tb testing.TB, path string, n int) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO runs (id, flow, file, root, inputs, options, status, error_code, error_step, error_msg, started, ended, result)
		VALUES (?, ?, ?, '/flows', '{}', '{}', ?, ?, ?, ?, ?, ?, '{}')`)
	if err != nil {
		tb.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		t := base.Add(time.Duration(i) * time.Second)
		flow := [...]string{"build", "deploy", "triage"}[i%3]
		st := "succeeded"
		var code, step, msg any
		if i%7 == 0 {
			st, code, step, msg = "failed", "step_failed", "compile", fmt.Sprintf("exit status 2 in case %05d", i)
		}
		id := fmt.Sprintf("%s.%03dZ-%08x", t.Format("20060102T150405"), 0, i)
		if _, err := ins.Exec(id, flow, "/flows/"+flow+".star", st, code, step, msg, t.UnixNano(), t.Add(time.Second).UnixNano()); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// bigServer is a server over a store of n runs.
func bigServer(tb testing.TB, n int) (*Server, func()) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "runs.db")
	st, err := store.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	fill(tb, path, n)
	srv, err := New(Config{Store: st, Roots: []string{tb.TempDir()}, Loopback: true})
	if err != nil {
		tb.Fatal(err)
	}
	return srv, func() { srv.Close(); st.Close() }
}

// TestPaging10k pages through 10,000 runs, with and without filters:
// every run comes once, newest first, and the filters keep what they say.
// (With -race, 2,000: the pages are cut the same way.)
func TestPaging10k(t *testing.T) {
	n := 10_000
	if raceEnabled {
		n = 2_000
	}
	srv, done := bigServer(t, n)
	defer done()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	ts := &testServer{t: t, http: hs, client: http.DefaultClient}
	for _, c := range []struct {
		query string
		want  func(i int) bool
	}{
		{"limit=500", func(int) bool { return true }},
		{"limit=333&status=failed", func(i int) bool { return i%7 == 0 }},
		{"limit=400&flow=deploy", func(i int) bool { return i%3 == 1 }},
		{"limit=50&flow=deploy&status=failed", func(i int) bool { return i%3 == 1 && i%7 == 0 }},
		{"limit=40&text=CASE%2000", func(i int) bool { return i%7 == 0 && i < 1000 }},
		{"limit=500&text=TRIAGE", func(i int) bool { return i%3 == 2 }},
		{"text=00000fff", func(i int) bool { return i == 0xfff }},
	} {
		var want []string
		for i := n - 1; i >= 0; i-- {
			if c.want(i) {
				want = append(want, fmt.Sprintf("-%08x", i))
			}
		}
		var got []string
		cursor, pages := "", 0
		for {
			m := ts.must(200, "GET", "/api/runs?"+c.query+"&cursor="+cursor, "")
			for _, r := range m["runs"].([]any) {
				id := r.(map[string]any)["id"].(string)
				got = append(got, id[len(id)-9:])
			}
			pages++
			if cursor = m["next"].(string); cursor == "" {
				break
			}
			if pages > n {
				t.Fatalf("%s: the pages do not end", c.query)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d runs, want %d", c.query, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: run %d is %s, want %s", c.query, i, got[i], want[i])
				break
			}
		}
	}
}

// BenchmarkListRuns10k is GET /api/runs of a store of 10,000 runs: the
// first page, a page deep in the list, and filtered pages.
func BenchmarkListRuns10k(b *testing.B) {
	srv, done := bigServer(b, 10_000)
	defer done()
	h := srv.Handler()
	for _, q := range []string{"", "cursor=20260101T010000.000Z-00000000", "status=failed", "flow=deploy&status=failed", "text=case%2009"} {
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1/api/runs?"+q, nil))
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}

// TestFlowListSeesModuleChange: the flow list's cache of loads notices a
// module a flow loads changing, not only the flow's own file.
func TestFlowListSeesModuleChange(t *testing.T) {
	ts := newServer(t, "")
	mod := filepath.Join(ts.dir, "names.star")
	if err := os.WriteFile(mod, []byte(`NAME = "first"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flow := `load("names.star", "NAME")
flow(name = NAME)
a = step("a", shell = "true")
chain(START, a, END)
`
	if err := os.WriteFile(filepath.Join(ts.dir, "uses.star"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	name := func() any {
		for _, f := range ts.must(200, "GET", "/api/flows", "")["flows"].([]any) {
			if f := f.(map[string]any); f["path"] == "uses.star" {
				return f["name"]
			}
		}
		return nil
	}
	if got := name(); got != "first" {
		t.Fatalf("uses.star's name: %v, want first", got)
	}
	if err := os.WriteFile(mod, []byte(`NAME = "second"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "second" {
		t.Errorf("uses.star's name after its module changed: %v, want second", got)
	}
}
