package vm

// This file runs agent steps: a loop of model calls in which the model may
// call the step's tools. Every model call and every tool call is its own
// effect through the effect seam (journaled, mockable, replayable); the
// decisions between them — which tool a call names, whether its arguments
// fit the tool's params, what goes back to the model, when the step ends,
// which tools are granted — are made here, in the deterministic core, from
// the completions alone. A model call's completion is an envelope
// {content, tool_calls: [{id, name, arguments}]}: a live call, a journal
// and a mock all give the same shape, so resume and flow tests replay the
// loop exactly.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/jsonschema"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
)

// Bounds of what an agent keeps and reports.
const (
	maxToolResult   = 16 << 10 // bytes of a tool's result sent back to the model
	maxRecordResult = 2000     // bytes of a tool's result in the record and events
	maxRecordMsgs   = 60       // messages of the conversation kept in the record
	maxRecordText   = 4000     // bytes of one message kept in the record
)

// RequestToolName is the built-in tool through which an agent asks for a
// tool of the flow's pool (flow(tools=)).
const RequestToolName = "request_tool"

// AgentRecord is what a step record keeps of an agent step's latest visit.
type AgentRecord struct {
	Turns int `json:"turns"`
	// Conversation is the conversation, bounded: the latest messages,
	// each cut to a few thousand bytes.
	Conversation []model.Message  `json:"conversation"`
	Dropped      int              `json:"dropped_messages,omitempty"` // earlier messages not kept
	ToolCalls    []ToolCallRecord `json:"tool_calls"`
	Grants       []Grant          `json:"grants,omitempty"`
	Findings     []string         `json:"findings,omitempty"`
}

// ToolCallRecord is one tool call an agent's model made.
type ToolCallRecord struct {
	Turn   int        `json:"turn"`
	ID     string     `json:"id"`
	Tool   string     `json:"tool"`
	Args   string     `json:"arguments"`
	OK     bool       `json:"ok"`
	Result string     `json:"result"` // bounded
	Code   codes.Code `json:"code,omitempty"`
}

// Grant is a tool of the flow's pool granted to agents during a run.
type Grant struct {
	Step   string `json:"step"`
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
	Turn   int    `json:"turn"`
}

// agentRun is one visit of an agent step.
type agentRun struct {
	f       *frame
	n       *graphir.Node
	chat    model.Request // the model, parameters and the conversation so far
	turn    int
	pending int             // tool calls of this turn still running
	results []model.Message // this turn's tool results, by call
	rec     *AgentRecord
	// The answer a final=True tool gave this turn: the result of the
	// first such call (in the reply's order) that succeeded.
	final     starlark.Value
	finalAt   int
	finalTool string
	// The calls of this turn waiting for a person's approval, by call
	// id: what runs each once approved.
	gated map[string]func()
}

// startAgent starts a visit of agent step n: its messages rendered, then
// the first turn.
func (r *run) startAgent(f *frame, n *graphir.Node) {
	req, err := r.modelRequest(f, n, n.Call.Model)
	if err != nil {
		r.modelFailed(f, n, err)
		return
	}
	a := &agentRun{f: f, n: n, chat: *req.Chat, rec: &AgentRecord{ToolCalls: []ToolCallRecord{}}}
	if _, ok := r.renderChat(f, n, &a.chat, "agent"); !ok {
		return
	}
	r.recs[n.ID].Agent = a.rec
	r.agentTurn(a)
}

// offered returns the tools agent step n may call now: its own, then those
// granted in this run (request_tool, offered when the flow has a pool, is
// not among them: see [run.requestToolDef]).
func (r *run) offered(n *graphir.Node) []*graphir.Tool {
	var out []*graphir.Tool
	seen := map[string]bool{}
	add := func(name string) {
		if t := r.g.Tool(name); t != nil && !seen[name] {
			seen[name] = true
			out = append(out, t)
		}
	}
	for _, t := range n.Call.Tools {
		add(t.Name)
	}
	for _, gr := range r.grants {
		add(gr.Tool)
	}
	return out
}

// requestToolDef is the definition of request_tool offered to agents when
// the flow declares a pool.
func (r *run) requestToolDef() model.ToolDef {
	return model.ToolDef{Type: "function", Function: model.FunctionDef{Name: RequestToolName,
		Description: fmt.Sprintf("Ask for a tool you were not given. Available on request: %s. Set confirmed to true only once you are sure you need it; at most %d tools are granted per run.", strings.Join(r.poolNames(), ", "), r.g.MaxGrants),
		Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"name", "reason", "confirmed"},
			"properties": map[string]any{"name": map[string]any{"type": "string"}, "reason": map[string]any{"type": "string"}, "confirmed": map[string]any{"type": "boolean"}}}}}
}

// poolNames returns the names of the flow's pool (flow(tools=)).
func (r *run) poolNames() []string {
	var pool []string
	for _, t := range r.g.ToolPool {
		pool = append(pool, t.Name)
	}
	return pool
}

// agentTurn asks the model for the next reply of a.
func (r *run) agentTurn(a *agentRun) {
	n := a.n
	a.turn++
	a.rec.Turns = a.turn
	req := r.request(a.f, n)
	req.Scope = append(req.Scope, fmt.Sprintf("%s@%d", n.Name, a.turn))
	chat := a.chat
	chat.Messages = append([]model.Message(nil), a.chat.Messages...)
	chat.Tools = nil
	for _, t := range r.offered(n) {
		chat.Tools = append(chat.Tools, model.ToolDef{Type: "function", Function: model.FunctionDef{Name: t.Name, Description: t.Help, Parameters: t.Schema()}})
	}
	if len(r.g.ToolPool) > 0 {
		chat.Tools = append(chat.Tools, r.requestToolDef())
	}
	req.Chat = &chat
	req.Turn = a.turn
	req.Timeout = n.Timeout
	req.Prompt = chat.Messages[len(chat.Messages)-1].Content
	req.model = &modelRun{provider: r.opts.Models, budget: r.opts.budget, pacers: r.opts.Pacers, retries: n.Retries, backoff: n.Backoff}
	r.reportRetries(n, req)
	r.reportDeltas(n, req)
	req.agent = a
	r.startGated(a.f, n, req)
}

// agentDone carries an agent step on after one of its effects completed.
func (r *run) agentDone(c *completion) {
	a := c.req.agent
	ec := c.c
	if ec.Stop != nil {
		r.failedAt(c.f, c.n, ec.Stop)
		return
	}
	if ec.Cancelled {
		r.interrupted()
		return
	}
	if c.req.Chat != nil {
		calls := 0
		if ec.OK && r.events {
			_, cs, _, _ := readEnvelope(ec.Output)
			calls = len(cs)
		}
		r.modelDone(c.f, c.n, c.req, ec, calls)
		r.agentReplied(a, ec)
		return
	}
	if c.req.Kind == graphir.KindApproval {
		r.toolApproved(c, a, ec)
		return
	}
	r.toolDone(a, c.req, ec)
}

// toolApproved acts on the decision on a tool call's approval: approved,
// the call runs; rejected (or timed out), the model is told so as the
// call's result; parked, the agent's turn waits, and with it the step,
// until the run is resumed with the decision.
func (r *run) toolApproved(c *completion, a *agentRun, ec *EffectCompletion) {
	req := c.req
	if ec.Park {
		r.recs[a.n.ID].Status = StepWaiting
		r.parked = append(r.parked, &Pending{Step: req.Step, Flow: req.Flow, Scope: req.Scope, Visit: req.Visit, Message: req.Message})
		return
	}
	run := a.gated[req.ToolCallID]
	delete(a.gated, req.ToolCallID)
	if r.recs[a.n.ID].Status == StepWaiting {
		r.recs[a.n.ID].Status = StepRunning
	}
	if ec.OK && run != nil {
		a.pending--
		run()
		if a.pending == 0 {
			r.agentNextTurn(a)
		}
		return
	}
	code := failCodeOr(ec.Code, codes.StepFailed)
	text := clipBytes("the call was not run: "+ec.Error, maxToolResult)
	call := model.ToolCall{ID: req.ToolCallID, Function: model.FunctionCall{Name: req.Tool, Arguments: req.ToolArgs}}
	r.recordToolCall(a, call, false, code, text)
	for j := range a.results {
		if a.results[j].ToolCallID == req.ToolCallID {
			a.results[j].Content = text
		}
	}
	a.pending--
	if a.pending == 0 {
		r.agentNextTurn(a)
	}
}

// agentFail ends the visit of a with a failure.
func (r *run) agentFail(a *agentRun, code codes.Code, msg string) {
	r.keepConversation(a)
	r.finish(a.f, a.n, failure(code, msg))
}

// keepConversation copies the conversation, bounded, into the record.
func (r *run) keepConversation(a *agentRun) {
	msgs := a.chat.Messages
	a.rec.Dropped = 0
	if len(msgs) > maxRecordMsgs {
		a.rec.Dropped = len(msgs) - maxRecordMsgs
		msgs = msgs[len(msgs)-maxRecordMsgs:]
	}
	a.rec.Conversation = make([]model.Message, len(msgs))
	for i, m := range msgs {
		m.Content = clipBytes(m.Content, maxRecordText)
		a.rec.Conversation[i] = m
	}
}

// agentReplied acts on a model reply: tool calls run, a final answer ends
// the step.
func (r *run) agentReplied(a *agentRun, ec *EffectCompletion) {
	n := a.n
	if !ec.OK {
		r.agentFail(a, failCodeOr(ec.Code, model.CodeModel), fmt.Sprintf("turn %d: %s", a.turn, ec.Error))
		return
	}
	content, calls, final, isEnvelope := readEnvelope(ec.Output)
	if !isEnvelope {
		// A mock answering with the final answer itself.
		r.agentAnswer(a, content, final)
		return
	}
	if len(calls) == 0 {
		r.agentAnswer(a, content, nil)
		return
	}
	if a.turn >= n.Call.MaxTurns {
		a.chat.Messages = append(a.chat.Messages, model.Message{Role: "assistant", Content: content, ToolCalls: calls})
		r.agentFail(a, codes.MaxTurns, fmt.Sprintf("agent %q still calling tools after max_turns %d model calls", n.Name, n.Call.MaxTurns))
		return
	}
	a.chat.Messages = append(a.chat.Messages, model.Message{Role: "assistant", Content: content, ToolCalls: calls})
	a.results = make([]model.Message, len(calls))
	a.final, a.finalAt = nil, len(calls)
	offered := r.offered(n)
	for i, call := range calls {
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d_%d", a.turn, i+1)
			a.chat.Messages[len(a.chat.Messages)-1].ToolCalls[i].ID = call.ID
		}
		a.results[i] = model.Message{Role: "tool", ToolCallID: call.ID}
		r.startToolCall(a, i, call, offered)
		if r.over { // a child flow nesting too deep or in a cycle
			return
		}
	}
	if a.pending == 0 {
		r.agentNextTurn(a)
	}
}

// agentNextTurn sends this turn's tool results back to the model, or ends
// the step with a final tool's result.
func (r *run) agentNextTurn(a *agentRun) {
	a.chat.Messages = append(a.chat.Messages, a.results...)
	a.results = nil
	if a.final != nil {
		r.agentFinal(a)
		return
	}
	r.agentTurn(a)
}

// toolFinal notes that call number i of this turn, of tool t, succeeded
// with out: if t is final=True and no earlier call of the turn was, out is
// the agent's answer once the turn's calls are done.
func (a *agentRun) toolFinal(t *graphir.Tool, i int, out starlark.Value) {
	if t != nil && t.Final && i < a.finalAt {
		a.final, a.finalAt, a.finalTool = out, i, t.Name
	}
}

// agentFinal ends a visit with the result of a final=True tool, which the
// model never sees: it is the answer (checked against the step's schema,
// a mismatch failing the step, since no model reply is there to repair).
func (r *run) agentFinal(a *agentRun) {
	n, out := a.n, a.final
	if n.Call.HasSchema {
		g, err := stdlib.ToGo(out)
		var b []byte
		if err == nil {
			if s, ok := out.(starlark.String); ok {
				b = []byte(s)
			} else {
				b, err = json.Marshal(g)
			}
		}
		var v any
		if err == nil {
			v, err = model.DecodeValid(n.Call.Schema, string(b))
		}
		if err == nil {
			out, err = stdlib.FromGo(v)
		}
		if err != nil {
			r.agentFail(a, codes.StepFailed, fmt.Sprintf("agent %q: the result of final tool %q does not match the schema: %v", n.Name, a.finalTool, err))
			return
		}
	}
	r.keepConversation(a)
	r.finish(a.f, a.n, &outcome{ok: true, value: out})
}

// agentAnswer ends a visit with the model's final answer: its text, or the
// object the step's schema describes (a reply that does not fit is sent
// back, within max_turns).
func (r *run) agentAnswer(a *agentRun, content string, obj starlark.Value) {
	n := a.n
	if obj == nil {
		obj = starlark.String(content)
	}
	if n.Call.HasSchema {
		var v any
		var err error
		if s, ok := obj.(starlark.String); ok {
			v, err = model.DecodeValid(n.Call.Schema, string(s))
		} else if g, gerr := stdlib.ToGo(obj); gerr != nil {
			err = gerr
		} else if b, merr := json.Marshal(g); merr != nil {
			err = merr
		} else {
			v, err = model.DecodeValid(n.Call.Schema, string(b))
		}
		if err == nil {
			obj, err = stdlib.FromGo(v)
		}
		if err != nil {
			a.chat.Messages = append(a.chat.Messages, model.Message{Role: "assistant", Content: content})
			if a.turn >= n.Call.MaxTurns {
				r.agentFail(a, codes.MaxTurns, fmt.Sprintf("agent %q: the final answer does not match the schema after max_turns %d model calls: %v", n.Name, n.Call.MaxTurns, err))
				return
			}
			a.chat.Messages = append(a.chat.Messages, model.Message{Role: "user",
				Content: "Your final answer does not match the required JSON schema: " + err.Error() + ". Reply again with only a JSON value that matches the schema."})
			r.agentTurn(a)
			return
		}
	}
	a.chat.Messages = append(a.chat.Messages, model.Message{Role: "assistant", Content: content})
	r.keepConversation(a)
	r.finish(a.f, a.n, &outcome{ok: true, value: obj})
}

// readEnvelope reads a model call's completion: the reply's content and
// tool calls. A value that is not an envelope (a string, or a mock's
// object without tool_calls) is the final answer itself.
func readEnvelope(v starlark.Value) (content string, calls []model.ToolCall, final starlark.Value, ok bool) {
	m, isMap := v.(starlark.HasAttrs)
	d, isDict := v.(*starlark.Dict)
	get := func(key string) starlark.Value {
		if isDict {
			x, found, _ := d.Get(starlark.String(key))
			if found {
				return x
			}
			return nil
		}
		if isMap {
			x, err := m.Attr(key)
			if err == nil {
				return x
			}
		}
		return nil
	}
	tc := get("tool_calls")
	if tc == nil {
		if s, ok := v.(starlark.String); ok {
			return string(s), nil, nil, false
		}
		b, _ := stdlib.AppendJSON(nil, v, "", 0)
		return string(b), nil, v, false
	}
	if s, ok := get("content").(starlark.String); ok {
		content = string(s)
	}
	if l, ok := tc.(starlark.Indexable); ok {
		for i := 0; i < l.Len(); i++ {
			e := l.Index(i)
			str := func(key string) string {
				var x starlark.Value
				if dd, ok := e.(*starlark.Dict); ok {
					x, _, _ = dd.Get(starlark.String(key))
				} else if hm, ok := e.(starlark.HasAttrs); ok {
					x, _ = hm.Attr(key)
				}
				switch s := x.(type) {
				case starlark.String:
					return string(s)
				case nil, starlark.NoneType:
					return ""
				}
				b, _ := stdlib.AppendJSON(nil, x, "", 0) // a mock giving arguments as a dict
				return string(b)
			}
			calls = append(calls, model.ToolCall{ID: str("id"), Type: "function", Function: model.FunctionCall{Name: str("name"), Arguments: str("arguments")}})
		}
	}
	return content, calls, nil, true
}

// envelope is the output of a live model call of an agent step.
func envelope(rep *model.Reply) starlark.Value {
	calls := make([]starlark.Value, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		calls[i] = stdlib.NewMap([]string{"id", "name", "arguments"},
			[]starlark.Value{starlark.String(c.ID), starlark.String(c.Function.Name), starlark.String(c.Function.Arguments)})
	}
	return stdlib.NewMap([]string{"content", "tool_calls"}, []starlark.Value{starlark.String(rep.Text), starlark.NewList(calls)})
}

// startToolCall runs call number i of this turn, or answers it at once:
// request_tool, a tool not offered, arguments that do not fit.
func (r *run) startToolCall(a *agentRun, i int, call model.ToolCall, offered []*graphir.Tool) {
	n := a.n
	name := call.Function.Name
	answer := func(ok bool, code codes.Code, text string) {
		a.results[i].Content = text
		r.recordToolCall(a, call, ok, code, text)
	}
	if name == RequestToolName && len(r.g.ToolPool) > 0 {
		ok, text := r.requestTool(a, call)
		answer(ok, "", text)
		return
	}
	var t *graphir.Tool
	for _, o := range offered {
		if o.Name == name {
			t = o
		}
	}
	if t == nil {
		names := make([]string, len(offered))
		for j, o := range offered {
			names[j] = o.Name
		}
		msg := fmt.Sprintf("error: there is no tool %q here; the tools are: %s", name, strings.Join(names, ", "))
		msg += spell.Suggest(name, names)
		answer(false, codes.UnknownTool, msg)
		return
	}
	var args any
	if strings.TrimSpace(call.Function.Arguments) == "" {
		args = map[string]any{}
	} else if err := stdlib.CheckJSON([]byte(call.Function.Arguments)); err != nil {
		answer(false, "invalid_arguments", fmt.Sprintf("error: the arguments of %s cannot be used: %v", name, err))
		return
	} else if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
		answer(false, "invalid_arguments", fmt.Sprintf("error: the arguments of %s are not a JSON object: %v", name, err))
		return
	}
	if err := jsonschema.Validate(t.Schema(), args); err != nil {
		answer(false, "invalid_arguments", fmt.Sprintf("error: the arguments of %s do not match its parameters: %v", name, err))
		return
	}
	argv, err := stdlib.FromGo(args)
	if err != nil {
		answer(false, "invalid_arguments", fmt.Sprintf("error: the arguments of %s: %v", name, err))
		return
	}
	if t.Approve != nil {
		// A person decides first: the call runs once approved
		// (toolApproved), whatever the model said.
		r.toolArgs = argv
		msg, err := r.render(a.f, n, t.Approve)
		r.toolArgs = nil
		if err != nil {
			answer(false, codes.StepFailed, fmt.Sprintf("error: the approval question of %s: %v", name, err))
			return
		}
		req := r.request(a.f, n)
		req.Scope = append(req.Scope, fmt.Sprintf("%s@%d.%d", n.Name, a.turn, i+1))
		req.Step, req.Kind, req.Tool, req.ToolCallID, req.Turn = t.Name, graphir.KindApproval, t.Name, call.ID, a.turn
		req.ToolArgs, req.Message = canonicalJSON(args), msg
		req.agent = a
		if a.gated == nil {
			a.gated = map[string]func(){}
		}
		a.gated[call.ID] = func() { r.runToolCall(a, i, call, t, args, argv) }
		a.pending++
		r.startGated(a.f, n, req)
		return
	}
	r.runToolCall(a, i, call, t, args, argv)
}

// runToolCall runs call number i of this turn, of tool t, whose arguments
// were checked (args decoded, argv as flow data), or answers it at once
// (a fn tool).
func (r *run) runToolCall(a *agentRun, i int, call model.ToolCall, t *graphir.Tool, args any, argv starlark.Value) {
	n := a.n
	name := t.Name
	answer := func(ok bool, code codes.Code, text string) {
		a.results[i].Content = text
		r.recordToolCall(a, call, ok, code, text)
	}
	if t.Kind == graphir.KindFn {
		// A function of its arguments alone: evaluated here, like until.
		out, err := r.evaluate(a.f, n, t.Fn, starlark.Tuple{argv}, nil, 0, nil)
		if err != nil {
			answer(false, codes.StepFailed, "the tool failed: "+evalMessage(err))
			return
		}
		s, err := text(out)
		if err != nil {
			answer(false, codes.StepFailed, "the tool failed: its result is not data: "+err.Error())
			return
		}
		if out, err = stdlib.Data(out); err == nil {
			a.toolFinal(t, i, out)
		}
		answer(true, "", clipBytes(s, maxToolResult))
		return
	}
	req := r.request(a.f, n)
	at := fmt.Sprintf("%s@%d.%d", n.Name, a.turn, i+1)
	req.Scope = append(req.Scope, at)
	req.Kind, req.Tool, req.ToolCallID, req.Turn = t.Kind, t.Name, call.ID, a.turn
	req.ToolArgs = canonicalJSON(args)
	if t.Kind == graphir.KindSubflow {
		// A child flow per call, the arguments its inputs.
		if !r.nestable(a.f, n, fmt.Sprintf("tool %q of step %q", t.Name, n.Name), t.ChildPath) {
			return
		}
		req.ChildPath, req.ChildGraph = t.ChildPath, t.Child
		// The arguments were checked to be an object, converted above.
		m := argv.(*stdlib.Map)
		req.ChildInputs = make(map[string]starlark.Value, m.Len())
		for k, v := range m.All {
			req.ChildInputs[k] = v
		}
		// The child reports and is journaled under the call: the step,
		// its visit when it is not the first, the turn, the call.
		if req.Visit > 1 {
			at = fmt.Sprintf("%s:%d@%d.%d", n.Name, req.Visit, a.turn, i+1)
		}
		req.child = r.childRun(append(append(a.f.scopePath(), at), t.Name))
		req.agent = a
		a.pending++
		r.startGated(a.f, n, req)
		return
	}
	req.Dir, req.Env, req.Timeout, req.KillGrace, req.MaxOutput = r.p.dir, r.taskEnv, n.Timeout, r.opts.KillGrace, r.opts.MaxOutput
	r.toolArgs = argv
	defer func() { r.toolArgs = nil }()
	if t.Kind == graphir.KindShell {
		req.Argv = []string{"/bin/sh", "-c", t.Shell.Src}
		req.Env = append([]string(nil), r.taskEnv...)
		m := args.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := m[k].(string)
			if !ok {
				s = canonicalJSON(m[k])
			}
			req.Env = append(req.Env, "ARG_"+strings.ToUpper(k)+"="+s)
		}
	} else {
		req.Argv = make([]string, len(t.Argv))
		for j, tm := range t.Argv {
			s, err := r.render(a.f, n, tm)
			if err != nil {
				answer(false, "invalid_arguments", fmt.Sprintf("error: %s: %v", name, err))
				return
			}
			req.Argv[j] = s
		}
		if req.Argv[0] == "" {
			answer(false, "invalid_arguments", fmt.Sprintf("error: %s: the command (run[0]) is empty", name))
			return
		}
	}
	// tool(env=): set for each call, after the arguments' ARG_ variables,
	// rendered like a step's env= (a secret() renders its value).
	if len(t.Env) > 0 {
		if t.Kind != graphir.KindShell {
			req.Env = append([]string(nil), r.taskEnv...)
		}
		for _, e := range t.Env {
			v, err := r.render(a.f, n, e.Value)
			if err != nil {
				answer(false, "invalid_arguments", fmt.Sprintf("error: %s: env[%q]: %v", name, e.Name, err))
				return
			}
			req.Env = append(req.Env, e.Name+"="+v)
		}
	}
	req.agent = a
	a.pending++
	r.startGated(a.f, n, req)
}

// toolDone records a tool call's completion as its result for the model.
func (r *run) toolDone(a *agentRun, req *EffectRequest, ec *EffectCompletion) {
	i := -1
	for j := range a.results {
		if a.results[j].ToolCallID == req.ToolCallID {
			i = j
		}
	}
	var b strings.Builder
	ok := ec.OK
	var code codes.Code
	switch {
	case ec.Park:
		// A child flow waiting for a person: an agent's turn cannot wait.
		ok, code = false, codes.StepFailed
		fmt.Fprintf(&b, "the tool failed: its child flow %s waits for a person's decision, which a tool's child flow cannot do", req.ChildPath)
	case !ok && req.Kind == graphir.KindSubflow:
		code = failCodeOr(ec.Code, codes.StepFailed)
		fmt.Fprintf(&b, "the tool failed (%s)\n", code)
	case !ok:
		code = failCodeOr(ec.Code, codes.StepFailed)
		fmt.Fprintf(&b, "the tool failed (exit code %d", ec.ExitCode)
		if ec.Code != "" && ec.Code != codes.StepFailed {
			fmt.Fprintf(&b, ", %s", ec.Code)
		}
		b.WriteString(")\n")
	}
	b.WriteString(ec.Stdout)
	if ec.Stderr != "" {
		if ec.Stdout != "" && !strings.HasSuffix(ec.Stdout, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(ec.Stderr)
	}
	if ec.Output != nil && ec.Output != starlark.None {
		if s, isStr := ec.Output.(starlark.String); isStr {
			b.WriteString(string(s))
		} else if j, err := stdlib.AppendJSON(nil, ec.Output, "", 0); err == nil {
			b.Write(j)
		}
	}
	if !ok && ec.Stdout == "" && ec.Stderr == "" && ec.Error != "" {
		b.WriteString(ec.Error)
		if req.Kind == graphir.KindSubflow {
			b.WriteString(childFailure(ec.Child))
		}
	}
	text := b.String()
	if text == "" {
		text = "(no output)"
	}
	text = clipBytes(text, maxToolResult)
	call := model.ToolCall{ID: req.ToolCallID, Function: model.FunctionCall{Name: req.Tool, Arguments: req.ToolArgs}}
	r.recordToolCall(a, call, ok, code, text)
	if i >= 0 {
		a.results[i].Content = text
		if ok {
			// A final tool's answer: a child flow's output, a process's
			// stdout.
			var out starlark.Value = starlark.String(ec.Stdout)
			if req.Kind == graphir.KindSubflow && ec.Output != nil {
				out = ec.Output
			}
			a.toolFinal(r.g.Tool(req.Tool), i, out)
		}
	}
	a.pending--
	if a.pending == 0 {
		r.agentNextTurn(a)
	}
}

// childFailure is what a failed child flow of a tool says beyond its
// error: the stderr of the step it failed at, so the model sees why.
func childFailure(res *Result) string {
	if res == nil || res.Error == nil || res.Error.Step == "" {
		return ""
	}
	rec := res.Step(res.Error.Step)
	if rec == nil || rec.Output == nil {
		return ""
	}
	m, ok := rec.Output.(starlark.HasAttrs)
	if !ok {
		return ""
	}
	v, _ := m.Attr("stderr")
	s, ok := v.(starlark.String)
	if !ok || s == "" {
		return ""
	}
	return fmt.Sprintf("\nstderr of step %q:\n%s", res.Error.Step, string(s))
}

// recordToolCall adds a tool call to the record and reports it.
func (r *run) recordToolCall(a *agentRun, call model.ToolCall, ok bool, code codes.Code, result string) {
	tr := ToolCallRecord{Turn: a.turn, ID: call.ID, Tool: call.Function.Name, Args: call.Function.Arguments, OK: ok,
		Result: clipBytes(result, maxRecordResult), Code: code}
	a.rec.ToolCalls = append(a.rec.ToolCalls, tr)
	if r.events {
		st := "succeeded"
		if !ok {
			st = "failed"
		}
		r.emit(&Event{Type: ToolCalled, Scope: a.f.scopePath(), Step: a.n.Name, Kind: a.n.Kind.String(), Index: a.turn,
			Tool: tr.Tool, CallID: tr.ID, Args: tr.Args, Result: tr.Result, Status: st, Code: code})
	}
}

// requestTool decides a request_tool call: a confirmed request for a tool
// of the pool is granted (to this step and every agent step after it),
// within max_grants per run; anything else is refused and recorded as a
// finding.
func (r *run) requestTool(a *agentRun, call model.ToolCall) (bool, string) {
	var args struct {
		Name      string `json:"name"`
		Reason    string `json:"reason"`
		Confirmed bool   `json:"confirmed"`
	}
	n := a.n
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
		return false, fmt.Sprintf("error: the arguments of request_tool are not a JSON object with name, reason and confirmed: %v", err)
	}
	pool := r.poolNames()
	inPool := slices.Contains(pool, args.Name)
	refuse := func(why string) (bool, string) {
		f := fmt.Sprintf("step %q asked for tool %q (%s): refused, %s", n.Name, args.Name, orNone(args.Reason), why)
		a.rec.Findings = append(a.rec.Findings, f)
		r.res.Findings = append(r.res.Findings, f)
		return false, "not granted: " + why
	}
	for _, t := range r.offered(n) {
		if t.Name == args.Name {
			return true, fmt.Sprintf("%s is already available to you", args.Name)
		}
	}
	switch {
	case !inPool:
		return refuse(fmt.Sprintf("%q is not among the tools this run may grant (%s)", args.Name, strings.Join(pool, ", ")))
	case !args.Confirmed:
		return refuse("the request was not confirmed; call request_tool again with confirmed true if you are sure you need it")
	case len(r.grants) >= r.g.MaxGrants:
		return refuse(fmt.Sprintf("this run has granted its max_grants of %d tools already", r.g.MaxGrants))
	}
	gr := Grant{Step: n.Name, Tool: args.Name, Reason: args.Reason, Turn: a.turn}
	r.grants = append(r.grants, gr)
	a.rec.Grants = append(a.rec.Grants, gr)
	r.res.Grants = append(r.res.Grants, gr)
	if r.events {
		r.emit(&Event{Type: ToolGranted, Scope: a.f.scopePath(), Step: n.Name, Kind: n.Kind.String(), Index: a.turn, Tool: args.Name, Message: args.Reason})
	}
	return true, fmt.Sprintf("granted: %s is available from your next reply on", args.Name)
}

// canonicalJSON encodes decoded JSON with sorted keys.
func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// clipBytes cuts s to at most n bytes on a rune boundary, saying how much
// was cut.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n... (%d more bytes)", len(s)-cut)
}
