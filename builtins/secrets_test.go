package builtins_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSecretsRecorded: secret() in env=, stdin=, run= and model(api_key=)
// becomes one template part naming its source, listed once per source in
// Graph.Secrets; input(secret = True) marks the input; nothing is read.
func TestSecretsRecorded(t *testing.T) {
	t.Setenv("DEPLOY_TOKEN", "must-not-be-read")
	g, err := load(`flow(inputs = {"token": input(secret = True, help = "the token")})
model("m", model = "gpt-4o-mini", api_key = secret("OPENAI_KEY"))
model("f", model = "gpt-4o-mini", api_key = secret("key", file = "keys/openai"))
tool("t", run = ["deploy"], env = {"TOKEN": secret("DEPLOY_TOKEN")})
step("a", run = ["curl", reveal(secret("DEPLOY_TOKEN"))], env = {"TOKEN": secret("DEPLOY_TOKEN"), "T2": "{{ inputs.token }}"}, stdin = secret("PASS"))
`)
	if err != nil {
		t.Fatal(err)
	}
	in := g.Input("token")
	if !in.Secret || in.Type != "string" || !in.Required {
		t.Errorf("input %+v", in)
	}
	var keys []string
	for _, s := range g.Secrets {
		keys = append(keys, s.Key())
	}
	if diff := cmp.Diff([]string{"env:OPENAI_KEY", "file:keys/openai", "env:DEPLOY_TOKEN", "env:PASS"}, keys); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	if m := g.ModelDecl("m"); m.KeyEnv != "OPENAI_KEY" || m.KeyFile != "" {
		t.Errorf("model m: key env %q file %q", m.KeyEnv, m.KeyFile)
	}
	if m := g.ModelDecl("f"); m.KeyEnv != "" || m.KeyFile != "keys/openai" {
		t.Errorf("model f: key env %q file %q", m.KeyEnv, m.KeyFile)
	}
	a := g.Node("a")
	env := a.Env[1] // sorted: T2, TOKEN
	if env.Name != "TOKEN" || len(env.Value.Parts) != 1 || env.Value.Parts[0].Secret == nil || env.Value.Parts[0].Reveal {
		t.Fatalf("env %+v", env.Value)
	}
	if s := env.Value.Parts[0].Secret; s.Name != "DEPLOY_TOKEN" || s.Pos.Line != 5 || env.Value.IsLiteral() {
		t.Errorf("secret %+v", s)
	}
	if env.Value.Src != `secret("DEPLOY_TOKEN")` {
		t.Errorf("src %q", env.Value.Src)
	}
	if p := a.Argv[1].Parts[0]; p.Secret == nil || !p.Reveal || a.Argv[1].Src != `reveal(secret("DEPLOY_TOKEN"))` {
		t.Errorf("argv[1] %+v", a.Argv[1])
	}
	if a.Stdin.Secrets()[0].Name != "PASS" {
		t.Errorf("stdin %+v", a.Stdin)
	}
	if tool := g.Tools[0]; len(tool.Env) != 1 || tool.Env[0].Value.Secrets()[0].Name != "DEPLOY_TOKEN" {
		t.Errorf("tool env %+v", tool.Env)
	}
	b, err := g.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "must-not-be-read") || !strings.Contains(string(b), `"secret":true`) {
		t.Errorf("graph JSON %s", b)
	}
}

// TestRevealRefs: a name read inside reveal(...) is marked so, in string
// expressions and in function bodies; reveal() evaluates to its argument.
func TestRevealRefs(t *testing.T) {
	g, err := load(`def f(r):
    return reveal(r.inputs.token) + r.inputs.user

step("a", fn = f)
step("b", run = ["x", "{{ reveal(inputs.token) }}-{{ inputs.user }}"])
`)
	if err != nil {
		t.Fatal(err)
	}
	type ref struct {
		Attr     string
		Revealed bool
	}
	var got []ref
	for _, r := range g.Node("a").FnReads.Refs {
		got = append(got, ref{r.Attr, r.Revealed})
	}
	for _, x := range g.Node("b").Argv[1].Exprs() {
		for _, r := range x.Refs {
			got = append(got, ref{r.Attr, r.Revealed})
		}
	}
	want := []ref{{"token", true}, {"user", false}, {"token", true}, {"user", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	x := g.Node("b").Argv[1].Parts[0].X
	if len(x.Refs) != 1 || x.Refs[0].Name != "inputs" {
		t.Errorf("reveal must not be a name of the run view: %+v", x.Refs)
	}
}

func TestSecretBad(t *testing.T) {
	runBad(t, []badCall{
		{src: `input(secret = True, default = "hunter2")`, frag: "a secret input cannot have a default", hint: `a flow file is read by everyone who reads the flow: give the value to the run (--input, or secret("NAME") read from the environment)`},
		{src: `input(secret = True, choices = ["a", "b"])`, frag: "a secret input cannot have choices"},
		{src: `input(secret = True, type = "int")`, frag: `a secret input is a string, got type "int"`},
		{src: `input(secret = "yes")`, frag: "secret must be True or False"},
		{src: `secret("NOT A VAR")`, frag: "must be an environment variable"},
		{src: `secret("k", file = "/etc/shadow")`, frag: `absolute path "/etc/shadow" is not allowed`, hint: "a secret's file is named relative to the flow's folder, inside the flow root"},
		{src: `secret("k", file = "../../outside")`, frag: "outside the flow root"},
		{src: `step("s", shell = secret("X"))`, frag: "shell cannot be a secret()", hint: `a shell script is run as written: pass the secret in env= and read it there, e.g. env = {"TOKEN": secret("TOKEN")} and "$TOKEN"`},
		{src: `model("m", model = "x", api_key = "sk-live-123")`, frag: "api_key must be a secret(), got a string", hint: `a key written in the flow is read by everyone who reads the flow: api_key = secret("OPENAI_API_KEY") reads it from the environment when the run starts`},
		{src: `model("m", model = "x", api_key = secret("K"), api_key_env = "K")`, frag: "not both"},
		{src: `step("s", run = ["x", reveal("{{ inputs.token }}")])`, frag: "write it inside the hole", at: "4:23"},
		{src: `tool("t", fn = lambda args: 1, env = {"A": "b"})`, frag: "env applies only to run= and shell= tools"},
		{src: `step("s", approve = "ok?", fields = {"pw": input(secret = True)})`, frag: `field "pw" cannot be secret`},
	})
}

// The key given as a plain string is not repeated in the error.
func TestAPIKeyNotInError(t *testing.T) {
	_, err := load(`model("m", model = "x", api_key = "sk-live-123")` + "\n")
	if err == nil || strings.Contains(err.Error(), "sk-live-123") {
		t.Errorf("error %v", err)
	}
}
