package vm

// This file runs model calls (docs/models.md) through the effect seam: llm=
// steps, LLM routers and judge() loops each ask for one model effect per
// visit (or iteration); the request carries the rendered messages with the
// model resolved, and the completion the reply. Reading a router's label or
// a judge's verdict out of the reply is the core's, so a journal or a mock
// that hands back the raw answer is read exactly as a live call is.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/internal/stubrules"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
)

// modelRun is what a model effect needs from its run to be called here:
// the provider and the run tree's token budget.
type modelRun struct {
	provider model.Provider
	budget   *model.Budget
	pacers   *model.Pacers // the run tree's
	retries  int
	backoff  time.Duration
	// onRetry reports a retried attempt (a step_retrying event); it may
	// be called from any goroutine.
	onRetry func(attempt int, err error, wait time.Duration)
	// onDelta, if set, is told each piece of the reply's text as it
	// streams (a model_delta event) and the HTTP attempt of the call it
	// is of (a retry, a fallback or a repair streams its reply anew).
	onDelta func(attempt int, text string)
}

// CallModel makes the model call of a model request on this machine:
// transport failures are retried (honouring Retry-After), a schema reply is
// validated with one repair, the token budget is checked before each
// attempt. The completion's Answer is the reply's text and Output the
// step's output (text, or the validated object).
func (req *EffectRequest) CallModel(ctx context.Context) *EffectCompletion {
	mc, ok := req.ModelJob()
	if !ok {
		return &EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("step %q is not a model call", req.Step)}
	}
	onRetry := req.model.onRetry
	if onRetry != nil && req.from != nil && !req.from.secrets.Empty() {
		onRetry = func(attempt int, err error, wait time.Duration) {
			req.model.onRetry(attempt, errors.New(req.from.mask(err.Error())), wait)
		}
	}
	onDelta, flush := req.model.onDelta, func() {}
	if onDelta != nil && req.from != nil && !req.from.secrets.Empty() {
		onDelta, flush = req.maskDeltas(onDelta)
	}
	o := mc.call(ctx, req.model.provider, req.model.budget, req.model.pacers, onRetry, onDelta)
	flush()
	return o.masked(req.from).completion(req.Step, req.Kind)
}

// maskDeltas returns onDelta masking the run's model keys in the pieces
// of text it is told, each attempt's as one stream (a key split over two
// pieces is masked whole), and a function that tells what it held back.
func (req *EffectRequest) maskDeltas(onDelta func(int, string)) (func(int, string), func()) {
	attempt := 0
	var mw *secrets.Writer
	flush := func() {
		if mw != nil {
			mw.Flush()
		}
	}
	return func(a int, text string) {
		if a != attempt || mw == nil {
			flush()
			attempt = a
			mw = req.from.secrets.NewWriter(deltaWriter(func(b []byte) { onDelta(a, string(b)) }))
		}
		mw.Write([]byte(text))
	}, flush
}

// deltaWriter is an io.Writer telling what is written to a function.
type deltaWriter func([]byte)

func (w deltaWriter) Write(b []byte) (int, error) {
	if len(b) > 0 {
		w(b)
	}
	return len(b), nil
}

// masked returns o with the value of every model key of run r masked in
// its error, answer and object: a server that echoes the key it was sent
// in an error message (or a model that repeats one) does not put it in
// the journal, the record, the events or the next request.
func (o *ModelOutcome) masked(r *run) *ModelOutcome {
	if r == nil || r.secrets.Empty() {
		return o
	}
	o.Error, o.Answer = r.mask(o.Error), r.mask(o.Answer)
	if len(o.Object) > 0 {
		if m := r.mask(string(o.Object)); m != string(o.Object) && json.Valid([]byte(m)) {
			o.Object = json.RawMessage(m)
		}
	}
	for i, tc := range o.ToolCalls {
		o.ToolCalls[i].Function.Arguments = r.mask(tc.Function.Arguments)
	}
	return o
}

// ModelJob is a model request's call as plain data, for an engine that
// makes it on another machine (a worker): [ModelJob.Call] there, then
// [EffectRequest.ModelCompletion] back where the run decides. It is what
// [EffectRequest.CallModel] does locally, in two halves.
type ModelJob struct {
	Step string
	Kind graphir.Kind
	// Chat is the request; Endpoint its endpoint, which Chat's JSON
	// leaves out (the key's variable name, never the key).
	Chat     model.Request
	Endpoint model.Endpoint
	Timeout  time.Duration `json:",omitempty"`
	Retries  int           `json:",omitempty"`
	Backoff  time.Duration `json:",omitempty"`
	// TokenLimit and TokensUsed are the run tree's token budget when the
	// call starts: an attempt is refused once it is spent.
	TokenLimit int64 `json:",omitempty"`
	TokensUsed int64 `json:",omitempty"`
	// CostLimit and CostUsed are its cost budget, in US dollars.
	CostLimit float64 `json:",omitempty"`
	CostUsed  float64 `json:",omitempty"`
}

// ModelOutcome is how a model call ended, as plain data.
type ModelOutcome struct {
	OK        bool       `json:",omitempty"`
	Cancelled bool       `json:",omitempty"`
	Code      codes.Code `json:",omitempty"`
	Error     string     `json:",omitempty"`
	// Model is the model id; Answer the reply's text.
	Model    string
	Answer   string        `json:",omitempty"`
	Usage    model.Usage   `json:",omitempty"`
	Duration time.Duration `json:",omitempty"`
	// Object is the validated object of a schema reply, as JSON.
	Object json.RawMessage `json:",omitempty"`
	// ToolCalls are the tools an agent's model called.
	ToolCalls []model.ToolCall `json:",omitempty"`
}

// ModelJob returns the call of a model request; false for a request
// that is not one.
func (req *EffectRequest) ModelJob() (ModelJob, bool) {
	if req.Chat == nil || req.model == nil {
		return ModelJob{}, false
	}
	m := req.model
	mc := ModelJob{Step: req.Step, Kind: req.Kind, Chat: *req.Chat, Endpoint: req.Chat.Endpoint, Timeout: req.Timeout,
		Retries: m.retries, Backoff: m.backoff}
	if m.budget != nil {
		mc.TokenLimit, mc.TokensUsed = m.budget.Limit, m.budget.Used()
		mc.CostLimit, mc.CostUsed = m.budget.CostLimit, m.budget.Cost()
	}
	return mc, true
}

// Call makes the call with provider p, as [EffectRequest.CallModel] does,
// against a budget of what was left of the run tree's when the call
// started, paced by this process's pacers ([WorkerPacers]).
func (mc *ModelJob) Call(ctx context.Context, p model.Provider) *ModelOutcome {
	b := model.NewBudget(mc.TokenLimit)
	b.Restore(mc.TokensUsed)
	b.CostLimit = mc.CostLimit
	b.RestoreCost(mc.CostUsed)
	return mc.call(ctx, p, b, WorkerPacers, nil, nil)
}

// WorkerPacers pace the model calls [ModelJob.Call] makes: model(rpm=,
// tpm=) holds per process of a worker, not across workers.
var WorkerPacers = model.NewPacers()

func (mc *ModelJob) call(ctx context.Context, p model.Provider, budget *model.Budget, pacers *model.Pacers,
	onRetry func(int, error, time.Duration), onDelta func(int, string)) *ModelOutcome {
	start := time.Now()
	chat := mc.Chat
	chat.Endpoint = mc.Endpoint
	attempts := 0
	if onDelta != nil {
		// Told on the goroutine of the attempt, before it is counted.
		chat.Stream = func(text string) { onDelta(attempts+1, text) }
	}
	pol := model.Policy{Retries: mc.Retries, Backoff: mc.Backoff, Budget: budget, Timeout: mc.Timeout, Attempts: &attempts, Pacers: pacers}
	if onRetry != nil {
		pol.OnRetry = func(attempt int, err error, wait time.Duration) { onRetry(attempt+1, err, wait) }
	}
	var rep *model.Reply
	var err error
	if mc.Kind == graphir.KindLLM && len(chat.Tools) == 0 {
		rep, err = model.Generate(ctx, p, chat, pol)
	} else {
		// Routers and judges read their answers loosely: a server that
		// ignores schemas may answer in plain text.
		rep, err = model.Call(ctx, p, chat, pol)
	}
	o := &ModelOutcome{Model: chat.Model, Duration: time.Since(start)}
	if rep != nil {
		o.Answer, o.Usage = rep.Text, rep.Usage
		if rep.Model != "" {
			o.Model = rep.Model // a fallback answered
		}
	}
	o.Usage.Attempts = attempts
	if err != nil {
		if ctx.Err() != nil {
			o.Cancelled, o.Error = true, "cancelled"
			return o
		}
		o.Code, o.Error = model.CodeOf(err), err.Error()
		return o
	}
	o.OK = true
	o.ToolCalls = rep.ToolCalls
	if rep.Object != nil {
		b, err := json.Marshal(rep.Object)
		if err != nil {
			return &ModelOutcome{Code: model.CodeModel, Error: err.Error(), Model: o.Model, Usage: o.Usage, Answer: o.Answer, Duration: o.Duration}
		}
		o.Object = b
	}
	return o
}

// ModelCompletion is the completion of model request req that another
// machine made with [ModelJob.Call]: the run tree's token budget is
// charged with what it spent, as a call made here charges it.
func (req *EffectRequest) ModelCompletion(o *ModelOutcome) *EffectCompletion {
	if req.model != nil && req.model.budget != nil {
		req.model.budget.Charge(o.Usage)
	}
	return o.masked(req.from).completion(req.Step, req.Kind)
}

// completion turns how the call of step (of kind) ended into the
// completion the core reads.
func (o *ModelOutcome) completion(step string, kind graphir.Kind) *EffectCompletion {
	c := &EffectCompletion{OK: o.OK, Cancelled: o.Cancelled, Code: o.Code, Error: o.Error, Model: o.Model, Answer: o.Answer,
		Usage: o.Usage, Duration: o.Duration}
	if !o.OK {
		if o.Code == model.CodeBudget || o.Code == model.CodeReplay {
			c.Stop = &graphir.Error{Code: o.Code, Step: step, Msg: fmt.Sprintf("step %q: %s", step, o.Error)}
		}
		return c
	}
	if kind == graphir.KindAgent {
		// The core reads the reply (tool calls, or the final answer).
		c.Output = envelope(&model.Reply{Text: o.Answer, ToolCalls: o.ToolCalls})
		return c
	}
	c.Output = starlark.String(o.Answer)
	if o.Object != nil {
		v, err := stdlib.FromJSON(o.Object)
		if err != nil {
			return &EffectCompletion{Code: model.CodeModel, Error: err.Error(), Model: c.Model, Usage: c.Usage, Answer: c.Answer, Duration: c.Duration}
		}
		c.Output = v
	}
	return c
}

// getenv looks a variable up in the run's environment for models (the
// last entry wins, as for processes).
func (r *run) getenv(key string) string {
	if v, ok := r.opts.secretVals.lookup(key); ok {
		return v
	}
	if r.opts.ModelEnv != nil {
		return lookupEnv(r.opts.ModelEnv, key)
	}
	return lookupEnv(r.opts.Env, key)
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// modelKeys returns the key variables of the models g and its literal
// child flows may call: each model()'s api_key_env, and the default
// model's $OPENAI_API_KEY when any step calls a model. Where a child flow's
// file is a template, its models are not known before it loads: every
// variable of env named *_API_KEY counts then. Tasks and tools do not
// inherit them (docs/models.md).
func modelKeys(g *graphir.Graph, env []string) map[string]bool {
	keys := map[string]bool{}
	templated := false
	g.EachGraph(func(g *graphir.Graph) {
		for _, m := range g.Models {
			if m.KeyEnv != "" {
				keys[m.KeyEnv] = true
			}
		}
		for _, n := range g.Steps() {
			if n.IsModelCall() {
				keys[model.EnvKey] = true
			}
			if n.Subflow != nil && n.Subflow.Child == nil && n.Subflow.ChildErr == nil {
				templated = true
			}
		}
	})
	if templated {
		for _, kv := range env {
			if k, _, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "_API_KEY") {
				keys[k] = true
			}
		}
	}
	return keys
}

// maskTee returns the writers of t masking the run's secrets, and a
// function that writes what they held back (nil writers stay nil).
func (req *EffectRequest) maskTee(t *Tee) (stdout, stderr io.Writer, flush func()) {
	if t == nil {
		return nil, nil, func() {}
	}
	if req.from == nil || req.from.secrets.Empty() {
		return t.Stdout, t.Stderr, func() {}
	}
	var ws []*secrets.Writer
	wrap := func(w io.Writer) io.Writer {
		if w == nil {
			return nil
		}
		m := req.from.secrets.NewWriter(w)
		ws = append(ws, m)
		return m
	}
	stdout, stderr = wrap(t.Stdout), wrap(t.Stderr)
	return stdout, stderr, func() {
		for _, m := range ws {
			m.Flush()
		}
	}
}

// mask returns s with the run's secrets masked ([secrets.Mask]).
func (r *run) mask(s string) string { return r.secrets.Mask(s) }

// withoutKeys returns env without the variables in keys (env itself when
// it has none of them).
func withoutKeys(env []string, keys map[string]bool) []string {
	if len(keys) == 0 {
		return env
	}
	var out []string
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !keys[k] {
			if out != nil {
				out = append(out, kv)
			}
			continue
		}
		if out == nil {
			out = append(make([]string, 0, len(env)), env[:i]...)
		}
	}
	if out == nil {
		return env
	}
	return out
}

// ModelConfig resolves the model named name ("" for the default) for a
// call in g: its model() declaration, else (when g declares none) the model
// id name at the default server, else an error.
func ModelConfig(g *graphir.Graph, name string, getenv func(string) string) (model.Config, error) {
	if name == "" {
		return model.Resolve(nil, getenv), nil
	}
	if d := g.ModelDecl(name); d != nil {
		c, err := declConfig(g, d, getenv)
		if err != nil {
			return c, err
		}
		for _, fb := range d.Fallbacks {
			fd := g.ModelDecl(fb)
			if fd == nil {
				return model.Config{}, fmt.Errorf("model %q falls back to model %q, which is not declared", name, fb)
			}
			fc, err := declConfig(g, fd, getenv)
			if err != nil {
				return model.Config{}, err
			}
			c.Fallbacks = append(c.Fallbacks, fc)
		}
		return c, nil
	}
	if len(g.Models) == 0 {
		c := model.Resolve(nil, getenv)
		c.Model = name
		return c, nil
	}
	return model.Config{}, fmt.Errorf("model %q is not declared", name)
}

// modelPrice is the price model(price=) gives (checked at load:
// price_invalid), nil for none.
func modelPrice(p map[string]float64) *model.Price {
	if len(p) == 0 {
		return nil
	}
	mp := &model.Price{Input: p["input"], Output: p["output"]}
	if c, ok := p["cached_input"]; ok {
		mp.CachedInput = &c
	}
	return mp
}

// declConfig resolves model() declaration d of g (its fallbacks aside).
func declConfig(g *graphir.Graph, d *graphir.ModelDecl, getenv func(string) string) (model.Config, error) {
	keyEnv := d.KeyEnv
	if d.KeyFile != "" {
		keyEnv = keyFileVar(d.KeyFile)
	}
	md := &model.Decl{Name: d.Name, Model: d.Model, Provider: d.Provider, BaseURL: d.BaseURL, KeyEnv: keyEnv,
		Temperature: d.Temperature, MaxTokens: d.MaxTokens, ReasoningEffort: d.ReasoningEffort, Reasoning: d.Reasoning,
		Price: modelPrice(d.Price), RPM: d.RPM, TPM: d.TPM}
	if d.Answers != nil {
		rules, err := stubrules.Decode(d.Answers)
		if err != nil {
			return model.Config{}, fmt.Errorf("model %q: answers: %v", d.Name, err)
		}
		md.Answers = rules
	}
	if d.AnswersFile != "" {
		// Relative to the flow's folder, as child flows' paths are.
		md.AnswersFile = d.AnswersFile
		if !filepath.IsAbs(md.AnswersFile) {
			md.AnswersFile = filepath.Join(filepath.Dir(confine.Abs(g.File)), md.AnswersFile)
		}
	}
	return model.Resolve(md, getenv), nil
}

// CheckModels reports the first model call of g, or of a literal child
// flow (of a step or a flow= tool), whose model cannot be called with the
// environment env: no model id, a bad base URL, or a key variable that is
// not set. It says which variable to set. A run refuses to start on it.
func CheckModels(g *graphir.Graph, env []string) error {
	getenv := func(k string) string { return lookupEnv(env, k) }
	var first error
	g.EachGraph(func(g *graphir.Graph) {
		if first != nil {
			return
		}
		for _, n := range g.Steps() {
			if !n.IsModelCall() {
				continue
			}
			var name string
			switch {
			case n.Call != nil:
				name = n.Call.Model
			case n.Loop != nil && n.Loop.Judge != nil:
				name = n.Loop.Judge.Model
			}
			c, err := ModelConfig(g, name, getenv)
			if err == nil {
				err = c.Usable(getenv)
			}
			for _, fb := range c.Fallbacks {
				if err == nil {
					if err = fb.Usable(getenv); err != nil {
						err = fmt.Errorf("fallback %v", err)
					}
				}
			}
			if err != nil {
				first = fmt.Errorf("%s: step %q: %v", n.Pos, n.Name, err)
				return
			}
		}
	})
	return first
}

// modelRequest resolves the model for a call by step n and returns the
// effect request for it, with chat filled in by the caller.
func (r *run) modelRequest(f *frame, n *graphir.Node, name string) (*EffectRequest, error) {
	cfg, err := ModelConfig(r.g, name, r.getenv)
	if err != nil {
		return nil, err
	}
	chat := cfg.Request()
	if n.Call != nil && n.Call.MaxTokens > 0 {
		chat.MaxTokens = n.Call.MaxTokens
		// The step's bound holds whichever model answers.
		fbs := slices.Clone(chat.Endpoint.Fallbacks)
		for i := range fbs {
			fbs[i].MaxTokens = n.Call.MaxTokens
		}
		chat.Endpoint.Fallbacks = fbs
	}
	if n.Call != nil {
		chat.Partial = n.Call.Partial
	}
	req := r.request(f, n)
	req.Chat = &chat
	if n.Kind == graphir.KindLLM || n.Kind == graphir.KindAgent {
		// Each attempt may take the step's whole timeout, longer or
		// shorter than the client's default.
		req.Timeout = n.Timeout
	}
	req.model = &modelRun{provider: r.opts.Models, budget: r.opts.budget, pacers: r.opts.Pacers, retries: n.Retries, backoff: n.Backoff}
	r.reportRetries(n, req)
	if n.Kind == graphir.KindLLM {
		r.reportDeltas(n, req)
	}
	if n.Kind == graphir.KindLoop {
		req.model.retries, req.model.backoff = judgeRetries, time.Second
	}
	return req, nil
}

// judgeRetries is the retries of a judge's call (judge() takes none).
const judgeRetries = 2

// modelFailed fails step n because its call could not even be built.
func (r *run) modelFailed(f *frame, n *graphir.Node, err error) {
	var te *templateError
	if errors.As(err, &te) {
		r.evalFailed(f, n, "", err)
		return
	}
	r.finish(f, n, failure(model.CodeModel, err.Error()))
}

// startLLM starts an llm= step: its system and user messages rendered,
// with the schema, if any.
func (r *run) startLLM(f *frame, n *graphir.Node) {
	req, err := r.modelRequest(f, n, n.Call.Model)
	if err != nil {
		r.modelFailed(f, n, err)
		return
	}
	prompt, ok := r.renderChat(f, n, req.Chat, "llm")
	if !ok {
		return
	}
	req.Prompt = prompt
	r.startEffect(f, n, req)
}

// renderChat adds step n's rendered system message (if any) and prompt to
// chat, with n's schema; what names the prompt in an error. It returns the
// prompt, or false once the failure has been reported.
func (r *run) renderChat(f *frame, n *graphir.Node, chat *model.Request, what string) (string, bool) {
	prompt, err := r.render(f, n, n.Call.Prompt)
	if err != nil {
		r.evalFailed(f, n, what, err)
		return "", false
	}
	if n.Call.System != nil {
		sys, err := r.render(f, n, n.Call.System)
		if err != nil {
			r.evalFailed(f, n, "system", err)
			return "", false
		}
		chat.Messages = append(chat.Messages, model.Message{Role: "system", Content: sys})
	}
	chat.Messages = append(chat.Messages, model.Message{Role: "user", Content: prompt})
	if n.Call.HasSchema {
		chat.Schema, chat.SchemaName = n.Call.Schema, "output"
	}
	return prompt, true
}

// startLLMRoute starts an LLM router's call: the rendered prompt, and a
// schema allowing exactly its labels.
func (r *run) startLLMRoute(f *frame, n *graphir.Node) {
	req, err := r.modelRequest(f, n, n.Call.Model)
	if err != nil {
		r.failedAt(f, n, &graphir.Error{Code: model.CodeModel, Step: n.Name, Msg: fmt.Sprintf("router %q: %v", n.Name, err)})
		return
	}
	prompt, err := r.render(f, n, n.Call.Prompt)
	if err != nil {
		r.evalFailed(f, n, "llm", err)
		return
	}
	*req.Chat = model.RouteRequest(*req.Chat, "", prompt, routeLabels(n))
	req.Prompt = prompt
	r.startEffect(f, n, req)
}

func routeLabels(n *graphir.Node) []string {
	labels := make([]string, len(n.Router.Routes))
	for i, rt := range n.Router.Routes {
		labels[i] = rt.Label
	}
	return labels
}

// routed takes the branch an LLM router's answer names.
func (r *run) routed(f *frame, n *graphir.Node, c *EffectCompletion) {
	rec := r.recs[n.ID]
	answer := c.Answer
	if answer == "" {
		if s, ok := c.Output.(starlark.String); ok {
			answer = string(s) // a mock or journal that gives the label itself
		}
	}
	rec.Answer = answer
	if !c.OK {
		if c.Stop != nil {
			r.failedAt(f, n, c.Stop)
			return
		}
		r.finish(f, n, failure(failCodeOr(c.Code, model.CodeModel), c.Error))
		return
	}
	label, ok := model.ReadLabel(answer, routeLabels(n))
	via := graphir.EdgeID(-1)
	if ok {
		for _, rt := range n.Router.Routes {
			if rt.Label == label {
				via = rt.Target.Edge
			}
		}
	} else if n.Router.Default != nil {
		via = n.Router.Default.Edge
		label = r.g.Nodes[n.Router.Default.ID].Name
	}
	if via < 0 {
		r.failedAt(f, n, &graphir.Error{Code: codes.NoRoute, Step: n.Name,
			Msg: fmt.Sprintf("router %q: the model answered %q, which is none of %s, and there is no default", n.Name, clipText(answer, 80), quoteList(routeLabels(n)))})
		return
	}
	r.finish(f, n, &outcome{ok: true, value: starlark.String(label), via: via})
}

func failCodeOr(code, def codes.Code) codes.Code {
	if code == "" || code == codes.StepFailed {
		return def
	}
	return code
}

func clipText(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// startJudge asks a judged loop's model about the iteration of lf that
// produced out.
func (r *run) startJudge(lf *frame, out starlark.Value) {
	n := lf.node
	req, err := r.modelRequest(lf.parent, n, n.Loop.Judge.Model)
	if err != nil {
		r.failedAt(lf.parent, n, &graphir.Error{Code: model.CodeModel, Step: n.Name, Msg: fmt.Sprintf("loop %q: judge: %v", n.Name, err)})
		return
	}
	g, err := stdlib.ToGo(out)
	if err != nil {
		g = out.String()
	}
	feedback := ""
	if s, ok := lf.feedback.(starlark.String); ok {
		feedback = string(s)
	}
	*req.Chat = model.JudgeRequest(*req.Chat, n.Loop.Judge.Condition, lf.iteration, g, feedback)
	req.Prompt = req.Chat.Messages[len(req.Chat.Messages)-1].Content
	req.Scope = lf.scopePath() // one judge call per iteration
	lf.judging = out
	r.startEffect(lf, n, req)
}

// judged acts on a judge's verdict: STOP ends the loop, CONTINUE (and a
// verdict that cannot be read) runs another iteration within the bound,
// UNRELATED ends the loop at once with a warning.
func (r *run) judged(lf *frame, c *EffectCompletion) {
	n := lf.node
	out := lf.judging
	lf.judging = nil
	if !c.OK {
		if c.Stop != nil {
			r.failedAt(lf.parent, n, c.Stop)
			return
		}
		r.recs[n.ID].Iterations = lf.iteration
		lf.dead = true
		lf.cancelExec()
		r.finish(lf.parent, n, failure(failCodeOr(c.Code, model.CodeModel),
			fmt.Sprintf("judge after iteration %d: %s", lf.iteration, c.Error)))
		return
	}
	answer := c.Answer
	if answer == "" {
		if s, ok := c.Output.(starlark.String); ok {
			answer = string(s)
		}
	}
	verdict, reason, _ := model.ReadVerdict(answer)
	var fb starlark.Value = starlark.None
	if reason != "" {
		fb = starlark.String(reason)
	}
	switch verdict {
	case model.Stop:
		r.untilDecided(lf, out, true, fb, "until")
	case model.Unrelated:
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("loop %q: the judge found the condition %q unrelated to what the loop produces (%s); the loop stopped after iteration %d",
			n.Name, n.Loop.Judge.Condition, orNone(reason), lf.iteration))
		r.untilDecided(lf, out, true, fb, "condition_unrelated")
	default:
		r.untilDecided(lf, out, false, fb, "")
	}
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// modelDone records what a model call spent and reports it. A completion
// without a model id was not a call (a mock, a dry run, or an outcome
// replayed from the run store): it is recorded but not counted. calls is
// the number of tools an agent's turn called.
func (r *run) modelDone(f *frame, n *graphir.Node, req *EffectRequest, c *EffectCompletion, calls int) {
	rec := r.recs[n.ID]
	rec.Model = req.Chat.Model
	if c.Model != "" {
		rec.Model = c.Model // the model that answered: a fallback's
	}
	rec.Usage = rec.Usage.Add(c.Usage)
	r.res.Usage = r.res.Usage.Add(c.Usage)
	if c.Model == "" {
		return
	}
	r.res.ModelCalls++
	if r.events {
		r.emit(&Event{Type: ModelCall, Scope: f.scopePath(), Step: n.Name, Kind: n.Kind.String(), Model: c.Model, Duration: c.Duration, Usage: c.Usage, Calls: calls, Code: c.Code, Error: c.Error})
	}
}

// reportDeltas makes the pieces of the streamed reply to model request
// req of step n model_delta events, when the run streams.
func (r *run) reportDeltas(n *graphir.Node, req *EffectRequest) {
	if !r.events || !r.opts.Stream {
		return
	}
	// An agent's turn is the event's index, not a part of its scope: the
	// pieces are the step's, as its step_started names it.
	scope, kind, emit := req.Scope, n.Kind.String(), r.opts.OnEvent
	if req.Turn > 0 && len(scope) > 0 {
		scope = scope[:len(scope)-1]
	}
	prefix, visit, turn := r.opts.prefix, req.Visit, req.Turn
	req.model.onDelta = func(attempt int, text string) {
		emit(&Event{Type: ModelDelta, Time: time.Now(), Flow: prefix, Scope: scope, Step: n.Name, Kind: kind, Visit: visit, Attempt: attempt, Index: turn, Message: text})
	}
}

// reportRetries makes the retries of model request req of step n
// step_retrying events, as the core's own retries are.
func (r *run) reportRetries(n *graphir.Node, req *EffectRequest) {
	if !r.events {
		return
	}
	// Events may come from any goroutine (child flows emit from theirs);
	// the event carries only what the request already says.
	scope, kind, emit := req.Scope, n.Kind.String(), r.opts.OnEvent
	prefix, visit := r.opts.prefix, req.Visit
	req.model.onRetry = func(attempt int, err error, wait time.Duration) {
		emit(&Event{Type: StepRetrying, Time: time.Now(), Flow: prefix, Scope: scope, Step: n.Name, Kind: kind, Visit: visit, Attempt: attempt, Error: err.Error(), Duration: wait})
	}
}
