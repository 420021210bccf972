package check

// This file checks routers and loops: router_edge, route_unknown,
// router_no_default and until_invalid.

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
)

func checkRouters(p *pass) {
	g := p.g
	for _, e := range g.Edges {
		r := g.Nodes[e.From]
		if r.Kind != graphir.KindRouter || e.Router {
			continue
		}
		to := g.Nodes[e.To].Name
		if e.Implicit {
			p.report(codes.RouterEdge, r, r.Pos,
				fmt.Sprintf("router %q is followed by %q only because steps without edges run in order", r.Name, to),
				fmt.Sprintf("a router's out-edges are its routes: route to %q, or declare the edges around it", to))
			continue
		}
		p.reportEdge(codes.RouterEdge, e,
			fmt.Sprintf("edge from router %q to %q: a router's out-edges are exactly its routes, cases and default", r.Name, to),
			fmt.Sprintf("add %q to the routes or cases of %q, or make it the default", to, r.Name))
	}

	var names []string // step names for hints, listed on first need
	for _, r := range g.Steps() {
		if r.Kind != graphir.KindRouter {
			continue
		}
		check := func(what string, t *graphir.Target) {
			switch {
			case t.ID == graphir.None:
				hint := fmt.Sprintf("a route goes to a step, END or ABORT; no step is called %q", t.Name)
				if names == nil {
					names = g.StepNames()
				}
				if near := spell.Nearest(t.Name, names); near != "" {
					hint = fmt.Sprintf("did you mean %q?", near)
				}
				p.report(codes.RouteUnknown, r, t.Pos,
					fmt.Sprintf("%s of router %q goes to %q, which is not a step", what, r.Name, t.Name), hint)
			case t.ID == graphir.End && r.Parent != graphir.None:
				p.report(codes.RouteUnknown, r, t.Pos,
					fmt.Sprintf("%s of router %q goes to END from inside %s", what, r.Name, describeScope(g, r.Parent)),
					"a body ends when its last step finishes: route to a step of the body that has no edge out")
			case t.ID != graphir.Abort && t.ID != graphir.End && g.Nodes[t.ID].Parent != r.Parent:
				n := g.Nodes[t.ID]
				p.report(codes.RouteUnknown, r, t.Pos,
					fmt.Sprintf("%s of router %q goes to step %q in %s, outside %s", what, r.Name, n.Name,
						describeScope(g, n.Parent), describeScope(g, r.Parent)),
					"a router chooses among the steps of its own scope, END and ABORT")
			}
		}
		for i := range r.Router.Routes {
			check(fmt.Sprintf("route %q", r.Router.Routes[i].Label), &r.Router.Routes[i].Target)
		}
		for i := range r.Router.Cases {
			check(fmt.Sprintf("case %d", i), &r.Router.Cases[i].Target)
		}
		if r.Router.Default != nil {
			check("default", r.Router.Default)
		} else if !catchAll(r) {
			p.report(codes.RouterNoDefault, r, r.Pos,
				fmt.Sprintf("router %q has no default", r.Name),
				"add default = <step>: without one, a run where nothing matches fails with no_route")
		}
	}
}

// catchAll reports whether a router's last case is the constant True, which
// serves as its default.
func catchAll(r *graphir.Node) bool {
	if len(r.Router.Cases) == 0 {
		return false
	}
	last := r.Router.Cases[len(r.Router.Cases)-1].When
	return last != nil && !last.User && strings.TrimSpace(last.Src) == "True"
}

func checkUntil(p *pass) {
	g := p.g
	for _, n := range g.Steps() {
		if n.Kind != graphir.KindLoop {
			continue
		}
		switch {
		case n.Loop.Judge != nil:
			// judge(): a model decides (checked in models.go).
		case n.Loop.UntilBad != "":
			p.report(codes.UntilInvalid, n, n.Loop.UntilPos,
				fmt.Sprintf("until= of loop %q must be a function of one argument or the name of one, got %s", n.Name, n.Loop.UntilBad),
				"def done(it): return it.output[\"ok\"]  then  until = done")
		case n.Loop.Until == nil && n.Loop.UntilName != "":
			hint := fmt.Sprintf("define it in the flow: def %s(it): ...", n.Loop.UntilName)
			if !isIdent(n.Loop.UntilName) {
				hint = "until= is a function or the name of one, never a description: def done(it): return ..., then until = done"
			} else if near := spell.Nearest(n.Loop.UntilName, g.Funcs); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			}
			p.report(codes.UntilInvalid, n, n.Loop.UntilPos,
				fmt.Sprintf("until= of loop %q names %q, which is not a function defined in the flow", n.Name, n.Loop.UntilName), hint)
		case n.Loop.Until == nil:
			p.report(codes.UntilInvalid, n, n.Loop.UntilPos,
				fmt.Sprintf("loop %q has no until= function", n.Name),
				"give until = a function of one argument that returns True when the loop is done")
		default:
			f, ok := n.Loop.Until.(*starlark.Function)
			if !ok {
				continue
			}
			if k := f.NumParams(); k != 1 || f.HasVarargs() || f.HasKwargs() {
				desc := plural(k, "parameter")
				if f.HasVarargs() || f.HasKwargs() {
					desc = "variadic parameters"
				}
				p.report(codes.UntilInvalid, n, n.Loop.UntilPos,
					fmt.Sprintf("until= of loop %q is %s, which takes %s; want exactly one", n.Name, funcName(f), desc),
					"the VM calls until(it) with one value: the iteration just finished")
			}
		}
	}
}

func funcName(f *starlark.Function) string {
	if f.Name() == "lambda" {
		return "a lambda"
	}
	return fmt.Sprintf("function %s", f.Name())
}

// isIdent reports whether s could name a Starlark function.
func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}
