package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/skeinlang/skein/vm/model/modeltest"
)

// TestModelScripts runs the scripts in testdata/model against an
// in-process OpenAI-compatible server ($SKEIN_BASE_URL): configuration
// refusals, cassettes, --replay-only and --max-tokens.
func TestModelScripts(t *testing.T) {
	p := scriptParams("testdata/model")
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		s := modeltest.New(
			modeltest.Rule{Match: "Route", Replies: []modeltest.Reply{{Content: "Urgent.", Prompt: 30, Completion: 2}}},
			modeltest.Rule{Replies: []modeltest.Reply{{Content: "fine", Prompt: 10, Completion: 5}}},
		)
		env.Defer(s.Close)
		env.Setenv("SKEIN_BASE_URL", s.BaseURL())
		return setup(env)
	}
	testscript.Run(t, p)
}
