package temporal

// This file finds, for skein approve, the approval a decision is for: in
// the run's workflow or in one of its running child workflows.

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Waiting is an approval that waits, with the workflow that waits for it.
type Waiting struct {
	Workflow string
	*Approval
}

// Locate finds the approval of step (any step when step is "") that the
// run of workflow top, or a child workflow running under it, waits for.
// step is a step's name, or an approval's place as [Approval.Where] shows
// it ("per_env[1] › deploy", or "per_env[1]/deploy" as for a local run),
// which tells apart the approvals of one step in a map's items or a
// loop's iterations.
// The error says why there is none to decide: the step is not waiting
// (with the steps that are), it was decided already (what, by whom and
// when), or several of its approvals wait.
func Locate(ctx context.Context, q QueryFunc, top, step string) (*Waiting, error) {
	var waiting, closed []Waiting
	var others []string // the steps that wait
	seen := map[string]bool{}
	ids := []string{top}
	for len(ids) > 0 {
		id := ids[0]
		ids = ids[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		var as Approvals
		if err := q(ctx, id, ApprovalsQuery, nil, &as); err != nil {
			if id == top {
				return nil, err
			}
			continue // a child that ended meanwhile
		}
		for _, a := range as.Approvals {
			if step != "" && !a.named(step) {
				if a.State == ApprovalWaiting && !slices.Contains(others, a.Step) {
					others = append(others, a.Step)
				}
				continue
			}
			if a.State == ApprovalWaiting {
				waiting = append(waiting, Waiting{id, a})
			} else {
				closed = append(closed, Waiting{id, a})
			}
		}
		ids = append(ids, as.Children...)
	}
	switch {
	case len(waiting) == 1:
		return &waiting[0], nil
	case len(waiting) > 1:
		var where []string
		for _, w := range waiting {
			where = append(where, w.Where())
		}
		if step == "" {
			return nil, fmt.Errorf("run %s waits for %d approvals: name one as it is shown here: %s", top, len(waiting), quoted(where))
		}
		return nil, fmt.Errorf("run %s waits for %d approvals of step %q: name one as it is shown here: %s", top, len(waiting), step, quoted(where))
	case len(closed) > 0:
		a := closed[len(closed)-1]
		return nil, &ClosedError{fmt.Sprintf("approval %q of run %s %s", a.Where(), top, a.whyClosed())}
	}
	if step == "" {
		return nil, fmt.Errorf("run %s waits for no approval", top)
	}
	return nil, fmt.Errorf("step %q of run %s is not waiting for a decision%s", step, top, waitsFor(step, others))
}

// named reports whether arg names a: its step, or its place with " › "
// or "/" between the parts.
func (a *Approval) named(arg string) bool {
	return arg == a.Step || arg == a.Where() ||
		arg == strings.Join(append(append(slices.Clone(a.Flow), a.Scope...), a.Step), "/")
}

// quoted lists places in quotes: "m[0] › deploy", "m[1] › deploy".
func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// ClosedError is Locate's error for an approval that was decided or timed
// out: it says what became of it.
type ClosedError struct{ msg string }

func (e *ClosedError) Error() string { return e.msg }
