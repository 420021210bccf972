package graphir

// This file renders a frozen graph as JSON (docs/cli.md), Graphviz DOT and
// Mermaid.

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/stdlib"
)

type jsonGraph struct {
	Name        string               `json:"name"`
	File        string               `json:"file"`
	Description string               `json:"description,omitempty"`
	Inputs      map[string]jsonInput `json:"inputs"`
	Output      *string              `json:"output"`
	MaxVisits   int                  `json:"max_visits,omitempty"`
	Timeout     string               `json:"timeout,omitempty"`
	MaxTokens   int                  `json:"max_tokens,omitempty"`
	MaxCost     float64              `json:"max_cost,omitempty"`
	OnExit      string               `json:"on_exit,omitempty"`
	Models      []jsonModel          `json:"models,omitempty"`
	Tools       []jsonTool           `json:"tools,omitempty"`
	ToolPool    []string             `json:"tool_pool,omitempty"`
	MaxGrants   int                  `json:"max_grants,omitempty"`
	Triggers    []jsonTrigger        `json:"triggers,omitempty"`
	Concurrency int                  `json:"concurrency,omitempty"`
	ConcKey     string               `json:"concurrency_key,omitempty"`
	Emit        string               `json:"emit,omitempty"`
	MaxDepth    int                  `json:"max_depth,omitempty"`
	Keep        string               `json:"keep,omitempty"`
	Nodes       []jsonNode           `json:"nodes"`
	Edges       []jsonEdge           `json:"edges"`
}

type jsonTool struct {
	Name   string            `json:"name"`
	Kind   string            `json:"kind"`
	Run    []string          `json:"run,omitempty"`
	Shell  string            `json:"shell,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	Params map[string]string `json:"params"`
	Help   string            `json:"help,omitempty"`
	Fn     string            `json:"fn,omitempty"`
	Flow   string            `json:"flow,omitempty"`
	// Approve is the question a person answers before each call.
	Approve string `json:"approve,omitempty"`
}

type jsonNode struct {
	ID            string            `json:"id"`
	Kind          string            `json:"kind"`
	File          string            `json:"file,omitempty"`
	Line          int               `json:"line,omitempty"`
	Col           int               `json:"col,omitempty"`
	Parent        string            `json:"parent,omitempty"`
	Run           []string          `json:"run,omitempty"`
	Shell         string            `json:"shell,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Stdin         *string           `json:"stdin,omitempty"`
	Dir           *string           `json:"dir,omitempty"`
	Fn            string            `json:"fn,omitempty"`
	Flow          string            `json:"flow,omitempty"`
	Inputs        map[string]string `json:"inputs,omitempty"`
	LLM           *string           `json:"llm,omitempty"`
	Agent         *string           `json:"agent,omitempty"`
	Tools         []string          `json:"tools,omitempty"`
	MaxTurns      int               `json:"max_turns,omitempty"`
	System        *string           `json:"system,omitempty"`
	Model         string            `json:"model,omitempty"`
	Schema        any               `json:"schema,omitempty"`
	MaxTokens     int               `json:"max_tokens,omitempty"`
	Partial       bool              `json:"partial,omitempty"`
	By            string            `json:"by,omitempty"`
	Routes        map[string]string `json:"routes,omitempty"`
	Cases         []jsonCase        `json:"cases,omitempty"`
	Default       string            `json:"default,omitempty"`
	Body          []string          `json:"body,omitempty"`
	Until         string            `json:"until,omitempty"`
	Judge         *jsonJudge        `json:"judge,omitempty"`
	MaxIterations int               `json:"max_iterations,omitempty"`
	Over          string            `json:"over,omitempty"`
	Concurrency   int               `json:"concurrency,omitempty"`
	ItemVar       string            `json:"item_var,omitempty"`
	Empty         string            `json:"empty,omitempty"`
	MaxItems      int               `json:"max_items,omitempty"`
	MaxVisits     int               `json:"max_visits,omitempty"`
	Retries       int               `json:"retries,omitempty"`
	Backoff       string            `json:"backoff,omitempty"`
	BackoffFactor float64           `json:"backoff_factor,omitempty"`
	MaxBackoff    string            `json:"max_backoff,omitempty"`
	Jitter        bool              `json:"jitter,omitempty"`
	Timeout       string            `json:"timeout,omitempty"`
	Join          string            `json:"join,omitempty"`
	RetryWhen     string            `json:"retry_when,omitempty"`
	Wait          string            `json:"wait,omitempty"`
	WaitUntil     string            `json:"wait_until,omitempty"`
	Approve       string            `json:"approve,omitempty"`
	Fields        json.RawMessage   `json:"fields,omitempty"`
	Exhausted     string            `json:"exhausted,omitempty"`
}

// jsonInput is one declared input: its type, default (absent when
// required), help and choices.
type jsonInput struct {
	Type     string `json:"type"`
	Required bool   `json:"required,omitempty"`
	Default  any    `json:"default,omitempty"`
	Help     string `json:"help,omitempty"`
	Choices  []any  `json:"choices,omitempty"`
	Secret   bool   `json:"secret,omitempty"`
}

type jsonModel struct {
	Name            string   `json:"name"`
	Model           string   `json:"model"`
	Provider        string   `json:"provider,omitempty"`
	BaseURL         string   `json:"base_url,omitempty"`
	APIKeyEnv       string   `json:"api_key_env,omitempty"`
	APIKeyFile      string   `json:"api_key_file,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	MaxTokens       int      `json:"max_tokens,omitempty"`
	ReasoningEffort string   `json:"reasoning_effort,omitempty"`
	Reasoning       *bool    `json:"reasoning,omitempty"`
	Answers         any      `json:"answers,omitempty"`
	AnswersFile     string   `json:"answers_file,omitempty"`
	Fallbacks       []string `json:"fallbacks,omitempty"`
	RPM             int      `json:"rpm,omitempty"`
	TPM             int      `json:"tpm,omitempty"`
}

type jsonJudge struct {
	Condition string `json:"condition"`
	Model     string `json:"model,omitempty"`
}

type jsonCase struct {
	When string `json:"when"`
	To   string `json:"to"`
}

type jsonEdge struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	On       string  `json:"on"`
	When     *string `json:"when"`
	Back     bool    `json:"back"`
	Implicit bool    `json:"implicit,omitempty"`
	Route    *string `json:"route,omitempty"`
}

// json is the JSON of an input's declaration (or a field's).
func (in *Input) json() jsonInput {
	ji := jsonInput{Type: in.TypeName(), Required: in.Required, Help: in.Help, Secret: in.Secret}
	if !in.Required {
		ji.Default = valueToJSON(in.Default)
		if ji.Default == nil {
			ji.Default = json.RawMessage("null")
		}
	}
	for _, c := range in.Choices {
		ji.Choices = append(ji.Choices, valueToJSON(c))
	}
	return ji
}

// jsonHeader is the JSON of what flow() declared.
func (g *Graph) jsonHeader() jsonGraph {
	jg := jsonGraph{Name: g.Name, Description: g.Description, Inputs: map[string]jsonInput{}, MaxVisits: g.MaxVisits}
	for _, in := range g.Inputs {
		jg.Inputs[in.Name] = in.json()
	}
	if g.Output != nil {
		s := g.Output.String()
		jg.Output = &s
	}
	if g.Timeout > 0 {
		jg.Timeout = FormatDuration(g.Timeout)
	}
	jg.MaxTokens, jg.MaxCost = g.MaxTokens, g.MaxCost
	for _, m := range g.Models {
		jg.Models = append(jg.Models, jsonModel{Name: m.Name, Model: m.Model, Provider: m.Provider, BaseURL: m.BaseURL, APIKeyEnv: m.KeyEnv, APIKeyFile: m.KeyFile,
			Temperature: m.Temperature, MaxTokens: m.MaxTokens, ReasoningEffort: m.ReasoningEffort, Reasoning: m.Reasoning,
			Answers: m.Answers, AnswersFile: m.AnswersFile, Fallbacks: m.Fallbacks,
			RPM: m.RPM, TPM: m.TPM})
	}
	for _, t := range g.Tools {
		jt := jsonTool{Name: t.Name, Kind: t.Kind.String(), Help: t.Help, Params: map[string]string{}}
		for _, a := range t.Argv {
			jt.Run = append(jt.Run, a.Src)
		}
		if t.Shell != nil {
			jt.Shell = t.Shell.Src
		}
		if t.Approve != nil {
			jt.Approve = t.Approve.Src
		}
		if t.Fn != nil {
			jt.Fn = t.Fn.Name()
		}
		if t.Flow != nil {
			jt.Flow = t.Flow.Src
		}
		for _, p := range t.Params {
			jt.Params[p.Name] = p.Type
		}
		if len(t.Env) > 0 {
			jt.Env = map[string]string{}
			for _, v := range t.Env {
				jt.Env[v.Name] = v.Value.Src
			}
		}
		jg.Tools = append(jg.Tools, jt)
	}
	for _, r := range g.ToolPool {
		jg.ToolPool = append(jg.ToolPool, r.Name)
	}
	if len(g.ToolPool) > 0 {
		jg.MaxGrants = g.MaxGrants
	}
	jg.OnExit = g.OnExitName
	for i := range g.Triggers {
		jg.Triggers = append(jg.Triggers, g.Triggers[i].json())
	}
	jg.Concurrency, jg.ConcKey = g.Concurrency, g.ConcurrencyKey
	jg.Emit, jg.MaxDepth = g.Emit, g.MaxDepth
	if g.Keep > 0 {
		jg.Keep = FormatDuration(g.Keep)
	}
	return jg
}

// MarshalJSON encodes the graph in the shape of docs/cli.md.
func (g *Graph) MarshalJSON() ([]byte, error) {
	jg := g.jsonHeader()
	jg.File = g.File
	jg.Nodes = []jsonNode{}
	for _, n := range g.Nodes {
		if !n.IsStep() && len(n.In)+len(n.Out) == 0 {
			continue
		}
		jg.Nodes = append(jg.Nodes, g.jsonNode(n))
	}
	jg.Edges = []jsonEdge{}
	for _, e := range g.Edges {
		je := jsonEdge{From: g.Nodes[e.From].Name, To: g.Nodes[e.To].Name, On: e.On.String(), Back: e.Back, Implicit: e.Implicit}
		if e.When != nil {
			s := e.When.String()
			je.When = &s
		}
		if e.Router {
			r := g.routeLabel(e)
			je.Route = &r
		}
		jg.Edges = append(jg.Edges, je)
	}
	return json.Marshal(jg)
}

func (g *Graph) jsonNode(n *Node) jsonNode {
	// The parts a node lacks read as their zero values.
	var (
		sub  Subflow
		call ModelCall
		rt   Router
		lp   Loop
		mp   Map
	)
	if n.Subflow != nil {
		sub = *n.Subflow
	}
	if n.Call != nil {
		call = *n.Call
	}
	if n.Router != nil {
		rt = *n.Router
	}
	if n.Loop != nil {
		lp = *n.Loop
	}
	if n.Map != nil {
		mp = *n.Map
	}
	j := jsonNode{ID: n.Name, Kind: n.Kind.String(), File: n.Pos.File, Line: n.Pos.Line, Col: n.Pos.Col,
		MaxVisits: n.MaxVisits, Retries: n.Retries, Concurrency: mp.Concurrency, MaxItems: mp.MaxItems, MaxIterations: lp.MaxIterations}
	if n.Parent != None {
		j.Parent = g.Nodes[n.Parent].Name
	}
	if n.Retries > 0 {
		j.Backoff = FormatDuration(n.Backoff)
	}
	if rs := n.RetryShape; rs != nil {
		j.BackoffFactor, j.MaxBackoff, j.Jitter = rs.Factor, FormatDuration(rs.Max), rs.Jitter
	}
	if n.Timeout > 0 {
		j.Timeout = FormatDuration(n.Timeout)
	}
	if n.JoinSet {
		j.Join = n.Join.String()
	}
	j.RetryWhen = n.RetryWhen.String()
	if n.Approve != nil {
		j.Approve = n.Approve.Src
	}
	if f := FieldsJSON(n.Fields); f != "" {
		j.Fields = json.RawMessage(f)
	}
	switch {
	case n.Wait != nil && n.WaitUntil:
		j.WaitUntil = n.Wait.Src
	case n.Wait != nil:
		j.Wait = n.Wait.Src
	}
	if lp.ExhaustFail {
		j.Exhausted = "fail"
	}
	for _, t := range n.Argv {
		j.Run = append(j.Run, t.Src)
	}
	if n.Shell != nil {
		j.Shell = n.Shell.Src
	}
	if len(n.Env) > 0 {
		j.Env = map[string]string{}
		for _, v := range n.Env {
			j.Env[v.Name] = v.Value.Src
		}
	}
	if n.Stdin != nil {
		j.Stdin = &n.Stdin.Src
	}
	if n.Dir != nil {
		j.Dir = &n.Dir.Src
	}
	if n.Fn != nil {
		j.Fn = n.Fn.Name()
	}
	if sub.Flow != nil {
		j.Flow = sub.Flow.Src
	}
	if len(sub.Inputs) > 0 {
		j.Inputs = map[string]string{}
		for _, in := range sub.Inputs {
			j.Inputs[in.Name] = in.Value.Src
		}
	}
	if call.Prompt != nil {
		if n.Kind == KindAgent {
			j.Agent = &call.Prompt.Src
		} else {
			j.LLM = &call.Prompt.Src
		}
	}
	for _, r := range call.Tools {
		j.Tools = append(j.Tools, r.Name)
	}
	j.MaxTurns = call.MaxTurns
	if call.System != nil {
		j.System = &call.System.Src
	}
	j.Model, j.Schema, j.MaxTokens, j.Partial = call.Model, call.Schema, call.MaxTokens, call.Partial
	if lp.Judge != nil {
		j.Judge = &jsonJudge{Condition: lp.Judge.Condition, Model: lp.Judge.Model}
	}
	j.By = rt.By.String()
	if len(rt.Routes) > 0 {
		j.Routes = map[string]string{}
		for _, r := range rt.Routes {
			j.Routes[r.Label] = g.targetName(r.Target)
		}
	}
	for _, c := range rt.Cases {
		j.Cases = append(j.Cases, jsonCase{When: c.When.String(), To: g.targetName(c.Target)})
	}
	if rt.Default != nil {
		j.Default = g.targetName(*rt.Default)
	}
	for _, id := range n.Body {
		j.Body = append(j.Body, g.Nodes[id].Name)
	}
	switch {
	case lp.UntilName != "":
		j.Until = lp.UntilName
	case lp.Until != nil:
		j.Until = lp.Until.Name()
	}
	j.Over = mp.Over.String()
	if n.Kind == KindMap {
		j.ItemVar = mp.ItemVar
		if mp.EmptySkip {
			j.Empty = "skip"
		}
	}
	return j
}

func (g *Graph) targetName(t Target) string {
	if t.ID != None {
		return g.Nodes[t.ID].Name
	}
	return t.Name
}

// routeLabel describes which route, case or default a router edge stands for.
func (g *Graph) routeLabel(e *Edge) string {
	switch {
	case e.Default:
		return "default"
	case e.Case >= 0:
		return fmt.Sprintf("case %d", e.Case)
	}
	return e.Label
}

func valueToJSON(v starlark.Value) any {
	if v == nil {
		return nil
	}
	x, err := stdlib.ToGo(v)
	if err != nil {
		return v.String()
	}
	return x
}

// FormatDuration prints d the way it would be written in a flow: "30s",
// "10m", "1h30m", "24h" (not "24h0m0s"), "250ms".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// DOT renders the graph for Graphviz: routers as diamonds, approvals as
// hexagons, noops (joins, placeholders) as dashed circles, loop and map bodies as
// clusters, the exit handler dotted and hung from END and ABORT,
// conditions as edge labels, failure edges dashed red, back-edges bold
// blue; a step's bounds, retries, timeout and join kind under its name.
func (g *Graph) DOT() string { return g.DOTMarked(nil) }

// DOTMarked is [Graph.DOT] with the steps errs names drawn red, their
// error's code under their name and its message as their tooltip: a flow
// the checker refuses is not drawn as if it were fine.
func (g *Graph) DOTMarked(errs map[string]Mark) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotID(g.Name))
	b.WriteString("  rankdir=TB;\n  graph [fontname=\"Helvetica\"];\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, n := range g.Nodes {
		if n.Kind.IsSentinel() && len(n.In)+len(n.Out) > 0 {
			shape := "circle"
			if n.ID == Abort {
				shape = "octagon"
			} else if n.ID == End {
				shape = "doublecircle"
			}
			fmt.Fprintf(&b, "  %s [shape=%s, label=%q];\n", g.dotNode(n), shape, n.Name)
		}
	}
	var cluster func(scope NodeID, indent string)
	cluster = func(scope NodeID, indent string) {
		for _, id := range g.scopes[scope] {
			n := g.Nodes[id]
			fmt.Fprintf(&b, "%s%s [%s];\n", indent, g.dotNode(n), g.dotNodeAttrs(n, errs))
			if n.HasBody() {
				label := fmt.Sprintf("%s %s", n.Kind, n.Name)
				if n.Kind == KindLoop {
					label += fmt.Sprintf(" (max %d)", n.Loop.MaxIterations)
				} else {
					label += " over " + n.Map.Over.String()
				}
				fmt.Fprintf(&b, "%ssubgraph %s {\n%s  label=%q;\n%s  style=dashed;\n", indent, dotID("cluster_"+g.drawnName(n)), indent, label, indent)
				cluster(n.ID, indent+"  ")
				fmt.Fprintf(&b, "%s}\n", indent)
				if len(n.Body) > 0 {
					fmt.Fprintf(&b, "%s%s -> %s [style=dotted, arrowhead=none];\n", indent, g.dotNode(n), g.dotNode(g.Nodes[n.Body[0]]))
				}
			}
		}
	}
	cluster(None, "  ")
	if g.Nodes[Start] != nil && len(g.Nodes[Start].Out) > 0 {
		for i := range g.Triggers {
			id := dotID(fmt.Sprintf("trigger %d", i+1))
			fmt.Fprintf(&b, "  %s [shape=note, label=%q];\n  %s -> %s [style=dotted];\n", id, g.Triggers[i].Key(), id, g.dotNode(g.Nodes[Start]))
		}
	}
	for _, e := range g.Edges {
		var attrs []string
		if label := g.edgeLabel(e); label != "" {
			attrs = append(attrs, fmt.Sprintf("label=%q", label))
		}
		switch e.On {
		case OnFailure:
			attrs = append(attrs, "style=dashed", "color=red")
		case OnAlways:
			attrs = append(attrs, "style=dashed")
		}
		if e.Back {
			attrs = append(attrs, "color=blue", "penwidth=2", "constraint=false")
		}
		fmt.Fprintf(&b, "  %s -> %s", g.dotNode(g.Nodes[e.From]), g.dotNode(g.Nodes[e.To]))
		if len(attrs) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(attrs, ", "))
		}
		b.WriteString(";\n")
	}
	if h := g.exitHandler(); h != nil {
		for _, s := range []NodeID{End, Abort} {
			if sn := g.Nodes[s]; sn != nil && len(sn.In)+len(sn.Out) > 0 {
				fmt.Fprintf(&b, "  %s -> %s [style=dotted, label=\"on exit\"];\n", g.dotNode(sn), g.dotNode(h))
			}
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// Mark is what a drawing shows of a step beyond its declaration: the
// code and message of an error the checker found at it (drawn red), and
// a note written under its name (skein graph --envelope's).
type Mark struct {
	Code    string
	Message string
	Note    string
}

// exitHandler is the flow's exit handler, or nil.
func (g *Graph) exitHandler() *Node {
	if g.OnExit == None || int(g.OnExit) >= len(g.Nodes) {
		return nil
	}
	return g.Nodes[g.OnExit]
}

// stepNotes are what a drawing says of n under its name: its kind, visit
// bound, retries, timeout, join kind, and that it is the exit handler.
func (g *Graph) stepNotes(n *Node) string {
	extra := n.Kind.String()
	if b := n.MaxVisits; b > 0 {
		extra += fmt.Sprintf(", max %d", b)
	}
	if n.Retries > 0 {
		extra += fmt.Sprintf(", retries %d", n.Retries)
	}
	if n.Timeout > 0 {
		extra += ", timeout " + FormatDuration(n.Timeout)
	}
	if n.Join != JoinAnd {
		extra += ", join " + n.Join.String()
	}
	if g.OnExit != None && n.ID == g.OnExit {
		extra += ", on exit"
	}
	return extra
}

func (g *Graph) dotNodeAttrs(n *Node, errs map[string]Mark) string {
	label := n.Name + "\n(" + g.stepNotes(n) + ")"
	var attrs []string
	switch n.Kind {
	case KindRouter:
		attrs = append(attrs, "shape=diamond")
	case KindNoop:
		// A small circle with the name inside: a point with an outside
		// label had it drawn over the edges.
		attrs = append(attrs, "shape=circle", "style=dashed", "fontsize=10", "margin=0.02")
	case KindApproval:
		attrs = append(attrs, "shape=hexagon")
	case KindLoop, KindMap:
		attrs = append(attrs, "shape=box3d")
	case KindSubflow:
		attrs = append(attrs, "peripheries=2")
	}
	if g.OnExit != None && n.ID == g.OnExit {
		attrs = append(attrs, `style="rounded,dotted"`)
	}
	if m, marked := errs[n.Name]; marked && g.canonical(n) {
		if m.Note != "" {
			label += "\n" + m.Note
		}
		if m.Code != "" {
			label += "\n✗ " + m.Code
			attrs = append(attrs, "color=red", "fontcolor=red", "penwidth=2", fmt.Sprintf("tooltip=%q", m.Message))
		}
	}
	return strings.Join(append([]string{fmt.Sprintf("label=%q", label)}, attrs...), ", ")
}

// edgeLabel is the text drawn on an edge: its condition, route and outcome.
func (g *Graph) edgeLabel(e *Edge) string {
	var parts []string
	if e.Router {
		switch {
		case e.Default:
			parts = append(parts, "default")
		case e.Case < 0:
			parts = append(parts, fmt.Sprintf("%q", e.Label))
		}
	}
	if e.When != nil {
		parts = append(parts, e.When.String())
	}
	if e.On != OnSuccess {
		parts = append(parts, "on "+e.On.String())
	}
	return strings.Join(parts, " ")
}

func dotID(s string) string {
	return fmt.Sprintf("%q", s)
}

// canonical reports whether n may be drawn under its own name: it is a
// sentinel, or the first step of that name that does not pretend to be one.
// Others (duplicates the checker reports) get an id of their own, so that
// the drawing of a wrong flow shows what is wrong instead of merging nodes.
func (g *Graph) canonical(n *Node) bool {
	if !n.IsStep() {
		return true
	}
	switch n.Name {
	case "START", "END", "ABORT":
		return false
	}
	return g.byName[n.Name] == n.ID
}

// drawnName is the name n is drawn under: its own, or for a node that is
// not canonical its name and id.
func (g *Graph) drawnName(n *Node) string {
	if g.canonical(n) {
		return n.Name
	}
	return fmt.Sprintf("%s#%d", n.Name, n.ID)
}

// dotNode is the DOT id of n.
func (g *Graph) dotNode(n *Node) string { return dotID(g.drawnName(n)) }

// Mermaid renders the graph as a Mermaid flowchart with the same
// conventions as [Graph.DOT]: bodies as subgraphs, failure edges dotted,
// back-edges thick.
func (g *Graph) Mermaid() string { return g.MermaidMarked(nil) }

// MermaidMarked is [Graph.Mermaid] with the steps errs names drawn red, as
// [Graph.DOTMarked] draws them.
func (g *Graph) MermaidMarked(errs map[string]Mark) string {
	var b strings.Builder
	var marked []string
	b.WriteString("flowchart TD\n")
	for _, n := range g.Nodes {
		if n.Kind.IsSentinel() && len(n.In)+len(n.Out) > 0 {
			fmt.Fprintf(&b, "  %s((%s))\n", n.Name, n.Name)
		}
	}
	var scope func(s NodeID, indent string)
	scope = func(s NodeID, indent string) {
		for _, id := range g.scopes[s] {
			n := g.Nodes[id]
			text := n.Name + " · " + g.stepNotes(n) // as DOT draws it
			if m, ok := errs[n.Name]; ok && g.canonical(n) {
				if m.Note != "" {
					text += " · " + m.Note
				}
				if m.Code != "" {
					text += " ✗ " + m.Code
					marked = append(marked, g.mermaidID(n))
				}
			}
			label := mermaidText(text)
			switch n.Kind {
			case KindRouter:
				fmt.Fprintf(&b, "%s%s{\"%s\"}\n", indent, g.mermaidID(n), label)
			case KindApproval:
				fmt.Fprintf(&b, "%s%s{{\"%s\"}}\n", indent, g.mermaidID(n), label)
			case KindNoop:
				fmt.Fprintf(&b, "%s%s((\"%s\"))\n", indent, g.mermaidID(n), label)
			case KindSubflow:
				fmt.Fprintf(&b, "%s%s[[\"%s\"]]\n", indent, g.mermaidID(n), label)
			default:
				fmt.Fprintf(&b, "%s%s[\"%s\"]\n", indent, g.mermaidID(n), label)
			}
			if n.HasBody() {
				title := n.Kind.String() + " " + n.Name
				if n.Kind == KindLoop {
					title += fmt.Sprintf(" (max %d)", n.Loop.MaxIterations)
				} else {
					title += " over " + n.Map.Over.String()
				}
				fmt.Fprintf(&b, "%ssubgraph %s_body[\"%s\"]\n", indent, g.mermaidID(n), mermaidText(title))
				scope(n.ID, indent+"  ")
				fmt.Fprintf(&b, "%send\n", indent)
				if len(n.Body) > 0 {
					fmt.Fprintf(&b, "%s%s -.-o %s\n", indent, g.mermaidID(n), g.mermaidID(g.Nodes[n.Body[0]]))
				}
			}
		}
	}
	scope(None, "  ")
	var thick []int
	link := 0
	for _, n := range g.Nodes {
		if n.HasBody() && len(n.Body) > 0 {
			link++
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		switch {
		case e.Back:
			arrow = "==>"
		case e.On == OnFailure, e.On == OnAlways:
			arrow = "-.->"
		}
		from, to := g.mermaidID(g.Nodes[e.From]), g.mermaidID(g.Nodes[e.To])
		if label := g.edgeLabel(e); label != "" {
			fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", from, arrow, mermaidText(label), to)
		} else {
			fmt.Fprintf(&b, "  %s %s %s\n", from, arrow, to)
		}
		if e.On == OnFailure {
			thick = append(thick, link)
		}
		link++
	}
	if len(thick) > 0 {
		var ids []string
		for _, i := range thick {
			ids = append(ids, fmt.Sprint(i))
		}
		fmt.Fprintf(&b, "  linkStyle %s stroke:#d33\n", strings.Join(ids, ","))
	}
	if h := g.exitHandler(); h != nil {
		for _, s := range []NodeID{End, Abort} {
			if sn := g.Nodes[s]; sn != nil && len(sn.In)+len(sn.Out) > 0 {
				fmt.Fprintf(&b, "  %s -.->|\"on exit\"| %s\n", sn.Name, g.mermaidID(h))
			}
		}
	}
	for _, id := range marked {
		fmt.Fprintf(&b, "  style %s stroke:#d33,stroke-width:3px,color:#d33\n", id)
	}
	return b.String()
}

// mermaidID is the Mermaid id of n: Mermaid ids must be plain words, so a
// step whose name is not valid (the checker reports it) is drawn by number.
func (g *Graph) mermaidID(n *Node) string {
	switch {
	case n.Kind.IsSentinel():
		return n.Name
	case g.canonical(n) && ValidName(n.Name):
		return "s_" + n.Name
	}
	return fmt.Sprintf("s%d", n.ID)
}

// mermaidText escapes s for a quoted Mermaid label: entity codes for the
// characters Mermaid would read as markup (# starts an entity code itself),
// and spaces for line breaks, which would end the statement.
func mermaidText(s string) string {
	return mermaidEscaper.Replace(s)
}

var mermaidEscaper = strings.NewReplacer(`#`, "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;", "\r\n", " ", "\n", " ", "\r", " ")

// ParseDuration reads a duration as flows and commands write it: a Go
// duration ("250ms", "1h30m") that may start with a whole number of days
// ("30d", "1d12h"), a day being 24 hours.
func ParseDuration(s string) (time.Duration, error) {
	days, rest := 0, s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || s[0] == '+' || n > int(math.MaxInt64/int64(24*time.Hour)) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		days, rest = n, s[i+1:]
		if rest == "" {
			return time.Duration(days) * 24 * time.Hour, nil
		}
		if rest[0] < '0' || rest[0] > '9' {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, err
	}
	total := time.Duration(days) * 24 * time.Hour
	if d > math.MaxInt64-total {
		return 0, fmt.Errorf("invalid duration %q: too long", s)
	}
	return total + d, nil
}
