package temporal

// This file reads back what a run on Temporal sends as JSON: a result
// object (the workflow's result, a child workflow's result for its
// parent's step record) and an event (the --events format, from the
// workflow's event log), into the VM's types, so the command line shows
// them as it shows a local run's.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

type jsonError struct {
	Code    string     `json:"code"`
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
	Flow        string          `json:"flow"`
	File        string          `json:"file"`
	Status      vm.Status       `json:"status"`
	Error       *jsonError      `json:"error"`
	Output      json.RawMessage `json:"output"`
	Path        []string        `json:"path"`
	PathTotal   int             `json:"path_total"`
	DurationMS  float64         `json:"duration_ms"`
	Usage       *model.Usage    `json:"usage"`
	Warnings    []string        `json:"warnings"`
	Grants      []vm.Grant      `json:"grants"`
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
	Status        vm.StepStatus   `json:"status"`
	Visits        int             `json:"visits"`
	Output        json.RawMessage `json:"output"`
	Error         *string         `json:"error"`
	Code          string          `json:"code"`
	Trace         []string        `json:"trace"`
	DurationMS    float64         `json:"duration_ms"`
	Truncated     bool            `json:"truncated"`
	Log           []string        `json:"log"`
	Model         string          `json:"model"`
	Usage         model.Usage     `json:"usage"`
	Answer        string          `json:"answer"`
	Agent         *vm.AgentRecord `json:"agent"`
	Iterations    *int            `json:"iterations"`
	Exhausted     bool            `json:"exhausted"`
	StoppedReason *string         `json:"stopped_reason"`
	Items         *int            `json:"items"`
	Child         json.RawMessage `json:"child"`
}

// DecodeResult reads a result object (the JSON of [vm.Result.MarshalJSON])
// back into a result: its steps in their order, child flows' runs with
// their own steps. A step record's kind is not in the JSON: loops, maps
// and child flows are told by their members, every other step is a task.
func DecodeResult(b []byte) (*vm.Result, error) {
	var j jsonResult
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("result: %v", err)
	}
	res := &vm.Result{RunID: j.RunID, ResumedFrom: j.ResumedFrom, Flow: j.Flow, File: j.File, Status: j.Status,
		Error: j.Error.graphir(), Path: j.Path, PathTotal: j.PathTotal, Duration: millis(j.DurationMS),
		Warnings: j.Warnings, Grants: j.Grants, Findings: j.Findings}
	var err error
	if res.Output, err = value(j.Output); err != nil {
		return nil, fmt.Errorf("result output: %v", err)
	}
	if j.Usage != nil {
		res.Usage = *j.Usage
	}
	for _, a := range j.Approvals {
		res.Pending = append(res.Pending, &vm.Pending{Step: a.Step, Scope: a.Scope, Visit: a.Visit, Message: a.Message})
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
	if res.ModelCalls == 0 && res.Usage.Total() > 0 {
		res.ModelCalls = 1
	}
	return res, nil
}

func (js *jsonStep) record(name string) (*vm.StepRecord, error) {
	s := &vm.StepRecord{Name: name, Kind: graphir.KindTask, Status: js.Status, Visits: js.Visits, Code: js.Code,
		Trace: js.Trace, Duration: millis(js.DurationMS), Truncated: js.Truncated, Log: js.Log, Model: js.Model,
		Usage: js.Usage, Answer: js.Answer, Agent: js.Agent, Exhausted: js.Exhausted}
	if js.Error != nil {
		s.Error = *js.Error
	}
	var err error
	if len(js.Output) > 0 && string(js.Output) != "null" {
		if s.Output, err = value(js.Output); err != nil {
			return nil, fmt.Errorf("result step %s output: %v", name, err)
		}
	} else if js.Status == vm.StepSucceeded {
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

// value is a flow value from JSON; absent is None.
func value(b json.RawMessage) (starlark.Value, error) {
	if len(b) == 0 {
		return starlark.None, nil
	}
	return stdlib.FromStoredJSON(b)
}

func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

type jsonEvent struct {
	Event      vm.EventType    `json:"event"`
	Time       time.Time       `json:"time"`
	RunID      string          `json:"run_id"`
	Flow       string          `json:"flow"`
	Subflow    []string        `json:"subflow"`
	Scope      []string        `json:"scope"`
	Step       string          `json:"step"`
	Kind       string          `json:"kind"`
	Visit      int             `json:"visit"`
	Attempt    int             `json:"attempt"`
	Index      int             `json:"index"`
	Replayed   bool            `json:"replayed"`
	Stop       bool            `json:"stop"`
	Exhausted  bool            `json:"exhausted"`
	Status     string          `json:"status"`
	Code       string          `json:"code"`
	Error      string          `json:"error"`
	Trace      []string        `json:"trace"`
	Model      string          `json:"model"`
	Usage      model.Usage     `json:"usage"`
	Tool       string          `json:"tool"`
	Arguments  string          `json:"arguments"`
	Result     string          `json:"result"`
	DurationMS float64         `json:"duration_ms"`
	BackoffMS  float64         `json:"backoff_ms"`
	Message    string          `json:"message"`
	Output     json.RawMessage `json:"output"`
}

// DecodeEvent reads an event in the --events format back into an event.
func DecodeEvent(b []byte) (vm.Event, error) {
	var j jsonEvent
	if err := json.Unmarshal(b, &j); err != nil {
		return vm.Event{}, fmt.Errorf("event: %v", err)
	}
	ev := vm.Event{Type: j.Event, Time: j.Time, RunID: j.RunID, FlowName: j.Flow, Flow: j.Subflow, Scope: j.Scope,
		Step: j.Step, Kind: j.Kind, Visit: j.Visit, Attempt: j.Attempt, Index: j.Index, Replayed: j.Replayed,
		Stop: j.Stop, Exhausted: j.Exhausted, Status: j.Status, Code: j.Code, Error: j.Error, Trace: j.Trace,
		Model: j.Model, Usage: j.Usage, Tool: j.Tool, Args: j.Arguments, Result: j.Result,
		Duration: millis(j.DurationMS), Message: j.Message}
	if ev.Type == vm.StepRetrying {
		ev.Duration = millis(j.BackoffMS)
	}
	if len(j.Output) > 0 {
		v, err := stdlib.FromStoredJSON(j.Output)
		if err != nil {
			return vm.Event{}, fmt.Errorf("event output: %v", err)
		}
		ev.Output = v
	}
	return ev, nil
}
