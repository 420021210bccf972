package vm

// This file defines the events a run reports as it goes.

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/stdlib"
)

// EventType names what happened.
type EventType string

const (
	RunStarted    EventType = "run_started"
	RunFinished   EventType = "run_finished"
	StepStarted   EventType = "step_started"
	StepFinished  EventType = "step_finished"
	StepPruned    EventType = "step_skipped"
	StepRetrying  EventType = "step_retrying"
	StepLog       EventType = "step_log"
	LoopIteration EventType = "loop_iteration" // an iteration finished and until was consulted
	MapItem       EventType = "map_item"       // one item of a map finished
)

// Event is one thing that happened in a run.
type Event struct {
	Type EventType
	Time time.Time
	// Flow is the chain of subflow steps leading to the run that emitted the
	// event, empty for the top-level run.
	Flow []string
	// Scope locates a step inside loop iterations and map items, e.g.
	// "polish#2" or "per_file[3]", outermost first.
	Scope    []string
	Step     string
	Kind     string
	Visit    int
	Attempt  int           // step_retrying: the attempt about to start (2 = first retry)
	Status   string        // step_finished, run_finished
	Code     string        // the error code, when failed
	Error    string        // the error message, when failed
	Duration time.Duration // step_finished, run_finished
	Message  string        // step_log: the printed line; loop_iteration: until's feedback
	Output   starlark.Value
	RunID    string
	FlowName string // run_started, run_finished: the flow's name
	Index    int    // map_item: the item's index; loop_iteration: the iteration (1-based)
	Stop     bool   // loop_iteration: until said stop
}

// Where returns the step's location for display: "per_file[3] › check_one".
func (e *Event) Where() string {
	parts := append(append([]string(nil), e.Flow...), e.Scope...)
	if e.Step != "" {
		parts = append(parts, e.Step)
	}
	return strings.Join(parts, " › ")
}

// MarshalJSON encodes an event as one JSON object (the --events format).
func (e Event) MarshalJSON() ([]byte, error) {
	o := stdlib.Object{{Name: "event", Value: string(e.Type)}, {Name: "time", Value: e.Time.UTC().Format(time.RFC3339Nano)}}
	add := func(name string, v any) { o = append(o, stdlib.Member{Name: name, Value: v}) }
	if e.RunID != "" {
		add("run_id", e.RunID)
	}
	if e.FlowName != "" {
		add("flow", e.FlowName)
	}
	if len(e.Flow) > 0 {
		add("subflow", e.Flow)
	}
	if len(e.Scope) > 0 {
		add("scope", e.Scope)
	}
	if e.Step != "" {
		add("step", e.Step)
	}
	if e.Kind != "" {
		add("kind", e.Kind)
	}
	if e.Visit > 0 {
		add("visit", e.Visit)
	}
	if e.Attempt > 0 {
		add("attempt", e.Attempt)
	}
	switch e.Type {
	case MapItem, LoopIteration:
		add("index", e.Index)
	}
	if e.Type == LoopIteration {
		add("stop", e.Stop)
	}
	if e.Status != "" {
		add("status", e.Status)
	}
	if e.Code != "" {
		add("code", e.Code)
	}
	if e.Error != "" {
		add("error", e.Error)
	}
	if e.Type == StepFinished || e.Type == RunFinished {
		add("duration_ms", json.Number(strconv.FormatFloat(float64(e.Duration)/float64(time.Millisecond), 'f', 3, 64)))
	}
	if e.Message != "" {
		add("message", e.Message)
	}
	if e.Output != nil {
		if v, err := stdlib.ToGo(e.Output); err == nil {
			add("output", v)
		}
	}
	return json.Marshal(o)
}
