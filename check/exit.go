package check

// This file checks the exit handler named by flow(on_exit=): it names a
// top-level step, and no edge leads to or from it (exit_handler_edge). The
// handler runs once after the run has ended, so reachability does not
// apply to it (reach.go), and only it may read `run` (exprs.go).

import (
	"fmt"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
)

func checkExitHandler(p *pass) {
	g := p.g
	if g.OnExitName == "" {
		return
	}
	if g.OnExit == graphir.None {
		hint := "on_exit names the step to run after the run has ended"
		if near := spell.Nearest(g.OnExitName, g.StepNames()); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		}
		p.report(codes.UnknownName, nil, g.OnExitPos, fmt.Sprintf("on_exit names %q, which is not a step", g.OnExitName), hint)
		return
	}
	h := g.Nodes[g.OnExit]
	if h.Parent != graphir.None {
		p.report(codes.ExitHandlerEdge, h, g.OnExitPos,
			fmt.Sprintf("the exit handler %q is inside %s, whose steps are joined by edges", h.Name, describeScope(g, h.Parent)),
			"name a top-level step that no edge touches, e.g. a fn step or a child flow doing the cleanup")
		return
	}
	for _, e := range g.Edges {
		if e.From != h.ID && e.To != h.ID {
			continue
		}
		msg := fmt.Sprintf("edge %s -> %s touches the exit handler %q: it runs once after the run has ended, never as part of it",
			g.Nodes[e.From].Name, g.Nodes[e.To].Name, h.Name)
		hint := "remove the edge; to run a step on failure inside the run, route to another step with on = \"failure\""
		if e.Router {
			p.report(codes.ExitHandlerEdge, g.Nodes[e.From], e.Pos, msg, hint)
			continue
		}
		p.reportEdge(codes.ExitHandlerEdge, e, msg, hint)
	}
}

// inExitHandler reports whether node id is the exit handler or inside its
// body.
func (p *pass) inExitHandler(id graphir.NodeID) bool {
	g := p.g
	return g.OnExit != graphir.None && id >= 0 && int(id) < len(g.Nodes) && (id == g.OnExit || g.Within(id, g.OnExit))
}
