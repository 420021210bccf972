package vm

// This file encodes a Result as the JSON of docs/cli.md, and reads it
// back.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
)

// MarshalJSON encodes the result in the shape of docs/cli.md, with these
// additions: "path_total" (path keeps the latest entries only), per step
// "duration_ms", and where they apply "code", "trace", "truncated", "log",
// "iterations"/"exhausted"/"stopped_reason" (loops), "items" (maps) and "child" (the child
// flow's run).
func (r *Result) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil, "") }

// WriteJSON writes the result as MarshalJSON encodes it, indented by indent
// per level (compact when indent is ""), followed by a newline. The result
// is encoded in full before anything is written, so an error writes
// nothing.
func (r *Result) WriteJSON(w io.Writer, indent string) error {
	b, err := r.AppendJSON(nil, indent)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// AppendJSON appends the result's JSON to b in one pass: the bytes
// json.MarshalIndent(r, "", indent) would give (json.Marshal with indent
// ""), without building an intermediate tree or re-indenting.
func (r *Result) AppendJSON(b []byte, indent string) ([]byte, error) {
	e := resultEncoder{b: r.grow(b, indent), indent: indent}
	if err := e.result(r, 0); err != nil {
		return b, err
	}
	return e.b, nil
}

// AppendSoFar appends the record so far of a run that has not ended, or
// whose result was not recorded, as skein show --json prints it
// (docs/cli.md): the members of the result object such a run knows,
// from r's RunID, Flow, File, Status, ResumedFrom, Error, Pending, Output,
// Path and Steps, each step's Status, Visits, Output, Error and Code.
// With timed, also path_total and each step's duration_ms, which a
// Temporal workflow folds from its events and a store's journal does not
// have. Indent is as for [Result.AppendJSON].
func (r *Result) AppendSoFar(b []byte, indent string, timed bool) ([]byte, error) {
	e := resultEncoder{b: r.grow(b, indent), indent: indent, soFar: true, timed: timed}
	if err := e.result(r, 0); err != nil {
		return b, err
	}
	return e.b, nil
}

// grow makes room in b for r's JSON, indented by indent, at once: grown
// as it filled, the 15 MB of a result of 100,000 steps would double its
// way there, copying itself into as much new memory again (and keeping
// the copies it outgrew until they are collected), and outputs of
// megabytes would be escaped again at each doubling. The room is a guess:
// the outputs as compact JSON, and per step and path entry its name and
// what a succeeded step writes around it (its keys, status, visits and
// duration; indented, a space after six colons and seven lines at levels
// 2 and 3, and a path entry's line at level 2). A failed step's error or
// trace makes the buffer grow once more.
func (r *Result) grow(b []byte, indent string) []byte {
	n := int64(512)
	add := func(v starlark.Value) {
		if v != nil {
			n += stdlib.JSONSize(v, math.MaxInt64)
		}
	}
	add(r.Output)
	step, entry := int64(80), int64(3)
	if indent != "" {
		step += int64(13 + 19*len(indent))
		entry += int64(1 + 2*len(indent))
	}
	for _, s := range r.Steps {
		add(s.Output)
		n += step + int64(len(s.Name))
		if s.Output == nil {
			n += 4 // null
		}
	}
	if r.OnExit != nil {
		add(r.OnExit.Output)
		n += step
	}
	for _, name := range r.Path {
		n += entry + int64(len(name))
	}
	return slices.Grow(b, int(n))
}

// resultEncoder is the one encoder of result objects: a run's result
// ([Result.AppendJSON]) and the record so far of a run still going
// ([Result.AppendSoFar]), whoever builds it (the VM, the run store's
// journal, a Temporal workflow's state).
type resultEncoder struct {
	b      []byte
	indent string
	n      []int // members written so far, per open object
	// soFar: a record so far, whose steps have their status, visits,
	// output, error and code only; timed: with path_total and the
	// steps' duration_ms.
	soFar, timed bool
}

func (e *resultEncoder) open() {
	e.b = append(e.b, '{')
	e.n = append(e.n, 0)
}

// close ends the object opened last, at nesting level.
func (e *resultEncoder) close(level int) {
	if e.n[len(e.n)-1] > 0 {
		e.newline(level)
	}
	e.n = e.n[:len(e.n)-1]
	e.b = append(e.b, '}')
}

func (e *resultEncoder) newline(level int) {
	if e.indent == "" {
		return
	}
	e.b = append(e.b, '\n')
	for range level {
		e.b = append(e.b, e.indent...)
	}
}

// key starts a member of the innermost open object, at nesting level.
func (e *resultEncoder) key(level int, name string) {
	top := &e.n[len(e.n)-1]
	if *top > 0 {
		e.b = append(e.b, ',')
	}
	*top++
	e.newline(level)
	e.b = stdlib.AppendJSONString(e.b, name)
	e.b = append(e.b, ':')
	if e.indent != "" {
		e.b = append(e.b, ' ')
	}
}

func (e *resultEncoder) str(level int, name, v string) {
	e.key(level, name)
	e.b = stdlib.AppendJSONString(e.b, v)
}

func (e *resultEncoder) int(level int, name string, v int) {
	e.key(level, name)
	e.b = strconv.AppendInt(e.b, int64(v), 10)
}

func (e *resultEncoder) bool(level int, name string, v bool) {
	e.key(level, name)
	e.b = strconv.AppendBool(e.b, v)
}

func (e *resultEncoder) null(level int, name string) {
	e.key(level, name)
	e.b = append(e.b, "null"...)
}

// strings writes a member that is a list of strings; a nil list is null,
// as encoding/json writes it.
func (e *resultEncoder) strings(level int, name string, ss []string) {
	e.key(level, name)
	if ss == nil {
		e.b = append(e.b, "null"...)
		return
	}
	if len(ss) == 0 {
		e.b = append(e.b, "[]"...)
		return
	}
	e.b = append(e.b, '[')
	for i, s := range ss {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.newline(level + 1)
		e.b = stdlib.AppendJSONString(e.b, s)
	}
	e.newline(level)
	e.b = append(e.b, ']')
}

// runError writes a run's error at nesting level: code, step, message,
// and where they apply the Starlark backtrace ("trace") and the routed
// failure that began the path to it ("cause", of the same shape).
func (e *resultEncoder) runError(err *graphir.Error, level int) {
	l := level + 1
	e.open()
	e.str(l, "code", string(err.Code))
	e.str(l, "step", err.Step)
	e.str(l, "message", err.Msg)
	if len(err.Trace) > 0 {
		e.strings(l, "trace", err.Trace)
	}
	if err.Cause != nil {
		e.key(l, "cause")
		e.runError(err.Cause, l)
	}
	e.close(level)
}

// raw writes a member encoded by encoding/json, indented to its level.
func (e *resultEncoder) raw(level int, name string, v any) error {
	e.key(level, name)
	var b []byte
	var err error
	if e.indent == "" {
		b, err = json.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, strings.Repeat(e.indent, level), e.indent)
	}
	if err != nil {
		return err
	}
	e.b = append(e.b, b...)
	return nil
}

// usage writes a "usage" member.
func (e *resultEncoder) usage(level int, u model.Usage) {
	e.key(level, "usage")
	e.open()
	e.int(level+1, "prompt_tokens", u.PromptTokens)
	e.int(level+1, "completion_tokens", u.CompletionTokens)
	if u.CachedTokens > 0 {
		e.int(level+1, "cached_tokens", u.CachedTokens)
	}
	if u.ReasoningTokens > 0 {
		e.int(level+1, "reasoning_tokens", u.ReasoningTokens)
	}
	if u.Attempts > 0 {
		e.int(level+1, "attempts", u.Attempts)
	}
	if u.Cost > 0 {
		e.key(level+1, "cost")
		e.b = strconv.AppendFloat(e.b, u.Cost, 'g', -1, 64)
	}
	e.close(level)
}

func (e *resultEncoder) result(r *Result, level int) error {
	l := level + 1
	e.open()
	e.str(l, "run_id", r.RunID)
	e.str(l, "flow", r.Flow)
	e.str(l, "file", r.File)
	e.str(l, "status", string(r.Status))
	if r.ResumedFrom != "" {
		e.str(l, "resumed_from", r.ResumedFrom)
	}
	if c := r.CancelAsked; c != nil {
		e.key(l, "cancel_requested")
		e.open()
		e.str(l+1, "by", c.By)
		e.str(l+1, "reason", c.Reason)
		e.str(l+1, "at", c.At.UTC().Format(time.RFC3339Nano))
		e.close(l)
	}
	if r.Error == nil {
		e.null(l, "error")
	} else {
		e.key(l, "error")
		e.runError(r.Error, l)
	}
	if len(r.Pending) > 0 {
		e.key(l, "approvals")
		e.b = append(e.b, '[')
		for i, p := range r.Pending {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.newline(l + 1)
			e.open()
			e.str(l+2, "step", p.Step)
			e.strings(l+2, "scope", append(append([]string{}, p.Flow...), p.Scope...))
			e.int(l+2, "visit", p.Visit)
			e.str(l+2, "message", p.Message)
			e.close(l + 1)
		}
		e.newline(l)
		e.b = append(e.b, ']')
	}
	e.key(l, "output")
	var err error
	if e.b, err = stdlib.AppendJSON(e.b, r.Output, e.indent, l); err != nil {
		return fmt.Errorf("output: %v", err)
	}
	e.strings(l, "path", r.Path)
	if e.soFar {
		if e.timed {
			e.int(l, "path_total", r.PathTotal)
		}
		return e.steps(r, l, level)
	}
	e.int(l, "path_total", r.PathTotal)
	e.key(l, "duration_ms")
	e.b = appendMillis(e.b, r.Duration)
	if r.ModelCalls > 0 {
		e.usage(l, r.Usage)
	}
	if len(r.Warnings) > 0 {
		e.strings(l, "warnings", r.Warnings)
	}
	if len(r.Grants) > 0 {
		if err := e.raw(l, "grants", r.Grants); err != nil {
			return err
		}
	}
	if len(r.Findings) > 0 {
		e.strings(l, "findings", r.Findings)
	}
	return e.steps(r, l, level)
}

// steps writes the "steps" member and "on_exit" of the result at nesting
// level, members at l, and closes the result.
func (e *resultEncoder) steps(r *Result, l, level int) error {
	e.key(l, "steps")
	e.open()
	for _, s := range r.Steps {
		e.key(l+1, s.Name)
		if err := e.step(s, l+1); err != nil {
			return err
		}
	}
	e.close(l)
	if r.OnExit != nil {
		e.key(l, "on_exit")
		if err := e.step(r.OnExit, l); err != nil {
			return err
		}
	}
	e.close(level)
	return nil
}

// step writes one step record at nesting level.
func (e *resultEncoder) step(s *StepRecord, level int) error {
	var err error
	sl := level + 1
	e.open()
	e.str(sl, "status", string(s.Status))
	e.int(sl, "visits", s.Visits)
	e.key(sl, "output")
	if e.b, err = stdlib.AppendJSON(e.b, s.Output, e.indent, sl); err != nil {
		return fmt.Errorf("step %s output: %v", s.Name, err)
	}
	if s.Error == "" {
		e.null(sl, "error")
	} else {
		e.str(sl, "error", s.Error)
		e.str(sl, "code", string(s.Code))
	}
	if e.soFar {
		if e.timed {
			e.key(sl, "duration_ms")
			e.b = appendMillis(e.b, s.Duration)
		}
		e.close(level)
		return nil
	}
	if len(s.Trace) > 0 {
		e.strings(sl, "trace", s.Trace)
	}
	e.key(sl, "duration_ms")
	e.b = appendMillis(e.b, s.Duration)
	if s.Truncated {
		e.bool(sl, "truncated", true)
	}
	if len(s.Log) > 0 {
		e.strings(sl, "log", s.Log)
	}
	if s.Model != "" {
		e.str(sl, "model", s.Model)
		e.usage(sl, s.Usage)
	}
	if s.Answer != "" {
		e.str(sl, "answer", s.Answer)
	}
	if s.Agent != nil {
		if err := e.raw(sl, "agent", s.Agent); err != nil {
			return fmt.Errorf("step %s agent: %v", s.Name, err)
		}
	}
	switch s.Kind {
	case graphir.KindLoop:
		e.int(sl, "iterations", s.Iterations)
		e.bool(sl, "exhausted", s.Exhausted)
		if s.StoppedReason == "" {
			e.null(sl, "stopped_reason")
		} else {
			e.str(sl, "stopped_reason", s.StoppedReason)
		}
	case graphir.KindMap:
		e.int(sl, "items", s.Items)
	}
	if s.Child != nil {
		e.key(sl, "child")
		if err := e.result(s.Child, sl); err != nil {
			return err
		}
	}
	e.close(level)
	return nil
}

type jsonError struct {
	Code    codes.Code `json:"code"`
	Step    string     `json:"step"`
	Message string     `json:"message"`
	Trace   []string   `json:"trace"`
	Cause   *jsonError `json:"cause"`
}

func (e *jsonError) graphir() *graphir.Error {
	if e == nil {
		return nil
	}
	return &graphir.Error{Code: e.Code, Step: e.Step, Msg: e.Message, Trace: e.Trace, Cause: e.Cause.graphir()}
}

type jsonResult struct {
	RunID       string          `json:"run_id"`
	ResumedFrom string          `json:"resumed_from"`
	CancelAsked *CancelAsked    `json:"cancel_requested"`
	Flow        string          `json:"flow"`
	File        string          `json:"file"`
	Status      Status          `json:"status"`
	Error       *jsonError      `json:"error"`
	Output      json.RawMessage `json:"output"`
	Path        []string        `json:"path"`
	PathTotal   int             `json:"path_total"`
	DurationMS  float64         `json:"duration_ms"`
	Usage       *model.Usage    `json:"usage"`
	Warnings    []string        `json:"warnings"`
	Grants      []Grant         `json:"grants"`
	Findings    []string        `json:"findings"`
	Approvals   []struct {
		Step    string   `json:"step"`
		Scope   []string `json:"scope"`
		Visit   int      `json:"visit"`
		Message string   `json:"message"`
	} `json:"approvals"`
	Steps  json.RawMessage `json:"steps"`
	OnExit *jsonStep       `json:"on_exit"`
}

type jsonStep struct {
	Status        StepStatus      `json:"status"`
	Visits        int             `json:"visits"`
	Output        json.RawMessage `json:"output"`
	Error         *string         `json:"error"`
	Code          codes.Code      `json:"code"`
	Trace         []string        `json:"trace"`
	DurationMS    float64         `json:"duration_ms"`
	Truncated     bool            `json:"truncated"`
	Log           []string        `json:"log"`
	Model         string          `json:"model"`
	Usage         model.Usage     `json:"usage"`
	Answer        string          `json:"answer"`
	Agent         *AgentRecord    `json:"agent"`
	Iterations    *int            `json:"iterations"`
	Exhausted     bool            `json:"exhausted"`
	StoppedReason *string         `json:"stopped_reason"`
	Items         *int            `json:"items"`
	Child         json.RawMessage `json:"child"`
}

// DecodeResult reads a result object (the JSON of [Result.MarshalJSON])
// back into a result: its steps in their order, child flows' runs with
// their own steps. A step record's kind is not in the JSON: loops, maps
// and child flows are told by their members, every other step is a task.
func DecodeResult(b []byte) (*Result, error) {
	var j jsonResult
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("result: %v", err)
	}
	res := &Result{RunID: j.RunID, ResumedFrom: j.ResumedFrom, CancelAsked: j.CancelAsked, Flow: j.Flow, File: j.File, Status: j.Status,
		Error: j.Error.graphir(), Path: j.Path, PathTotal: j.PathTotal, Duration: millis(j.DurationMS),
		Warnings: j.Warnings, Grants: j.Grants, Findings: j.Findings}
	var err error
	if res.Output, err = storedValue(j.Output); err != nil {
		return nil, fmt.Errorf("result output: %v", err)
	}
	if j.Usage != nil {
		res.Usage = *j.Usage
	}
	for _, a := range j.Approvals {
		res.Pending = append(res.Pending, &Pending{Step: a.Step, Scope: a.Scope, Visit: a.Visit, Message: a.Message})
	}
	if len(j.Steps) > 0 {
		// An object whose member order is the steps' declaration order.
		dec := json.NewDecoder(bytes.NewReader(j.Steps))
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("result steps: %v", err)
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("result steps: %v", err)
			}
			name, _ := t.(string)
			var js jsonStep
			if err := dec.Decode(&js); err != nil {
				return nil, fmt.Errorf("result step %s: %v", name, err)
			}
			s, err := js.record(name)
			if err != nil {
				return nil, err
			}
			res.Steps = append(res.Steps, s)
		}
	}
	if j.OnExit != nil {
		if res.OnExit, err = j.OnExit.record(""); err != nil {
			return nil, err
		}
	}
	for _, s := range res.Steps {
		if s.Model != "" {
			res.ModelCalls++
		}
	}
	if res.ModelCalls == 0 && j.Usage != nil {
		// The calls were in child flows: the result has their usage.
		res.ModelCalls = 1
	}
	return res, nil
}

func (js *jsonStep) record(name string) (*StepRecord, error) {
	s := &StepRecord{Name: name, Kind: graphir.KindTask, Status: js.Status, Visits: js.Visits, Code: js.Code,
		Trace: js.Trace, Duration: millis(js.DurationMS), Truncated: js.Truncated, Log: js.Log, Model: js.Model,
		Usage: js.Usage, Answer: js.Answer, Agent: js.Agent, Exhausted: js.Exhausted}
	if js.Error != nil {
		s.Error = *js.Error
	}
	var err error
	if len(js.Output) > 0 && string(js.Output) != "null" {
		if s.Output, err = storedValue(js.Output); err != nil {
			return nil, fmt.Errorf("result step %s output: %v", name, err)
		}
	} else if js.Status == StepSucceeded {
		s.Output = starlark.None
	}
	switch {
	case js.Iterations != nil:
		s.Kind, s.Iterations = graphir.KindLoop, *js.Iterations
		if js.StoppedReason != nil {
			s.StoppedReason = *js.StoppedReason
		}
	case js.Items != nil:
		s.Kind, s.Items = graphir.KindMap, *js.Items
	case len(js.Child) > 0 && string(js.Child) != "null":
		s.Kind = graphir.KindSubflow
		if s.Child, err = DecodeResult(js.Child); err != nil {
			return nil, fmt.Errorf("step %s child: %v", name, err)
		}
	}
	return s, nil
}

// storedValue is a flow value from JSON; absent is None.
func storedValue(b json.RawMessage) (starlark.Value, error) {
	if len(b) == 0 {
		return starlark.None, nil
	}
	return stdlib.FromStoredJSON(b)
}

// millis is a duration_ms read back, to the nanosecond nearest it.
func millis(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}
