package vm

// This file defines the events a run reports as it goes.

import (
	"strconv"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
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
	ExitHandled   EventType = "exit_handler"   // the exit handler finished (status, code, error)
	ModelCall     EventType = "model_call"     // a model call ended (llm step, LLM router, judge)
	ToolCalled    EventType = "tool_call"      // an agent's tool call ended (tool, arguments, bounded result)
	ToolGranted   EventType = "tool_granted"   // a tool of the flow's pool was granted to agents
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
	Trace    []string      // step_finished: the backtrace of a runtime error in Starlark
	Duration time.Duration // step_finished, run_finished
	Message  string        // step_log: the printed line; loop_iteration: until's feedback
	Output   starlark.Value
	RunID    string
	FlowName string // run_started, run_finished: the flow's name
	Index    int    // map_item: the item's index; loop_iteration: the iteration (1-based)
	Stop     bool   // loop_iteration: until said stop
	Replayed bool   // step_finished: the outcome was read back from the run's record (resume)
	// Exhausted (loop_iteration): this was the last allowed iteration and
	// until did not say stop.
	Exhausted bool
	Model     string      // model_call: the model id
	Usage     model.Usage // model_call: the tokens spent
	// tool_call, tool_granted: the tool, its arguments (JSON) and its
	// result (bounded); Index is the agent's turn.
	Tool   string
	Args   string
	Result string
}

// Where returns the step's location for display: "per_file[3] › check_one".
func (e *Event) Where() string { return string(e.AppendWhere(nil)) }

// AppendWhere appends the step's location, as Where returns it, to b.
func (e *Event) AppendWhere(b []byte) []byte {
	n := 0
	add := func(s string) {
		if n > 0 {
			b = append(b, " › "...)
		}
		b = append(b, s...)
		n++
	}
	for _, s := range e.Flow {
		add(s)
	}
	for _, s := range e.Scope {
		add(s)
	}
	if e.Step != "" {
		add(e.Step)
	}
	return b
}

// MarshalJSON encodes an event as one JSON object (the --events format).
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends the event to b as one JSON object on one line (the
// --events format, without the newline), writing each member once. An
// output that is not JSON data is left out.
func (e *Event) AppendJSON(b []byte) []byte {
	var enc EventEncoder
	return enc.Append(b, e)
}

// EventEncoder writes events as Event.AppendJSON does, faster for a stream
// of them: it keeps the formatted date and time of the current second. It
// is not safe for concurrent use.
type EventEncoder struct {
	sec    int64  // the Unix second prefix holds, when prefix is set
	prefix []byte // "2006-01-02T15:04:05" of sec, in UTC
}

// Append appends ev to b as one JSON object, without the newline.
func (enc *EventEncoder) Append(b []byte, e *Event) []byte {
	b = append(b, `{"event":`...)
	b = stdlib.AppendJSONString(b, string(e.Type))
	b = append(b, `,"time":"`...)
	b = enc.appendTime(b, e.Time)
	b = append(b, '"')
	if e.RunID != "" {
		b = appendMember(b, "run_id", e.RunID)
	}
	if e.FlowName != "" {
		b = appendMember(b, "flow", e.FlowName)
	}
	if len(e.Flow) > 0 {
		b = appendStrings(append(b, `,"subflow":`...), e.Flow)
	}
	if len(e.Scope) > 0 {
		b = appendStrings(append(b, `,"scope":`...), e.Scope)
	}
	if e.Step != "" {
		b = appendMember(b, "step", e.Step)
	}
	if e.Kind != "" {
		b = appendMember(b, "kind", e.Kind)
	}
	if e.Visit > 0 {
		b = strconv.AppendInt(append(b, `,"visit":`...), int64(e.Visit), 10)
	}
	if e.Attempt > 0 {
		b = strconv.AppendInt(append(b, `,"attempt":`...), int64(e.Attempt), 10)
	}
	switch e.Type {
	case MapItem, LoopIteration, ToolCalled, ToolGranted:
		b = strconv.AppendInt(append(b, `,"index":`...), int64(e.Index), 10)
	}
	if e.Replayed {
		b = append(b, `,"replayed":true`...)
	}
	if e.Type == LoopIteration {
		b = strconv.AppendBool(append(b, `,"stop":`...), e.Stop)
		if e.Exhausted {
			b = append(b, `,"exhausted":true`...)
		}
	}
	if e.Status != "" {
		b = appendMember(b, "status", e.Status)
	}
	if e.Code != "" {
		b = appendMember(b, "code", e.Code)
	}
	if e.Error != "" {
		b = appendMember(b, "error", e.Error)
	}
	if len(e.Trace) > 0 {
		b = appendStrings(append(b, `,"trace":`...), e.Trace)
	}
	if e.Type == ModelCall {
		b = appendMember(b, "model", e.Model)
		b = strconv.AppendInt(append(b, `,"usage":{"prompt_tokens":`...), int64(e.Usage.PromptTokens), 10)
		b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(e.Usage.CompletionTokens), 10)
		b = append(b, '}')
	}
	if e.Tool != "" {
		b = appendMember(b, "tool", e.Tool)
	}
	if e.Type == ToolCalled {
		b = appendMember(b, "arguments", e.Args)
		b = appendMember(b, "result", e.Result)
	}
	if e.Type == StepFinished || e.Type == RunFinished || e.Type == ModelCall {
		b = appendMillis(append(b, `,"duration_ms":`...), e.Duration)
	}
	if e.Message != "" {
		b = appendMember(b, "message", e.Message)
	}
	if e.Output != nil {
		mark := len(b)
		var err error
		if b, err = stdlib.AppendJSON(append(b, `,"output":`...), e.Output, "", 0); err != nil {
			b = b[:mark]
		}
	}
	return append(b, '}')
}

// appendTime appends t in UTC as time.RFC3339Nano formats it.
func (enc *EventEncoder) appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	if sec := t.Unix(); enc.prefix == nil || sec != enc.sec {
		enc.sec = sec
		enc.prefix = t.Truncate(time.Second).AppendFormat(enc.prefix[:0], "2006-01-02T15:04:05")
	}
	b = append(b, enc.prefix...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

// appendMember appends ,"name":"value" with value escaped.
func appendMember(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return stdlib.AppendJSONString(b, value)
}

// appendStrings appends a JSON array of strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = stdlib.AppendJSONString(b, s)
	}
	return append(b, ']')
}

// appendMillis appends d in milliseconds with three decimals, as
// strconv.AppendFloat(b, float64(d)/1e6, 'f', 3, 64) does.
func appendMillis(b []byte, d time.Duration) []byte {
	if d < 0 || d >= 1e15 || d%1000 == 500 {
		// A tie (or a duration past the exactness of the integer
		// path): the float's own rounding decides.
		return strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	// Not a tie: the nearest microsecond is the float's rounding too (the
	// division's error is far below the distance to a tie).
	us := (int64(d) + 500) / 1000
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}
