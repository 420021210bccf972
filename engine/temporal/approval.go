package temporal

// This file is approvals on Temporal: an approve= step waits in the
// workflow for a decision sent as a signal, bounded by the step's timeout
// as a durable timer. A decision is recorded once; one that comes too
// late, for a step that is not waiting, or a second one, is refused and
// kept in the run's approvals (ApprovalsQuery), so whoever sent it can
// see why.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// Names of the signal and query that decide and list approvals.
const (
	// ApproveSignal carries a [Decision] to the workflow that asks for it.
	ApproveSignal = "skein.approve"
	// ApprovalsQuery answers the run's [Approvals].
	ApprovalsQuery = "skein.approvals"
)

// Decision is the payload of [ApproveSignal]: a decision for the waiting
// approval of step Step (of that scope and visit, when given).
type Decision struct {
	// ID is chosen by the sender, to find what became of the decision in
	// the run's approvals.
	ID     string   `json:",omitempty"`
	Step   string   //
	Scope  []string `json:",omitempty"`
	Visit  int      `json:",omitempty"`
	Reject bool     `json:",omitempty"`
	Reason string   `json:",omitempty"`
	By     string
	// Values are the values of the step's fields, by name: text (read
	// by the field's type) or JSON values, as runs.Decision's.
	Values map[string]any `json:",omitempty"`
}

// Approval states.
const (
	ApprovalWaiting   = "waiting"
	ApprovalApproved  = "approved"
	ApprovalRejected  = "rejected"
	ApprovalTimedOut  = "timed_out"
	ApprovalCancelled = "cancelled"
)

// Approval is one approval the run asked for, and what became of it.
type Approval struct {
	Step      string
	Flow      []string `json:",omitempty"` // the child-flow chain, as in events
	Scope     []string `json:",omitempty"`
	Visit     int
	Message   string
	Requested time.Time
	Timeout   time.Duration `json:",omitempty"`
	State     string
	// The decision, once there is one.
	By         string    `json:",omitempty"`
	Reason     string    `json:",omitempty"`
	Decided    time.Time `json:",omitzero"`
	DecisionID string    `json:",omitempty"`
	// Fields are the step's fields (as graphir.FieldsJSON writes them),
	// Values the values the decision gave them, a JSON object.
	Fields string          `json:",omitempty"`
	Values json.RawMessage `json:",omitempty"`
}

// Deadline is when the approval times out; zero for none.
func (a *Approval) Deadline() time.Time {
	if a.Timeout <= 0 {
		return time.Time{}
	}
	return a.Requested.Add(a.Timeout)
}

// Where is the approval's step with its child flows and scope.
func (a *Approval) Where() string {
	return strings.Join(append(append(slices.Clone(a.Flow), a.Scope...), a.Step), " › ")
}

// Outcome says what became of the approval, for people: "approved by ann
// at ... (reason)".
func (a *Approval) Outcome() string {
	switch a.State {
	case ApprovalApproved, ApprovalRejected:
		s := fmt.Sprintf("%s by %s at %s", a.State, a.By, a.Decided.UTC().Format(time.RFC3339))
		if a.Reason != "" {
			s += " (" + a.Reason + ")"
		}
		return s
	case ApprovalTimedOut:
		return fmt.Sprintf("timed out at %s (no decision within %s)", a.Deadline().UTC().Format(time.RFC3339), a.Timeout)
	}
	return a.State
}

// Refusal is a decision the run refused, and why.
type Refusal struct {
	Decision Decision
	At       time.Time
	Why      string
}

// Approvals answers [ApprovalsQuery]: the approvals the run asked for, in
// order, the decisions it refused, and the child workflows running now
// (which answer for their own approvals).
type Approvals struct {
	Approvals []*Approval
	Refused   []Refusal `json:",omitempty"`
	Children  []string  `json:",omitempty"`
}

// Waiting returns the approvals still waiting for a decision.
func (as *Approvals) Waiting() []*Approval {
	var w []*Approval
	for _, a := range as.Approvals {
		if a.State == ApprovalWaiting {
			w = append(w, a)
		}
	}
	return w
}

// Refusal returns why the decision with id was refused, if it was.
func (as *Approvals) Refusal(id string) (string, bool) {
	for _, r := range as.Refused {
		if r.Decision.ID == id {
			return r.Why, true
		}
	}
	return "", false
}

// Decided returns the approval the decision with id decided, if any.
func (as *Approvals) Decided(id string) *Approval {
	for _, a := range as.Approvals {
		if a.DecisionID == id {
			return a
		}
	}
	return nil
}

// maxRefused bounds the refused decisions a run keeps.
const maxRefused = 100

// decide applies decision d, received at now, or refuses it.
func (s *state) decide(now time.Time, d Decision) {
	var waiting, closed []*Approval
	for _, a := range s.approvals.Approvals {
		if a.Step != d.Step || d.Visit > 0 && a.Visit != d.Visit || d.Scope != nil && !slices.Equal(a.Scope, d.Scope) {
			continue
		}
		if a.State == ApprovalWaiting {
			waiting = append(waiting, a)
		} else {
			closed = append(closed, a)
		}
	}
	refuse := func(why string) {
		r := &s.approvals.Refused
		if len(*r) == maxRefused {
			*r = slices.Delete(*r, 0, 1)
		}
		*r = append(*r, Refusal{Decision: d, At: now, Why: why})
	}
	switch {
	case len(waiting) == 1:
		a := waiting[0]
		if dl := a.Deadline(); !dl.IsZero() && !now.Before(dl) {
			refuse(fmt.Sprintf("approval %q timed out at %s (no decision within %s)", a.Where(), dl.UTC().Format(time.RFC3339), a.Timeout))
			return
		}
		values, err := a.bind(d)
		if err != nil {
			refuse(err.Error())
			return
		}
		a.State, a.By, a.Reason, a.Decided, a.DecisionID, a.Values = ApprovalApproved, d.By, d.Reason, now, d.ID, values
		if d.Reject {
			a.State = ApprovalRejected
		}
	case len(waiting) > 1:
		var where []string
		for _, a := range waiting {
			where = append(where, fmt.Sprintf("%s (visit %d)", a.Where(), a.Visit))
		}
		refuse(fmt.Sprintf("%d approvals of step %q wait: %s; name one by its scope and visit", len(waiting), d.Step, strings.Join(where, ", ")))
	case len(closed) > 0:
		a := closed[len(closed)-1]
		refuse(fmt.Sprintf("approval %q %s", a.Where(), a.whyClosed()))
	default:
		var steps []string
		for _, a := range s.approvals.Waiting() {
			steps = append(steps, a.Step)
		}
		refuse(fmt.Sprintf("step %q is not waiting for a decision%s", d.Step, waitsFor(d.Step, steps)))
	}
}

// bind checks decision d's values against the approval's fields and
// returns them as JSON (nil for a step without fields).
func (a *Approval) bind(d Decision) (json.RawMessage, error) {
	fields, err := graphir.ParseFields(a.Fields)
	if err != nil {
		return nil, err
	}
	m, err := graphir.BindFields(a.Step, fields, d.Values, !d.Reject)
	if err != nil || len(fields) == 0 {
		return nil, err
	}
	return stdlib.AppendJSON(nil, m, "", 0)
}

// values are the decided values as the step's output holds them: nil for
// a step without fields.
func (a *Approval) values() starlark.Value {
	if a.Fields == "" {
		return nil
	}
	if len(a.Values) == 0 {
		fields, _ := graphir.ParseFields(a.Fields)
		m, _ := graphir.BindFields(a.Step, fields, nil, false)
		return m
	}
	v, err := stdlib.FromJSON(a.Values)
	if err != nil {
		return nil
	}
	return v
}

// whyClosed says why an approval that no longer waits cannot be decided:
// "was already decided: approved by ann at ...", or "is no longer
// waiting: timed out at ...".
func (a *Approval) whyClosed() string {
	if a.State == ApprovalApproved || a.State == ApprovalRejected {
		return "was already decided: " + a.Outcome()
	}
	return "is no longer waiting: " + a.Outcome()
}

// waitsFor says, after a decision for step found nothing waiting, what
// the run waits for instead: the steps that wait (with the nearest to
// step), or no approval.
func waitsFor(step string, steps []string) string {
	if len(steps) == 0 {
		return "; the run waits for no approval"
	}
	msg := "; the run waits for " + strings.Join(steps, ", ")
	msg += spell.Suggest(step, steps)
	return msg
}

// receiveDecisions applies the decisions signalled to the run, for as long
// as it runs.
func (s *state) receiveDecisions(ctx workflow.Context) {
	s.signals = workflow.GetSignalChannel(ctx, ApproveSignal)
	workflow.Go(ctx, func(c workflow.Context) {
		for {
			var d Decision
			s.signals.Receive(c, &d)
			s.decide(workflow.Now(c), d)
		}
	})
}

// drain applies (refuses: the run is over) the decisions received but not
// yet read when the run ends, so that none is lost unanswered.
func (s *state) drain(ctx workflow.Context) {
	for {
		var d Decision
		if !s.signals.ReceiveAsync(&d) {
			return
		}
		s.decide(workflow.Now(ctx), d)
	}
}

// approve waits for the decision of an approval step: a signal, the
// step's timeout (a durable timer from when it was asked), or the step's
// cancellation.
func (p *producer) approve(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	a := &Approval{Step: req.Step, Flow: req.Flow, Scope: req.Scope, Visit: req.Visit, Message: req.Message,
		Requested: workflow.Now(p.ctx), Timeout: req.Timeout, State: ApprovalWaiting, Fields: graphir.FieldsJSON(req.Fields())}
	p.st.asked(a)
	var timer workflow.Future
	stop := func() {}
	if req.Timeout > 0 {
		tctx, cancel := workflow.WithCancel(p.ctx)
		timer, stop = workflow.NewTimer(tctx, req.Timeout), cancel
	}
	workflow.Go(p.ctx, func(c workflow.Context) {
		_ = workflow.Await(c, func() bool {
			return a.State != ApprovalWaiting || ctx.Err() != nil || timer != nil && timer.IsReady()
		})
		switch {
		case a.State != ApprovalWaiting:
			stop()
			done(vm.ApprovalDecision(a.State == ApprovalApproved, a.By, a.Reason, a.Decided, a.values()))
		case ctx.Err() != nil:
			stop()
			a.State = ApprovalCancelled
			done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		default:
			a.State = ApprovalTimedOut
			done(vm.ApprovalTimedOut(req.Timeout))
		}
	})
}
