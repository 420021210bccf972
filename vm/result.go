package vm

// This file encodes a Result as the JSON of SPEC §7.

import (
	"encoding/json"
	"fmt"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
)

// MarshalJSON encodes the result in the shape of SPEC §7, with these
// additions: "path_total" (path keeps the latest entries only), per step
// "duration_ms", and where they apply "code", "truncated", "log",
// "iterations"/"exhausted" (loops), "items" (maps) and "child" (the child
// flow's run).
func (r *Result) MarshalJSON() ([]byte, error) {
	o, err := r.object()
	if err != nil {
		return nil, err
	}
	return json.Marshal(o)
}

func (r *Result) object() (stdlib.Object, error) {
	add := func(o *stdlib.Object, name string, v any) { *o = append(*o, stdlib.Member{Name: name, Value: v}) }
	var o stdlib.Object
	add(&o, "run_id", r.RunID)
	add(&o, "flow", r.Flow)
	add(&o, "file", r.File)
	add(&o, "status", string(r.Status))
	if r.Error == nil {
		add(&o, "error", nil)
	} else {
		var e stdlib.Object
		add(&e, "code", r.Error.Code)
		add(&e, "step", r.Error.Step)
		add(&e, "message", r.Error.Msg)
		add(&o, "error", e)
	}
	out, err := jsonValue(r.Output)
	if err != nil {
		return nil, fmt.Errorf("output: %v", err)
	}
	add(&o, "output", out)
	add(&o, "path", r.Path)
	add(&o, "path_total", r.PathTotal)
	add(&o, "duration_ms", millis(r.Duration))
	var steps stdlib.Object
	for _, s := range r.Steps {
		var so stdlib.Object
		add(&so, "status", string(s.Status))
		add(&so, "visits", s.Visits)
		v, err := jsonValue(s.Output)
		if err != nil {
			return nil, fmt.Errorf("step %s output: %v", s.Name, err)
		}
		add(&so, "output", v)
		if s.Error == "" {
			add(&so, "error", nil)
		} else {
			add(&so, "error", s.Error)
			add(&so, "code", s.Code)
		}
		add(&so, "duration_ms", millis(s.Duration))
		if s.Truncated {
			add(&so, "truncated", true)
		}
		if len(s.Log) > 0 {
			add(&so, "log", s.Log)
		}
		switch s.Kind {
		case graphir.KindLoop:
			add(&so, "iterations", s.Iterations)
			add(&so, "exhausted", s.Exhausted)
		case graphir.KindMap:
			add(&so, "items", s.Items)
		}
		if s.Child != nil {
			child, err := s.Child.object()
			if err != nil {
				return nil, err
			}
			add(&so, "child", child)
		}
		add(&steps, s.Name, so)
	}
	if steps == nil {
		steps = stdlib.Object{}
	}
	add(&o, "steps", steps)
	return o, nil
}

func jsonValue(v starlark.Value) (any, error) {
	if v == nil {
		return nil, nil
	}
	return stdlib.ToGo(v)
}

func millis(d time.Duration) json.Number {
	return json.Number(fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)))
}
