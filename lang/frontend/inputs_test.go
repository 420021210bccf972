package frontend

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
)

const release = `flow(name = "release", inputs = {
    "version": input("latest", help = "release tag"),
    "replicas": input(type = "int", help = "how many to start"),
    "env": input("dev", choices = ["dev", "prod"], help = "where to deploy"),
    "targets": None,
})
`

// declared is how errors list release's inputs.
const declared = `version (string, default "latest"), replicas (int, required), env (string, default "dev"), targets (any, required)`

func releaseGraph(t *testing.T) *graphir.Graph {
	t.Helper()
	f := LoadSource("release.star", []byte(release), Options{})
	if f.Graph == nil {
		t.Fatal(f.Err())
	}
	return f.Graph
}

// bound renders bound inputs as JSON, for comparing.
func bound(t *testing.T, m *stdlib.Map) string {
	t.Helper()
	b, err := stdlib.AppendJSON(nil, m, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBind(t *testing.T) {
	g := releaseGraph(t)
	for _, c := range []struct {
		name     string
		texts    [][2]string
		json     string
		recorded string
		want     string // the bound inputs as JSON
		wantErr  string // or the error
		wantHint string
	}{{
		name:  "texts converted by type, defaults filled in",
		texts: [][2]string{{"version", "1.10"}, {"replicas", "3"}, {"targets", `["web"]`}},
		want:  `{"version":"1.10","replicas":3,"env":"dev","targets":["web"]}`,
	}, {
		name:  "a text wins over the file",
		json:  `{"replicas": 2, "targets": 1, "version": "1"}`,
		texts: [][2]string{{"version", "007"}},
		want:  `{"version":"007","replicas":2,"env":"dev","targets":1}`,
	}, {
		name:     "recorded inputs",
		recorded: `{"replicas": 5, "targets": null, "env": "prod"}`,
		want:     `{"version":"latest","replicas":5,"env":"prod","targets":null}`,
	}, {
		name:     "a text that does not fit its type",
		texts:    [][2]string{{"replicas", "three"}},
		wantErr:  `input "replicas" must be an int, got "three"`,
		wantHint: "replicas (int, required): how many to start",
	}, {
		name:    "a file value of the wrong type is not converted",
		json:    `{"replicas": "3", "targets": 1}`,
		wantErr: `input "replicas" must be an int, got a string "3"`,
	}, {
		name:    "a choice not allowed",
		texts:   [][2]string{{"replicas", "1"}, {"targets", "x"}, {"env", "qa"}},
		wantErr: `input "env" must be one of "dev", "prod", got "qa"`,
	}, {
		name:     "an undeclared input",
		texts:    [][2]string{{"replicas", "1"}, {"targets", "x"}, {"verison", "2"}},
		wantErr:  `flow release has no input "verison"; it declares ` + declared,
		wantHint: `did you mean "version"?`,
	}, {
		name:     "a required input missing",
		texts:    [][2]string{{"targets", "x"}},
		wantErr:  `flow release needs input "replicas"; it declares ` + declared,
		wantHint: "pass it with --input replicas=VALUE",
	}} {
		t.Run(c.name, func(t *testing.T) {
			var in Inputs
			if c.json != "" {
				if err := in.SetJSON([]byte(c.json)); err != nil {
					t.Fatal(err)
				}
			}
			if c.recorded != "" {
				if err := in.SetRecorded([]byte(c.recorded)); err != nil {
					t.Fatal(err)
				}
			}
			for _, kv := range c.texts {
				in.SetText(kv[0], kv[1])
			}
			m, err := in.Bind(g)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.want, bound(t, m)); diff != "" {
					t.Errorf("bound (-want +got):\n%s", diff)
				}
				return
			}
			ge := graphir.AsError(err)
			if err == nil || ge.Msg != c.wantErr || (c.wantHint != "" && ge.Hint != c.wantHint) {
				t.Errorf("bind: %v (hint %q)\nwant %s (hint %q)", err, ge.Hint, c.wantErr, c.wantHint)
			}
		})
	}
}

func TestSetJSONErrors(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"a": 1,`, "not valid JSON: "},
		{`{"a": 1, "a": 2}`, "not valid JSON: "},
		{`[1]`, "want a JSON object, got list"},
	} {
		var in Inputs
		err := in.SetJSON([]byte(c.json))
		if err == nil || len(err.Error()) < len(c.want) || err.Error()[:len(c.want)] != c.want {
			t.Errorf("SetJSON(%s): %v, want %q...", c.json, err, c.want)
		}
	}
	var in Inputs
	if err := in.SetRecorded([]byte(`[1]`)); err == nil || err.Error() != "the recorded inputs are not an object" {
		t.Errorf("SetRecorded of a list: %v", err)
	}
	if err := in.SetRecorded([]byte(`{`)); err == nil {
		t.Errorf("SetRecorded of broken JSON: no error")
	}
}

// A nil *Inputs has none: a flow whose inputs all have defaults binds.
func TestBindNone(t *testing.T) {
	f := LoadSource("f.star", []byte(`flow(inputs = {"n": 1})`), Options{})
	var in *Inputs
	m, err := in.Bind(f.Graph)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Lookup("n"); v == nil || v.String() != "1" {
		t.Errorf("n = %v, want 1", v)
	}
}
