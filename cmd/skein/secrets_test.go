package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skeinlang/skein/internal/secrets"
)

// leakyFlow prints a secret input and a secret() as they are, in base64
// and URL-escaped, on stdout and stderr, and a fn step prints one and
// returns it (revealed). esc percent-escapes all but the unreserved
// characters, a space as its second argument says (what Python's
// urllib.parse.quote(v, safe="") and quote_plus print, without the
// seconds a python3 can take to start).
const leakyFlow = `
flow(inputs = {"token": input(secret = True)})

leak = step("leak", shell = """
echo "token: $T"
echo "env: $S" >&2
printf %s "$T" | base64
printf %s "$S" | base64 -w0; echo
esc() { s=$1; while [ -n "$s" ]; do r=${s#?}; c=${s%"$r"}; s=$r; case $c in [A-Za-z0-9._~-]) printf %s "$c";; " ") printf %s "$2";; *) printf %%%02X "'$c";; esac; done; echo; }
esc "$T" %20; esc "$S" +
while [ ! -f go ]; do sleep 0.05; done
""", env = {"T": "{{ inputs.token }}", "S": secret("E2E_SECRET")})

def show(r):
    print("fn sees", reveal(r.inputs.token))
    return {"echo": reveal(r.inputs.token)}

f = step("f", fn = show)
edge(leak, f)
edge(f, END)
`

const (
	e2eToken = "tok-IN/PUT+s3cret?&="
	e2eEnv   = "env-SECRET/val+ue&x=1 y"
)

// noSecret fails t if text holds either secret or a form of one.
func noSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, v := range []string{e2eToken, e2eEnv} {
		for _, f := range secrets.Forms(v) {
			if strings.Contains(text, f) {
				t.Errorf("%s holds %q (a form of a secret):\n%s", where, f, text)
			}
		}
	}
}

// A run whose task prints a secret input and a secret() (as they are,
// base64-encoded and URL-escaped) and whose fn step prints and returns
// one: no artifact of the run holds either, in any of those forms: the
// terminal's output, --json, --events, skein show --json, skein logs, and
// every file of the store (runs.db, its -wal, side journals, live logs).
func TestSecretsMaskedEverywhere(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "leaky.star")
	if err := os.WriteFile(flow, []byte(leakyFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_SECRET", e2eEnv)
	store := filepath.Join(dir, ".skein", "runs.db")
	in := "token=" + e2eToken

	// While the task waits, the store's files (runs.db, its -wal, the
	// side journal, the live output) are read as they are.
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result)
	go func() {
		code, out, errs := runMain("run", flow, "--input", in, "--store", store, "--json")
		done <- result{code, out, errs}
	}()
	var during map[string]string
	for deadline := time.Now().Add(2 * time.Minute); during == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task's live output never reached the store")
		}
		files := storeFiles(t, filepath.Join(dir, ".skein"))
		for _, text := range files {
			if strings.Contains(text, "token: ***") {
				during = files
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, text := range during {
		noSecret(t, path+" (during the run)", text)
	}
	if len(during) < 3 {
		t.Errorf("the store had %d files during the run, want the database, its -wal and the live output", len(during))
	}
	r := <-done
	code, out, errs := r.code, r.out, r.errs
	if code != exitOK {
		t.Fatalf("run --json: exit %d\n%s\n%s", code, out, errs)
	}
	noSecret(t, "run --json", out+errs)
	var res struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.RunID == "" {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"echo": "***"`) && !strings.Contains(out, `"echo":"***"`) {
		t.Errorf("run --json: the fn step's output is not masked as ***:\n%s", out)
	}
	for _, args := range [][]string{
		{"run", flow, "--input", in, "--store", store},
		{"run", flow, "--input", in, "--store", store, "--events"},
		{"show", res.RunID, "--store", store, "--json"},
		{"show", res.RunID, "--store", store},
		{"logs", res.RunID, "--store", store},
		{"runs", "--store", store, "--json"},
	} {
		code, out, errs := runMain(args...)
		if code != exitOK {
			t.Errorf("%s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
		}
		noSecret(t, strings.Join(args[:1], " "), out+errs)
		if args[0] == "logs" && !strings.Contains(out, "token: ***") {
			t.Errorf("skein logs does not show the masked line:\n%s", out)
		}
	}
	for path, text := range storeFiles(t, filepath.Join(dir, ".skein")) {
		noSecret(t, path, text)
	}
}

// storeFiles returns the text of every file under dir by path.
func storeFiles(t *testing.T, dir string) map[string]string {
	files := map[string]string{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil {
			files[path] = string(b)
		}
		return nil
	})
	return files
}

// --dry-run never prints a secret input's value (it printed env:
// T=tok-...), nor reads secret(): it shows *** in its place.
func TestSecretsDryRun(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "leaky.star")
	if err := os.WriteFile(flow, []byte(leakyFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_SECRET", "")
	os.Unsetenv("E2E_SECRET")
	code, out, errs := runMain("run", flow, "--input", "token="+e2eToken, "--dry-run")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	noSecret(t, "--dry-run", out+errs)
	if !strings.Contains(out+errs, "T=***") || !strings.Contains(out+errs, "S=***") {
		t.Errorf("--dry-run does not show the env masked:\n%s\n%s", out, errs)
	}
}

// A resumed run reads its secrets again: a secret input must be given
// again (--input), a secret() must have a value; without either the
// resume is refused before anything runs.
func TestSecretsResume(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.star")
	src := `
flow(inputs = {"token": input(secret = True)})
gate = step("gate", shell = "test -f ready")
use = step("use", shell = "printf '%s %s' \"$T\" \"$S\" > used", env = {"T": "{{ inputs.token }}", "S": secret("E2E_RESUME")})
edge(gate, use)
edge(use, END)
`
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	store := filepath.Join(dir, ".skein", "runs.db")
	t.Setenv("E2E_RESUME", "first-value")
	code, out, errs := runMain("run", flow, "--input", "token=tok-1234", "--store", store, "--json")
	if code == exitOK {
		t.Fatalf("the run did not fail at its gate:\n%s\n%s", out, errs)
	}
	var res struct {
		RunID string `json:"run_id"`
	}
	json.Unmarshal([]byte(out), &res)
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errs = runMain("resume", res.RunID, "--store", store)
	if code == exitOK || !strings.Contains(errs, `secret input "token" is not recorded: give it again (--input token=...)`) {
		t.Errorf("resume without the secret input: exit %d\n%s\n%s", code, out, errs)
	}
	os.Unsetenv("E2E_RESUME")
	code, out, errs = runMain("resume", res.RunID, "--store", store, "--input", "token=tok-5678")
	if code == exitOK || !strings.Contains(errs, `flow.star:4:`) || !strings.Contains(errs, `secret("E2E_RESUME"): $E2E_RESUME is not set`) {
		t.Errorf("resume without the secret(): exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "used")); err == nil {
		t.Fatal("a refused resume ran a step")
	}

	t.Setenv("E2E_RESUME", "second-value")
	code, out, errs = runMain("resume", res.RunID, "--store", store, "--input", "token=tok-5678")
	if code != exitOK {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "used"))
	if string(b) != "tok-5678 second-value" {
		t.Errorf("the resumed step saw %q, want the secrets read again", b)
	}
}
