package check

// This file checks model calls (docs/models.md): model_unknown, routes_missing,
// schema_invalid and model_param_ignored.

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/jsonschema"
	"github.com/skeinlang/skein/internal/label"
	"github.com/skeinlang/skein/internal/modelinfo"
	"github.com/skeinlang/skein/internal/spell"
)

func checkModels(p *pass) {
	g := p.g
	var declared []string
	for i := range g.Models {
		declared = append(declared, g.Models[i].Name)
		checkModelParams(p, &g.Models[i])
		checkPrice(p, &g.Models[i])
	}
	unknown := func(n *graphir.Node, name string, pos graphir.Pos) {
		if name == "" || len(declared) == 0 || g.ModelDecl(name) != nil {
			return
		}
		hint := fmt.Sprintf("the flow declares %s", quoted(declared))
		if near := spell.Nearest(name, declared); near != "" {
			hint = fmt.Sprintf("did you mean %q?", near)
		}
		p.report(codes.ModelUnknown, n, pos, fmt.Sprintf("step %q names model %q, which no model() declares", n.Name, name), hint)
	}
	for i := range g.Models {
		m := &g.Models[i]
		for _, fb := range m.Fallbacks {
			if g.ModelDecl(fb) != nil {
				continue
			}
			hint := fmt.Sprintf("the flow declares %s", quoted(declared))
			if near := spell.Nearest(fb, declared); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			}
			p.report(codes.ModelUnknown, nil, m.Pos, fmt.Sprintf("model %q falls back to model %q, which no model() declares", m.Name, fb), hint)
		}
	}
	for _, n := range g.Steps() {
		if call := n.Call; call != nil {
			pos := call.ModelPos
			if pos.Line == 0 {
				pos = n.Pos
			}
			unknown(n, call.Model, pos)
		}
		if n.Loop != nil && n.Loop.Judge != nil {
			unknown(n, n.Loop.Judge.Model, n.Loop.Judge.Pos)
		}
		if n.Call != nil && n.Call.HasSchema {
			pos := n.Call.SchemaPos
			if pos.Line == 0 {
				pos = n.Pos
			}
			if err := jsonschema.Check(n.Call.Schema); err != nil {
				p.report(codes.SchemaInvalid, n, pos, fmt.Sprintf("schema= of step %q: %v", n.Name, err),
					"the supported subset: type (object, array, string, number, integer, boolean, null, or a list adding null to one), properties, required, items, enum, description, additionalProperties, anyOf")
			} else if _, err := jsonschema.Strict(n.Call.Schema); err != nil {
				p.report(codes.SchemaInvalid, n, pos, fmt.Sprintf("schema= of step %q: %v", n.Name, err),
					"providers' structured outputs take a strict schema: an object at the top, no other properties than those listed (optional ones are fine: Skein makes them nullable)")
			}
		}
		if n.Kind == graphir.KindRouter && n.Call != nil {
			checkLLMRoutes(p, n)
		}
	}
}

// checkModelParams warns of a parameter a model() declares that its
// provider or model cannot take, so it is never sent: temperature to a
// reasoning model or to Anthropic's Messages API, reasoning_effort to a
// chat model.
func checkModelParams(p *pass, m *graphir.ModelDecl) {
	anthropic := m.Provider == "anthropic"
	if m.Provider == "" {
		if u, err := url.Parse(m.BaseURL); err == nil && modelinfo.AnthropicHost(u.Hostname()) {
			anthropic = true
		}
	}
	reasoning := modelinfo.IsReasoning(m.Model, m.Reasoning)
	ignored := func(param, why, hint string) {
		p.report(codes.ModelParamIgnored, nil, m.Pos, fmt.Sprintf("model %q: %s is not sent: %s", m.Name, param, why), hint)
	}
	switch {
	case m.Temperature != nil && anthropic:
		ignored("temperature", "Anthropic's Messages API, as its SDK speaks it, takes none",
			`remove temperature, or use the OpenAI-compatible endpoint with provider = "openai"`)
	case m.Temperature != nil && reasoning:
		ignored("temperature", fmt.Sprintf("%q is a reasoning model, which takes only the default", m.Model),
			"remove temperature, or say reasoning = False if this model takes one")
	}
	if m.ReasoningEffort != "" && !anthropic && !reasoning {
		ignored("reasoning_effort", fmt.Sprintf("%q is not a known reasoning model", m.Model),
			"say reasoning = True if it reasons (it then also gets max_completion_tokens and no temperature)")
	}
}

// checkPrice reports a model(price=) key other than input, output and
// cached_input, and a price that is negative or not a finite number.
func checkPrice(p *pass, m *graphir.ModelDecl) {
	pos := m.PricePos
	if pos.Line == 0 {
		pos = m.Pos
	}
	for _, k := range slices.Sorted(maps.Keys(m.Price)) {
		v := m.Price[k]
		switch {
		case k != "input" && k != "output" && k != "cached_input":
			hint := `price takes "input", "output" and "cached_input", in US dollars per million tokens`
			if near := spell.Nearest(k, []string{"input", "output", "cached_input"}); near != "" {
				hint = fmt.Sprintf("did you mean %q? %s", near, hint)
			}
			p.report(codes.PriceInvalid, nil, pos, fmt.Sprintf("model %q: price has an unknown key %q", m.Name, k), hint)
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			p.report(codes.PriceInvalid, nil, pos, fmt.Sprintf("model %q: price %q is %v: a price is a finite number, 0 or more", m.Name, k, v),
				"give US dollars per million tokens, as the provider's price list says")
		}
	}
}

// checkLLMRoutes reports an LLM router without routes, or with a label
// that is empty or that another label equals once both are normalized.
func checkLLMRoutes(p *pass, n *graphir.Node) {
	if len(n.Router.Routes) == 0 {
		p.report(codes.RoutesMissing, n, n.Pos, fmt.Sprintf("router %q has llm= but no routes= to choose from", n.Name),
			`give routes = {"label": step, ...}: the model picks one of the labels`)
		return
	}
	seen := map[string]string{}
	for _, r := range n.Router.Routes {
		norm := label.Normalize(r.Label)
		pos := r.Target.Pos
		if pos.Line == 0 {
			pos = n.Pos
		}
		if norm == "" {
			p.report(codes.RoutesMissing, n, pos, fmt.Sprintf("router %q: label %q is empty once trimmed of spaces and punctuation", n.Name, r.Label),
				"labels are compared with the model's answer trimmed, lower-cased and without surrounding punctuation: use a word")
			continue
		}
		if prev, ok := seen[norm]; ok {
			p.report(codes.RoutesMissing, n, pos, fmt.Sprintf("router %q: labels %q and %q are the same once normalized (%q)", n.Name, prev, r.Label, norm),
				"labels are compared trimmed, lower-cased and without surrounding punctuation: make them differ in letters")
			continue
		}
		seen[norm] = r.Label
	}
}

func quoted(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
