package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm/model/modeltest"
)

const goodDraft = "```python\n" + `flow(name = "deploy")
build = step("build", run = ["make", "all"])
ship = step("ship", run = ["make", "ship"])
chain(START, build, ship, END)
` + "```\n"

// A draft with a typo the checker reports with a did-you-mean.
const typoDraft = `flow(name = "deploy")
build = step("build", run = ["make", "all"])
ship = step("ship", run = ["make", "ship", "{{ biuld.stdout }}"])
chain(START, build, ship, END)
`

const shellDraft = `flow(name = "deploy")
build = step("build", shell = "make all && make ship")
chain(START, build, END)
`

// composeWith runs `skein compose` against a fake model server whose one
// rule answers with replies in order.
func composeWith(t *testing.T, replies []string, args ...string) (srv *modeltest.Server, dir, out, errOut string, code int) {
	t.Helper()
	var rs []modeltest.Reply
	for _, r := range replies {
		rs = append(rs, modeltest.Reply{Content: r})
	}
	srv = modeltest.New(modeltest.Rule{Replies: rs})
	t.Cleanup(srv.Close)
	dir = t.TempDir()
	t.Chdir(dir)
	t.Setenv("SKEIN_MODEL", "test-model")
	t.Setenv("SKEIN_BASE_URL", srv.BaseURL())
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	var o, e bytes.Buffer
	code = Main(context.Background(), append([]string{"compose"}, args...), stdio{strings.NewReader(""), &o, &e})
	return srv, dir, o.String(), e.String(), code
}

func TestComposeCleanFirstTime(t *testing.T) {
	srv, dir, out, errOut, code := composeWith(t, []string{goodDraft}, "build then ship", "-o", "deploy.star")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	got, err := os.ReadFile(filepath.Join(dir, "deploy.star"))
	if err != nil || !strings.HasPrefix(string(got), `flow(name = "deploy")`) || strings.Contains(string(got), "```") {
		t.Errorf("deploy.star = %q, %v", got, err)
	}
	for _, want := range []string{"round 1: a draft of 4 lines: no errors", "wrote deploy.star: 2 steps, 3 edges, in 1 round", "flowchart"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !strings.Contains(reqs[0].FirstUser(), "build then ship") || !strings.Contains(reqs[0].Raw, "Do not use shell= steps") {
		t.Errorf("request lacks the description or the floor: %s", reqs[0].Raw)
	}
	if reqs[0].Body["model"] != "test-model" {
		t.Errorf("model %v", reqs[0].Body["model"])
	}
}

func TestComposeRepairedInRoundTwo(t *testing.T) {
	srv, dir, out, errOut, code := composeWith(t, []string{typoDraft, goodDraft}, "build then ship", "-o", "deploy.star")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "round 1: a draft of 4 lines: 1 error") || !strings.Contains(out, `deploy.star:3:48: error: unknown name "biuld"`) {
		t.Errorf("round 1 report:\n%s", out)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	repair := reqs[1].LastUser()
	for _, want := range []string{"skein check found errors", `deploy.star:3:48: error: unknown name "biuld"`, `did you mean "build"?`, "[unknown_name]"} {
		if !strings.Contains(repair, want) {
			t.Errorf("repair message lacks %q:\n%s", want, repair)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "deploy.star")); err != nil {
		t.Error(err)
	}
}

func TestComposeBudgetExhaustedKeepsDraft(t *testing.T) {
	_, dir, out, _, code := composeWith(t, []string{typoDraft}, "x", "-o", "deploy.star", "--max-repairs", "1")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "deploy.star")); err == nil {
		t.Error("deploy.star was written although no draft checked")
	}
	kept, err := os.ReadFile(filepath.Join(dir, "deploy.star.draft"))
	if err != nil || string(kept) != typoDraft {
		t.Errorf("kept draft %q, %v", kept, err)
	}
	if !strings.Contains(out, "no draft checked clean in 2 rounds") || !strings.Contains(out, "deploy.star.draft") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestComposeSafetyFloor(t *testing.T) {
	srv, _, out, _, code := composeWith(t, []string{shellDraft, typoDraft, goodDraft}, "x", "-o", "f.star", "--allow-run", "make")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests:\n%s", len(reqs), out)
	}
	if r := reqs[1].LastUser(); !strings.Contains(r, `step "build" is a shell step`) || !strings.Contains(r, "[not_allowed]") {
		t.Errorf("shell draft not sent back:\n%s", r)
	}
	if !strings.Contains(reqs[0].Raw, "Tasks and tools may only run these commands (run[0]): make") {
		t.Errorf("floor not in the system message")
	}

	// A command outside --allow-run is refused.
	_, _, out, _, code = composeWith(t, []string{goodDraft}, "x", "-o", "f.star", "--allow-run", "go", "--max-repairs", "0")
	if code != 1 || !strings.Contains(out, `step "build" runs "make", which is not allowed; allowed commands: go`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// The floor holds for an agent's tools as for tasks: a shell= tool needs
// --allow-shell, a run= tool's command must be allowed, in the flow and in
// a flow= tool's child.
func TestComposeSafetyFloorTools(t *testing.T) {
	draft := `flow(name = "fixer")
sh = tool("sh", shell = "make all 2>&1")
fetch = tool("fetch", run = ["curl", "{{ args.url }}"], params = {"url": "string"})
build = tool("build", run = ["make", "all"])
fix = step("fix", agent = "fix the build", tools = [sh, fetch, build])
chain(START, fix, END)
`
	_, dir, out, _, code := composeWith(t, []string{draft}, "x", "-o", "f.star", "--allow-run", "make", "--max-repairs", "0")
	if code != 1 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{`f.star:2:6: error: tool "sh" is a shell tool, and shell scripts are not allowed here [not_allowed]`,
		`f.star:3:9: error: tool "fetch" runs "curl", which is not allowed; allowed commands: make [not_allowed]`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `tool "build"`) {
		t.Errorf("an allowed tool was refused:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.star")); err == nil {
		t.Error("a draft the floor refuses was written")
	}
}

func TestComposeUsage(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("SKEIN_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "")
	var o, e bytes.Buffer
	if code := Main(context.Background(), []string{"compose", "x"}, stdio{strings.NewReader(""), &o, &e}); code != 2 || !strings.Contains(e.String(), "SKEIN_MODEL") || !strings.Contains(e.String(), "--model ID") || strings.Contains(e.String(), "model()") {
		t.Errorf("no model: exit %d, %s", code, e.String())
	}
	os.WriteFile(filepath.Join(dir, "flow.star"), []byte("x"), 0o644)
	e.Reset()
	t.Setenv("SKEIN_MODEL", "m")
	if code := Main(context.Background(), []string{"compose", "x"}, stdio{strings.NewReader(""), &o, &e}); code != 2 || !strings.Contains(e.String(), "flow.star exists") {
		t.Errorf("existing target: exit %d, %s", code, e.String())
	}
}

// The key is sent to the server and never written to a cassette.
func TestComposeCassette(t *testing.T) {
	srv, dir, out, _, code := composeWith(t, []string{typoDraft, goodDraft}, "x", "-o", "a.star", "--cassette", "c.json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if a := srv.Requests()[0].Authorization; a != "Bearer sk-test-secret" {
		t.Errorf("authorization %q", a)
	}
	c, err := os.ReadFile(filepath.Join(dir, "c.json"))
	if err != nil || strings.Contains(string(c), "sk-test-secret") {
		t.Fatalf("cassette: %v, key inside: %v", err, strings.Contains(string(c), "sk-test-secret"))
	}
	// Replayed with no server and no key: the same two rounds.
	srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	var o, e bytes.Buffer
	code = Main(context.Background(), []string{"compose", "x", "-o", "a.star", "--force", "--cassette", "c.json", "--replay-only"}, stdio{strings.NewReader(""), &o, &e})
	if code != 0 || !strings.Contains(o.String(), "in 2 rounds") {
		t.Errorf("replay: exit %d\n%s\n%s", code, o.String(), e.String())
	}
}

// The compose example replays from its cassette with no server and no key:
// a session that needs one repair round. The cassette records the
// language reference the model was sent, so an edit to docs/language.md or
// docs/runs.md needs a new recording:
//
//	UPDATE=1 go test ./cmd/skein -run TestComposeExample
func TestComposeExample(t *testing.T) {
	root, _ := filepath.Abs("../..")
	cassette := filepath.Join(root, "examples/cassettes/compose_release.json")
	desc, err := os.ReadFile(filepath.Join(root, "examples/compose/release.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE") == "1" {
		os.Remove(cassette)
		srv := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: composeExampleDraft1}, {Content: composeExampleDraft2}}})
		defer srv.Close()
		t.Setenv("SKEIN_BASE_URL", srv.BaseURL())
		t.Setenv("OPENAI_API_KEY", "sk-recording")
		t.Setenv("SKEIN_MODEL", "gpt-4o-mini")
		dir := t.TempDir()
		var o, e bytes.Buffer
		code := Main(context.Background(), []string{"compose", string(desc), "-o", filepath.Join(dir, "release.star"), "--allow-run", "make,./publish.sh", "--cassette", cassette},
			stdio{strings.NewReader(""), &o, &e})
		if code != 0 {
			t.Fatalf("recording: exit %d\n%s\n%s", code, o.String(), e.String())
		}
	}
	t.Setenv("SKEIN_MODEL", "gpt-4o-mini")
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	var o, e bytes.Buffer
	code := Main(context.Background(), []string{"compose", string(desc), "-o", filepath.Join(dir, "release.star"), "--allow-run", "make,./publish.sh", "--cassette", cassette, "--replay-only"},
		stdio{strings.NewReader(""), &o, &e})
	if code != 0 {
		t.Fatalf("replay: exit %d (after editing docs/language.md or docs/runs.md, re-record: UPDATE=1 go test ./cmd/skein -run TestComposeExample)\n%s\n%s", code, o.String(), e.String())
	}
	for _, want := range []string{"starting from the basic shape", "round 1: a draft of", "1 error", "[unknown_name]", "round 2:", "no errors", "in 2 rounds"} {
		if !strings.Contains(o.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, o.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "release.star")); err != nil {
		t.Error(err)
	}
}

// What the scripted model answers when the example is recorded: a first
// draft with a misspelt step name, then the fix.
const composeExampleDraft1 = "```python\n" + `flow(name = "release")

build = step("build", run = ["make"])
test = step("test", run = ["make", "test"])
publish = step("publish", run = ["./publish.sh", "{{ biuld.stdout.strip() }}"])
report = step("report", fn = lambda r: "tests failed: " + r.test.stderr.strip())

edge(START, build)
edge(build, test)
edge(test, publish)
edge(test, report, on = "failure")
edge(publish, END)
edge(report, ABORT)
` + "```\n"

// composeExampleDraft2 is the same draft with the name fixed.
var composeExampleDraft2 = strings.Replace(composeExampleDraft1, "biuld", "build", 1)

// compose starts its draft from the skein init shape closest to the
// description, sent with it; --shape none from nothing.
func TestComposeShape(t *testing.T) {
	for desc, want := range map[string]string{
		"Build, ask someone to approve, then deploy to prod; roll back if rejected": "gated-deploy",
		"Draft a paragraph, critique it and revise it until it is good":             "draft-critique",
		"Run lint, tests and an audit in parallel and summarize what they found":    "fan-out",
		"Build; when it fails, fix it and try again":                                "repair-loop",
		"Compile the project": "basic",
	} {
		if got := closestShape(desc); got != want {
			t.Errorf("closestShape(%q) = %s, want %s", desc, got, want)
		}
	}
	ask := composeAsk("Deploy it", "gated-deploy")
	src, _ := shapes.ReadFile("shapes/gated-deploy/flow.star")
	if !strings.Contains(ask, "Start from this proven shape") || !strings.Contains(ask, string(src)) {
		t.Errorf("the request does not carry the shape:\n%s", ask)
	}
	if ask := composeAsk("Deploy it", ""); strings.Contains(ask, "shape") {
		t.Errorf("--shape none sent a shape:\n%s", ask)
	}
	var o, e bytes.Buffer
	if code := Main(context.Background(), []string{"compose", "x", "--shape", "repair", "--replay-only", "--cassette", filepath.Join(t.TempDir(), "c.json")}, stdio{strings.NewReader(""), &o, &e}); code != 2 || !strings.Contains(e.String(), `no shape "repair"`) {
		t.Errorf("an unknown shape: exit %d\n%s", code, e.String())
	}
}
