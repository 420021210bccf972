package vm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
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

// model(api_key = secret(NAME, file = PATH)) sends the file's value as the
// key, read when the run starts; an answer that echoes it is masked.
func TestSecretModelKeyFile(t *testing.T) {
	const key = "sk-file-KEY-123"
	s := modeltest.New(modeltest.Rule{Match: "hi", Replies: []modeltest.Reply{{Content: "you sent " + key}}})
	defer s.Close()
	res := runFiles(t, map[string]string{
		"flow.star": `
model("m", model = "m1", base_url = "` + s.BaseURL() + `", api_key = secret("k", file = "keys/k"))
ask = step("ask", llm = "hi", model = "m")
chain(START, ask, END)
`,
		"keys/k": key + "\n",
	}, nil, vm.Options{Env: []string{"PATH=/usr/bin:/bin"}})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Authorization, key) {
		t.Fatalf("requests %+v: want the file's key sent", reqs)
	}
	if all := resultJSON(t, res); strings.Contains(all, key) || !strings.Contains(all, "you sent ***") {
		t.Errorf("the key's echo is not masked:\n%s", all)
	}
}

// A cassette given the run's masker keeps no secret a server echoed.
func TestSecretCassetteMasked(t *testing.T) {
	const key = "sk-echoed-KEY-456"
	s := modeltest.New(modeltest.Rule{Match: "hi", Replies: []modeltest.Reply{{Content: "you sent " + key}}})
	defer s.Close()
	m := new(secrets.Masker)
	m.Add(key)
	path := filepath.Join(t.TempDir(), "c.json")
	c, err := model.OpenCassette(path, false, &model.Client{})
	if err != nil {
		t.Fatal(err)
	}
	c.Mask = m.MaskBytes
	res := run(t, `
model("m", model = "m1", base_url = "`+s.BaseURL()+`")
ask = step("ask", llm = "hi", model = "m")
chain(START, ask, END)
`, nil, vm.Options{Models: c, Secrets: m, Env: []string{"PATH=/usr/bin:/bin"}})
	if res.Status != vm.Succeeded {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key) || !strings.Contains(string(b), "you sent ***") {
		t.Errorf("the cassette:\n%s", b)
	}
}

// MaskValue walks a Map once: it copies one whose key or value holds a
// secret, in order, and returns one that holds none as it is, allocating
// nothing (it runs on every map of every recorded output of a run with
// secrets).
func TestMaskValueMap(t *testing.T) {
	var m secrets.Masker
	const secret = "tok-9f8e7d6c5b4a"
	m.Add(secret)
	plain := stdlib.NewMap([]string{"a", "b", "c"}, []starlark.Value{starlark.String("x"), starlark.MakeInt(1), stdlib.NewMap([]string{"d"}, []starlark.Value{starlark.String("y")})})
	if got := vm.MaskValue(&m, plain); got != plain {
		t.Errorf("a map with no secret came back as a copy: %v", got)
	}
	if !raceEnabled {
		if n := testing.AllocsPerRun(100, func() { vm.MaskValue(&m, plain) }); n != 0 {
			t.Errorf("masking a map with no secret allocated %v times, want 0", n)
		}
	}
	for _, tc := range []struct {
		keys []string
		vals []starlark.Value
		want string
	}{
		{[]string{"a", "b", "c"}, []starlark.Value{starlark.String("x"), starlark.String("k=" + secret), starlark.MakeInt(3)}, `{"a": "x", "b": "k=` + secrets.Mask + `", "c": 3}`},
		{[]string{"a", secret, "c"}, []starlark.Value{starlark.MakeInt(1), starlark.MakeInt(2), starlark.MakeInt(3)}, `{"a": 1, "` + secrets.Mask + `": 2, "c": 3}`},
		{[]string{"a", "b"}, []starlark.Value{starlark.MakeInt(1), stdlib.NewMap([]string{"s"}, []starlark.Value{starlark.String(secret)})}, `{"a": 1, "b": {"s": "` + secrets.Mask + `"}}`},
	} {
		in := stdlib.NewMap(tc.keys, tc.vals)
		if got := vm.MaskValue(&m, in).String(); got != tc.want {
			t.Errorf("MaskValue(%v) = %s, want %s", in, got, tc.want)
		}
	}
}
