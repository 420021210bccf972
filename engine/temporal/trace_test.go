package temporal

import (
	"strings"
	"testing"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// A traced run's tasks, a child flow's included, get the TRACEPARENT of
// their attempt's span as the client names it from the run's events; an
// untraced run's get none.
func TestTracedTaskGetsTraceparent(t *testing.T) {
	for _, traced := range []bool{true, false} {
		_, in := runScenario(t, temporaltest.Scenario{Files: map[string]string{
			"flow.star":      `chain(START, step("kid", flow = "sub/child.star"), END)`,
			"sub/child.star": `flow(output = "t")` + "\n" + `chain(START, step("t", run = ["sh", "-c", "echo $SKEIN_RUN_ID ${TRACEPARENT:-none}"]), END)`,
		}})
		in.Traced = traced
		out := decode(t, runTemporal(t, in).Result)
		m, _ := out.Steps["kid"].Output.(map[string]any)
		got := strings.Fields(strings.TrimSpace(m["stdout"].(string)))
		if len(got) != 2 {
			t.Fatalf("the task printed %q", m["stdout"])
		}
		want := "none"
		if traced {
			want = telemetry.Traceparent(got[0], []string{"kid"}, nil, "t", 1, 1)
		}
		if got[1] != want {
			t.Errorf("traced %v: the task's TRACEPARENT is %s, want %s", traced, got[1], want)
		}
	}
}
