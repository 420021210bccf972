package vm

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skeinlang/skein/graphir"
)

// Every kind of step has one effect: the working ones take a slot of the
// --parallel budget, the waiting ones do not, and the rest finish inside
// the core (a router works only when a model picks its route).
func TestEffectOf(t *testing.T) {
	want := map[string]effect{
		"task": working, "shell": working, "llm": working, "agent": working, "prompted router": working,
		"subflow": waiting, "wait": waiting, "approval": waiting,
		"start": noEffect, "end": noEffect, "abort": noEffect, "fn": noEffect, "noop": noEffect,
		"router": noEffect, "loop": noEffect, "map": noEffect,
	}
	got := map[string]effect{}
	for k := graphir.KindStart; k <= graphir.KindAgent; k++ {
		got[k.String()] = effectOf(&graphir.Node{Kind: k})
	}
	got["prompted router"] = effectOf(&graphir.Node{Kind: graphir.KindRouter, Call: &graphir.ModelCall{Prompt: &graphir.Template{}}})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
}
