package vm_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
)

// hostile are strings that JSON encoders get wrong.
var hostile = []string{
	"", `"q"`, `a\b`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<b>&amp;</b>", "\u2028\u2029",
	"\xff\xfe", "a\xc3", "\xed\xa0\x80", "日本", "🧶", "\ufffd", "mixed \x00 \u2028 \xff <",
}

// oldEventJSON is the events encoder this package had before it wrote
// events in one pass: the reference the new encoder must match.
func oldEventJSON(e vm.Event) ([]byte, error) {
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
	case vm.MapItem, vm.LoopIteration:
		add("index", e.Index)
	}
	if e.Type == vm.LoopIteration {
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
	if e.Type == vm.StepFinished || e.Type == vm.RunFinished {
		add("duration_ms", json.Number(strconv.FormatFloat(float64(e.Duration)/float64(time.Millisecond), 'f', 3, 64)))
	}
	if e.Type == vm.StepRetrying {
		add("backoff_ms", json.Number(strconv.FormatFloat(float64(e.Duration)/float64(time.Millisecond), 'f', 3, 64)))
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

// TestEventJSON checks the one-pass events encoder against the old one,
// byte for byte, over events full of hostile strings; every line must be
// valid JSON that decodes to the strings (invalid UTF-8 as U+FFFD).
func TestEventJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 0, 0, 123456789, time.FixedZone("x", 3600))
	types := []vm.EventType{vm.RunStarted, vm.RunFinished, vm.StepStarted, vm.StepFinished, vm.StepPruned,
		vm.StepRetrying, vm.StepLog, vm.LoopIteration, vm.MapItem}
	var events []vm.Event
	for i, s := range hostile {
		events = append(events, vm.Event{
			Type: types[i%len(types)], Time: at.Add(time.Duration(i) * time.Millisecond),
			Flow: []string{s, "child"}, Scope: []string{"l#2", s}, Step: s, Kind: "fn", Visit: i,
			Attempt: i % 3, Status: s, Code: codes.Code(s), Error: s, Duration: time.Duration(i) * 1234567,
			Message: s, Output: starlark.NewList([]starlark.Value{starlark.String(s), starlark.MakeInt(i)}),
			RunID: s, FlowName: s, Index: i, Stop: i%2 == 0,
		})
	}
	self := starlark.NewList(nil)
	self.Append(self)
	events = append(events,
		vm.Event{Type: vm.StepFinished, Time: at, Step: "a", Output: starlark.Float(1e-7), Duration: -time.Second},
		vm.Event{Type: vm.StepFinished, Time: at, Step: "b", Output: self}, // not JSON data: left out
		vm.Event{Type: vm.LoopIteration, Time: at, Step: "l", Output: stdlib.NewMap([]string{"z", "a"}, []starlark.Value{starlark.None, starlark.True})},
		vm.Event{},
	)
	var buf []byte
	for _, ev := range events {
		want, err := oldEventJSON(ev)
		if err != nil {
			t.Fatal(err)
		}
		buf = ev.AppendJSON(buf[:0])
		if diff := cmp.Diff(string(want), string(buf)); diff != "" {
			t.Errorf("event %s %q (-old +new):\n%s", ev.Type, ev.Step, diff)
		}
		if !json.Valid(buf) {
			t.Errorf("event %s %q: not valid JSON: %s", ev.Type, ev.Step, buf)
		}
		var got struct{ Step, Message string }
		if err := json.Unmarshal(buf, &got); err != nil {
			t.Fatal(err)
		}
		var w string
		q, _ := json.Marshal(ev.Step)
		json.Unmarshal(q, &w)
		if got.Step != w || (ev.Message != "" && got.Message != w) {
			t.Errorf("step and message decode to %q and %q, want %q", got.Step, got.Message, w)
		}
		if m, _ := ev.MarshalJSON(); string(m) != string(buf) {
			t.Errorf("MarshalJSON differs from AppendJSON: %s vs %s", m, buf)
		}
	}
}

// TestEventEncoderTimes checks the encoder's cached date and time against
// time.RFC3339Nano over a stream of times within and across seconds.
func TestEventEncoderTimes(t *testing.T) {
	base := time.Date(2026, 12, 31, 23, 59, 58, 0, time.FixedZone("y", -7200))
	var times []time.Time
	for _, d := range []time.Duration{0, 1, 10, 100 * time.Microsecond, 123456789, 999999999, time.Second, time.Second + 500*time.Millisecond,
		2 * time.Second, 2*time.Second + 1, 3 * time.Hour, -time.Second} {
		times = append(times, base.Add(d))
	}
	// Fractions of every length, from many digits to one.
	for i, ns := 0, 987654321; i < 200; i++ {
		ns = (ns*7919 + 104729) % 1e9
		times = append(times, base.Add(time.Duration(ns-ns%[]int{1, 10, 100, 1000, 1e5, 1e8}[i%6])))
	}
	times = append(times, time.Time{}, time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC), time.Unix(-1, 5))
	var enc vm.EventEncoder
	var b []byte
	for _, at := range times {
		ev := vm.Event{Type: vm.StepStarted, Time: at}
		b = enc.Append(b[:0], &ev)
		want := `{"event":"step_started","time":"` + at.UTC().Format(time.RFC3339Nano) + `"}`
		if string(b) != want {
			t.Errorf("time %v: got %s, want %s", at, b, want)
		}
	}
}

// TestEventEncoderStream checks one encoder over a stream of events (it
// keeps the escaped step and kind of the latest steps) against AppendJSON
// of each event alone: steps and kinds repeated, alternated, more of them
// than it keeps, hostile, empty, of every type.
func TestEventEncoderStream(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 0, 0, 5, time.UTC)
	steps := append([]string{"draft", "critique", "draft", "a", "b", "c", "d", "e", "draft", "a"}, hostile...)
	kinds := []string{"fn", "fn", "task", "", "fn", "shell"}
	types := []vm.EventType{vm.StepStarted, vm.StepFinished, vm.StepPruned, vm.StepLog, vm.RunStarted, vm.StepRetrying, "custom"}
	var enc vm.EventEncoder
	var b []byte
	for i := range 3 * len(steps) {
		ev := vm.Event{Type: types[i%len(types)], Time: at.Add(time.Duration(i) * 300 * time.Millisecond),
			Step: steps[i%len(steps)], Kind: kinds[i%len(kinds)], Visit: i, Status: []string{"succeeded", "failed", ""}[i%3]}
		b = enc.Append(b[:0], &ev)
		if want := ev.AppendJSON(nil); string(b) != string(want) {
			t.Errorf("event %d: got %s, want %s", i, b, want)
		}
	}
}

// oldResultJSON is the result encoder this package had before it wrote
// results in one pass: a tree of stdlib.Object, then json.MarshalIndent.
func oldResultJSON(r *vm.Result, indent string) ([]byte, error) {
	o, err := oldResultObject(r)
	if err != nil {
		return nil, err
	}
	if indent == "" {
		return json.Marshal(o)
	}
	return json.MarshalIndent(o, "", indent)
}

func oldResultObject(r *vm.Result) (stdlib.Object, error) {
	add := func(o *stdlib.Object, name string, v any) { *o = append(*o, stdlib.Member{Name: name, Value: v}) }
	jsonValue := func(v starlark.Value) (any, error) {
		if v == nil {
			return nil, nil
		}
		return stdlib.ToGo(v)
	}
	millis := func(d time.Duration) json.Number {
		return json.Number(fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)))
	}
	var o stdlib.Object
	add(&o, "run_id", r.RunID)
	add(&o, "flow", r.Flow)
	add(&o, "file", r.File)
	add(&o, "status", string(r.Status))
	if r.Error == nil {
		add(&o, "error", nil)
	} else {
		var errObj func(ge *graphir.Error) stdlib.Object
		errObj = func(ge *graphir.Error) stdlib.Object {
			var e stdlib.Object
			add(&e, "code", ge.Code)
			add(&e, "step", ge.Step)
			add(&e, "message", ge.Msg)
			if len(ge.Trace) > 0 {
				add(&e, "trace", ge.Trace)
			}
			if ge.Cause != nil {
				add(&e, "cause", errObj(ge.Cause))
			}
			return e
		}
		add(&o, "error", errObj(r.Error))
	}
	out, err := jsonValue(r.Output)
	if err != nil {
		return nil, fmt.Errorf("output: %v", err)
	}
	add(&o, "output", out)
	add(&o, "path", r.Path)
	add(&o, "path_total", r.PathTotal)
	add(&o, "duration_ms", millis(r.Duration))
	if r.ModelCalls > 0 {
		add(&o, "usage", usageObject(r.Usage))
	}
	if len(r.Warnings) > 0 {
		add(&o, "warnings", r.Warnings)
	}
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
		if len(s.Trace) > 0 {
			add(&so, "trace", s.Trace)
		}
		add(&so, "duration_ms", millis(s.Duration))
		if s.Truncated {
			add(&so, "truncated", true)
		}
		if len(s.Log) > 0 {
			add(&so, "log", s.Log)
		}
		if s.Model != "" {
			add(&so, "model", s.Model)
			add(&so, "usage", usageObject(s.Usage))
		}
		if s.Answer != "" {
			add(&so, "answer", s.Answer)
		}
		switch s.Kind {
		case graphir.KindLoop:
			add(&so, "iterations", s.Iterations)
			add(&so, "exhausted", s.Exhausted)
			if s.StoppedReason == "" {
				add(&so, "stopped_reason", nil)
			} else {
				add(&so, "stopped_reason", s.StoppedReason)
			}
		case graphir.KindMap:
			add(&so, "items", s.Items)
		}
		if s.Child != nil {
			child, err := oldResultObject(s.Child)
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

// TestResultJSON checks the one-pass result encoder against the old one
// over results of real runs (loops, maps, child flows, failures, logs,
// truncated output) and a synthetic one full of hostile strings: the
// same bytes compact and indented, and the same value when decoded.
func TestResultJSON(t *testing.T) {
	skipBigUnderRace(t)
	results := []*vm.Result{
		run(t, `
flow(name = "shape", output = "l")
a = step("a", fn = lambda r: {"x<": [1, 2.5, None, True], "\u2028": "é"})
b = step("b", fn = lambda r: r.loop.iteration)
l = loop("l", body = [b], until = lambda it: False, max_iterations = 3)
m = map("m", over = "[1, 2, 3]", body = [step("sq", fn = lambda r: r.item * r.item)])
p = step("p", fn = lambda r: print("a \"log\" <line>"))
chain(START, a, l, m, p, END)
`, nil, vm.Options{}),
		run(t, `
again = step("again", max_visits = 2)
edge(START, again)
edge(again, again, when = "visits('again') < 5")
edge(again, END, when = "visits('again') >= 5")
`, nil, vm.Options{}),
		run(t, `
big = step("big", run = ["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; printf '\\001\\377'"])
chain(START, big, END)
`, nil, vm.Options{}),
		runFiles(t, map[string]string{
			"flow.star": `
flow(output = "use")
child = step("child", flow = "sub/child.star", inputs = {"w": "x\u2028y"})
use = step("use", fn = lambda r: r.child)
chain(START, child, use, END)
`,
			"sub/child.star": `
flow(inputs = {"w": None}, output = "out")
out = step("out", fn = lambda r: fail("no <" + r.inputs.w))
`}, nil, vm.Options{}),
		run(t, `chain(START, END)`, nil, vm.Options{}),
	}
	s := hostile[len(hostile)-1]
	results = append(results, &vm.Result{RunID: s, Flow: s, File: s, Status: vm.Failed,
		Error: &graphir.Error{Code: codes.Code(s), Step: s, Msg: s, Trace: hostile, Cause: &graphir.Error{Code: codes.Code(s), Step: s, Msg: s, Trace: hostile}}, Output: starlark.String(s), Path: hostile, PathTotal: 99,
		Duration: 1500 * time.Microsecond,
		Steps: []*vm.StepRecord{
			{Name: s, Kind: graphir.KindLoop, Status: vm.StepFailed, Error: s, Code: codes.Code(s), Log: hostile, Truncated: true, Trace: hostile},
			{Name: "nil-output", Kind: graphir.KindMap, Items: 3},
			{Name: "child", Kind: graphir.KindSubflow, Child: &vm.Result{Output: starlark.None}},
		}})
	for i, res := range results {
		for _, indent := range []string{"", "  ", "\t"} {
			want, err := oldResultJSON(res, indent)
			if err != nil {
				t.Fatal(err)
			}
			got, err := res.AppendJSON(nil, indent)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("result %d, indent %q (-old +new):\n%s", i, indent, diff)
			}
			var a, b any
			if err := json.Unmarshal(want, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &b); err != nil {
				t.Fatalf("result %d: new encoding does not decode: %v", i, err)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("result %d decoded (-old +new):\n%s", i, diff)
			}
		}
	}
	// What is not JSON data fails the encoding, with the step named.
	self := starlark.NewList(nil)
	self.Append(self)
	bad := &vm.Result{Steps: []*vm.StepRecord{{Name: "loop", Output: self}}}
	var w strings.Builder
	if err := bad.WriteJSON(&w, "  "); err == nil || !strings.Contains(err.Error(), "step loop output") || w.Len() > 0 {
		t.Errorf("WriteJSON of a self-containing output: err %v, wrote %q", err, w.String())
	}
}

// usageObject is a usage as the result's JSON writes it: the optional
// counts only when they are not zero.
func usageObject(u model.Usage) stdlib.Object {
	o := stdlib.Object{{Name: "prompt_tokens", Value: u.PromptTokens}, {Name: "completion_tokens", Value: u.CompletionTokens}}
	for _, f := range []struct {
		name string
		v    int
	}{{"cached_tokens", u.CachedTokens}, {"reasoning_tokens", u.ReasoningTokens}, {"attempts", u.Attempts}} {
		if f.v > 0 {
			o = append(o, stdlib.Member{Name: f.name, Value: f.v})
		}
	}
	if u.Cost > 0 {
		o = append(o, stdlib.Member{Name: "cost", Value: u.Cost})
	}
	return o
}
