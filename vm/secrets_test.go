package vm_test

import (
	"strings"
	"testing"

	"github.com/skeinlang/skein/vm"
)

// secret() is read when the run starts, from the run's environment or a
// file (one trailing newline dropped), and reaches a task's env and stdin;
// its value, and a secret input's, are masked in the record and events.
func TestSecretRead(t *testing.T) {
	var evs events
	opts := vm.Options{OnEvent: evs.add, Env: []string{"PATH=/usr/bin:/bin", "API_TOKEN=tok-from-env"}}
	res := runFiles(t, map[string]string{
		"flow.star": `
flow(inputs = {"pw": input(secret = True)})
a = step("a", shell = "echo \"$T $F $P\"; cat", env = {"T": secret("API_TOKEN"), "F": secret("filed", file = "keys/k"), "P": "{{ inputs.pw }}"}, stdin = secret("API_TOKEN"))
chain(START, a, END)
`,
		"keys/k": "tok-from-file\n",
	}, map[string]any{"pw": "pw-given-1"}, opts)
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	all := resultJSON(t, res) + evs.json()
	for _, v := range []string{"tok-from-env", "tok-from-file", "pw-given-1"} {
		if strings.Contains(all, v) {
			t.Errorf("%q reached the record or the events:\n%s", v, all)
		}
	}
	if !strings.Contains(all, `*** *** ***\n***`) {
		t.Errorf("the task did not get the secrets (or they were not masked):\n%s", all)
	}
}

// A secret with no value, or too short to be masked, fails the run before
// any step runs, at the secret() that names it.
func TestSecretMissing(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, `flow.star:2:43: secret("API_TOKEN"): $API_TOKEN is not set`},
		{[]string{"API_TOKEN="}, `$API_TOKEN is not set`},
		{[]string{"API_TOKEN=abc"}, `the value is 3 bytes: a secret must be at least 4 to be masked`},
	} {
		var evs events
		res := run(t, `
a = step("a", run = ["true"], env = {"T": secret("API_TOKEN")})
chain(START, a, END)
`, nil, vm.Options{OnEvent: evs.add, Env: append([]string{"PATH=/usr/bin:/bin"}, tc.env...)})
		if res.Status != vm.Failed || res.Error == nil {
			t.Fatalf("%v: status %s", tc.env, res.Status)
		}
		if got := res.Error.Pos.String() + ": " + res.Error.Msg; !strings.Contains(got, tc.want) {
			t.Errorf("%v: error %q, want %q", tc.env, got, tc.want)
		}
		if strings.Contains(evs.json(), "step_started") {
			t.Errorf("%v: a step started", tc.env)
		}
	}
}
