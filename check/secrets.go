package check

// This file is the taint analysis of secrets (docs/language.md#secret):
// secret_leak and secret_unseen.
//
// A secret is a read of a secret input (inputs.token, r.inputs.token), a
// secret() given as a template, or the output of a step that may carry
// one: a fn step whose body reads a secret or such an output, a loop or
// map whose body holds such a step, a child flow whose output= reads its
// secret input, the items of a map whose over= reads a secret, and, unseen, a process or an agent's
// tool given a secret (the checker cannot see what a process prints) and a
// fn whose reads cannot all be followed. A secret may go to a process's
// env= and stdin=, a tool's env=, a model's key, and a child flow's secret
// input; anywhere else (an argv element, a prompt, an approval's question,
// a file name, a wait, a condition, a fn step's result, the flow's output)
// it is refused unless the use is written reveal(...).

import (
	"fmt"
	"strings"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// taint is what a step's output may carry.
type taint struct {
	secret string // `secret input "token"`, `secret("GH_TOKEN")`
	via    string // how it came there, for messages
	// unseen: it came through something the checker cannot see into (a
	// process, a tool, a function passing r on), so it may as well not.
	unseen bool
}

// secretField reports whether a field of a process's output carries what
// it printed; exit_code and code are numbers it cannot hide a secret in.
func secretField(field string) bool { return field != "exit_code" && field != "code" }

// secrets is the state of the analysis of one graph.
type secrets struct {
	p      *pass
	inputs map[string]bool // the secret inputs
	taints []*taint        // by node: what its output may carry, nil if nothing
	items  []*taint        // by map: what its items may carry (over= reads a secret, revealed)
	reads  map[int32][]read
}

// itemTaint returns what name, read in scope, may carry when it is the
// item of a map around scope, else nil.
func (sx *secrets) itemTaint(scope graphir.NodeID, name string) (*graphir.Node, *taint) {
	g := sx.p.g
	for sc := scope; sc != graphir.None; sc = g.Nodes[sc].Parent {
		if n := g.Nodes[sc]; n.Kind == graphir.KindMap && n.Map.ItemVar == name {
			return n, sx.items[sc]
		}
	}
	return nil, nil
}

func checkSecrets(p *pass) {
	g := p.g
	sx := &secrets{p: p, inputs: map[string]bool{}}
	for _, in := range g.Inputs {
		if in.Secret {
			sx.inputs[in.Name] = true
		}
	}
	if len(sx.inputs) == 0 && len(g.Secrets) == 0 {
		return
	}
	ix := p.exprs()
	sx.reads = map[int32][]read{}
	for _, r := range ix.reads {
		sx.reads[r.site] = append(sx.reads[r.site], r)
	}
	sx.propagate(ix)
	for i := range ix.sites {
		sx.checkSite(ix, int32(i))
	}
	for _, n := range g.Steps() {
		sx.checkParts(n)
	}
	for _, t := range g.Tools {
		sx.checkTool(t)
	}
	if name, ok := strings.CutPrefix(g.ConcurrencyKey, "inputs."); ok && sx.inputs[name] {
		p.report(codes.SecretLeak, nil, g.ConcurrencyKeyPos,
			fmt.Sprintf("secret input %q is the flow's concurrency_key: the key is shown with every run that waits for it", name),
			"key the runs by an input that is not secret")
	}
}

// siteRefs returns what a site reads: the free names of a string expression,
// or a function's reads of its parameter.
func siteRefs(s *site) []graphir.Ref {
	if s.x.User {
		return s.x.Reads.Refs
	}
	return s.x.Refs
}

// refAt returns the read of refs at pos, for a resolved step read.
func refAt(refs []graphir.Ref, pos graphir.Pos) (graphir.Ref, bool) {
	for _, r := range refs {
		if r.Pos == pos {
			return r, true
		}
	}
	return graphir.Ref{}, false
}

// secretInput returns the secret input r reads, or "".
func (sx *secrets) secretInput(r graphir.Ref) string {
	if r.Name == "inputs" && sx.inputs[r.Attr+r.Key] {
		return r.Attr + r.Key
	}
	return ""
}

// firstSecret returns what the site reads that is (or may carry) a secret,
// revealed or not, for the taint of the site's step.
func (sx *secrets) firstSecret(ix *exprIndex, si int32) *taint {
	s := &ix.sites[si]
	refs := siteRefs(s)
	for _, r := range refs {
		if name := sx.secretInput(r); name != "" {
			return &taint{secret: fmt.Sprintf("secret input %q", name)}
		}
		if m, t := sx.itemTaint(s.scope, r.Name); t != nil {
			return &taint{secret: t.secret, via: fmt.Sprintf("the items of map %q", m.Name), unseen: t.unseen}
		}
	}
	for _, rd := range sx.reads[si] {
		t := sx.taints[rd.step]
		if t == nil {
			continue
		}
		if r, ok := refAt(refs, rd.pos); ok && t.unseen && sx.p.g.Nodes[rd.step].Kind.IsProcess() && !secretField(r.Attr+r.Key) {
			continue
		}
		return &taint{secret: t.secret, via: fmt.Sprintf("step %q", sx.p.g.Nodes[rd.step].Name), unseen: t.unseen}
	}
	return nil
}

// propagate computes what each step's output may carry, to a fixed point
// (a fn may read a step declared after it).
func (sx *secrets) propagate(ix *exprIndex) {
	g := sx.p.g
	sx.taints = make([]*taint, len(g.Nodes))
	sx.items = make([]*taint, len(g.Nodes))
	bySite := map[graphir.NodeID][]int32{}
	over := map[graphir.NodeID]int32{}
	for i := range ix.sites {
		s := &ix.sites[i]
		if s.kind == siteOver {
			over[s.at] = int32(i)
		}
		if s.kind == siteFn || s.kind == siteTemplate && (s.field == "env" || s.field == "stdin") {
			bySite[s.at] = append(bySite[s.at], int32(i))
		}
	}
	set := func(n *graphir.Node, t *taint) bool {
		if t == nil || sx.taints[n.ID] != nil && (!sx.taints[n.ID].unseen || t.unseen) {
			return false
		}
		sx.taints[n.ID] = t
		return true
	}
	for changed, round := true, 0; changed && round <= len(g.Nodes); round++ {
		changed = false
		for id, si := range over {
			if t := sx.firstSecret(ix, si); t != nil && sx.items[id] == nil {
				sx.items[id] = &taint{secret: t.secret, unseen: t.unseen, via: t.via}
				changed = true
			}
		}
		for _, n := range g.Steps() {
			var t *taint
			switch {
			case n.Kind == graphir.KindFn && n.FnReads != nil && !n.FnReads.Opaque:
				for _, si := range bySite[n.ID] {
					if t = sx.firstSecret(ix, si); t != nil {
						t = &taint{secret: t.secret, unseen: t.unseen, via: fmt.Sprintf("through fn %s of step %q, which reads %s", fnName(n), n.Name, orIt(t.via))}
						break
					}
				}
			case n.Kind == graphir.KindFn:
				if len(sx.inputs) > 0 {
					t = &taint{secret: "a secret input", unseen: true,
						via: fmt.Sprintf("through fn %s of step %q, whose reads of r cannot all be followed", fnName(n), n.Name)}
				}
			case n.Kind.IsProcess():
				if t = sx.processTaint(ix, n, bySite[n.ID]); t != nil {
					changed = set(n, t) || changed
				}
				continue
			case n.Kind == graphir.KindAgent:
				t = sx.agentTaint(n)
			case n.Kind == graphir.KindSubflow:
				t = childTaint(n)
			case n.HasBody():
				for _, id := range g.Scope(n.ID) {
					if bt := sx.taints[id]; bt != nil {
						t = &taint{secret: bt.secret, unseen: bt.unseen, via: fmt.Sprintf("through step %q of its body", g.Nodes[id].Name)}
						break
					}
				}
			}
			changed = set(n, t) || changed
		}
	}
}

// processTaint is what a task or shell step's output may carry: a secret
// it is given in env= or stdin=, which it may print.
func (sx *secrets) processTaint(ix *exprIndex, n *graphir.Node, sites []int32) *taint {
	for _, v := range n.Env {
		for _, s := range v.Value.Secrets() {
			return &taint{secret: s.String(), unseen: true, via: fmt.Sprintf("through the process of step %q, given it in env[%q]", n.Name, v.Name)}
		}
	}
	for _, s := range n.Stdin.Secrets() {
		return &taint{secret: s.String(), unseen: true, via: fmt.Sprintf("through the process of step %q, given it on stdin", n.Name)}
	}
	for _, si := range sites {
		if t := sx.firstSecret(ix, si); t != nil {
			return &taint{secret: t.secret, unseen: true, via: fmt.Sprintf("through the process of step %q, given it in %s", n.Name, sx.p.describe(&ix.sites[si]))}
		}
	}
	return nil
}

// agentTaint is what an agent step's answer may carry: a secret one of its
// tools is given, which the tool may print back to the model.
func (sx *secrets) agentTaint(n *graphir.Node) *taint {
	for _, ref := range n.Call.Tools {
		for _, t := range sx.p.g.Tools {
			if t.Name != ref.Name {
				continue
			}
			for _, v := range t.Env {
				for _, s := range v.Value.Secrets() {
					return &taint{secret: s.String(), unseen: true, via: fmt.Sprintf("through tool %q, given it in env[%q]", t.Name, v.Name)}
				}
				for _, x := range v.Value.Exprs() {
					for _, r := range x.Refs {
						if name := sx.secretInput(r); name != "" {
							return &taint{secret: fmt.Sprintf("secret input %q", name), unseen: true, via: fmt.Sprintf("through tool %q, given it in env[%q]", t.Name, v.Name)}
						}
					}
				}
			}
		}
	}
	return nil
}

// readText writes a read as the flow does: push.stderr, f["k"].
func readText(r graphir.Ref) string {
	switch {
	case r.Attr != "":
		return r.Name + "." + r.Attr
	case r.Key != "":
		return fmt.Sprintf("%s[%q]", r.Name, r.Key)
	}
	return r.Name
}

// childTaint is what a child-flow step's output may carry: a secret input
// of the literal child that the child's output= reads (revealed, or the
// child's own check refuses it).
func childTaint(n *graphir.Node) *taint {
	child := n.Subflow.Child
	if child == nil || child.Output == nil {
		return nil
	}
	refs := child.Output.Refs
	if child.Output.User {
		if child.Output.Reads == nil {
			return nil
		}
		refs = child.Output.Reads.Refs
	}
	for _, r := range refs {
		if in := child.Input(r.Attr + r.Key); r.Name == "inputs" && in != nil && in.Secret {
			return &taint{secret: fmt.Sprintf("secret input %q of child flow %s", in.Name, n.Subflow.Flow.Src),
				via: "through the output= of the child flow, which reads it"}
		}
	}
	return nil
}

func fnName(n *graphir.Node) string {
	if n.Fn == nil {
		return "?"
	}
	return n.Fn.Name()
}

func orIt(via string) string {
	if via == "" {
		return "it"
	}
	return via
}

// allowed reports whether a site is a place a secret may go, and if not
// why not, for the message ("" when nothing needs saying).
func (sx *secrets) allowed(s *site) (bool, string) {
	if s.kind != siteTemplate {
		return false, ""
	}
	switch s.field {
	case "env", "stdin":
		return true, ""
	case "inputs":
		n := sx.p.g.Nodes[s.at]
		child := n.Subflow.Child
		if child == nil {
			return false, "the child flow is not known before the run, so the checker cannot see that its input is secret"
		}
		if in := child.Input(s.key); in != nil && in.Secret {
			return true, ""
		}
		return false, fmt.Sprintf("the child flow's input %q is not declared input(secret = True)", s.key)
	}
	return false, ""
}

// checkSite reports the secrets a site reads where none may go.
func (sx *secrets) checkSite(ix *exprIndex, si int32) {
	p := sx.p
	s := &ix.sites[si]
	ok, why := sx.allowed(s)
	if ok {
		return
	}
	where := p.describe(s)
	if s.kind == siteFn {
		where += " (whose result is the step's output)"
	}
	if why != "" {
		why = ": " + why
	}
	refs := siteRefs(s)
	param := ""
	if s.x.User {
		param = s.x.Reads.Param + "."
	}
	for _, r := range refs {
		if r.Revealed {
			continue
		}
		if m, t := sx.itemTaint(s.scope, r.Name); t != nil {
			code := codes.SecretLeak
			if t.unseen {
				code = codes.SecretUnseen
			}
			p.diags = append(p.diags, p.siteDiag(s, code, r.Pos,
				fmt.Sprintf("%s reads %s%s, an item of map %q, whose over= may carry %s%s", where, param, r.Name, m.Name, t.secret, why),
				fmt.Sprintf("write reveal(%s%s) at the read if the value may go here", param, r.Name)))
			continue
		}
		name := sx.secretInput(r)
		if name == "" {
			continue
		}
		p.diags = append(p.diags, p.siteDiag(s, codes.SecretLeak, r.Pos,
			fmt.Sprintf("secret input %q reaches %s%s", name, where, why),
			inputHint(s, name, param)))
	}
	for _, rd := range sx.reads[si] {
		t := sx.taints[rd.step]
		if t == nil {
			continue
		}
		r, found := refAt(refs, rd.pos)
		if found && r.Revealed {
			continue
		}
		step := p.g.Nodes[rd.step]
		if found && t.unseen && step.Kind.IsProcess() && !secretField(r.Attr+r.Key) {
			continue
		}
		text := step.Name
		if found {
			text = readText(r)
		}
		code, hint := codes.SecretLeak, fmt.Sprintf("write reveal(%s%s) at the read if the value may go here", param, text)
		if t.unseen {
			code = codes.SecretUnseen
			hint = "the checker cannot see what it prints or returns (the run masks the secret's value in what it records and shows); " + hint
		}
		p.diags = append(p.diags, p.siteDiag(s, code, rd.pos,
			fmt.Sprintf("%s reads step %q, which may carry %s (%s)%s", where, step.Name, t.secret, t.via, why), hint))
	}
}

// inputHint says what to do with secret input name read by site s.
func inputHint(s *site, name, param string) string {
	if s.kind == siteFn {
		return fmt.Sprintf("a fn step's result is recorded and shown: use the secret in a process given it in env= (env = {%q: \"{{ inputs.%s }}\"}), or write reveal(%sinputs.%s) if the result may carry it", strings.ToUpper(name), name, param, name)
	}
	return fmt.Sprintf("pass it to a process in env= or stdin= (env = {%q: \"{{ inputs.%s }}\"}), or write reveal(%sinputs.%s) if it must go here", strings.ToUpper(name), name, param, name)
}

// checkParts reports the secret()s given to step n where none may go.
func (sx *secrets) checkParts(n *graphir.Node) {
	check := func(t *graphir.Template, field, key string, index int) {
		if t == nil {
			return
		}
		for _, part := range t.Parts {
			if part.Secret == nil || part.Reveal {
				continue
			}
			s := &site{kind: siteTemplate, at: n.ID, field: field, key: key, index: index}
			ok, why := sx.allowed(s)
			if ok {
				continue
			}
			if why != "" {
				why = ": " + why
			}
			sx.p.report(codes.SecretLeak, n, part.Secret.Pos,
				fmt.Sprintf("%s reaches %s%s", part.Secret, describeField(n, field, key, index), why), secretHint(part.Secret))
		}
	}
	stepTemplates(n, check)
}

func secretHint(s *graphir.Secret) string {
	return fmt.Sprintf("pass it to a process in env= or stdin= (env = {%q: %s}), or write reveal(%s) if it must go here", s.Name, s, s)
}

// checkTool reports secrets in a tool's argv and approval question (its
// env= is where they go).
func (sx *secrets) checkTool(t *graphir.Tool) {
	check := func(tm *graphir.Template, where string) {
		if tm == nil {
			return
		}
		for _, part := range tm.Parts {
			if part.Secret != nil && !part.Reveal {
				sx.p.report(codes.SecretLeak, nil, part.Secret.Pos, fmt.Sprintf("%s reaches %s", part.Secret, where), secretHint(part.Secret))
			}
			if part.X == nil {
				continue
			}
			for _, r := range part.X.Refs {
				if name := sx.secretInput(r); name != "" && !r.Revealed {
					sx.p.report(codes.SecretLeak, nil, r.Pos, fmt.Sprintf("secret input %q reaches %s", name, where),
						fmt.Sprintf("pass it in the tool's env= (env = {%q: \"{{ inputs.%s }}\"}), or write reveal(inputs.%s) if it must go here", strings.ToUpper(name), name, name))
				}
			}
		}
	}
	for i, a := range t.Argv {
		check(a, fmt.Sprintf("argument %d of tool %q", i, t.Name))
	}
	check(t.Approve, fmt.Sprintf("approve= of tool %q", t.Name))
}
