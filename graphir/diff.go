package graphir

// This file compares two graphs of one flow, as `skein watch` shows after
// each reload: which steps and edges were added, removed or changed.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// GraphDiff is what changed from one graph of a flow to another. Steps are
// matched by name, edges by their ends (and route, for a router's), so
// moving code around a file is not a change; a step's position never is.
type GraphDiff struct {
	Flow  []FieldChange // flow(): name, description, inputs, output, max_visits, timeout
	Steps []StepChange  // removed (old order), then added and changed (new order)
	Edges []EdgeChange  // removed (old order), then added and changed (new order)
}

// FieldChange is one parameter that differs. Old and New are JSON, or ""
// when the parameter is unset.
type FieldChange struct {
	Field    string
	Old, New string
}

// StepChange is a step added (Old nil), removed (New nil) or changed.
type StepChange struct {
	Name     string
	Old, New *Node
	Fields   []FieldChange // for a changed step
}

// EdgeChange is an edge added (Old nil), removed (New nil) or changed.
type EdgeChange struct {
	From, To string // the names of its ends
	Route    string // the route, case or default of a router's edge
	Old, New *Edge
	Fields   []FieldChange // for a changed edge
}

// Empty reports whether the graphs are the same.
func (d *GraphDiff) Empty() bool {
	return len(d.Flow)+len(d.Steps)+len(d.Edges) == 0
}

// Diff compares two graphs of a flow.
func Diff(old, new *Graph) *GraphDiff {
	d := &GraphDiff{Flow: fieldChanges(old.flowFields(), new.flowFields())}

	for _, n := range old.Steps() {
		if new.Node(n.Name) == nil {
			d.Steps = append(d.Steps, StepChange{Name: n.Name, Old: n})
		}
	}
	for _, n := range new.Steps() {
		o := old.Node(n.Name)
		if o == nil {
			d.Steps = append(d.Steps, StepChange{Name: n.Name, New: n})
		} else if fs := fieldChanges(old.stepFields(o), new.stepFields(n)); len(fs) > 0 {
			d.Steps = append(d.Steps, StepChange{Name: n.Name, Old: o, New: n, Fields: fs})
		}
	}

	// Edges with the same ends are paired in declaration order.
	type key struct{ from, to, route string }
	keyOf := func(g *Graph, e *Edge) key {
		k := key{from: g.Nodes[e.From].Name, to: g.Nodes[e.To].Name}
		if e.Router {
			k.route = g.routeLabel(e)
		}
		return k
	}
	olds := map[key][]*Edge{}
	for _, e := range old.Edges {
		k := keyOf(old, e)
		olds[k] = append(olds[k], e)
	}
	var added, changed []EdgeChange
	for _, e := range new.Edges {
		k := keyOf(new, e)
		c := EdgeChange{From: k.from, To: k.to, Route: k.route, New: e}
		if len(olds[k]) == 0 {
			added = append(added, c)
			continue
		}
		c.Old = olds[k][0]
		olds[k] = olds[k][1:]
		if c.Fields = fieldChanges(edgeFields(c.Old), edgeFields(e)); len(c.Fields) > 0 {
			changed = append(changed, c)
		}
	}
	for _, e := range old.Edges {
		k := keyOf(old, e)
		if len(olds[k]) > 0 && olds[k][0] == e {
			olds[k] = olds[k][1:]
			d.Edges = append(d.Edges, EdgeChange{From: k.from, To: k.to, Route: k.route, Old: e})
		}
	}
	d.Edges = append(append(d.Edges, added...), changed...)
	return d
}

// flowFields returns what flow() declared, as JSON by field.
func (g *Graph) flowFields() map[string]json.RawMessage {
	m := fields(g.jsonHeader())
	delete(m, "file")
	delete(m, "nodes")
	delete(m, "edges")
	return m
}

// stepFields returns a step's parameters as JSON by field, without its
// position.
func (g *Graph) stepFields(n *Node) map[string]json.RawMessage {
	j := g.jsonNode(n)
	j.File, j.Line, j.Col = "", 0, 0
	return fields(j)
}

func edgeFields(e *Edge) map[string]json.RawMessage {
	je := jsonEdge{On: e.On.String(), Back: e.Back, Implicit: e.Implicit}
	if e.When != nil {
		s := e.When.String()
		je.When = &s
	}
	m := fields(je)
	delete(m, "from")
	delete(m, "to")
	return m
}

// fields encodes v (a struct) and splits it into its fields.
func fields(v any) map[string]json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // conditions read better with > and &
	if err := enc.Encode(v); err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		return nil
	}
	return m
}

func fieldChanges(old, new map[string]json.RawMessage) []FieldChange {
	names := map[string]bool{}
	for k := range old {
		names[k] = true
	}
	for k := range new {
		names[k] = true
	}
	var out []FieldChange
	for k := range names {
		o, n := compact(old[k]), compact(new[k])
		if o != n {
			out = append(out, FieldChange{Field: k, Old: o, New: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return fieldOrder(out[i].Field) < fieldOrder(out[j].Field) })
	return out
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// fieldOrder sorts fields the way they are usually written: the kind and
// what the step does first, then its bounds.
func fieldOrder(f string) string {
	for i, name := range []string{"name", "kind", "parent", "run", "shell", "fn", "flow", "inputs", "by", "routes", "cases", "default", "body", "until", "over", "on", "when"} {
		if f == name {
			return fmt.Sprintf("%02d", i)
		}
	}
	return "99" + f
}

// String lists the changes one per line: "+" added, "-" removed, "~"
// changed, each line indented by two spaces. It is "" when nothing changed.
func (d *GraphDiff) String() string {
	var b strings.Builder
	if len(d.Flow) > 0 {
		fmt.Fprintf(&b, "  ~ flow: %s\n", fieldsText(d.Flow))
	}
	for _, s := range d.Steps {
		switch {
		case s.Old == nil:
			fmt.Fprintf(&b, "  + step %q (%s) at %s\n", s.Name, s.New.Kind, s.New.Pos)
		case s.New == nil:
			fmt.Fprintf(&b, "  - step %q (%s)\n", s.Name, s.Old.Kind)
		default:
			fmt.Fprintf(&b, "  ~ step %q: %s\n", s.Name, fieldsText(s.Fields))
		}
	}
	for _, e := range d.Edges {
		switch {
		case e.Old == nil:
			fmt.Fprintf(&b, "  + edge %s%s\n", e.name(), edgeExtra(e.New))
		case e.New == nil:
			fmt.Fprintf(&b, "  - edge %s%s\n", e.name(), edgeExtra(e.Old))
		default:
			fmt.Fprintf(&b, "  ~ edge %s: %s\n", e.name(), fieldsText(e.Fields))
		}
	}
	return b.String()
}

func (e EdgeChange) name() string {
	s := e.From + " -> " + e.To
	if e.Route != "" {
		s += " [" + e.Route + "]"
	}
	return s
}

// edgeExtra describes what an edge does beyond joining its ends.
func edgeExtra(e *Edge) string {
	var parts []string
	if e.On != OnSuccess {
		parts = append(parts, "on "+e.On.String())
	}
	if e.When != nil && !e.Router {
		parts = append(parts, fmt.Sprintf("when %q", e.When.String()))
	}
	if e.Back {
		parts = append(parts, "back")
	}
	if e.Implicit {
		parts = append(parts, "implicit")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func fieldsText(fs []FieldChange) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%s %s → %s", f.Field, orNone(f.Old), orNone(f.New))
	}
	return strings.Join(parts, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
