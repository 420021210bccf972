package temporal

import (
	"fmt"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/vm"
)

// Warnings are what holds of flow g only when it runs on Temporal, as
// diagnostics in the checker's form: every fn step with timeout= (in g
// and in its literal child flows, which run as workflows too), whose
// timeout is not applied. A fn step runs as workflow code, which Temporal
// replays: a wall-clock bound would decide differently on a replay, so
// only its evaluation step budget (evalSteps; 0 means the default)
// bounds it.
func Warnings(g *graphir.Graph, evalSteps uint64) []check.Diagnostic {
	if evalSteps == 0 {
		evalSteps = vm.DefaultEvalSteps
	}
	var ds []check.Diagnostic
	seen := map[*graphir.Graph]bool{}
	var walk func(g *graphir.Graph)
	walk = func(g *graphir.Graph) {
		if g == nil || seen[g] {
			return
		}
		seen[g] = true
		for _, n := range g.Steps() {
			if n.Kind == graphir.KindFn && n.Timeout > 0 {
				ds = append(ds, check.Diagnostic{Code: codes.FnTimeoutIgnored, Severity: check.Warning, Pos: n.Pos, Step: n.Name,
					Message: fmt.Sprintf("fn step %q has timeout = %s, which the temporal engine does not apply: fn steps run as workflow code, which Temporal replays, and a wall-clock bound cannot be replayed", n.Name, n.Timeout),
					Hint:    fmt.Sprintf("its evaluation step budget (%d Starlark steps) bounds it instead; for a bound in time, do the work in a task step (run=), whose timeout holds on Temporal", evalSteps)})
			}
			if n.Subflow != nil {
				walk(n.Subflow.Child)
			}
		}
	}
	walk(g)
	return ds
}
