package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinlang/skein/vm/model/modeltest"
	"github.com/skeinlang/skein/vm/store"
)

// docFlows are flows that between them make every member of the JSON that
// skein run --json, --events, skein runs --json and skein show --json
// print: tasks with and without a cut output, a retry, prints, a routed
// Starlark error, a loop that runs out, a map, a child flow, an llm step
// that succeeds and one that fails, an LLM router, a judge that finds its
// condition unrelated, an agent that calls tools and asks for pool tools
// (granted and refused), an exit handler, a routed failure that ends at
// ABORT, an unrouted Starlark error, and an approval that parks.
var docFlows = map[string]string{
	"main.star": `
note = tool("note", shell = 'echo "[$ARG_TEXT]"', params = {"text": "string"})
echo = tool("echo", shell = 'echo "$ARG_TEXT"', params = {"text": "string"})
rm_rf = tool("rm_rf", shell = "true")
flow(name = "main", on_exit = "bye", tools = [echo, rm_rf], max_grants = 1)

t = step("t", run = ["sh", "-c", "echo out; echo err >&2"])
big = step("big", shell = "head -c 1100000 /dev/zero | tr '\\000' a")
flaky = step("flaky", shell = 'test "$SKEIN_ATTEMPT" != 1', retries = 1, backoff = "1ms")
def noisy(r):
    print("hello")
    return 1
p = step("p", fn = noisy)
def boom(r):
    return {}["x"]
bad = step("bad", fn = boom)
rescue = step("rescue", fn = lambda r: "rescued")
b1 = step("b1", fn = lambda r: 1)
lp = loop("lp", body = [b1], until = lambda it: False, max_iterations = 2)
m1 = step("m1", fn = lambda r: 2)
mp = map("mp", over = "[1, 2]", body = [m1])
child = step("child", flow = "child.star")
ask = step("ask", llm = "Say something")
askbad = step("askbad", llm = "FAILME please")
urgent = step("urgent", fn = lambda r: "u")
routine = step("routine", fn = lambda r: "r")
rt = router("rt", llm = "Route this", routes = {"urgent": urgent, "routine": routine})
d = step("d", fn = lambda r: "draft")
jl = loop("jl", body = [d], until = judge("the draft is in French"), max_iterations = 2)
ag = step("ag", agent = "AGENTX work", tools = [note])
cool = step("cool", wait = "1ms")
bye = step("bye", fn = lambda r: 1)

chain(START, t, big, flaky, p, bad)
edge(bad, rescue, on = "failure")
chain(rescue, lp, mp, child, ask, askbad)
edge(askbad, rt, on = "failure")
edge(urgent, jl)
edge(routine, jl)
chain(jl, ag, cool, END)
`,
	"child.star": `step("inner", shell = "echo inner")`,
	"abort.star": `
def boom(r):
    return {}["x"]
a = step("a", fn = boom)
n = step("n", fn = lambda r: 1)
edge(START, a)
edge(a, END)
edge(a, n, on = "failure")
edge(n, ABORT)
`,
	"fail.star": `
def boom(r):
    return {}["x"]
step("a", fn = boom)
`,
	"park.star": `
deploy = step("deploy", approve = "Deploy?")
`,
	"gate.star": `
first = step("first", shell = "echo first")
gate = step("gate", shell = "while [ ! -f release ]; do sleep 0.02; done")
chain(START, first, gate, END)
`,
}

// TestDocsJSONFields: every member of the JSON objects the run commands
// print is documented in docs/cli.md with its type, and every member the
// tables document is one they print: the result object of run --json and
// show --json, its step records, the events of --events (each event's
// members listed on its row), and the objects of runs --json.
func TestDocsJSONFields(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	resultDoc := docTable(t, string(doc), "| field | type | meaning |")
	stepDoc := docTable(t, string(doc), "| step field | type | meaning |")
	eventFieldDoc := docTable(t, string(doc), "| event field | type | meaning |")
	eventDoc := docTable(t, string(doc), "| `event` | when |")
	runDoc := docTable(t, string(doc), "| run field | type | meaning |")

	s := modeltest.New(
		modeltest.Rule{Match: "FAILME", Replies: []modeltest.Reply{{Status: 400, Content: "bad request"}}},
		modeltest.Rule{Match: "Route this", Replies: []modeltest.Reply{{Content: "Urgent."}}},
		modeltest.Rule{Match: "in French", Replies: []modeltest.Reply{{Content: `{"verdict": "UNRELATED", "reason": "drafts have no language"}`}}},
		modeltest.Rule{Match: "AGENTX", Replies: []modeltest.Reply{
			{ToolCalls: []modeltest.ToolCall{
				{ID: "g", Name: "request_tool", Arguments: `{"name": "echo", "reason": "need it", "confirmed": true}`},
				{ID: "r", Name: "request_tool", Arguments: `{"name": "rm_rf", "reason": "tidy", "confirmed": false}`},
				{ID: "u", Name: "nope", Arguments: `{}`},
				{ID: "n", Name: "note", Arguments: `{"text": "hi"}`},
			}},
			{Content: "done"},
		}},
		modeltest.Rule{Replies: []modeltest.Reply{{Content: "fine"}}},
	)
	defer s.Close()
	t.Setenv("SKEIN_BASE_URL", s.BaseURL())
	t.Setenv("SKEIN_MODEL", "m1")
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("SKEIN_STORE", "")
	dir := t.TempDir()
	for name, src := range docFlows {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	db := filepath.Join(dir, "runs.db")
	skein := func(args ...string) string {
		t.Helper()
		var out, errOut strings.Builder
		code := Main(context.Background(), append(args, "--store", db), stdio{strings.NewReader(""), &out, &errOut})
		if code > 3 {
			t.Fatalf("skein %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String()
	}

	seen := keySets{}
	var runIDs []string
	for _, f := range []string{"main.star", "abort.star", "fail.star", "park.star"} {
		var res map[string]any
		if err := json.Unmarshal([]byte(skein("run", "--json", f)), &res); err != nil {
			t.Fatalf("run --json %s: %v", f, err)
		}
		seen.result(res)
		runIDs = append(runIDs, res["run_id"].(string))
		seen.events(t, skein("run", "--events", f))
	}
	if got := seen.values["main"]; got["status"] != "succeeded" {
		t.Fatalf("main.star did not succeed: %v", got)
	}
	// A resumed ended run names the run it resumed; its replayed steps say
	// so. (A succeeded run resumes only --from a step.)
	var resumed map[string]any
	if err := json.Unmarshal([]byte(skein("resume", "--json", "--from", "cool", runIDs[0])), &resumed); err != nil {
		t.Fatal(err)
	}
	seen.result(resumed)
	seen.events(t, skein("resume", "--events", "--from", "cool", runIDs[0]))

	var runs []map[string]any
	if err := json.Unmarshal([]byte(skein("runs", "--json", "--limit", "0")), &runs); err != nil {
		t.Fatal(err)
	}
	runKeys := map[string]bool{}
	for _, r := range runs {
		for k := range r {
			runKeys[k] = true
		}
		if e, ok := r["error"].(map[string]any); ok {
			for k := range e {
				seen.add("run error", k)
			}
		}
	}

	// show --json of a run that has not ended: what the record knows.
	partial := showWhileRunning(t, skein, dir)
	for k := range partial {
		if !resultDoc.has(k) {
			t.Errorf("show --json of a running run prints %q, which the result table of docs/cli.md does not document", k)
		}
	}
	for name, st := range partial["steps"].(map[string]any) {
		for k := range st.(map[string]any) {
			if !stepDoc.has(k) {
				t.Errorf("show --json of a running run prints %q in step %q, which the step table of docs/cli.md does not document", k, name)
			}
		}
	}

	// show --json of a run someone asked to cancel: a run begun by this
	// process, which is alive, so the run is running.
	if st, err := store.Open(db); err != nil {
		t.Fatal(err)
	} else {
		if _, err := st.Begin(&store.NewRun{ID: "20260101T000000.000Z-0000000c", Flow: "c", File: "c.star", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := st.RequestCancel("20260101T000000.000Z-0000000c", store.CancelRequest{By: "ops", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	var asked map[string]any
	if err := json.Unmarshal([]byte(skein("show", "--json", "20260101T000000.000Z-0000000c")), &asked); err != nil {
		t.Fatal(err)
	}
	seen.result(asked)

	same(t, "the result object (run --json, show --json)", "| field | type | meaning |", resultDoc, seen.sets["result"])
	same(t, "a step record", "| step field | type | meaning |", stepDoc, seen.sets["step"])
	same(t, "the events (--events)", "| event field | type | meaning |", eventFieldDoc, seen.sets["event"])
	same(t, "a run of runs --json", "| run field | type | meaning |", runDoc, runKeys)
	var types []string
	for typ := range seen.byEvent {
		types = append(types, typ)
	}
	same(t, "the event types", "| `event` | when |", eventDoc, setOf(types))
	for typ, keys := range seen.byEvent {
		row := eventDoc.names(typ)
		for k := range keys {
			switch k {
			case "event", "time", "scope", "subflow":
				continue // on every event where they apply, said under the table
			}
			if !row[k] {
				t.Errorf("event %s has %q, which its row in docs/cli.md's events table does not list", typ, k)
			}
		}
	}
	// The members of nested objects are named in their row.
	for _, nested := range []struct {
		doc        docRows
		field, set string
	}{
		{resultDoc, "error", "error"}, {resultDoc, "approvals", "approvals"}, {resultDoc, "usage", "usage"},
		{runDoc, "error", "run error"},
	} {
		row := nested.doc.names(nested.field)
		for k := range seen.sets[nested.set] {
			if !row[k] {
				t.Errorf("%q objects have %q, which the row of %q in docs/cli.md does not name", nested.field, k, nested.field)
			}
		}
	}
}

// showWhileRunning starts gate.star, whose second step waits for a file,
// and returns skein show --json of the run while that step runs.
func showWhileRunning(t *testing.T, skein func(...string) string, dir string) map[string]any {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		skein("run", "gate.star")
	}()
	defer wg.Wait()
	defer os.WriteFile(filepath.Join(dir, "release"), nil, 0o644)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var runs []map[string]any
		if json.Unmarshal([]byte(skein("runs", "--json", "--limit", "1")), &runs) == nil && len(runs) == 1 && runs[0]["flow"] == "gate" {
			var res map[string]any
			out := skein("show", "--json", runs[0]["run_id"].(string))
			if json.Unmarshal([]byte(out), &res) != nil {
				t.Fatalf("show --json of a running run is not JSON:\n%s", out)
			}
			if steps, _ := res["steps"].(map[string]any); steps["gate"] != nil {
				if res["status"] != "running" {
					t.Fatalf("show --json of a running run: status %v", res["status"])
				}
				return res
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("gate.star's second step did not start within 30s")
	return nil
}

// keySets collects the members seen in each kind of object.
type keySets struct {
	sets    map[string]map[string]bool
	byEvent map[string]map[string]bool
	values  map[string]map[string]any // a result per flow name
}

func (k *keySets) add(set, key string) {
	if k.sets == nil {
		k.sets = map[string]map[string]bool{}
	}
	if k.sets[set] == nil {
		k.sets[set] = map[string]bool{}
	}
	k.sets[set][key] = true
}

// result collects a result object's members, its steps' and its child
// flows'.
func (k *keySets) result(res map[string]any) {
	if k.values == nil {
		k.values = map[string]map[string]any{}
	}
	if name, ok := res["flow"].(string); ok {
		k.values[name] = res
	}
	for key, v := range res {
		k.add("result", key)
		switch key {
		case "error":
			k.errorObj(v)
		case "approvals":
			for _, a := range v.([]any) {
				for ak := range a.(map[string]any) {
					k.add("approvals", ak)
				}
			}
		case "usage":
			for uk := range v.(map[string]any) {
				k.add("usage", uk)
			}
		case "steps":
			for _, st := range v.(map[string]any) {
				k.step(st.(map[string]any))
			}
		case "on_exit":
			k.step(v.(map[string]any))
		}
	}
}

func (k *keySets) errorObj(v any) {
	e, ok := v.(map[string]any)
	if !ok {
		return
	}
	for ek, ev := range e {
		k.add("error", ek)
		if ek == "cause" {
			k.errorObj(ev)
		}
	}
}

func (k *keySets) step(st map[string]any) {
	for key, v := range st {
		k.add("step", key)
		if key == "child" {
			k.result(v.(map[string]any))
		}
	}
}

// events collects the members of each line of --events output.
func (k *keySets) events(t *testing.T, out string) {
	t.Helper()
	if k.byEvent == nil {
		k.byEvent = map[string]map[string]bool{}
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("an --events line is not JSON: %v\n%s", err, sc.Text())
		}
		typ, _ := ev["event"].(string)
		if k.byEvent[typ] == nil {
			k.byEvent[typ] = map[string]bool{}
		}
		for key := range ev {
			k.add("event", key)
			k.byEvent[typ][key] = true
		}
	}
}

// docRows maps the backquoted name in the first cell of a table's rows to
// the rest of the row.
type docRows map[string]string

func (d docRows) has(name string) bool { _, ok := d[name]; return ok }

// names returns the names in backquotes in the rest of name's row: `step`,
// and the members of `{code, step, message}`.
func (d docRows) names(name string) map[string]bool {
	out := map[string]bool{}
	for _, q := range regexp.MustCompile("`[^`]*`").FindAllString(d[name], -1) {
		for _, w := range regexp.MustCompile(`[a-z_]+`).FindAllString(q, -1) {
			out[w] = true
		}
	}
	return out
}

// docTable finds the one table of doc whose header line starts with
// header and returns its rows.
func docTable(t *testing.T, doc, header string) docRows {
	t.Helper()
	lines := strings.Split(doc, "\n")
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(l, header) {
			if at >= 0 {
				t.Fatalf("docs/cli.md has two tables headed %q", header)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("docs/cli.md has no table headed %q", header)
	}
	rows := docRows{}
	first := regexp.MustCompile("^\\| `([a-z_]+)` \\|(.*)$")
	for _, l := range lines[at+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		m := first.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("docs/cli.md: a row of the table headed %q does not start with a `name`: %s", header, l)
		}
		rows[m[1]] = m[2]
	}
	return rows
}

func setOf(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// same reports the names seen but not documented in the table, and those
// documented but never seen.
func same(t *testing.T, what, header string, doc docRows, seen map[string]bool) {
	t.Helper()
	var undocumented, unseen []string
	for k := range seen {
		if !doc.has(k) {
			undocumented = append(undocumented, k)
		}
	}
	for k := range doc {
		if !seen[k] {
			unseen = append(unseen, k)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unseen)
	if len(undocumented) > 0 {
		t.Errorf("%s has members the table headed %q in docs/cli.md does not document: %s", what, header, strings.Join(undocumented, ", "))
	}
	if len(unseen) > 0 {
		t.Errorf("the table headed %q in docs/cli.md documents members that %s never had in this test's runs (document only what is printed, or make a flow here print it): %s", header, what, strings.Join(unseen, ", "))
	}
}
