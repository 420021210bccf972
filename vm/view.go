package vm

// This file defines what expressions and functions see of a run: the view
// that is `r` in functions and the implicit root of string expressions
// (docs/language.md), and the value until= functions receive (docs/language.md).

import (
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
)

// view is the run as seen from one step in one frame. Reading a step that
// has not completed on the path taken is an unmetError.
type view struct {
	r        *run
	f        *frame
	self     *graphir.Node // nil outside a step (the flow's output)
	visitsFn *starlark.Builtin
	statusFn *starlark.Builtin
	gen      *evalGen // whose evaluations read the view
}

var _ starlark.HasAttrs = (*view)(nil)

func (v *view) String() string        { return "<run view>" }
func (v *view) Type() string          { return "run" }
func (v *view) Freeze()               {}
func (v *view) Truth() starlark.Bool  { return true }
func (v *view) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: run") }
func (v *view) AttrNames() []string {
	names := []string{"inputs", "self", "visits", "status"}
	return append(names, v.r.g.StepNames()...)
}

// unmetError is the error of reading a step that has not completed on the
// path taken (dependency_unmet).
type unmetError struct {
	step string // the step whose value was read
}

func (e *unmetError) Error() string {
	return fmt.Sprintf("step %q has not completed on the path taken", e.step)
}

// errGone is what an abandoned evaluation reads.
var errGone = fmt.Errorf("the run is no longer waiting for this evaluation")

func (v *view) Attr(name string) (starlark.Value, error) {
	if !v.r.lock(v.gen) {
		return nil, errGone
	}
	defer v.r.mu.Unlock()
	return v.attr(name)
}

// attr is Attr with the run locked.
func (v *view) attr(name string) (starlark.Value, error) {
	// Names bound by an enclosing loop or map come first inside bodies.
	for f := v.f; f != nil && f.scope != graphir.None; f = f.parent {
		switch f.kind {
		case graphir.KindLoop:
			if name == "loop" {
				return f.loopValue(), nil
			}
		case graphir.KindMap:
			switch name {
			case f.itemVar:
				return f.item, nil
			case "index":
				return starlark.MakeInt(f.index), nil
			}
		}
	}
	switch name {
	case "inputs":
		return v.r.inputs, nil
	case "self":
		if v.self == nil {
			return nil, fmt.Errorf("self is only defined in a step")
		}
		st := v.f.state(v.r, v.self.ID)
		return stdlib.NewMap([]string{"name", "visits"}, []starlark.Value{starlark.String(v.self.Name), starlark.MakeInt(int(st.visits))}), nil
	case "visits":
		return v.visitsFn, nil
	case "status":
		return v.statusFn, nil
	case "run":
		if !v.r.exiting {
			return nil, fmt.Errorf("run is only defined in the exit handler (flow(on_exit=))")
		}
		return v.r.runValue(), nil
	case "args":
		if v.r.toolArgs == nil {
			return nil, fmt.Errorf("args is only defined in a tool's templates")
		}
		return v.r.toolArgs, nil
	case "loop", "item", "index":
		return nil, fmt.Errorf("%s is only defined inside a %s body", name, map[string]string{"loop": "loop", "item": "map", "index": "map"}[name])
	}
	if v.r.attemptOf != nil && name == v.r.attemptOf.Name {
		return v.r.attempt, nil
	}
	n := v.r.g.Node(name)
	if n == nil || !n.IsStep() {
		return nil, v.noStep("", name)
	}
	if rec := v.r.recordValue(v.f, n); rec != nil {
		return rec, nil
	}
	return nil, &unmetError{step: name}
}

// lockStep reads the one argument of visits(name) or status(name), a step
// name, and takes the run's lock; the caller unlocks it once the error is
// nil.
func (v *view) lockStep(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (*graphir.Node, error) {
	var name string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &name); err != nil {
		return nil, err
	}
	if !v.r.lock(v.gen) {
		return nil, errGone
	}
	n := v.r.g.Node(name)
	if n == nil || !n.IsStep() {
		v.r.mu.Unlock()
		return nil, v.noStep(b.Name()+": ", name)
	}
	return n, nil
}

// visits implements visits(name): how many times the step has been entered
// (in the current iteration or item, for steps of that body).
func (v *view) visits(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	n, err := v.lockStep(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	defer v.r.mu.Unlock()
	if f := v.f.frameFor(n); f != nil {
		return starlark.MakeInt(int(f.state(v.r, n.ID).visits)), nil
	}
	return starlark.MakeInt(v.r.recs[n.ID].Visits), nil
}

// status implements status(name): how the step's latest visit ended, as
// one of "succeeded", "failed", "skipped", "cancelled" or "not_run". It
// never fails for a step that has not run, so it is how a teardown asks
// about a branch that may not have.
func (v *view) status(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	n, err := v.lockStep(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	defer v.r.mu.Unlock()
	return starlark.String(v.r.stepStatus(v.f, n)), nil
}

// stepStatus is what status() says of step n seen from frame f. Inside a
// body it is the step's state in this iteration or item; elsewhere the
// step's record. A step still running has no outcome yet: "not_run".
func (r *run) stepStatus(f *frame, n *graphir.Node) StepStatus {
	if sf := f.frameFor(n); sf != nil && sf.scope != graphir.None {
		switch sf.state(r, n.ID).last {
		case lastOK:
			return StepSucceeded
		case lastFailed:
			return StepFailed
		case lastSkipped:
			return StepSkipped
		case lastCancelled:
			return StepCancelled
		}
		return StepNotRun
	}
	if s := r.recs[n.ID].Status; s != StepRunning {
		return s
	}
	return StepNotRun
}

// recordValue is what an expression sees for step n from frame f: its
// latest output if it succeeded, a record with `error` and `code` if it
// failed, nil if it has not completed on the path taken. A step inside a
// loop or map body is not readable from outside it (nil).
func (r *run) recordValue(f *frame, n *graphir.Node) starlark.Value {
	sf := f.frameFor(n)
	if sf == nil {
		return nil
	}
	st := sf.state(r, n.ID)
	if !st.done {
		return nil
	}
	return st.value
}

// outcomeValue builds what expressions see for a finished step: its
// output when it succeeded; else its task fields (if any) with `error` and
// `code`.
func outcomeValue(o *outcome) starlark.Value {
	if o.ok {
		return o.value
	}
	if o.task {
		if v := failedTask(o.value, o.err, o.failCode()); v != nil {
			return v
		}
	}
	return stdlib.NewMap([]string{"error", "code"}, []starlark.Value{starlark.String(o.err), starlark.String(o.failCode())})
}

// failedTask is task output v with its error and code set, or nil if v is
// not a task's output map. A task that did not succeed carries why in its
// output, for expressions and in the result alike.
func failedTask(v starlark.Value, err string, code codes.Code) starlark.Value {
	m, isMap := v.(*stdlib.Map)
	if !isMap {
		return nil
	}
	return m.WithValues(func(k string, v starlark.Value) starlark.Value {
		switch k {
		case "error":
			return starlark.String(err)
		case "code":
			return starlark.String(code)
		}
		return v
	})
}

// taskOutput is the output of a task or shell step that succeeded or
// has not yet been told why it failed.
func taskOutput(stdout, stderr string, code int) *stdlib.Map {
	return TaskOutput(stdout, stderr, code, starlark.None, starlark.None)
}

// TaskOutput is the record of a task or shell step as expressions and
// results see it: stdout, stderr, exit_code, error and code, and text,
// which is stdout without its last line ending ("3\n" is "3"), so that a
// template can use a command's answer as it is read. errMsg and code are
// None unless the step failed.
func TaskOutput(stdout, stderr string, exitCode int, errMsg, code starlark.Value) *stdlib.Map {
	return stdlib.NewMap(
		[]string{"stdout", "stderr", "exit_code", "error", "code", "text"},
		[]starlark.Value{starlark.String(stdout), starlark.String(stderr), starlark.MakeInt(exitCode), errMsg, code, starlark.String(trimLineEnd(stdout))})
}

// trimLineEnd is s without one trailing "\n" or "\r\n".
func trimLineEnd(s string) string {
	s, ok := strings.CutSuffix(s, "\n")
	if ok {
		s = strings.TrimSuffix(s, "\r")
	}
	return s
}

// TaskStdout returns the stdout of v when v is a task or shell step's
// record (see [TaskOutput]), so a front end can show what the command
// printed rather than the whole record.
func TaskStdout(v starlark.Value) (string, bool) {
	m, ok := v.(*stdlib.Map)
	if !ok || m.Len() != 6 {
		return "", false
	}
	for _, k := range []string{"stderr", "exit_code", "error", "code", "text"} {
		if _, found := m.Lookup(k); !found {
			return "", false
		}
	}
	out, _ := m.Lookup("stdout")
	s, ok := out.(starlark.String)
	return string(s), ok
}

// history is the read-only list of earlier iterations' outputs that until
// sees. Iterations only append, so one backing slice serves every
// iteration without copying.
type history struct{ elems []starlark.Value }

var _ starlark.Indexable = history{}

func (h history) String() string {
	l := starlark.NewList(h.elems)
	return l.String()
}
func (h history) Type() string               { return "list" }
func (h history) Freeze()                    {}
func (h history) Truth() starlark.Bool       { return len(h.elems) > 0 }
func (h history) Hash() (uint32, error)      { return 0, fmt.Errorf("unhashable: list") }
func (h history) Len() int                   { return len(h.elems) }
func (h history) Index(i int) starlark.Value { return h.elems[i] }
func (h history) Iterate() starlark.Iterator { return &histIter{h: h} }
func (h history) Slice(start, end, step int) starlark.Value {
	var out []starlark.Value
	for i := start; (step > 0 && i < end) || (step < 0 && i > end); i += step {
		out = append(out, h.elems[i])
	}
	l := starlark.NewList(out)
	l.Freeze()
	return l
}

type histIter struct {
	h history
	i int
}

func (it *histIter) Next(p *starlark.Value) bool {
	if it.i >= len(it.h.elems) {
		return false
	}
	*p = it.h.elems[it.i]
	it.i++
	return true
}
func (it *histIter) Done() {}

// noStep is the error for a name that is no step, prefixed by the
// builtin's name (if any), with the nearest step name as a suggestion.
func (v *view) noStep(prefix, name string) error {
	return errors.New(fmt.Sprintf("%sno step named %q", prefix, name) + spell.Suggest(name, v.r.g.StepNames()))
}
