package vm

// This file defines the events a run reports as it goes, their JSON (the
// --events format, docs/cli.md) and how it reads back.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir/codes"
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
	ModelDelta    EventType = "model_delta"    // a piece of a streamed reply (llm step, agent turn; Options.Stream)
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
	Scope []string
	// Items are, on step_started, a short form of the item of each map
	// in Scope ("" for a loop's iteration), so that progress can name
	// items by what they are ("per_file[3: main.go]"); nil outside maps.
	// Not in the JSON form.
	Items    []string
	Step     string
	Kind     string
	Visit    int
	Attempt  int           // step_retrying: the attempt about to start (2 = first retry)
	Status   string        // step_finished, run_finished
	Code     codes.Code    // the error code, when failed
	Error    string        // the error message, when failed
	Trace    []string      // step_finished: the backtrace of a runtime error in Starlark
	Duration time.Duration // step_finished, run_finished; step_retrying: the backoff before the attempt
	Message  string        // step_log: the printed line; loop_iteration: until's feedback; model_delta: the piece of text ("text" in JSON)
	Output   starlark.Value
	RunID    string
	FlowName string // run_started, run_finished: the flow's name
	Index    int    // map_item: the item's index; loop_iteration: the iteration (1-based); model_delta: the agent's turn (0 for an llm step)
	Stop     bool   // loop_iteration: until said stop
	Replayed bool   // step_finished: the outcome was read back from the run's record (resume)
	// Exhausted (loop_iteration): this was the last allowed iteration and
	// until did not say stop.
	Exhausted bool
	Model     string      // model_call: the model id
	Usage     model.Usage // model_call: the tokens spent
	Calls     int         // model_call: the tools an agent's turn called
	// tool_call, tool_granted: the tool, its arguments (JSON) and its
	// result (bounded); Index is the agent's turn.
	Tool   string
	Args   string
	Result string
	// CallID (tool_call): the model's id of the call.
	CallID string
}

// Where returns the step's location for display: "per_file[3] › check_one".
func (e *Event) Where() string { return string(e.AppendWhere(nil)) }

// AppendWhere appends the step's location, as Where returns it, to b.
func (e *Event) AppendWhere(b []byte) []byte {
	if len(e.Flow) == 0 && len(e.Scope) == 0 {
		return append(b, e.Step...) // a step of the top-level run
	}
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
// of them: it keeps the formatted date and time of the current second and
// the escaped step and kind members of the latest steps. It is not safe
// for concurrent use.
type EventEncoder struct {
	sec    int64  // the Unix second prefix holds, when dated
	prefix []byte // "2006-01-02T15:04:05" of sec, in UTC
	dated  bool
	steps  [4]stepMembers
	next   int // the entry of steps to replace next
}

// stepMembers is `,"step":...,"kind":...` of one step and kind.
type stepMembers struct {
	step, kind string
	json       []byte // nil when the entry is empty
}

// eventHead is the start of an event of type t up to its time's first
// digit: `{"event":"step_started","time":"`; "" for a type not listed.
func eventHead(t EventType) string {
	switch t {
	case StepStarted:
		return `{"event":"step_started","time":"`
	case StepFinished:
		return `{"event":"step_finished","time":"`
	case StepPruned:
		return `{"event":"step_skipped","time":"`
	case StepLog:
		return `{"event":"step_log","time":"`
	case LoopIteration:
		return `{"event":"loop_iteration","time":"`
	case MapItem:
		return `{"event":"map_item","time":"`
	}
	return ""
}

// Append appends ev to b as one JSON object, without the newline.
func (enc *EventEncoder) Append(b []byte, e *Event) []byte {
	if head := eventHead(e.Type); head != "" {
		b = append(b, head...)
	} else {
		b = append(b, `{"event":`...)
		b = stdlib.AppendJSONString(b, string(e.Type))
		b = append(b, `,"time":"`...)
	}
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
	if e.Step != "" || e.Kind != "" {
		b = enc.appendStep(b, e.Step, e.Kind)
	}
	if e.Visit > 0 {
		b = strconv.AppendInt(append(b, `,"visit":`...), int64(e.Visit), 10)
	}
	if e.Attempt > 0 {
		b = strconv.AppendInt(append(b, `,"attempt":`...), int64(e.Attempt), 10)
	}
	switch e.Type {
	case MapItem, LoopIteration, ToolCalled, ToolGranted, ModelDelta:
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
	if e.Status == string(StepSucceeded) {
		b = append(b, `,"status":"succeeded"`...)
	} else if e.Status != "" {
		b = appendMember(b, "status", e.Status)
	}
	if e.Code != "" {
		b = appendMember(b, "code", string(e.Code))
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
		if e.Usage.CachedTokens > 0 {
			b = strconv.AppendInt(append(b, `,"cached_tokens":`...), int64(e.Usage.CachedTokens), 10)
		}
		if e.Usage.ReasoningTokens > 0 {
			b = strconv.AppendInt(append(b, `,"reasoning_tokens":`...), int64(e.Usage.ReasoningTokens), 10)
		}
		if e.Usage.Attempts > 0 {
			b = strconv.AppendInt(append(b, `,"attempts":`...), int64(e.Usage.Attempts), 10)
		}
		if e.Usage.Cost > 0 {
			b = strconv.AppendFloat(append(b, `,"cost":`...), e.Usage.Cost, 'g', -1, 64)
		}
		b = append(b, '}')
		if e.Calls > 0 {
			b = strconv.AppendInt(append(b, `,"tool_calls":`...), int64(e.Calls), 10)
		}
	}
	if e.Tool != "" {
		b = appendMember(b, "tool", e.Tool)
	}
	if e.Type == ToolCalled {
		if e.CallID != "" {
			b = appendMember(b, "call_id", e.CallID)
		}
		b = appendMember(b, "arguments", e.Args)
		b = appendMember(b, "result", e.Result)
	}
	if e.Type == StepFinished || e.Type == RunFinished || e.Type == ModelCall {
		b = appendMillis(append(b, `,"duration_ms":`...), e.Duration)
	}
	if e.Type == StepRetrying {
		b = appendMillis(append(b, `,"backoff_ms":`...), e.Duration)
	}
	if e.Type == ModelDelta {
		b = appendMember(b, "text", e.Message)
	} else if e.Message != "" {
		b = appendMember(b, "message", e.Message)
	}
	if i, ok := e.Output.(starlark.Int); ok {
		// The common output, as stdlib.AppendJSON writes it, without its
		// walk.
		if v, ok := i.Int64(); ok {
			b = strconv.AppendInt(append(b, `,"output":`...), v, 10)
			return append(b, '}')
		}
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

// appendStep appends the step and kind members (each when not empty),
// escaped once for the latest steps.
func (enc *EventEncoder) appendStep(b []byte, step, kind string) []byte {
	for i := range enc.steps {
		if c := &enc.steps[i]; c.json != nil && c.step == step && c.kind == kind {
			return append(b, c.json...)
		}
	}
	c := &enc.steps[enc.next]
	enc.next = (enc.next + 1) % len(enc.steps)
	c.step, c.kind, c.json = step, kind, c.json[:0]
	if step != "" {
		c.json = appendMember(c.json, "step", step)
	}
	if kind != "" {
		c.json = appendMember(c.json, "kind", kind)
	}
	return append(b, c.json...)
}

// appendTime appends t in UTC as time.RFC3339Nano formats it.
func (enc *EventEncoder) appendTime(b []byte, t time.Time) []byte {
	if sec := t.Unix(); !enc.dated || sec != enc.sec {
		// A new second (the same second is the same year, within range).
		t = t.UTC()
		if y := t.Year(); y < 0 || y > 9999 {
			enc.dated = false
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		enc.sec, enc.dated = sec, true
		enc.prefix = t.Truncate(time.Second).AppendFormat(enc.prefix[:0], "2006-01-02T15:04:05")
	}
	b = append(b, enc.prefix...)
	if ns := t.Nanosecond(); ns != 0 {
		// The nine digits of the fraction without its trailing zeros,
		// written two at a time from the last.
		n := 9
		for ns%10 == 0 {
			ns /= 10
			n--
		}
		var frac [10]byte
		frac[0] = '.'
		i := n
		for ; i >= 2; i -= 2 {
			d := ns % 100 * 2
			frac[i-1], frac[i] = digitPairs[d], digitPairs[d+1]
			ns /= 100
		}
		if i == 1 {
			frac[1] = byte('0' + ns)
		}
		b = append(b, frac[:n+1]...)
	}
	return append(b, 'Z')
}

// digitPairs holds "00" to "99": the two digits of n at 2n.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

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

type jsonEvent struct {
	Event      EventType       `json:"event"`
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
	Code       codes.Code      `json:"code"`
	Error      string          `json:"error"`
	Trace      []string        `json:"trace"`
	Model      string          `json:"model"`
	Usage      model.Usage     `json:"usage"`
	ToolCalls  int             `json:"tool_calls"`
	Tool       string          `json:"tool"`
	CallID     string          `json:"call_id"`
	Arguments  string          `json:"arguments"`
	Result     string          `json:"result"`
	DurationMS float64         `json:"duration_ms"`
	BackoffMS  float64         `json:"backoff_ms"`
	Message    string          `json:"message"`
	Text       string          `json:"text"`
	Output     json.RawMessage `json:"output"`
}

// DecodeEvent reads an event in the --events format back into an event.
func DecodeEvent(b []byte) (Event, error) {
	var j jsonEvent
	if err := json.Unmarshal(b, &j); err != nil {
		return Event{}, fmt.Errorf("event: %v", err)
	}
	ev := Event{Type: j.Event, Time: j.Time, RunID: j.RunID, FlowName: j.Flow, Flow: j.Subflow, Scope: j.Scope,
		Step: j.Step, Kind: j.Kind, Visit: j.Visit, Attempt: j.Attempt, Index: j.Index, Replayed: j.Replayed,
		Stop: j.Stop, Exhausted: j.Exhausted, Status: j.Status, Code: j.Code, Error: j.Error, Trace: j.Trace,
		Model: j.Model, Usage: j.Usage, Calls: j.ToolCalls, Tool: j.Tool, CallID: j.CallID, Args: j.Arguments, Result: j.Result,
		Duration: millis(j.DurationMS), Message: j.Message}
	if ev.Type == StepRetrying {
		ev.Duration = millis(j.BackoffMS)
	}
	if ev.Type == ModelDelta {
		ev.Message = j.Text
	}
	if len(j.Output) > 0 {
		v, err := stdlib.FromStoredJSON(j.Output)
		if err != nil {
			return Event{}, fmt.Errorf("event output: %v", err)
		}
		ev.Output = v
	}
	return ev, nil
}
