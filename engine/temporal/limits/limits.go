// Package limits is what a front end needs to know of the Temporal engine
// without linking it (Temporal's SDK and gRPC): what holds of a flow only
// when it runs there ([Warnings], which skein check --engine temporal
// reports) and the defaults and bounds of a run's options there. It is
// not the engine: that is engine/temporal, which a skein built with
// -tags temporal links.
package limits

import (
	"fmt"
	"time"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/vm"
)

// DefaultTaskQueue is the task queue workers serve, and runs are started
// on, unless told otherwise.
const DefaultTaskQueue = "skein"

// DefaultHeartbeatTimeout is how long Temporal waits for a running task's
// heartbeat (every second) before it declares the worker lost, unless the
// run says otherwise; MinHeartbeatTimeout is the least a run may ask for,
// a few heartbeats.
const (
	DefaultHeartbeatTimeout = 10 * time.Second
	MinHeartbeatTimeout     = 2 * time.Second
)

// Warnings are what holds of flow g only when it runs on Temporal, as
// diagnostics in the checker's form: every fn step with timeout= (in g
// and in its literal child flows, of steps and of flow= tools, which run
// as workflows too), whose timeout is not applied. A fn step runs as
// workflow code, which Temporal replays: a wall-clock bound would decide
// differently on a replay, so only its evaluation step budget (evalSteps;
// 0 means the default) bounds it.
func Warnings(g *graphir.Graph, evalSteps uint64) []check.Diagnostic {
	if evalSteps == 0 {
		evalSteps = vm.DefaultEvalSteps
	}
	var ds []check.Diagnostic
	g.EachGraph(func(g *graphir.Graph) {
		for _, n := range g.Steps() {
			if n.Kind == graphir.KindFn && n.Timeout > 0 {
				ds = append(ds, check.Diagnostic{Code: codes.FnTimeoutIgnored, Severity: check.Warning, Pos: n.Pos, Step: n.Name,
					Message: fmt.Sprintf("fn step %q has timeout = %s, which the temporal engine does not apply: fn steps run as workflow code, which Temporal replays, and a wall-clock bound cannot be replayed", n.Name, n.Timeout),
					Hint:    fmt.Sprintf("its evaluation step budget (%d Starlark steps) bounds it instead; for a bound in time, do the work in a task step (run=), whose timeout holds on Temporal", evalSteps)})
			}
		}
	})
	return ds
}
