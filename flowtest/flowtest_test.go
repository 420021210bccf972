package flowtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
)

// writeFiles writes name -> content under a new temporary directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runTests runs the test file and returns "name: pass" or "name: FAIL
// pos: msg" lines.
func runTests(t *testing.T, dir string) []string {
	t.Helper()
	fr := RunFile(context.Background(), filepath.Join(dir, "x_test.star"), Options{})
	if fr.Err != nil {
		t.Fatalf("test file does not load: %v", fr.Err)
	}
	var out []string
	for _, tr := range fr.Tests {
		if tr.Passed() {
			out = append(out, tr.Name+": pass")
			continue
		}
		for _, f := range tr.Failures {
			out = append(out, tr.Name+": FAIL "+filepath.Base(f.Pos.File)+":"+itoa(f.Pos.Line)+": "+f.Msg)
		}
	}
	return out
}

func itoa(n int) string { return starlark.MakeInt(n).String() }

const flow = `
flow(name = "f", inputs = {"who": "x"})
a = step("a", run = ["false"], env = {"WHO": "{{ inputs.who }}"}, retries = 1, backoff = "1ms")
b = step("b", run = ["false"], stdin = "{{ a.stdout }}")
ok = step("ok", fn = lambda r: "b said " + r.b.stdout)
bad = step("bad", fn = lambda r: "b failed with " + r.b.code)
edge(START, a)
edge(a, b)
edge(b, ok)
edge(b, bad, on = "failure")
edge(ok, END)
edge(bad, END)
`

func TestMockForms(t *testing.T) {
	dir := writeFiles(t, map[string]string{"f.star": flow, "x_test.star": `
def test_single(t):
    r = t.run("f.star", mocks = {"a": t.ok(stdout = "A"), "b": t.ok(stdout = "B")})
    t.eq(r.output, "b said B")

def test_list_per_request(t):
    # a fails once and is retried: the retry takes the second outcome.
    r = t.run("f.star", mocks = {"a": [t.fail(), t.ok(stdout = "A2")], "b": t.fail(code = "timeout")})
    t.eq(r.output, "b failed with timeout")
    t.eq(r.steps["a"].output.stdout, "A2")

def test_last_repeats(t):
    r = t.run("f.star", mocks = {"a": [t.fail()], "b": t.ok()})
    t.fails(r, "step_failed")
    t.eq(r.error.step, "a")

def test_function(t):
    seen = []
    def b(req):
        seen.append(req)
        return t.ok(stdout = req.stdin + "!")
    def a(req):
        seen.append(req)
        return t.ok(stdout = req.env["WHO"])
    r = t.run("f.star", inputs = {"who": "zed"}, mocks = {"a": a, "b": b})
    t.eq(r.output, "b said zed!")
    t.eq([s.step for s in seen], ["a", "b"])
    t.eq(seen[0].argv, ["false"])
    t.eq(seen[0].kind, "task")
    t.eq(seen[1].stdin, "zed")
    t.eq(seen[1].visit, 1)
    t.eq(seen[1].attempt, 1)

def test_function_wrong_value(t):
    r = t.run("f.star", mocks = {"a": lambda req: 42, "b": t.ok()})
`})
	got := runTests(t, dir)
	want := []string{
		"test_single: pass",
		"test_list_per_request: pass",
		"test_last_repeats: pass",
		"test_function: pass",
		`test_function_wrong_value: FAIL x_test.star:35: mock of step "a": the function returned int, want an outcome (t.ok(), t.fail(), ...)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
}

// Conditions, fn steps and routers run for real: a bug in a condition
// fails the test, and a router follows the mocked output.
func TestLogicRunsForReal(t *testing.T) {
	dir := writeFiles(t, map[string]string{"f.star": `
flow(name = "g")
probe = step("probe", run = ["true"])
hi = step("hi", fn = lambda r: "hi")
lo = step("lo", fn = lambda r: "lo")
pick = router("pick", by = "'high' if int(probe.stdout) > 5 else 'low'", routes = {"high": hi, "low": lo})
edge(START, probe)
edge(probe, pick)
edge(hi, END)
edge(lo, END)
`, "x_test.star": `
def test_high(t):
    t.eq(t.run("f.star", mocks = {"probe": t.ok(stdout = "9")}).output, "hi")

def test_low(t):
    t.eq(t.run("f.star", mocks = {"probe": t.ok(stdout = "1")}).output, "lo")

def test_bad_output(t):
    r = t.run("f.star", mocks = {"probe": t.ok(stdout = "nine")})
    t.eq(r.status, "succeeded")
`})
	got := runTests(t, dir)
	if len(got) != 3 || got[0] != "test_high: pass" || got[1] != "test_low: pass" || !strings.HasPrefix(got[2], "test_bad_output: FAIL x_test.star:10: t.eq: values differ") {
		t.Errorf("got %q", got)
	}
}

// Every kind of outcome becomes the completion its step kind expects.
func TestOutcomeCompletions(t *testing.T) {
	task := &vm.EffectRequest{Step: "s", Kind: graphir.KindTask}
	other := &vm.EffectRequest{Step: "s", Kind: graphir.KindLLM}
	c := (&Outcome{Kind: "ok", Stdout: "out", ExitCode: 0}).completion(task, testNow)
	if !c.OK || c.Stdout != "out" || c.Output != nil {
		t.Errorf("task ok: %+v", c)
	}
	c = (&Outcome{Kind: "fail", Code: "timeout", Error: "slow", ExitCode: 9, Stderr: "e"}).completion(task, testNow)
	if c.OK || c.Code != "timeout" || c.Error != "slow" || c.ExitCode != 9 || c.Stderr != "e" {
		t.Errorf("task fail: %+v", c)
	}
	c = (&Outcome{Kind: "answer", Output: starlark.String("urgent")}).completion(other, testNow)
	if !c.OK || c.Output != starlark.String("urgent") {
		t.Errorf("answer: %+v", c)
	}
	c = (&Outcome{Kind: "approve", By: "ann", Reason: starlark.String("fine")}).completion(other, testNow)
	if !c.OK || c.Output.String() != `{"approved": True, "by": "ann", "reason": "fine", "at": "2026-01-02T03:04:05Z"}` {
		t.Errorf("approve: %+v %v", c, c.Output)
	}
	c = (&Outcome{Kind: "reject", Reason: starlark.String("no")}).completion(other, testNow)
	if c.OK || c.Code != "rejected" || c.Error != "rejected: no" {
		t.Errorf("reject: %+v", c)
	}
}

var testNow = mustTime("2026-01-02T03:04:05Z")

// A dry run executes nothing and reports every effect in path order.
func TestDryRunExecutesNothing(t *testing.T) {
	dir := writeFiles(t, map[string]string{"f.star": `
flow(name = "d")
mk = step("mk", run = ["touch", "made"])
sh = step("sh", shell = "touch made2")
chain(START, mk, sh, END)
`})
	g, err := lang.Load(filepath.Join(dir, "f.star"), lang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	d := &DryRun{Report: func(req *vm.EffectRequest) { seen = append(seen, req.Step+": "+strings.Join(req.Argv, " ")) }}
	res := vm.Prepare(g).Run(context.Background(), nil, vm.Options{Effects: d})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if d := cmp.Diff([]string{"mk: touch made", "sh: /bin/sh -c touch made2"}, seen); d != "" {
		t.Errorf("reported (-want +got):\n%s", d)
	}
	for _, f := range []string{"made", "made2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was created: the dry run executed a task", f)
		}
	}
}

func mustTime(s string) time.Time {
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return tm
}

// The examples' own tests pass: they are the first users of flow tests.
// Every example flow has one.
func TestExamples(t *testing.T) {
	files, err := Find([]string{"../examples"})
	if err != nil {
		t.Fatal(err)
	}
	flows, _ := filepath.Glob("../examples/*.star")
	for _, f := range flows {
		if strings.HasSuffix(f, Suffix) {
			continue
		}
		if _, err := os.Stat(strings.TrimSuffix(f, ".star") + Suffix); err != nil {
			t.Errorf("example %s has no flow test: add %s (see docs/testing.md)", filepath.Base(f), strings.TrimSuffix(filepath.Base(f), ".star")+Suffix)
		}
	}
	if len(files) < 7 {
		t.Fatalf("found only %d example test files: %v", len(files), files)
	}
	for _, fr := range RunFiles(context.Background(), files, Options{Root: "../examples"}, nil) {
		if fr.Err != nil {
			t.Errorf("%s does not load: %v", fr.File, fr.Err)
			continue
		}
		for _, tr := range fr.Tests {
			for _, f := range tr.Failures {
				t.Errorf("%s: %s: %s", tr.Name, f.Pos, f.Msg)
			}
		}
	}
}

// A test file bounds the values one operation makes as a flow file does:
// getattr's join and the builtins that allocate by length are the checked
// ones, as str is the bounded one (issue 9).
func TestTestFileHugeValue(t *testing.T) {
	dir := writeFiles(t, map[string]string{"x_test.star": `
s = "x" * 1000000

def test_getattr(t):
    getattr(",", "join")([s] * 100)

def test_list(t):
    list((s * 5).elems())

def test_str(t):
    str([s] * 100)

def test_within(t):
    t.eq(getattr("-", "join")(list("ab".elems())), "a-b")

def test_mock_output(t):
    t.ok(output = [[{}] * 2000] * 4000)

def test_mock_answer(t):
    t.answer({"items": [[{}] * 2000] * 4000})

def test_decode(t):
    json.decode("[" + "{}," * 200000 + "{}]")
`})
	got := runTests(t, dir)
	want := []string{
		"test_getattr: FAIL x_test.star:5: join: joining 68 or more strings would make more than 64 MiB, the most one value may take",
		"test_list: FAIL x_test.star:8: list: making 5000000 elements of 16 bytes would make 76.3 MiB; one value may take at most 64 MiB",
		"test_str: FAIL x_test.star:11: str: the text of its arguments would make more than 64 MiB, the most one value may take",
		"test_within: pass",
		"test_mock_output: FAIL x_test.star:17: t.ok: copying this list as flow data would make more than 64 MiB, the most one value may take",
		"test_mock_answer: FAIL x_test.star:20: t.answer: copying this dict as flow data would make more than 64 MiB, the most one value may take",
		"test_decode: FAIL x_test.star:23: json.decode: decoding this JSON would make about 101.0 MiB (past the bound at byte 381302); one value may take at most 64 MiB",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// A test file or a module it loads that is missing, not a regular file or
// larger than lang.MaxFileSize is refused with the words the flow loader
// uses for the same file.
func TestTestFileUnreadable(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"big_test.star":      "",
		"uses_big_test.star": `load("big_test.star", "x")` + "\n",
		"missing_test.star":  `load("nope.star", "x")` + "\n",
	})
	big := filepath.Join(dir, "big_test.star")
	if err := os.Truncate(big, lang.MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{big, big + ": cannot read " + big + ": larger than the limit of 8 MiB [load_error]"},
		{"/dev/null", "/dev/null: cannot read /dev/null: not a regular file (a character device) [load_error]"},
		{filepath.Join(dir, "uses_big_test.star"), "uses_big_test.star:1:1: cannot load big_test.star: cannot read " + big + ": larger than the limit of 8 MiB [load_error]"},
		{filepath.Join(dir, "missing_test.star"), "missing_test.star:1:1: cannot load nope.star: cannot read " + filepath.Join(dir, "nope.star") + ": no such file or directory [load_error]"},
	} {
		fr := RunFile(context.Background(), tc.file, Options{})
		if fr.Err == nil || fr.Err.Code != "load_error" || !strings.HasSuffix(fr.Err.Error(), tc.want) {
			t.Errorf("%s: error %v, want a load_error ending %q", tc.file, fr.Err, tc.want)
		}
	}
}

// A test drives which branch of a join = "first" race wins: a branch
// mocked t.pending() never finishes by itself, so the other wins and it
// is cancelled; a t.pending() that nothing cancels fails the test, and
// the run does not hang.
func TestPendingDrivesRace(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"race.star": `
work = step("work", run = ["make"])
ask = step("ask", approve = "Go on?")
pick = step("pick", fn = lambda r: [r.status("work"), r.status("ask")], join = "first")
edge(START, work)
edge(START, ask)
edge(work, pick)
edge(ask, pick)
edge(pick, END)
`,
		"x_test.star": `
def test_work_wins(t):
    r = t.run("race.star", mocks = {"work": t.ok(), "ask": t.pending()}, parallel = 2)
    t.eq(r.output, ["succeeded", "cancelled"])

def test_person_wins(t):
    r = t.run("race.star", mocks = {"work": t.pending(), "ask": t.approve()}, parallel = 2)
    t.eq(r.output, ["cancelled", "succeeded"])
    t.eq(r.steps.work.code, "cancelled")

def test_nobody_wins(t):
    r = t.run("race.star", mocks = {"work": t.pending(), "ask": t.pending()}, parallel = 2)
    t.eq(r.status, "failed")
`,
	})
	got := runTests(t, dir)
	want := []string{
		"test_work_wins: pass",
		"test_person_wins: pass",
		`test_nobody_wins: FAIL x_test.star:12: step "work" was mocked t.pending(), but nothing cancelled it: nothing else of the run could go on (t.pending() is for the losers of a join = "first" race; with parallel = 1 nothing else starts while it runs: give t.run parallel = 2 or more)`,
		`test_nobody_wins: FAIL x_test.star:12: step "ask" was mocked t.pending(), but nothing cancelled it: nothing else of the run could go on (t.pending() is for the losers of a join = "first" race; with parallel = 1 nothing else starts while it runs: give t.run parallel = 2 or more)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A test forks a recorded run, as skein resume --set and --from do: the
// steps before the one set are answered from the record (their mocks are
// not asked again: "draft" fails if it is), what follows runs again with
// the fork's mocks, and the parent run is left as it was.
func TestForkWhatIf(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"review.star": `
draft = step("draft", run = ["write"])
review = step("review", run = ["judge", "{{ draft.stdout }}"])
publish = step("publish", run = ["publish"])
hold = step("hold", fn = lambda r: "held: " + r.review.stdout)
edge(START, draft)
edge(draft, review)
edge(review, publish, when = "review.stdout == 'ok'")
edge(review, hold, when = "review.stdout != 'ok'")
edge(publish, END)
edge(hold, END)
`,
		"x_test.star": `
def test_what_if_the_review_passed(t):
    r = t.run("review.star", mocks = {"draft": t.ok(stdout = "v1"), "review": t.ok(stdout = "no")}, record = True)
    t.eq(r.output, "held: no")
    f = t.fork(r, set = {"review": {"stdout": "ok", "stderr": "", "exit_code": 0}}, mocks = {"draft": t.fail(), "publish": t.ok(stdout = "live")})
    t.eq(f.status, "succeeded")
    t.eq(f.path, ["draft", "review", "publish"])
    t.eq(f.steps.publish.output.stdout, "live")
    t.eq(f.resumed_from, r.run_id)

def test_from_a_step(t):
    r = t.run("review.star", mocks = {"draft": t.ok(stdout = "v1"), "review": t.ok(stdout = "no")}, record = True)
    f = t.fork(r, from_step = "review", mocks = {"draft": t.fail(), "review": t.ok(stdout = "ok"), "publish": t.ok()})
    t.eq(f.path, ["draft", "review", "publish"])

def test_needs_a_recorded_run(t):
    r = t.run("review.star", mocks = {"draft": t.ok(), "review": t.ok()})
    t.fork(r, set = {"review": "x"})
`,
	})
	got := runTests(t, dir)
	want := []string{
		"test_what_if_the_review_passed: pass",
		"test_from_a_step: pass",
		"test_needs_a_recorded_run: FAIL x_test.star:18: t.fork: want the result of t.run(..., record = True), got dict",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
