package temporal

// This file follows a run on Temporal from outside: it reads the event
// logs of the run's workflow and of its child workflows (EventsQuery) and
// hands their events on in an order a local run would give them, so the
// command line shows the same progress and --events as for a local run.

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/skeinlang/skein/vm"
)

// QueryFunc asks workflow id the query name with arg and decodes the
// answer into out (client.Client.QueryWorkflow, or a test environment's).
type QueryFunc func(ctx context.Context, id, name string, arg any, out any) error

// Follower reads the event logs of a run and its child workflows.
type Follower struct {
	Query QueryFunc
	// QueryRun asks one execution (run id) of a workflow, for the rest of
	// the log of an execution that continued as new; nil skips that rest.
	QueryRun func(ctx context.Context, id, run, name string, arg any, out any) error
	// OnEvent receives each event in the --events format and decoded.
	OnEvent func(raw json.RawMessage, ev vm.Event)
	// OnApproval receives each approval that begins to wait, with the
	// workflow that waits for it.
	OnApproval func(workflow string, a *Approval)
	// OnFailed receives the output of each task attempt that failed, with
	// the workflow that ran it, before the event that tells of the failure.
	OnFailed func(workflow string, a *FailedAttempt)
	// OnDropped is told how many entries of a workflow's log were dropped
	// before they could be read (the log is bounded).
	OnDropped func(workflow string, n int)
	// OnContinued is told that a workflow continued as new, from its
	// execution (run id) from to to, once the events of from are read.
	OnContinued func(workflow, from, to string)

	logs map[string]*followed
	top  string
}

type followed struct {
	id   string
	run  string // the workflow run the cursor counts in
	next int
	done bool // its run_finished was seen, or it is closed and read to the end
	from *childFrom
	flow []string // the flow chain its events name (nil: the run's own)
}

// childFrom is where a child workflow came from.
type childFrom struct {
	ChildRun
	parent string
	order  int
}

// NewFollower follows the run of workflow id.
func NewFollower(id string, q QueryFunc) *Follower {
	f := &Follower{Query: q, top: id, logs: map[string]*followed{}}
	f.logs[id] = &followed{id: id}
	return f
}

// Flow is the chain of child-flow steps leading to the run of workflow
// id, as its events name it (nil for the run's own workflow, or one
// whose events were not read yet).
func (f *Follower) Flow(id string) []string {
	if w := f.logs[id]; w != nil {
		return w.flow
	}
	return nil
}

// Done reports whether the run's own run_finished was read.
func (f *Follower) Done() bool { return f.logs[f.top].done }

// Poll reads what is new in the logs, the run's first. A child workflow
// started by an entry is read right after that entry.
func (f *Follower) Poll(ctx context.Context) error {
	return f.read(ctx, f.logs[f.top], false)
}

// Drain reads the logs to their end once the run has ended (its workflow
// is closed): a closed workflow answers queries with its final state.
func (f *Follower) Drain(ctx context.Context) error {
	return f.read(ctx, f.logs[f.top], true)
}

// read reads w's log until it has nothing new (and, with closed, marks w
// done), then the children it started that are not done.
func (f *Follower) read(ctx context.Context, w *followed, closed bool) error {
	for !w.done {
		var p EventsPage
		if err := f.Query(ctx, w.id, EventsQuery, w.next, &p); err != nil {
			return err
		}
		if w.run != "" && p.Run != w.run {
			// Continued as new: read the rest of the old execution's log,
			// then go on in the new one's, which numbers on.
			if err := f.rest(ctx, w); err != nil {
				return err
			}
			if f.OnContinued != nil {
				f.OnContinued(w.id, w.run, p.Run)
			}
			w.run = p.Run
			continue
		}
		w.run = p.Run
		if err := f.page(ctx, w, &p); err != nil {
			return err
		}
		if !p.More {
			if closed {
				w.done = true
			}
			break
		}
	}
	for _, c := range f.children(w) {
		if err := f.read(ctx, c, closed); err != nil {
			return err
		}
	}
	return nil
}

// rest reads what is left of the log of w's execution w.run, which has
// closed.
func (f *Follower) rest(ctx context.Context, w *followed) error {
	if f.QueryRun == nil {
		return nil
	}
	for !w.done {
		var p EventsPage
		if err := f.QueryRun(ctx, w.id, w.run, EventsQuery, w.next, &p); err != nil {
			return nil // an execution that cannot answer: its rest is lost
		}
		if err := f.page(ctx, w, &p); err != nil {
			return err
		}
		if !p.More {
			return nil
		}
	}
	return nil
}

// page reads the entries of p, a page of w's log: it reports the entries
// dropped before p.First, reads each entry and moves w.next on.
func (f *Follower) page(ctx context.Context, w *followed, p *EventsPage) error {
	if p.First > w.next && f.OnDropped != nil {
		f.OnDropped(w.id, p.First-w.next)
	}
	for i := range p.Entries {
		e := &p.Entries[i]
		if e.Seq < w.next {
			continue // handed on before a failed query cut its page short
		}
		if err := f.entry(ctx, w, e); err != nil {
			return err
		}
		// Entry by entry: a query failing later in the page (a child
		// workflow not started yet) leaves the cursor after this one, so
		// the next poll does not hand it on again.
		w.next = e.Seq + 1
	}
	w.next = max(w.next, p.Next)
	return nil
}

// children are the workflows w started that are not done, in the order
// they started.
func (f *Follower) children(w *followed) []*followed {
	var cs []*followed
	for _, c := range f.logs {
		if c.from != nil && !c.done && c.from.parent == w.id {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(a, b *followed) int { return a.from.order - b.from.order })
	return cs
}

func (f *Follower) entry(ctx context.Context, w *followed, e *Entry) error {
	switch {
	case e.Child != nil:
		// Its log is read here, in its place; when that fails (the child
		// not started yet), here again at the next poll.
		c := f.logs[e.Child.ID]
		if c == nil {
			c = &followed{id: e.Child.ID, from: &childFrom{ChildRun: *e.Child, parent: w.id, order: len(f.logs)}}
			f.logs[c.id] = c
		}
		return f.read(ctx, c, false)
	case e.Approval != nil:
		if f.OnApproval != nil {
			f.OnApproval(w.id, e.Approval)
		}
	case e.Failed != nil:
		if f.OnFailed != nil {
			f.OnFailed(w.id, e.Failed)
		}
	case e.Event != nil:
		ev, err := vm.DecodeEvent(e.Event)
		if err != nil {
			return err
		}
		if w.flow == nil && len(ev.Flow) > 0 {
			w.flow = ev.Flow
		}
		if ev.Kind == "subflow" && (ev.Type == vm.StepFinished || ev.Type == vm.StepRetrying) {
			// The child ended: its events come first. (A step_retrying
			// event names its visit, as step_finished does; it once named
			// none, and any child of the step matched.)
			for _, c := range f.children(w) {
				if c.from.Step == ev.Step && c.from.Visit == ev.Visit && slices.Equal(c.from.Scope, ev.Scope) {
					if err := f.read(ctx, c, true); err != nil {
						return err
					}
				}
			}
		}
		if f.OnEvent != nil {
			f.OnEvent(e.Event, ev)
		}
		if ev.Type == vm.RunFinished {
			w.done = true
		}
	}
	return nil
}
