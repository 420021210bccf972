package builtins

// This file defines router(), loop() and map().

import (
	"fmt"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
)

// router(name, *, by=None, routes=None, cases=None, default=None)
func routerFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var name, by, routes, cases, dflt, maxVisits, join starlark.Value
	var vals [9]starlark.Value
	if err := c.unpack(args, kwargs, routerParams, vals[:]); err != nil {
		return nil, err
	}
	name, by, routes, cases, dflt, maxVisits, join = vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6]
	llm, modelName := vals[7], vals[8]
	n := &graphir.Node{Pos: c.pos, Stack: c.stack, Kind: graphir.KindRouter, Router: &graphir.Router{}}
	if n.Name, err = c.name(name); err != nil {
		return nil, err
	}
	c.named("router", n.Name)
	switch {
	case !isNone(llm) && !isNone(by):
		return nil, c.errorf("give by= (an expression) or llm= (a prompt), not both")
	case !isNone(llm) && !isNone(cases):
		return nil, c.errorf("llm= picks one of routes=; it does not take cases=")
	case isNone(llm) && !isNone(modelName):
		return nil, c.errorf("model applies only to routers given llm=")
	case !isNone(llm):
		// routes= is checked by the checker (routes_missing), so that a
		// router without routes is reported with the others.
	case !isNone(routes) && !isNone(cases):
		return nil, c.errorf("give routes= (with by=) or cases=, not both")
	case !isNone(routes) && isNone(by):
		return nil, c.errorf("routes= needs by=, the expression that picks a label")
	case !isNone(by) && isNone(routes):
		return nil, c.errorf("by= needs routes=, the map from labels to steps")
	case isNone(routes) && isNone(cases):
		return nil, c.errorf("needs routes= (with by=) or cases=")
	}
	if !isNone(llm) {
		n.Call = &graphir.ModelCall{}
		if n.Call.Prompt, err = c.template("llm", llm); err != nil {
			return nil, err
		}
		if err := c.modelParams(n, nil, modelName, nil, nil); err != nil {
			return nil, err
		}
		n.Retries = defaultModelRetries
	}
	if !isNone(routes) {
		if isNone(llm) {
			if n.Router.By, err = c.cond("by", by); err != nil {
				return nil, err
			}
		}
		keys, vals, err := c.dict("routes", routes)
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 && isNone(llm) {
			return nil, c.errorf("routes must have at least one label")
		}
		for i, k := range keys {
			t, err := c.target(fmt.Sprintf("routes[%q]", k), vals[i])
			if err != nil {
				return nil, err
			}
			n.Router.Routes = append(n.Router.Routes, graphir.Route{Label: k, Target: t})
		}
	}
	if !isNone(cases) {
		seq, ok := cases.(starlark.Indexable)
		if _, isStr := cases.(starlark.String); !ok || isStr {
			return nil, c.errorf("cases must be a list of (condition, step) pairs, got %s", describe(cases))
		}
		if seq.Len() == 0 {
			return nil, c.errorf("cases must have at least one (condition, step) pair")
		}
		for i := 0; i < seq.Len(); i++ {
			pair, ok := seq.Index(i).(starlark.Tuple)
			if !ok || len(pair) != 2 {
				return nil, c.errorf("cases[%d] must be a (condition, step) pair, got %s", i, describe(seq.Index(i)))
			}
			when, err := c.cond(fmt.Sprintf("cases[%d] condition", i), pair[0])
			if err != nil {
				return nil, err
			}
			t, err := c.target(fmt.Sprintf("cases[%d] target", i), pair[1])
			if err != nil {
				return nil, err
			}
			n.Router.Cases = append(n.Router.Cases, graphir.Case{When: when, Target: t})
		}
	}
	if !isNone(dflt) {
		t, err := c.target("default", dflt)
		if err != nil {
			return nil, err
		}
		n.Router.Default = &t
	}
	if err := c.common(n, maxVisits, nil, nil, nil, join); err != nil {
		return nil, err
	}
	id := c.b.AddStep(n)
	return &Step{b: c.b, n: c.b.Node(id), name: n.Name, kind: "router"}, nil
}

// body unpacks a loop's or map's body: a non-empty list of steps.
func (c *call) body(v starlark.Value) ([]graphir.NodeID, error) {
	seq, ok := v.(starlark.Indexable)
	if _, isStr := v.(starlark.String); !ok || isStr {
		if s, isStep := v.(*Step); isStep {
			seq = starlark.Tuple{s}
		} else {
			return nil, c.errorf("body must be a list of steps, got %s", describe(v))
		}
	}
	if seq.Len() == 0 {
		return nil, c.errorf("body must have at least one step")
	}
	ids := make([]graphir.NodeID, seq.Len())
	for i := range ids {
		s, err := c.step(fmt.Sprintf("body[%d]", i), seq.Index(i))
		if err != nil {
			return nil, err
		}
		ids[i] = s.ID()
	}
	return ids, nil
}

// loop(name, *, body, until, max_iterations, exhausted="succeed")
func loopFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var name, body, until, maxIter, maxVisits, join, timeout starlark.Value
	var vals [8]starlark.Value
	if err := c.unpack(args, kwargs, loopParams, vals[:]); err != nil {
		return nil, err
	}
	name, body, until, maxIter, maxVisits, join, timeout = vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6]
	exhausted := vals[7]
	n := &graphir.Node{Pos: c.pos, Stack: c.stack, Kind: graphir.KindLoop, Loop: &graphir.Loop{UntilPos: c.pos}}
	if n.Name, err = c.name(name); err != nil {
		return nil, err
	}
	c.named("loop", n.Name)
	if isNone(body) {
		return nil, c.errorf("missing body=, the list of steps to repeat")
	}
	if isNone(maxIter) {
		return nil, c.errorf("missing max_iterations=: every loop needs a bound (an int >= 1)")
	}
	if n.Loop.MaxIterations, err = c.intAtLeast("max_iterations", maxIter, 1); err != nil {
		return nil, err
	}
	if !isNone(exhausted) {
		s, ok := exhausted.(starlark.String)
		if !ok {
			return nil, c.errorf("exhausted must be \"succeed\" or \"fail\", got %s", describe(exhausted))
		}
		if err := oneOf("exhausted", string(s), "succeed", "fail"); err != nil {
			return nil, c.errorf("%v", err)
		}
		n.Loop.ExhaustFail = s == "fail"
	}
	ids, err := c.body(body)
	if err != nil {
		return nil, err
	}
	switch u := until.(type) {
	case nil, starlark.NoneType:
	case starlark.String:
		n.Loop.UntilName = string(u)
		n.Loop.UntilPos, _ = c.locate("until", string(u))
	case *Judge:
		j := u.j
		n.Loop.Judge = &j
	case starlark.Callable:
		n.Loop.Until = u
		n.Loop.UntilReads = c.reads(u)
	default:
		n.Loop.UntilBad = describe(u)
	}
	if err := c.common(n, maxVisits, nil, nil, timeout, join); err != nil {
		return nil, err
	}
	id := c.b.AddStep(n)
	if err := c.b.SetBody(id, ids); err != nil {
		return nil, c.errorf("%v", err)
	}
	return &Step{b: c.b, n: c.b.Node(id), name: n.Name, kind: "loop"}, nil
}

// map(name, *, over, body, concurrency=4, item_var="item", ..., max_items=None)
func mapFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var name, over, body, concurrency, itemVar, maxVisits, join, timeout starlark.Value
	var vals [10]starlark.Value
	if err := c.unpack(args, kwargs, mapParams, vals[:]); err != nil {
		return nil, err
	}
	name, over, body, concurrency, itemVar, maxVisits, join, timeout = vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6], vals[7]
	n := &graphir.Node{Pos: c.pos, Stack: c.stack, Kind: graphir.KindMap, Map: &graphir.Map{Concurrency: 4, ItemVar: "item"}}
	if n.Name, err = c.name(name); err != nil {
		return nil, err
	}
	c.named("map", n.Name)
	if isNone(over) {
		return nil, c.errorf("missing over=, the expression giving the list to map over")
	}
	if isNone(body) {
		return nil, c.errorf("missing body=, the list of steps to run per item")
	}
	if n.Map.Over, err = c.cond("over", over); err != nil {
		return nil, err
	}
	ids, err := c.body(body)
	if err != nil {
		return nil, err
	}
	if !isNone(concurrency) {
		if n.Map.Concurrency, err = c.intAtLeast("concurrency", concurrency, 1); err != nil {
			return nil, err
		}
	}
	if !isNone(itemVar) {
		s, ok := itemVar.(starlark.String)
		if !ok || !graphir.ValidName(string(s)) {
			return nil, c.errorf("item_var must be a name matching [a-z_][a-z0-9_]*, got %s", describe(itemVar))
		}
		n.Map.ItemVar = string(s)
	}
	if empty := vals[8]; !isNone(empty) {
		s, ok := empty.(starlark.String)
		if !ok {
			return nil, c.errorf("empty must be \"run\" or \"skip\", got %s", describe(empty))
		}
		if err := oneOf("empty", string(s), "run", "skip"); err != nil {
			return nil, c.errorf("%v", err)
		}
		n.Map.EmptySkip = s == "skip"
	}
	if !isNone(vals[9]) {
		if n.Map.MaxItems, err = c.intAtLeast("max_items", vals[9], 1); err != nil {
			return nil, err
		}
	}
	if err := c.common(n, maxVisits, nil, nil, timeout, join); err != nil {
		return nil, err
	}
	id := c.b.AddStep(n)
	if err := c.b.SetBody(id, ids); err != nil {
		return nil, c.errorf("%v", err)
	}
	return &Step{b: c.b, n: c.b.Node(id), name: n.Name, kind: "map"}, nil
}

// Parameter names, in order; "?" marks an optional one.
var (
	routerParams = []string{"name", "by?", "routes?", "cases?", "default?", "max_visits?", "join?", "llm?", "model?"}
	loopParams   = []string{"name", "body?", "until?", "max_iterations?", "max_visits?", "join?", "timeout?", "exhausted?"}
	mapParams    = []string{"name", "over?", "body?", "concurrency?", "item_var?", "max_visits?", "join?", "timeout?", "empty?", "max_items?"}
)
