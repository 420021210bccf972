// Package model calls language models for Skein's llm= steps, LLM routers
// and judge() loops: one [Provider] interface (messages, an optional JSON
// schema and parameters in; text or an object, token usage and the raw reply
// out), one [Client] that speaks OpenAI-compatible chat completions through
// the openai-go SDK and Anthropic's Messages API through anthropic-sdk-go,
// retries that honour Retry-After ([Call]), schema validation with one
// repair retry ([Generate]), the prompts and readers for routers and judges,
// a run-wide token [Budget], and record/replay cassettes ([Cassette]).
//
// The package knows nothing of graphs or runs; the VM builds a [Request]
// from a step and hands the [Reply] back to its core. API keys are read from
// the environment variable a model names at the moment a request is sent and
// are never kept in a value of this package, an error, or a cassette.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/jsonschema"
	"github.com/skeinlang/skein/internal/stubrules"
	"github.com/skeinlang/skein/stdlib"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant" or "tool"
	Content string `json:"content"`
	// ToolCalls: an assistant message's calls of tools (agent steps).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID: a tool message answers the call with this id.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one call of a tool a model makes.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function called and its arguments, a JSON
// object as text (as the model wrote it: it may not be valid).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolDef offers one tool to the model, as an OpenAI function definition.
type ToolDef struct {
	Type     string      `json:"type"` // "function"
	Function FunctionDef `json:"function"`
}

// FunctionDef describes a function: its name, what it does and the JSON
// schema of its arguments.
type FunctionDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters"`
}

// Endpoint says where a request goes and which environment variable holds
// its key. It is not part of what a cassette matches or records.
type Endpoint struct {
	BaseURL string // e.g. https://api.openai.com/v1
	KeyEnv  string // e.g. OPENAI_API_KEY; "" sends no key
	// Answers and AnswersFile are the rules of [ProviderStub]: given, and
	// in a file (an absolute path).
	Answers     []stubrules.Rule `json:",omitempty"`
	AnswersFile string           `json:",omitempty"`
	// Fallbacks are the models [Call] asks, in order, when this one
	// fails with a provider error (model(fallbacks=)).
	Fallbacks []Config `json:",omitempty"`
	// Price, if set, prices this model's replies ([Usage.Cost]).
	Price *Price `json:",omitempty"`
	// RPM and TPM are the model's requests and tokens a minute (0: no
	// bound), which [Call] keeps to through [Policy.Pacers].
	RPM int `json:",omitempty"`
	TPM int `json:",omitempty"`
}

// Providers a request can be sent to: the API it speaks.
const (
	// ProviderOpenAI is the OpenAI-compatible chat completions API
	// (OpenAI, Azure's v1 API, vLLM, Ollama, llama.cpp, OpenRouter,
	// Anthropic's compatibility endpoint), the default.
	ProviderOpenAI = "openai"
	// ProviderAnthropic is Anthropic's native Messages API.
	ProviderAnthropic = "anthropic"
)

// Request is one chat completion request, in the provider's neutral form:
// [Client] turns it into the wire request of its provider.
type Request struct {
	Endpoint Endpoint `json:"-"`
	// Provider is the API the request is for: "" (OpenAI-compatible) or
	// [ProviderAnthropic]. A cassette matches on it, since the wire and
	// the recorded reply differ.
	Provider    string    `json:"provider,omitempty"`
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Schema      any       `json:"schema,omitempty"`      // a JSON schema (decoded JSON); nil asks for text
	SchemaName  string    `json:"schema_name,omitempty"` // response_format's name
	Temperature *float64  `json:"temperature,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	// ReasoningEffort is reasoning_effort= ("low", "medium", "high"...),
	// sent to models that reason.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Reasoning overrides the table of known models: true treats the
	// model as a reasoning model (max_completion_tokens, no
	// temperature), false as a chat model; nil asks the table.
	Reasoning *bool     `json:"reasoning,omitempty"`
	Tools     []ToolDef `json:"tools,omitempty"` // the functions the model may call (agent steps)
	// Partial accepts a reply cut at the token limit as it is; without it
	// such a reply fails with [CodeTruncated].
	Partial bool `json:"partial,omitempty"`
	// Stream, if set, is told the reply's text as it arrives, piece by
	// piece, on the goroutine that called Complete: [Client] asks the
	// provider to stream its reply; a recorded or stubbed reply is told
	// whole. The reply returned is the same as without it. Not part of
	// what a cassette matches or records.
	Stream func(text string) `json:"-"`
}

// streamWhole tells req.Stream the whole text of rep, a reply that was
// not streamed.
func streamWhole(req Request, rep *Reply) {
	if req.Stream != nil && rep != nil && rep.Text != "" {
		req.Stream(rep.Text)
	}
}

// Usage is the token count of one or more calls.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens are the prompt tokens the provider read from its
	// prompt cache; ReasoningTokens the completion tokens spent thinking.
	// Both are parts of the counts above, not additions to them.
	CachedTokens    int `json:"cached_tokens,omitempty"`
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// Attempts counts the HTTP requests sent: each try of a call, its
	// retries, its fallbacks' and a schema repair's (a replayed answer
	// counts the attempts its recording made). 0 where none was counted.
	Attempts int `json:"attempts,omitempty"`
	// Cost is in US dollars, of the replies of models with a price
	// (model(price=)); a reply of a model without one adds nothing.
	Cost float64 `json:"cost,omitempty"`
}

// Total is the tokens spent, prompt and completion.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.PromptTokens + v.PromptTokens, u.CompletionTokens + v.CompletionTokens,
		u.CachedTokens + v.CachedTokens, u.ReasoningTokens + v.ReasoningTokens,
		u.Attempts + v.Attempts, u.Cost + v.Cost}
}

// Price is what a model costs, in US dollars per million tokens
// (model(price = {"input": 2.5, "output": 10.0, "cached_input": 1.25})).
type Price struct {
	Input  float64 // a prompt token not read from the cache
	Output float64 // a completion token, reasoning tokens included
	// CachedInput is a prompt token read from the provider's cache;
	// nil prices it as Input.
	CachedInput *float64 `json:",omitempty"`
}

// Cost returns what usage u costs at p, in US dollars; 0 for a nil p.
func (p *Price) Cost(u Usage) float64 {
	if p == nil {
		return 0
	}
	cachedPrice := p.Input
	if p.CachedInput != nil {
		cachedPrice = *p.CachedInput
	}
	cached := min(max(u.CachedTokens, 0), u.PromptTokens)
	return (float64(u.PromptTokens-cached)*p.Input + float64(cached)*cachedPrice + float64(u.CompletionTokens)*p.Output) / 1e6
}

// Reply is what a model answered.
type Reply struct {
	Text string // the message content
	// ToolCalls are the tools the model called (a request with Tools).
	ToolCalls []ToolCall
	Object    any             // the decoded, validated object when the request had a schema ([Generate] only)
	Usage     Usage           // tokens of this reply (summed over repair attempts by [Generate])
	Raw       json.RawMessage // the provider's response body
	// Cut says the reply stopped at the token limit (finish_reason
	// "length"): its text is not all the model meant to write.
	Cut bool
	// Filtered says the provider's content filter stopped the reply
	// (finish_reason "content_filter", Anthropic's "refusal").
	Filtered bool
	// Model is the model id of a fallback that answered ([Call]); ""
	// when the request's own model did.
	Model string
	// Attempts is how many HTTP attempts a replayed reply stands for
	// (its recording's, failed ones included); 0 counts as one.
	Attempts int
}

// Provider answers chat completion requests, one attempt per call.
type Provider interface {
	Complete(ctx context.Context, req Request) (*Reply, error)
}

// Error codes of [Error].
const (
	CodeModel  = codes.ModelError
	CodeBudget = codes.BudgetExceeded
	CodeReplay = codes.ReplayMiss
	// CodeTimeout: no reply within the step's timeout= (a step's bound,
	// reported as for any step kind; the client's own per-request bound
	// is a transport error, CodeModel).
	CodeTimeout = codes.Timeout
	// CodeTruncated: the reply stopped at the token limit and the step
	// did not accept partial text.
	CodeTruncated = codes.ModelTruncated
	// CodeFiltered: the provider's content filter stopped the reply (or
	// the model refused); asking again would be refused again.
	CodeFiltered = codes.ModelFiltered
)

// Error is a failed model call.
type Error struct {
	Code       codes.Code // CodeModel, CodeTimeout, CodeBudget, CodeReplay, CodeTruncated or CodeFiltered
	Msg        string
	Status     int           // HTTP status, 0 if none
	Retryable  bool          // a transport error, a timeout, 429 or 5xx
	RetryAfter time.Duration // what the server asked for, 0 if nothing
}

func (e *Error) Error() string { return e.Msg }

// CodeOf returns the code of err: an [Error]'s own, "cancelled" for a
// cancelled context, else CodeModel.
func CodeOf(err error) codes.Code {
	var me *Error
	switch {
	case errors.As(err, &me):
		return me.Code
	case errors.Is(err, context.Canceled):
		return codes.Cancelled
	}
	return CodeModel
}

// Policy is how [Call] retries.
type Policy struct {
	Retries int           // extra attempts after a retryable failure
	Backoff time.Duration // the first wait, doubled after each retry
	// OnRetry, if set, is told about each retry before its wait.
	OnRetry func(attempt int, err error, wait time.Duration)
	// Budget, if set, is reserved before each attempt (see [Budget]) and
	// charged after it.
	Budget *Budget
	// Timeout, if set, bounds each attempt (a step's timeout=), and each
	// wait between attempts: an attempt that runs out is retried like a
	// transport error; a server that asks for a longer wait fails the
	// call.
	Timeout time.Duration
	// Pacers, if set, paces each attempt of a model with rpm or tpm
	// ([Pacers]).
	Pacers *Pacers
	// Attempts, if set, is added the HTTP attempts the call makes,
	// whether it succeeds or not (see [Usage.Attempts]).
	Attempts *int
}

// maxWait caps a Retry-After a server asks for.
const maxWait = 5 * time.Minute

// Call sends req through p, retrying transport errors, timeouts, 429 and
// 5xx up to pol.Retries times: the wait is the server's Retry-After when it
// gives one, else pol.Backoff doubled per retry. Cancelling ctx ends a
// request or a wait at once.
//
// When the model fails with a provider error (after its retries: a
// transport error, an HTTP error, a timeout, or a request a replay-only
// cassette lacks, where the recording run fell back), the models of
// req.Endpoint.Fallbacks are asked in order, each with its own retries;
// the reply's Model names the one that answered. A bad answer (cut,
// filtered, or not matching the schema) does not fall back, nor does a
// spent budget.
func Call(ctx context.Context, p Provider, req Request, pol Policy) (*Reply, error) {
	rep, _, err := call(ctx, p, req, pol)
	return rep, err
}

// call is [Call], also returning the request that answered: req itself, or
// the request sent to the fallback whose reply it is.
func call(ctx context.Context, p Provider, req Request, pol Policy) (*Reply, Request, error) {
	rep, err := callModel(ctx, p, req, pol)
	if !fallsBack(err) || len(req.Endpoint.Fallbacks) == 0 {
		return rep, req, err
	}
	msgs := []string{err.Error()}
	first := err
	for _, fb := range req.Endpoint.Fallbacks {
		if ctx.Err() != nil {
			return nil, req, ctx.Err()
		}
		r := fb.Request()
		r.Messages, r.Schema, r.SchemaName, r.Tools, r.Partial, r.Stream = req.Messages, req.Schema, req.SchemaName, req.Tools, req.Partial, req.Stream
		if req.MaxTokens > 0 && r.MaxTokens == 0 {
			r.MaxTokens = req.MaxTokens
		}
		rep, err = callModel(ctx, p, r, pol)
		if err == nil || !fallsBack(err) {
			if rep != nil {
				rep.Model = r.Model
			}
			return rep, r, err
		}
		msgs = append(msgs, fmt.Sprintf("fallback %s: %v", fb.Label(), err))
	}
	var me *Error
	errors.As(first, &me)
	return nil, req, &Error{Code: me.Code, Status: me.Status, Msg: strings.Join(msgs, "; ")}
}

// fallsBack reports whether err is a provider error a fallback model may
// not have.
func fallsBack(err error) bool {
	var me *Error
	if !errors.As(err, &me) {
		return false
	}
	return me.Code == CodeModel || me.Code == CodeTimeout || me.Code == CodeReplay
}

// callModel is [Call] for one model: its attempts and retries.
func callModel(ctx context.Context, p Provider, req Request, pol Policy) (*Reply, error) {
	wait := pol.Backoff
	pacer := pol.Pacers.pacer(req)
	for attempt := 1; ; attempt++ {
		took, err := pacer.wait(ctx, req, pol.Timeout)
		if err != nil {
			return nil, err
		}
		share, err := pol.Budget.reserve(ctx, req.MaxTokens)
		if err != nil {
			return nil, err
		}
		rep, err := complete(ctx, p, req, pol.Timeout)
		if err == nil {
			pacer.spent(took, rep.Usage)
		}
		if pol.Attempts != nil {
			*pol.Attempts += max(1, replyAttempts(rep))
		}
		if err == nil {
			rep.Usage.Attempts = 0 // counted by whoever asked, through pol.Attempts
			rep.Usage.Cost = req.Endpoint.Price.Cost(rep.Usage)
			if err := validUsage(req, rep.Usage); err != nil {
				pol.Budget.release(share, Usage{})
				return nil, err
			}
			if pol.Budget.release(share, rep.Usage) {
				return rep, pol.Budget.overrun(rep.Usage)
			}
			return rep, finished(req, rep)
		}
		pol.Budget.release(share, Usage{})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var me *Error
		if !errors.As(err, &me) || !me.Retryable || attempt > pol.Retries {
			return nil, err
		}
		d := wait
		if pol.Timeout > 0 {
			d = min(d, pol.Timeout)
		}
		if me.RetryAfter > 0 {
			d = min(me.RetryAfter, maxWait)
			if pol.Timeout > 0 && d > pol.Timeout {
				// The step's timeout bounds each wait as it does each
				// attempt: retrying sooner than asked would be refused.
				return nil, &Error{Code: me.Code, Status: me.Status, Msg: fmt.Sprintf("%s (the server asked to retry after %s, longer than the step's timeout of %s)", me.Msg, d, pol.Timeout)}
			}
		}
		if pol.OnRetry != nil {
			pol.OnRetry(attempt, err, d)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

// replyAttempts is the attempts a reply stands for (0 for none).
func replyAttempts(rep *Reply) int {
	if rep == nil {
		return 0
	}
	return rep.Attempts
}

// validUsage refuses a reply whose usage is negative: summed as it is,
// it would give back budget the run spent.
func validUsage(req Request, u Usage) error {
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CachedTokens < 0 || u.ReasoningTokens < 0 {
		return &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the server reported a negative token usage (prompt %d, completion %d, cached %d, reasoning %d)",
			req.Model, u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.ReasoningTokens)}
	}
	return nil
}

// finished says why a reply that came back cannot be used as it is: the
// content filter stopped it, or it was cut at the token limit and req does
// not accept partial text. Neither is retried: the same request would end
// the same way.
func finished(req Request, rep *Reply) error {
	switch {
	case rep.Filtered:
		return &Error{Code: CodeFiltered, Msg: fmt.Sprintf("model %q: the provider's content filter stopped the reply", req.Model)}
	case rep.Cut && len(rep.ToolCalls) > 0:
		// The last call's arguments may be cut and still parse
		// ({"path": "mai"}): no tool runs on them, partial or not.
		return &Error{Code: CodeTruncated, Msg: fmt.Sprintf("model %q: the reply was cut off at the token limit (%s) while it called a tool: raise max_tokens", req.Model, limitName(req))}
	case rep.Cut && !req.Partial:
		return &Error{Code: CodeTruncated, Msg: fmt.Sprintf("model %q: the reply was cut off at the token limit (%s): raise max_tokens, or accept partial text with partial = True", req.Model, limitName(req))}
	}
	return nil
}

// limitName says which limit cut a reply.
func limitName(req Request) string {
	if req.MaxTokens > 0 {
		return fmt.Sprintf("max_tokens = %d", req.MaxTokens)
	}
	return "the provider's default"
}

// complete makes one attempt, bounded by timeout when it is set.
func complete(ctx context.Context, p Provider, req Request, timeout time.Duration) (*Reply, error) {
	if timeout <= 0 {
		return p.Complete(ctx, req)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rep, err := p.Complete(actx, req)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return nil, &Error{Code: CodeTimeout, Msg: fmt.Sprintf("model %q: no reply within the step's timeout of %s", req.Model, timeout), Retryable: true}
	}
	return rep, err
}

// Generate is one model step: [Call], and when req has a schema, the reply
// parsed as JSON and validated against it. A reply that does not validate is
// asked for once more with the validation error appended to the
// conversation, of the model that gave it (a fallback's invalid reply is
// repaired by that fallback); a second invalid reply is a CodeModel error.
// The returned usage covers every attempt.
func Generate(ctx context.Context, p Provider, req Request, pol Policy) (*Reply, error) {
	rep, answered, err := call(ctx, p, req, pol)
	if err != nil || req.Schema == nil {
		return rep, err
	}
	obj, verr := decodeValid(req.Schema, rep.Text)
	if verr == nil {
		rep.Object = obj
		return rep, nil
	}
	repair := answered
	if rep.Model != "" {
		repair.Endpoint.Fallbacks = nil // a fallback's own fallbacks are not followed
	}
	repair.Messages = append(append([]Message(nil), req.Messages...),
		Message{Role: "assistant", Content: rep.Text},
		Message{Role: "user", Content: "Your reply does not match the required JSON schema: " + verr.Error() + ". Reply again with only a JSON value that matches the schema."})
	used := rep.Usage
	rep2, err := Call(ctx, p, repair, pol)
	if err != nil {
		return nil, err
	}
	if rep2.Model == "" {
		rep2.Model = rep.Model
	}
	rep2.Usage = used.Add(rep2.Usage)
	obj, verr2 := decodeValid(req.Schema, rep2.Text)
	if verr2 != nil {
		msg := "the reply does not match the schema, also after one repair: " + verr2.Error()
		if rep2.Cut {
			msg += " (the reply was cut off at the token limit: raise max_tokens)"
		}
		return rep2, &Error{Code: CodeModel, Msg: msg}
	}
	rep2.Object = obj
	return rep2, nil
}

// DecodeValid decodes text as JSON (a Markdown code fence around it and
// leading <think> blocks are tolerated: [Unwrap]) and validates it against
// schema.
func DecodeValid(schema any, text string) (any, error) { return decodeValid(schema, text) }

// decodeValid decodes text as JSON (a Markdown code fence around it and
// leading <think> blocks are tolerated: [Unwrap]) and validates it against
// schema.
func decodeValid(schema any, text string) (any, error) {
	t := Unwrap(text)
	// Refuse a reply whose flow data would be over the bounds of flow
	// data (size, nesting) before Go decodes it, into values that take a
	// few times as much.
	if err := stdlib.CheckJSON([]byte(t)); err != nil {
		return nil, fmt.Errorf("the reply cannot be used: %v", err)
	}
	var v any
	if err := json.Unmarshal([]byte(t), &v); err != nil {
		return nil, fmt.Errorf("the reply is not JSON (%v)", err)
	}
	// A strict schema made optional properties nullable: their null
	// means the model left them out.
	v = jsonschema.DropOptionalNulls(schema, v)
	if err := jsonschema.Validate(schema, v); err != nil {
		return nil, err
	}
	return v, nil
}

// Budget bounds the tokens a run tree may spend. A nil *Budget is no bound.
// It is safe for concurrent use.
//
// A call reserves its share before it is sent ([Call]): its max_tokens,
// or all that is left when it has none or its max_tokens is more than
// is left. A call whose share does not fit beside the shares of the calls
// in flight waits for them to end, so parallel calls cannot overrun the
// budget together; only one call's own spend past its share (its prompt,
// or a reply past what was left) can, and that call then fails
// budget_exceeded.
type Budget struct {
	Limit int64
	// CostLimit bounds the US dollars the run tree's priced replies may
	// cost (flow(max_cost=)); 0 is no bound. A call that would start
	// once it is spent fails, as one past Limit does.
	CostLimit float64

	mu       sync.Mutex
	used     int64
	cost     float64
	reserved int64         // the shares of the calls in flight
	freed    chan struct{} // closed when a share is given back (nil: nobody waits)
}

// NewBudget returns a budget of limit tokens; limit <= 0 is no bound but
// still counts.
func NewBudget(limit int64) *Budget { return &Budget{Limit: limit} }

// Used returns the tokens spent so far.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Restore sets the tokens spent so far: a run continued from a snapshot
// carries on with what it had spent.
func (b *Budget) Restore(used int64) {
	if b != nil {
		b.mu.Lock()
		b.used = used
		b.mu.Unlock()
	}
}

// Cost returns the US dollars spent so far.
func (b *Budget) Cost() float64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cost
}

// RestoreCost sets the US dollars spent so far (a run continued from a
// snapshot).
func (b *Budget) RestoreCost(cost float64) {
	if b != nil {
		b.mu.Lock()
		b.cost = cost
		b.mu.Unlock()
	}
}

// overrun is the error of a call whose reply took the run tree past
// its budget.
func (b *Budget) overrun(u Usage) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit > 0 && b.used > b.Limit {
		return &Error{Code: CodeBudget, Msg: fmt.Sprintf("token budget of %d exceeded: this call spent %d (%d used)", b.Limit, u.Total(), b.used)}
	}
	return &Error{Code: CodeBudget, Msg: fmt.Sprintf("cost budget of $%g exceeded: this call cost $%.4f ($%.4f spent)", b.CostLimit, u.Cost, b.cost)}
}

// Charge counts tokens spent by a call made elsewhere (an engine's
// worker) against the budget.
func (b *Budget) Charge(u Usage) { b.release(0, u) }

// exhausted is the error of a call made once the budget is spent.
func (b *Budget) exhausted() error {
	return &Error{Code: CodeBudget, Msg: fmt.Sprintf("token budget of %d exhausted (%d used)", b.Limit, b.used)}
}

// reserve takes the share of a call whose reply may take up to maxTokens
// tokens (0: no bound), waiting while the calls in flight hold too much
// of the budget; it fails once the budget is spent, or ctx is done.
func (b *Budget) reserve(ctx context.Context, maxTokens int) (int64, error) {
	if b == nil {
		return 0, nil
	}
	for {
		b.mu.Lock()
		if b.CostLimit > 0 && b.cost >= b.CostLimit {
			defer b.mu.Unlock()
			return 0, &Error{Code: CodeBudget, Msg: fmt.Sprintf("cost budget of $%g exhausted ($%.4f spent)", b.CostLimit, b.cost)}
		}
		if b.Limit <= 0 {
			b.mu.Unlock()
			return 0, nil
		}
		if b.used >= b.Limit {
			defer b.mu.Unlock()
			return 0, b.exhausted()
		}
		share, left := int64(maxTokens), b.Limit-b.used
		if share <= 0 || share > left {
			share = left
		}
		if share <= left-b.reserved { // (always so with no call in flight)
			b.reserved += share
			b.mu.Unlock()
			return share, nil
		}
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-freed:
		}
	}
}

// release gives a call's share back and charges what it spent; it
// reports whether the budget is now overrun.
func (b *Budget) release(share int64, u Usage) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved -= share
	b.used += int64(u.Total())
	b.cost += u.Cost
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	return b.Limit > 0 && b.used > b.Limit || b.CostLimit > 0 && b.cost > b.CostLimit
}
