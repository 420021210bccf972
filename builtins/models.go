package builtins

// This file defines model() and judge(), and the parameters llm= steps and
// LLM routers share (docs/models.md).

import (
	"encoding/json"
	"fmt"
	"net/url"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/modelinfo"
	"github.com/skeinlang/skein/internal/stubrules"
	"github.com/skeinlang/skein/stdlib"
)

// defaultModelRetries is how often a model call is retried after a
// transport error, a timeout, 429 or 5xx unless retries= says otherwise.
const defaultModelRetries = 2

// modelParams unpacks system=, model=, schema= and max_tokens= (each may be
// nil when the builtin has no such parameter).
func (c *call) modelParams(n *graphir.Node, system, modelName, schema, maxTokens starlark.Value) error {
	var err error
	if n.Call == nil {
		n.Call = &graphir.ModelCall{}
	}
	if !isNone(system) {
		if n.Call.System, err = c.template("system", system); err != nil {
			return err
		}
	}
	if !isNone(modelName) {
		s, ok := modelName.(starlark.String)
		if !ok || s == "" {
			return c.errorf("model must name a model() declaration, got %s", describe(modelName))
		}
		n.Call.Model = string(s)
		n.Call.ModelPos, _ = c.locate("model", string(s))
	}
	if !isNone(schema) {
		if n.Call.Schema, err = c.jsonValue("schema", schema); err != nil {
			return err
		}
		n.Call.HasSchema = true
		n.Call.SchemaPos = c.pos
	}
	if !isNone(maxTokens) {
		if n.Call.MaxTokens, err = c.intAtLeast("max_tokens", maxTokens, 1); err != nil {
			return err
		}
	}
	return nil
}

// jsonValue converts flow data to decoded JSON (map[string]any, []any,
// string, float64, bool, nil).
func (c *call) jsonValue(param string, v starlark.Value) (any, error) {
	g, err := stdlib.ToGo(v)
	if err != nil {
		return nil, c.errorf("%s: %v", param, err)
	}
	b, err := json.Marshal(g)
	if err != nil {
		return nil, c.errorf("%s: %v", param, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, c.errorf("%s: %v", param, err)
	}
	return out, nil
}

// model(name, *, model, base_url=None, api_key_env="OPENAI_API_KEY", api_key=None,
// temperature=None, max_tokens=None, provider=None, reasoning_effort=None,
// reasoning=None, answers=None, fallbacks=None, price=None, rpm=None, tpm=None)
func modelFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "name"); err != nil {
		return nil, err
	}
	var vals [15]starlark.Value
	if err := c.unpack(args, kwargs, modelParams, vals[:]); err != nil {
		return nil, err
	}
	name, id, baseURL, keyEnv, temp, maxTokens := vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]
	provider, effort, reasoning, answers, fallbacks, price := vals[6], vals[7], vals[8], vals[9], vals[10], vals[11]
	rpm, tpm, apiKey := vals[12], vals[13], vals[14]
	d := graphir.ModelDecl{Pos: c.pos}
	if d.Name, err = c.str("name", name, false); err != nil {
		return nil, err
	}
	c.named("model", d.Name)
	if !isNone(provider) {
		if d.Provider, err = c.str("provider", provider, false); err != nil {
			return nil, err
		}
		if d.Provider != "openai" && d.Provider != "anthropic" && d.Provider != "stub" {
			return nil, c.errorf("provider must be \"openai\", \"anthropic\" or \"stub\", got %q", d.Provider)
		}
	}
	stub := d.Provider == "stub"
	switch {
	case !isNone(id):
		if d.Model, err = c.str("model", id, false); err != nil {
			return nil, err
		}
	case stub:
		d.Model = "stub"
	default:
		return nil, c.errorf("missing model=, the provider's model id (e.g. \"gpt-4o-mini\")")
	}
	if !isNone(answers) {
		if !stub {
			return nil, c.errorf("answers= is for the built-in offline model: say provider = \"stub\"")
		}
		if err := c.stubAnswers(&d, answers); err != nil {
			return nil, err
		}
	}
	if !isNone(baseURL) {
		if d.BaseURL, err = c.str("base_url", baseURL, false); err != nil {
			return nil, err
		}
	}
	if !isNone(apiKey) {
		if err := c.apiKey(&d, keyEnv, apiKey); err != nil {
			return nil, err
		}
	} else if !isNone(keyEnv) {
		if d.KeyEnv, err = c.str("api_key_env", keyEnv, true); err != nil {
			return nil, err
		}
	} else if stub {
		d.KeyEnv = ""
	} else if anthropicAPI(d.Provider, d.BaseURL) {
		d.KeyEnv = "ANTHROPIC_API_KEY"
	} else {
		d.KeyEnv = "OPENAI_API_KEY"
	}
	if !isNone(effort) {
		if d.ReasoningEffort, err = c.str("reasoning_effort", effort, false); err != nil {
			return nil, err
		}
		switch d.ReasoningEffort {
		case "none", "minimal", "low", "medium", "high", "xhigh", "max":
		default:
			return nil, c.errorf("reasoning_effort must be one of \"none\", \"minimal\", \"low\", \"medium\", \"high\", \"xhigh\" or \"max\", got %q", d.ReasoningEffort)
		}
	}
	if !isNone(reasoning) {
		b, ok := reasoning.(starlark.Bool)
		if !ok {
			return nil, c.errorf("reasoning must be True or False, got %s", describe(reasoning))
		}
		v := bool(b)
		d.Reasoning = &v
	}
	if !isNone(temp) {
		f, ok := starlark.AsFloat(temp)
		if !ok || !(f >= 0 && f <= 2) { // NaN is in no range
			return nil, c.errorf("temperature must be a number from 0 to 2, got %s", describe(temp))
		}
		d.Temperature = &f
	}
	if !isNone(maxTokens) {
		if d.MaxTokens, err = c.intAtLeast("max_tokens", maxTokens, 1); err != nil {
			return nil, err
		}
	}
	if !isNone(fallbacks) {
		l, ok := fallbacks.(*starlark.List)
		if !ok {
			return nil, c.errorf("fallbacks must be a list of model() names, got %s", describe(fallbacks))
		}
		for i := 0; i < l.Len(); i++ {
			s, ok := l.Index(i).(starlark.String)
			if !ok || s == "" {
				return nil, c.errorf("fallbacks must be a list of model() names, got %s in it", describe(l.Index(i)))
			}
			if string(s) == d.Name {
				return nil, c.errorf("model %q names itself among its fallbacks", d.Name)
			}
			d.Fallbacks = append(d.Fallbacks, string(s))
		}
	}
	if !isNone(rpm) {
		if d.RPM, err = c.intAtLeast("rpm", rpm, 1); err != nil {
			return nil, err
		}
	}
	if !isNone(tpm) {
		if d.TPM, err = c.intAtLeast("tpm", tpm, 1); err != nil {
			return nil, err
		}
	}
	if !isNone(price) {
		if err := c.price(&d, price); err != nil {
			return nil, err
		}
	}
	if err := c.b.AddModel(d); err != nil {
		return nil, c.errorf("%v", err)
	}
	return starlark.None, nil
}

// apiKey unpacks api_key=, a secret(): from the environment it is
// api_key_env= by another name; from a file it is read when the run
// starts, as every secret() is.
func (c *call) apiKey(d *graphir.ModelDecl, keyEnv, apiKey starlark.Value) error {
	sv, ok := apiKey.(*SecretValue)
	if !ok {
		return c.hintf(`a key written in the flow is read by everyone who reads the flow: api_key = secret("OPENAI_API_KEY") reads it from the environment when the run starts`,
			"api_key must be a secret(), got a %s", apiKey.Type()) // never its value: it may be the key
	}
	if !isNone(keyEnv) {
		return c.errorf("give api_key or api_key_env, not both")
	}
	if sv.reveal {
		return c.errorf("api_key is where a secret belongs: it needs no reveal()")
	}
	c.b.AddSecret(sv.s)
	if sv.s.File != "" {
		d.KeyFile = sv.s.File
	} else {
		d.KeyEnv = sv.s.Name
	}
	return nil
}

// price unpacks price=, a dict of numbers by name; the checker judges the
// names and the numbers (price_invalid), with the call's position.
func (c *call) price(d *graphir.ModelDecl, v starlark.Value) error {
	dict, ok := v.(*starlark.Dict)
	if !ok {
		return c.errorf(`price must be a dict of US dollars per million tokens, like {"input": 2.5, "output": 10.0}, got %s`, describe(v))
	}
	d.Price, d.PricePos = map[string]float64{}, c.pos
	for _, it := range dict.Items() {
		k, ok := it[0].(starlark.String)
		if !ok {
			return c.errorf("price: keys must be strings, got %s", describe(it[0]))
		}
		f, ok := starlark.AsFloat(it[1])
		if !ok {
			return c.errorf("price: %q must be a number, got %s", string(k), describe(it[1]))
		}
		d.Price[string(k)] = f
	}
	return nil
}

// stubAnswers unpacks answers=: a file of rules (a path relative to the
// flow's folder, read when the run starts) or the rules themselves,
// checked now.
func (c *call) stubAnswers(d *graphir.ModelDecl, answers starlark.Value) error {
	if s, ok := answers.(starlark.String); ok {
		if s == "" {
			return c.errorf("answers must name a file of rules or be a list of rules, got \"\"")
		}
		d.AnswersFile = string(s)
		return nil
	}
	if _, ok := answers.(*starlark.List); !ok {
		return c.errorf("answers must name a file of rules or be a list of rules, got %s", describe(answers))
	}
	v, err := c.jsonValue("answers", answers)
	if err != nil {
		return err
	}
	if _, err := stubrules.Decode(v); err != nil {
		return c.errorf("answers: %v", err)
	}
	d.Answers = v
	return nil
}

// anthropicAPI reports whether a model declared with provider and baseURL
// speaks Anthropic's Messages API (whose key is $ANTHROPIC_API_KEY).
func anthropicAPI(provider, baseURL string) bool {
	if provider != "" {
		return provider == "anthropic"
	}
	u, err := url.Parse(baseURL)
	return err == nil && modelinfo.AnthropicHost(u.Hostname())
}

// str unpacks a string parameter; empty is refused unless allowEmpty.
func (c *call) str(param string, v starlark.Value, allowEmpty bool) (string, error) {
	s, ok := v.(starlark.String)
	if !ok || (s == "" && !allowEmpty) {
		return "", c.errorf("%s must be a non-empty string, got %s", param, describe(v))
	}
	return string(s), nil
}

// Judge is the value judge() returns: a loop's until= in plain English.
type Judge struct{ j graphir.Judge }

var _ starlark.Value = (*Judge)(nil)

func (j *Judge) String() string        { return fmt.Sprintf("judge(%q)", j.j.Condition) }
func (j *Judge) Type() string          { return "judge" }
func (j *Judge) Freeze()               {}
func (j *Judge) Truth() starlark.Bool  { return true }
func (j *Judge) Hash() (uint32, error) { return starlark.String(j.j.Condition).Hash() }

// judge(condition, *, model=None)
func judgeFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if err := positional(c.fn, args, 1, "condition"); err != nil {
		return nil, err
	}
	var vals [2]starlark.Value
	if err := c.unpack(args, kwargs, judgeParams, vals[:]); err != nil {
		return nil, err
	}
	j := graphir.Judge{Pos: c.pos}
	if j.Condition, err = c.str("condition", vals[0], false); err != nil {
		return nil, err
	}
	if !isNone(vals[1]) {
		if j.Model, err = c.str("model", vals[1], false); err != nil {
			return nil, err
		}
	}
	return &Judge{j: j}, nil
}

var (
	modelParams = []string{"name", "model?", "base_url?", "api_key_env?", "temperature?", "max_tokens?", "provider?", "reasoning_effort?", "reasoning?", "answers?", "fallbacks?", "price?", "rpm?", "tpm?", "api_key?"}
	judgeParams = []string{"condition", "model?"}
)
