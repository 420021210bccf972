package temporal

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.starlark.net/starlark"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// recorder is a data converter that keeps every payload it makes: all a
// run puts in its history (workflow and child inputs, activity inputs and
// results, continue-as-new, the result) and every query's answer.
type recorder struct {
	converter.DataConverter
	mu  sync.Mutex
	all []string
}

func (r *recorder) keep(ps ...*commonpb.Payload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range ps {
		r.all = append(r.all, string(p.GetData()))
	}
}

func (r *recorder) ToPayload(v any) (*commonpb.Payload, error) {
	p, err := r.DataConverter.ToPayload(v)
	r.keep(p)
	return p, err
}

func (r *recorder) ToPayloads(vs ...any) (*commonpb.Payloads, error) {
	ps, err := r.DataConverter.ToPayloads(vs...)
	r.keep(ps.GetPayloads()...)
	return ps, err
}

// TestSecretNeverInHistory: a task prints a secret() read on the worker,
// as it is and in base64, in a child flow too; the value is in no payload
// the run made (so none of its history), nor its result, events or
// journal, and the task still got it.
func TestSecretNeverInHistory(t *testing.T) {
	const value = "s3cr3t-Temporal-value-42"
	sc := temporaltest.Scenario{Name: "secret", Files: map[string]string{
		"flow.star": `flow(name = "secret")
step("show", shell = "echo \"got $TOKEN\"; printf %s \"$TOKEN\" | base64", env = {"TOKEN": secret("SKEIN_TEST_TOKEN")})
step("nested", flow = "child.star", inputs = {"token": secret("SKEIN_TEST_TOKEN")})
`,
		"child.star": `flow(name = "child", inputs = {"token": input(secret = True)})
step("inner", shell = "echo \"inner $TOKEN\"", env = {"TOKEN": "{{ inputs.token }}"})
step("own", shell = "echo \"own $TOKEN\"", env = {"TOKEN": secret("SKEIN_TEST_TOKEN")})
`,
	}}
	t.Setenv("SKEIN_TEST_TOKEN", value)
	_, in := runScenario(t, sc)
	env := newEnvWith(t, &Activities{Env: []string{"SKEIN_TEST_TOKEN=" + value}})
	rec := &recorder{DataConverter: converter.GetDefaultDataConverter()}
	env.SetDataConverter(rec)
	env.ExecuteWorkflow(WorkflowName, in)
	out := output(t, env)
	if out.Status != "succeeded" {
		t.Fatalf("status %s: %s", out.Status, out.Result)
	}
	if !strings.Contains(string(out.Result), "got ***") || !strings.Contains(string(out.Result), "inner ***") || !strings.Contains(string(out.Result), "own ***") || strings.Contains(string(out.Result), "skein-secret") {
		t.Errorf("the tasks did not print the masked secret: %s", out.Result)
	}
	for _, q := range []string{EventsQuery, JournalQuery, StatusQuery} {
		var args []any
		if q == EventsQuery {
			args = []any{0}
		}
		v, err := env.QueryWorkflow(q, args...)
		if err != nil {
			t.Fatalf("query %s: %v", q, err)
		}
		var raw any
		if err := v.Get(&raw); err != nil {
			t.Fatalf("query %s: %v", q, err)
		}
	}
	forms := []string{value, base64.StdEncoding.EncodeToString([]byte(value))}
	all := append(rec.all, string(out.Result))
	if len(all) < 5 {
		t.Fatalf("only %d payloads recorded", len(all))
	}
	for _, p := range all {
		for _, f := range forms {
			if strings.Contains(p, f) {
				t.Errorf("a payload holds the secret (%q): %.300s", f, p)
			}
		}
	}
}

// TestSecretMissingOnWorker: a worker without the variable fails the
// step with the secret()'s position, and the run says so.
func TestSecretMissingOnWorker(t *testing.T) {
	sc := temporaltest.Scenario{Name: "secret", Files: map[string]string{
		"flow.star": `flow(name = "secret")
step("show", shell = "echo \"$TOKEN\"", env = {"TOKEN": secret("SKEIN_TEST_TOKEN")})
`,
	}}
	t.Setenv("SKEIN_TEST_TOKEN", "here-but-not-on-the-worker")
	_, in := runScenario(t, sc)
	env := newEnvWith(t, &Activities{Env: []string{"PATH=/usr/bin:/bin"}})
	env.ExecuteWorkflow(WorkflowName, in)
	out := output(t, env)
	res := string(out.Result)
	if out.Status != "failed" || !strings.Contains(res, `flow.star:2:`) || !strings.Contains(res, `$SKEIN_TEST_TOKEN is not set on this worker`) {
		t.Errorf("status %s: %s", out.Status, res)
	}
}

// TestSecretInputRefused: a value for a secret input is refused before a
// workflow starts, at the input's declaration: it would be in the
// workflow's history in clear.
func TestSecretInputRefused(t *testing.T) {
	dir := t.TempDir()
	src := "flow(name = \"s\", inputs = {\"token\": input(secret = True)})\nstep(\"a\", shell = \"true\", env = {\"T\": \"{{ inputs.token }}\"})\n"
	if err := os.WriteFile(filepath.Join(dir, "flow.star"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f := frontend.Load(filepath.Join(dir, "flow.star"), frontend.Options{})
	if f.Graph == nil {
		t.Fatalf("load: %v", f.Err())
	}
	err := refuseSecretInputs(f.Graph, map[string]starlark.Value{"token": starlark.String("value-of-the-secret")})
	if err == nil || !strings.Contains(err.Error(), "flow.star:1:") || strings.Contains(err.Error(), "value-of-the-secret") {
		t.Errorf("got %v", err)
	}
	if err := refuseSecretInputs(f.Graph, nil); err != nil {
		t.Errorf("no value given: %v", err)
	}
}

// TestSecretModelKeyEchoed: a model server that echoes the key the worker
// sent has it masked before the model activity's outcome reaches the
// history.
func TestSecretModelKeyEchoed(t *testing.T) {
	const key = "sk-echoed-worker-key-0042"
	s := modeltest.New(modeltest.Rule{Match: "say", Replies: []modeltest.Reply{{Content: "your key is " + key}}})
	defer s.Close()
	sc := temporaltest.Scenario{Name: "key", Files: map[string]string{
		"flow.star": `flow(name = "key")
step("ask", llm = "say it")
`,
	}}
	_, in := runScenario(t, sc)
	in.ModelEnv = []string{"SKEIN_MODEL=m1", "SKEIN_BASE_URL=" + s.BaseURL()}
	env := newEnvWith(t, &Activities{Env: []string{"OPENAI_API_KEY=" + key}})
	rec := &recorder{DataConverter: converter.GetDefaultDataConverter()}
	env.SetDataConverter(rec)
	env.ExecuteWorkflow(WorkflowName, in)
	out := output(t, env)
	if out.Status != "succeeded" || !strings.Contains(string(out.Result), "your key is ***") {
		t.Fatalf("status %s: %s", out.Status, out.Result)
	}
	for _, p := range rec.all {
		if strings.Contains(p, key) {
			t.Errorf("a payload holds the key: %.300s", p)
		}
	}
}
