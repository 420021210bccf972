package runs

// This file is approvals: the producer that answers approve= steps (a
// recorded decision, a person asked through the front end's Asker, or
// holding the approval open and parking the run), and deciding an
// approval of a recorded run.

import (
	"context"

	"go.starlark.net/starlark"

	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// Decision is a person's decision on an approval.
type Decision struct {
	Approved bool
	// By is who decided; a front end says who its user is.
	By string
	// Reason is why, recorded with the decision ("" for none).
	Reason string
	// Values are the values of the approval step's fields (fields=), by
	// name: text (a Go string, read by the field's type as a command
	// line's --input is: "3" for an int field is 3) or a JSON value
	// (float64, bool, []any, map[string]any, as encoding/json decodes
	// them; a string is text). They are checked against the fields
	// ([graphir.BindFields]): an approval needs every required field, a
	// value for a field the step does not declare is refused.
	Values map[string]any
}

// Asker asks a person to decide an approval: a front end's prompt (a
// terminal's question, a form). Asks of one run may come from several
// goroutines; an Asker asks one at a time if it must.
type Asker interface {
	// Ask returns the decision, or ok false when nobody can decide now
	// (no one to ask, the input ended): the approval is then held open
	// and parked. When ctx ends or deadline (zero for none) passes first,
	// what it returns is not used.
	Ask(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (d Decision, ok bool)
}

// approvals answers approval steps and hands every other effect to inner.
type approvals struct {
	inner vm.EffectProducer
	rec   *store.Recorder // nil without a store
	st    *store.Store
	runID string
	ask   Asker // nil: nobody to ask
	// noDecision is why an approval fails in a run without a store when
	// nobody can decide it: what the front end's user can do instead.
	noDecision string

	// With a store and nobody to ask, an approval is held open while
	// other work of its run is outstanding, so that a decision made
	// meanwhile (skein approve, [Service.Approve]) is taken by this run:
	// the store is read again whenever the run is about to wait
	// ([vm.EffectIdler]), and the approvals held park once nothing else of
	// their run is outstanding ([vm.EffectRequest.Outstanding]: effects in
	// flight, retries waiting out their backoff). A held approval with a
	// timeout times out by its own timer, at its deadline.
	//
	// A run's approvals park only once the whole run tree has nothing
	// else: a child flow whose run waits for held approvals alone is
	// quiet, and tells its parent (which counts it as held); the run at
	// the top of the tree parks what is held in it.
	mu    sync.Mutex
	held  map[string][]*heldApproval   // by child-flow chain
	subs  map[string]*vm.EffectRequest // child flows in flight, by the child's chain: the parent's request
	quiet map[string]bool              // child runs that, at their latest Idle, waited for held approvals alone
}

// heldApproval is an approval held open until a decision comes, its
// deadline passes or its run can do nothing else.
type heldApproval struct {
	req   *vm.EffectRequest
	done  func(*vm.EffectCompletion)
	timer *time.Timer // at the deadline, if it has one
}

// Start implements [vm.EffectProducer].
func (a *approvals) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.Kind == graphir.KindSubflow && a.rec != nil {
		child := strings.Join(append(append(slices.Clone(req.Flow), req.Scope...), req.Step), "/")
		a.mu.Lock()
		if a.subs == nil {
			a.subs, a.quiet = map[string]*vm.EffectRequest{}, map[string]bool{}
		}
		a.subs[child] = req
		a.mu.Unlock()
		a.inner.Start(ctx, req, func(c *vm.EffectCompletion) {
			a.mu.Lock()
			if a.subs[child] == req {
				delete(a.subs, child)
				delete(a.quiet, child)
			}
			a.mu.Unlock()
			done(c)
		})
		return
	}
	if req.Kind != graphir.KindApproval {
		a.inner.Start(ctx, req, done)
		return
	}
	go func() {
		c, deadline := a.decide(ctx, req)
		if c == nil {
			a.hold(ctx, req, deadline, done)
			return
		}
		done(c)
	}()
}

// hold holds the approval req open until a decision comes, its deadline
// (zero for never) passes or nothing else of its run is outstanding, and
// has the run look at it again (it may be waiting for it alone now).
func (a *approvals) hold(ctx context.Context, req *vm.EffectRequest, deadline time.Time, done func(*vm.EffectCompletion)) {
	key := strings.Join(req.Flow, "/")
	h := &heldApproval{req: req, done: done}
	a.mu.Lock()
	if a.held == nil {
		a.held = map[string][]*heldApproval{}
	}
	a.held[key] = append(a.held[key], h)
	if !deadline.IsZero() {
		h.timer = time.AfterFunc(time.Until(deadline), func() { a.expire(key, h) })
	}
	a.mu.Unlock()
	go func() {
		<-ctx.Done()
		if a.release(key, h) {
			done(&vm.EffectCompletion{Cancelled: true, Error: "cancelled"})
		}
	}()
	req.Nudge()
}

// expire is a held approval's timer: its deadline has come, so it times
// out, unless a decision was recorded before (the store has the one
// outcome: see [store.Store.Expire]).
func (a *approvals) expire(key string, h *heldApproval) {
	c, _, deadline := a.fromStore(h.req)
	if c == nil {
		// The wall clock is behind the timer: look again at the
		// deadline.
		a.mu.Lock()
		if h.timer != nil {
			h.timer.Reset(max(time.Until(deadline), time.Millisecond))
		}
		a.mu.Unlock()
		return
	}
	if a.release(key, h) {
		h.done(c)
	}
}

// release takes h out of the held approvals, stopping its timer; false if
// it was already.
func (a *approvals) release(key string, h *heldApproval) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	hs := a.held[key]
	for i, x := range hs {
		if x == h {
			a.unquiet(key)
			a.held[key] = append(hs[:i:i], hs[i+1:]...)
			if h.timer != nil {
				h.timer.Stop()
				h.timer = nil
			}
			return true
		}
	}
	return false
}

// unquiet marks the run with key, and the runs above it, as not quiet: it
// goes on. It is called holding a.mu.
func (a *approvals) unquiet(key string) {
	for {
		delete(a.quiet, key)
		sr, ok := a.subs[key]
		if !ok {
			return
		}
		key = strings.Join(sr.Flow, "/")
	}
}

// Idle implements [vm.EffectIdler]: the run with the child-flow chain flow
// is about to wait, so its held approvals read the store again. A decision
// recorded meanwhile is taken, as if answered here; a timeout passed times
// the approval out; and once nothing else of the run tree is outstanding,
// the approvals park.
func (a *approvals) Idle(flow []string) {
	key := strings.Join(flow, "/")
	a.mu.Lock()
	hs := slices.Clone(a.held[key])
	a.mu.Unlock()
	for _, h := range hs {
		c, _, _ := a.fromStore(h.req)
		if c == nil {
			continue
		}
		if a.release(key, h) {
			// Decided (or timed out): the run goes on with it, and may
			// start more, so none parks now; its next Idle decides.
			h.done(c)
			return
		}
	}
	a.mu.Lock()
	// What is outstanding in the run is held here, or a quiet child
	// flow (an approval still being answered is not held yet: it
	// holds, or completes, and the run looks again).
	var probe *vm.EffectRequest
	if hs := a.held[key]; len(hs) > 0 {
		probe = hs[0].req
	}
	n := len(a.held[key])
	for child, sr := range a.subs {
		if strings.Join(sr.Flow, "/") == key {
			probe = sr
			if a.quiet[child] {
				n++
			}
		}
	}
	if probe == nil || probe.Outstanding() != n || n == 0 {
		a.unquiet(key)
		a.mu.Unlock()
		return
	}
	if sr, ok := a.subs[key]; ok {
		// A child flow: its parent decides, counting it as held.
		a.quiet[key] = true
		a.mu.Unlock()
		sr.Nudge()
		return
	}
	// The top of the run tree: everything held in it parks.
	var park []*heldApproval
	var keys []string
	for k, hs := range a.held {
		if k == key || key == "" || strings.HasPrefix(k, key+"/") {
			for _, h := range hs {
				park = append(park, h)
				keys = append(keys, k)
			}
		}
	}
	a.mu.Unlock()
	// The child flows' approvals read the store again first (their runs
	// wait, and do not): a decision taken there goes on instead.
	for i, h := range park {
		if keys[i] == key {
			continue // read above
		}
		if c, _, _ := a.fromStore(h.req); c != nil {
			if a.release(keys[i], h) {
				h.done(c)
				return
			}
		}
	}
	for i, h := range park {
		if a.release(keys[i], h) {
			h.done(&vm.EffectCompletion{Park: true})
		}
	}
}

// fromStore reads the approval req from the store: the completion its
// recorded decision or timeout makes (recording the timeout when its
// deadline has passed), or a store error makes, else nil with the
// approval and its deadline (zero without a timeout).
func (a *approvals) fromStore(req *vm.EffectRequest) (*vm.EffectCompletion, *store.Approval, time.Time) {
	ap, err := a.rec.Ask(req)
	if err != nil {
		return storeStop(err), nil, time.Time{}
	}
	var deadline time.Time
	if req.Timeout > 0 {
		deadline = ap.Requested.Add(req.Timeout)
	}
	if c := outcome(req, ap, deadline); c != nil {
		return c, ap, deadline
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		if ap, err = a.st.Expire(a.runID, ap, deadline); err != nil {
			return storeStop(err), nil, time.Time{}
		}
		if c := outcome(req, ap, deadline); c != nil {
			return c, ap, deadline
		}
		return vm.ApprovalTimedOut(req.Timeout), ap, deadline
	}
	return nil, ap, deadline
}

// storeStop is the completion that stops a run whose store failed.
func storeStop(err error) *vm.EffectCompletion {
	return &vm.EffectCompletion{Stop: &graphir.Error{Code: "store_error", Msg: err.Error()}}
}

// outcome is the completion approval ap's record makes: its decision, if
// it came before the deadline; a timeout, if it was recorded as timed out
// or decided too late (a decision an older skein let through); else nil.
func outcome(req *vm.EffectRequest, ap *store.Approval, deadline time.Time) *vm.EffectCompletion {
	switch {
	case !ap.Decided.IsZero() && (deadline.IsZero() || ap.Decided.Before(deadline)):
		values, err := recordedValues(req, ap)
		if err != nil {
			return storeStop(err)
		}
		return vm.ApprovalDecision(ap.Approved, ap.By, ap.Reason, ap.Decided, values)
	case !ap.Decided.IsZero() || !ap.Expired.IsZero():
		return vm.ApprovalTimedOut(req.Timeout)
	}
	return nil
}

// decide answers an approval: from the store, by asking, or nil when
// nobody can decide now (the caller holds it open or parks it), with the
// approval's deadline (zero for none).
func (a *approvals) decide(ctx context.Context, req *vm.EffectRequest) (*vm.EffectCompletion, time.Time) {
	if a.rec == nil {
		d, ok := a.asked(ctx, req, time.Time{})
		if ctx.Err() != nil {
			return &vm.EffectCompletion{Cancelled: true, Error: "cancelled"}, time.Time{}
		}
		if !ok {
			return &vm.EffectCompletion{Code: "step_failed",
				Error: fmt.Sprintf("approval %q needs a decision: %s", req.Step, a.noDecision)}, time.Time{}
		}
		values, _, err := d.bind(req.Step, req.Fields())
		if err != nil {
			return &vm.EffectCompletion{Code: "step_failed", Error: err.Error()}, time.Time{}
		}
		return vm.ApprovalDecision(d.Approved, d.By, d.Reason, time.Now(), values), time.Time{}
	}
	c, ap, deadline := a.fromStore(req)
	if c != nil {
		return c, deadline
	}
	d, ok := a.asked(ctx, req, deadline)
	if ctx.Err() != nil {
		return &vm.EffectCompletion{Cancelled: true, Error: "cancelled"}, deadline
	}
	if !ok {
		// Nobody to ask: held open (nil) until a decision comes or
		// nothing else can.
		return nil, deadline
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		// Timed out while asking (or answered too late): recorded as
		// such, unless a decision was recorded before.
		if c, _, _ := a.fromStore(req); c != nil {
			return c, deadline
		}
		return vm.ApprovalTimedOut(req.Timeout), deadline
	}
	values, js, err := d.bind(req.Step, req.Fields())
	if err != nil {
		return &vm.EffectCompletion{Code: "step_failed", Error: err.Error()}, deadline
	}
	if err := a.st.Decide(a.runID, ap, d.Approved, d.By, d.Reason, js); err != nil {
		if errors.Is(err, store.ErrCancelling) {
			// Someone asked to cancel the run while the person was
			// answering: the run's cancel poll ends ctx.
			<-ctx.Done()
			return &vm.EffectCompletion{Cancelled: true, Error: "cancelled"}, deadline
		}
		if !errors.Is(err, store.ErrDecided) && !errors.Is(err, store.ErrTimedOut) {
			return storeStop(err), deadline
		}
		// Decided meanwhile elsewhere, or the deadline passed while the
		// answer was recorded: the store's outcome stands.
		if c, _, _ := a.fromStore(req); c != nil {
			return c, deadline
		}
		return vm.ApprovalTimedOut(req.Timeout), deadline
	}
	return vm.ApprovalDecision(d.Approved, d.By, d.Reason, time.Now(), values), deadline
}

// asked asks the Asker, if there is one.
func (a *approvals) asked(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (Decision, bool) {
	if a.ask == nil {
		return Decision{}, false
	}
	return a.ask.Ask(ctx, req, deadline)
}

// ValuesError is [Service.Approve]'s error (and an Asker's decision's)
// when the decision's values do not fit the approval step's fields: a
// field it does not declare, a value of the wrong type or not among the
// choices, a required field left out of an approval.
type ValuesError struct {
	Step string
	Err  error
}

func (e *ValuesError) Error() string { return e.Err.Error() }
func (e *ValuesError) Unwrap() error { return e.Err }

// bind checks the decision's values against the fields of approval step
// and returns them, as the step's output holds them (nil for a step
// without fields) and as JSON ("" for none), for the store.
func (d *Decision) bind(step string, fields []graphir.Input) (starlark.Value, string, error) {
	m, err := graphir.BindFields(step, fields, d.Values, d.Approved)
	if err != nil {
		return nil, "", &ValuesError{Step: step, Err: err}
	}
	if len(fields) == 0 {
		return nil, "", nil
	}
	b, err := stdlib.AppendJSON(nil, m, "", 0)
	if err != nil {
		return nil, "", fmt.Errorf("approval %q: %v", step, err)
	}
	return m, string(b), nil
}

// recordedValues are the values recorded with approval ap's decision, as
// the output of the approval req holds them: nil for a step without
// fields; a decision recorded without values (by an older skein) gives
// each field its default (None when it has none).
func recordedValues(req *vm.EffectRequest, ap *store.Approval) (starlark.Value, error) {
	fields := req.Fields()
	if ap.Values == "" {
		if len(fields) == 0 {
			return nil, nil
		}
		return graphir.BindFields(req.Step, fields, nil, false)
	}
	return stdlib.FromJSON([]byte(ap.Values))
}

// Approved is what [Service.Approve] did: the approval it decided and
// the run as it is after the decision (still going: it takes the decision
// itself; waiting or interrupted: a resume continues it).
type Approved struct {
	Run      *store.Run
	Approval *store.Approval
	// Where is the approval's place, as [Place] writes it.
	Where string
	// Unread says the run, on an [Engine], has not read the decision yet
	// (no worker running, say): it was sent, not yet taken.
	Unread bool
}

// ChoiceError is [Service.Approve]'s error when step does not name one
// approval to decide.
type ChoiceError struct {
	Run  string
	Step string // as given; "" for none
	// Pending are the approvals that wait when more than one does and
	// step does not tell them apart; empty when none waits.
	Pending []*store.Approval
	// Nearest is the step or place nearest to Step, when there is none
	// of that name ("" for no suggestion).
	Nearest string
}

func (e *ChoiceError) Error() string {
	switch {
	case len(e.Pending) > 0:
		var places []string
		for _, a := range e.Pending {
			places = append(places, Place(a.Path, a.Step))
		}
		return fmt.Sprintf("run %s waits for %d approvals (%s): name one", e.Run, len(e.Pending), strings.Join(places, ", "))
	case e.Step == "":
		return fmt.Sprintf("run %s waits for no approval", e.Run)
	}
	msg := fmt.Sprintf("run %s has no approval step %q", e.Run, e.Step)
	if e.Nearest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Nearest)
	}
	return msg
}

// Approve records decision d on an approval of the run ref names (an id,
// a unique prefix of one, or "last"): the one step names (its step, or
// its place as [Place] writes it or with "/" between the parts), or with
// step "" the one the run waits for. A decision is recorded once: a
// second is refused ([store.ErrDecided]), as is one after the approval's
// deadline ([store.ErrTimedOut]). A run still going takes the decision
// itself; a parked one continues with [Service.Resume]. With an Engine,
// the decision is the Engine's to send and the run's to take.
//
// The result is not nil once the run is found, error or not: its Run is
// the run as last read.
func (s *Service) Approve(ctx context.Context, ref, step string, d Decision) (*Approved, error) {
	if s.Engine != nil {
		return s.Engine.Approve(ctx, ref, step, d)
	}
	r, err := s.Store.Get(ref)
	if err != nil {
		return nil, err
	}
	res := &Approved{Run: r}
	all, err := s.Store.Approvals(r.ID)
	if err != nil {
		return res, err
	}
	var pending, named []*store.Approval
	for _, a := range all {
		if step != "" && !names(step, a) {
			continue
		}
		named = append(named, a)
		if a.Pending(time.Now()) {
			pending = append(pending, a)
		}
	}
	switch {
	case len(pending) == 1:
		res.Approval = pending[0]
	case len(pending) > 1:
		return res, &ChoiceError{Run: r.ID, Step: step, Pending: pending}
	case len(named) > 0:
		// Only decided or timed out ones: let Decide say which.
		res.Approval = named[len(named)-1]
	default:
		e := &ChoiceError{Run: r.ID, Step: step}
		if step != "" {
			var steps []string
			for _, a := range all {
				steps = append(steps, a.Step, Place(a.Path, a.Step))
			}
			e.Nearest = spell.Nearest(step, steps)
		}
		return res, e
	}
	res.Where = Place(res.Approval.Path, res.Approval.Step)
	fields, err := graphir.ParseFields(res.Approval.Fields)
	if err != nil {
		return res, fmt.Errorf("approval %q of run %s: %v", res.Approval.Step, r.ID, err)
	}
	_, js, err := d.bind(res.Approval.Step, fields)
	if err != nil {
		return res, err
	}
	if err := s.Store.Decide(r.ID, res.Approval, d.Approved, d.By, d.Reason, js); err != nil {
		return res, err
	}
	if r, err = s.Store.Get(r.ID); err != nil {
		return res, err
	}
	res.Run = r
	return res, nil
}

// Place names an approval (or any step of a run) as people read it: its
// step, or with the child-flow chain and scope leading to it,
// "per_env[1] › deploy".
func Place(path, step string) string {
	if path == "" {
		return step
	}
	return strings.ReplaceAll(path, "/", " › ") + " › " + step
}

// PendingPath is the path of the approval a parked run waits for, as the
// store records it (the [store.Approval]'s Path; [Place] names it).
func PendingPath(p *vm.Pending) string {
	return store.EffectPath(&vm.EffectRequest{Flow: p.Flow, Scope: p.Scope})
}

// names reports whether arg names approval a: its step, or its place (as
// [Place] writes it, or with "/" between the parts).
func names(arg string, a *store.Approval) bool {
	return arg == a.Step || arg == Place(a.Path, a.Step) || (a.Path != "" && arg == a.Path+"/"+a.Step)
}

// Parked splits the approvals a parked run res waits for into those still
// to decide and those the store has an outcome for: a decision made, or a
// timeout recorded, while the run went on (the run takes it when resumed).
func (s *Service) Parked(res *vm.Result) (open []*vm.Pending, closed []*store.Approval) {
	if s.Store == nil {
		return res.Pending, nil
	}
	all, err := s.Store.Approvals(res.RunID)
	if err != nil {
		return res.Pending, nil
	}
	for _, p := range res.Pending {
		path := PendingPath(p)
		i := slices.IndexFunc(all, func(a *store.Approval) bool {
			return a.Path == path && a.Step == p.Step && a.Visit == p.Visit && (!a.Decided.IsZero() || !a.Expired.IsZero())
		})
		if i < 0 {
			open = append(open, p)
			continue
		}
		closed = append(closed, all[i])
	}
	return open, closed
}
