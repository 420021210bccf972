// Package trigger is skein serve's scheduler: it fires the clock
// triggers of the flows it is given (trigger(cron=) and trigger(every=))
// on time, queues every firing, webhook delivery and start it is asked
// for as a queued run in the run store, and starts the queued runs in
// order within the bounds: --max-runs at once in all, and a flow's
// concurrency= per flow or per concurrency_key value. docs/serve.md is
// its contract.
//
// The queue and each trigger's last firing live in the run store, so a
// queued run survives a restart, a firing missed while no scheduler ran
// is caught up per catch_up=, and none is made twice: a firing and its
// queued run are recorded in one transaction.
//
// It knows no flags, no terminal and no HTTP: a front end gives it the
// flows ([Flow]), how to start, resume and cancel a run ([Runner]) and a
// clock ([Scheduler.Now]); tests give it a fake one and call
// [Scheduler.Tick] themselves.
package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/skeinlang/skein/builtins"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/store"
)

// Flow is a flow the scheduler knows: its file and root (absolute) and
// its graph, loaded and checked without errors.
type Flow struct {
	File, Root string
	Graph      *graphir.Graph
}

// Runner starts, resumes and cancels the runs of queued items.
type Runner interface {
	// Start starts a run of it (a recorded run: the store has it when
	// Start returns) and returns its id, and run, which runs it to its
	// end (or until it parks, waiting for a decision) in the caller's
	// goroutine.
	Start(it *store.QueueItem) (id string, run func(), err error)
	// Resume continues the run of it, it.Run, which was left interrupted
	// when the process running it stopped, the same way.
	Resume(it *store.QueueItem) (run func(), err error)
	// Cancel cancels run id (overlap = "replace").
	Cancel(id string)
}

// Scheduler fires the clock triggers of its flows and runs the queue.
// Set its fields, then call [Scheduler.Run], or [Scheduler.Recover] and
// [Scheduler.Tick] with a fake clock.
type Scheduler struct {
	Store  *store.Store
	Runner Runner
	// Flows returns the flows whose clock triggers fire, as they are
	// now; it is called at every tick.
	Flows func() []Flow
	// MaxRuns bounds the queued runs running at once (0: no bound).
	MaxRuns int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Grace is how late a firing may be made and still count as on time
	// (default a minute): firings later than that were missed, and are
	// made only within the trigger's catch_up.
	Grace time.Duration
	// Keep, when set, is how long ended runs and queue items are kept:
	// older ones are deleted when the scheduler starts and once a day
	// ([Scheduler.Retain]).
	Keep time.Duration
	// Logf, when set, is told what goes wrong that nothing else reports.
	Logf func(format string, args ...any)

	dispatch sync.Mutex // one Dispatch at a time: each counts what runs, then starts
	watchMu  sync.Mutex
	watches  map[string]*watch // watch.go
	mu       sync.Mutex
	inflight map[int64]string // queue item -> its run, for the runs this scheduler runs
	wg       sync.WaitGroup
	wake     chan struct{}
	idle     time.Duration // how long Run waits with nothing due (0: a minute); tests lengthen it
	changed  chan struct{} // closed and replaced when a run it started ends
}

// retainEvery is how often Run deletes what Keep no longer keeps (each
// time compacts the store's file).
const retainEvery = 24 * time.Hour

// maxFires bounds the firings one trigger makes in one tick (a catch_up
// of days with every = "1s").
const maxFires = 1000

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scheduler) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return time.Minute
}

func (s *Scheduler) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

func (s *Scheduler) init() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight = map[int64]string{}
		s.wake = make(chan struct{}, 1)
		s.changed = make(chan struct{})
	}
}

// Poke makes Run look at the queue again: a run it did not start (one
// started from the page at once) has ended, and may have emitted items.
func (s *Scheduler) Poke() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run recovers the queue, then fires triggers and starts queued runs
// until ctx is done. The runs it started go on; [Scheduler.Wait] waits
// for them.
func (s *Scheduler) Run(ctx context.Context) {
	s.init()
	s.Recover()
	var retained time.Time
	for {
		if s.now().Sub(retained) >= retainEvery {
			s.Retain()
			retained = s.now()
		}
		next := s.Tick()
		wait := time.Minute
		if s.idle > 0 {
			wait = s.idle
		}
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(s.now()), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			s.syncWatches(nil)
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Retain deletes the runs that ended longer than Keep ago, with their
// records and logs (as skein gc --older-than does), and the queue items
// that ended before then; and the runs of each flow with flow(keep=)
// that ended longer than that ago.
func (s *Scheduler) Retain() {
	if s.Flows != nil {
		for _, f := range s.Flows() {
			if f.Graph.Keep <= 0 {
				continue
			}
			if n, err := s.Store.GCFile(f.File, f.Graph.Keep); err != nil {
				s.logf("keep: %v", err)
			} else if n > 0 {
				s.logf("deleted %d runs of %s that ended more than %s ago", n, f.File, graphir.FormatDuration(f.Graph.Keep))
			}
		}
	}
	if s.Keep <= 0 {
		return
	}
	if n, err := s.Store.GC(-1, s.Keep); err != nil {
		s.logf("keep: %v", err)
	} else if n > 0 {
		s.logf("deleted %d runs that ended more than %s ago", n, graphir.FormatDuration(s.Keep))
	}
	if _, err := s.Store.PruneQueue(s.now().Add(-s.Keep)); err != nil {
		s.logf("keep: %v", err)
	}
}

// Wait waits for the runs the scheduler started to end.
func (s *Scheduler) Wait() { s.wg.Wait() }

// Recover takes over the queue as a stopped scheduler left it: an item
// claimed but without a run goes back in the queue; one whose run was
// left interrupted is resumed (its completed steps are not run again);
// one whose run has ended is done.
func (s *Scheduler) Recover() {
	s.init()
	items, err := s.Store.Pending()
	if err != nil {
		s.logf("queue: %v", err)
		return
	}
	for _, it := range items {
		if it.State != store.QueueRunning {
			continue
		}
		s.mu.Lock()
		_, mine := s.inflight[it.N]
		s.mu.Unlock()
		if mine {
			continue
		}
		if it.Run == "" {
			if err := s.Store.Requeue(it.N); err != nil {
				s.logf("queue: %v", err)
			}
			continue
		}
		s.reconcile(it, true)
	}
}

// reconcile looks at the run of running item it that this scheduler
// does not run: ended or parked, the item is done; interrupted, it is
// resumed when resume is set.
func (s *Scheduler) reconcile(it *store.QueueItem, resume bool) {
	r, err := s.Store.Get(it.Run)
	if err != nil {
		s.end(it, store.QueueFailed, err.Error())
		return
	}
	switch {
	case r.HasEnded() || r.Status == store.Waiting:
		s.emitFrom(it, it.Run)
		s.end(it, store.QueueDone, "")
	case r.Status == store.Interrupted && resume:
		run, err := s.Runner.Resume(it)
		if err != nil {
			s.end(it, store.QueueFailed, err.Error())
			return
		}
		s.launch(it, it.Run, run)
	}
}

func (s *Scheduler) end(it *store.QueueItem, state, msg string) {
	if err := s.Store.EndItem(it.N, state, msg, s.now()); err != nil {
		s.logf("queue: %v", err)
	}
}

// Tick fires the clock triggers that are due and starts the queued runs
// that may start. It returns when the next firing is due (zero: none).
func (s *Scheduler) Tick() time.Time {
	s.init()
	now := s.now()
	var next time.Time
	if s.Flows != nil {
		flows := s.Flows()
		s.syncWatches(flows)
		for _, f := range flows {
			for i := range f.Graph.Triggers {
				t := &f.Graph.Triggers[i]
				if t.Kind == graphir.TriggerWebhook || t.Kind == graphir.TriggerWatch {
					continue
				}
				n, err := s.fireDue(f, t, now)
				if err != nil {
					s.logf("%s: %s: %v", f.File, t.Key(), err)
				}
				if !n.IsZero() && (next.IsZero() || n.Before(next)) {
					next = n
				}
			}
		}
	}
	s.Dispatch()
	return next
}

// fireDue makes the firings of clock trigger t of f due by now, and
// returns when its next one is due.
func (s *Scheduler) fireDue(f Flow, t *graphir.Trigger, now time.Time) (time.Time, error) {
	sched, err := Schedule(t)
	if err != nil {
		return time.Time{}, err
	}
	key := t.Key()
	mark, ok, err := s.Store.Mark(f.File, key)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		// Seen the first time: it fires from now on.
		_, err := s.Store.Fire(f.File, key, now, nil)
		return sched(now), err
	}
	// Firings before from were missed beyond catch_up: dropped.
	from := now.Add(-max(t.CatchUp, s.grace()))
	at := sched(mark)
	for n := 0; !at.After(now) && n < maxFires; n++ {
		if at.Before(from) {
			at = sched(from.Add(-time.Nanosecond))
			continue
		}
		if err := s.fire(f, t, at); err != nil {
			return time.Time{}, err
		}
		at = sched(at)
	}
	return at, nil
}

// Schedule returns the function that gives trigger t's first firing
// after a time.
func Schedule(t *graphir.Trigger) (func(time.Time) time.Time, error) {
	switch t.Kind {
	case graphir.TriggerCron:
		c, err := builtins.CronParser.Parse(t.Cron)
		if err != nil {
			return nil, err
		}
		loc := time.UTC
		if t.TZ != "" {
			if loc, err = time.LoadLocation(t.TZ); err != nil {
				return nil, err
			}
		}
		return func(after time.Time) time.Time {
			after = after.In(loc)
			next := c.Next(after)
			// A time that happens twice (clocks going back) fires once.
			const wall = "2006-01-02 15:04"
			if next.Format(wall) == after.Format(wall) {
				next = c.Next(next)
			}
			return next.UTC()
		}, nil
	case graphir.TriggerEvery:
		d := t.Every.Nanoseconds()
		return func(after time.Time) time.Time {
			n := after.UnixNano()
			return time.Unix(0, (n/d+1)*d).UTC()
		}, nil
	}
	return nil, fmt.Errorf("%s is not a clock trigger", t.Key())
}

// fire makes the firing of t at time at: its run queued, skipped, or
// replacing the flow's runs, per t's overlap policy.
func (s *Scheduler) fire(f Flow, t *graphir.Trigger, at time.Time) error {
	inputs, err := inputsJSON(t)
	if err != nil {
		return err
	}
	it, err := s.item(f, t.Key(), inputs, "")
	it.Fired = at
	if err != nil {
		it.State, it.Error, it.Ended = store.QueueFailed, err.Error(), s.now()
		_, ferr := s.Store.Fire(f.File, t.Key(), at, it)
		return ferr
	}
	if err := s.overlap(f, t.OverlapPolicy(), it); err != nil {
		return err
	}
	fired, err := s.Store.Fire(f.File, t.Key(), at, it)
	if fired {
		s.Poke()
	}
	return err
}

// overlap applies policy to a new item of flow f, before it is queued:
// with runs of f queued or running, "skip" marks it skipped, "replace"
// ends them; "queue" makes it wait for them (at most one run at once,
// unless the flow's concurrency= allows more).
func (s *Scheduler) overlap(f Flow, policy string, it *store.QueueItem) error {
	if policy == graphir.OverlapQueue {
		if it.Conc == 0 {
			it.Conc = 1
		}
		return nil
	}
	pending, err := s.Store.Pending()
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.File != f.File {
			continue
		}
		if policy == graphir.OverlapSkip {
			it.State, it.Ended = store.QueueSkipped, s.now()
			it.Error = fmt.Sprintf("a run of the flow was %s (queue item %d)", p.State, p.N)
			return nil
		}
		s.end(p, store.QueueReplaced, "replaced by a later firing")
		if p.Run != "" {
			s.Runner.Cancel(p.Run)
		}
	}
	return nil
}

// inputsJSON is the JSON object of t's fixed inputs.
func inputsJSON(t *graphir.Trigger) (json.RawMessage, error) {
	m := map[string]any{}
	for k, v := range t.Inputs {
		g, err := stdlib.ToGo(v)
		if err != nil {
			return nil, err
		}
		m[k] = g
	}
	return json.Marshal(m)
}

// item makes the queue item of a run of f with inputs (a JSON object),
// queued by trigger: its inputs bound to f's declared ones (an error
// says they do not fit), its concurrency key computed.
func (s *Scheduler) item(f Flow, trigger string, inputs json.RawMessage, delivery string) (*store.QueueItem, error) {
	g := f.Graph
	it := &store.QueueItem{File: f.File, Root: f.Root, Name: g.Name, Inputs: inputs, Trigger: trigger, Conc: g.Concurrency,
		Delivery: delivery, Enqueued: s.now()}
	if len(inputs) == 0 {
		it.Inputs = json.RawMessage("{}")
	}
	given := &frontend.Inputs{}
	if err := given.SetJSON(it.Inputs); err != nil {
		return it, err
	}
	bound, err := given.Bind(g)
	if err != nil {
		return it, err
	}
	if name := builtins.KeyInput(g.ConcurrencyKey); name != "" {
		it.Key = "null"
		if v, ok := bound.Lookup(name); ok {
			x, err := stdlib.ToGo(v)
			if err != nil {
				return it, fmt.Errorf("concurrency_key %s: %v", g.ConcurrencyKey, err)
			}
			b, err := json.Marshal(x)
			if err != nil {
				return it, fmt.Errorf("concurrency_key %s: %v", g.ConcurrencyKey, err)
			}
			it.Key = string(b)
		}
	}
	return it, nil
}

// Enqueue queues a run of f with inputs (a JSON object), as trigger
// says ("api", "webhook push"), with the overlap policy ("" to queue it
// beside the flow's other runs, within its concurrency=),
// and for a webhook the delivery's id: a delivery queued before is
// [store.ErrDuplicate]. Inputs that do not fit the flow are an error,
// and nothing is queued.
func (s *Scheduler) Enqueue(f Flow, trigger, policy string, inputs json.RawMessage, delivery string) (*store.QueueItem, error) {
	return s.EnqueueTraced(f, trigger, policy, inputs, delivery, "", "")
}

// EnqueueTraced is [Scheduler.Enqueue] of a run that continues a
// caller's trace: traceparent and tracestate are the W3C trace context
// of the request that queued it, kept with the queued item so that its
// run continues that trace whenever it starts, after a restart too.
func (s *Scheduler) EnqueueTraced(f Flow, trigger, policy string, inputs json.RawMessage, delivery, traceparent, tracestate string) (*store.QueueItem, error) {
	it, err := s.item(f, trigger, inputs, delivery)
	if err != nil {
		return nil, err
	}
	if traceparent != "" {
		it.Traceparent, it.Tracestate = traceparent, tracestate
	}
	if policy != "" {
		if err := s.overlap(f, policy, it); err != nil {
			return nil, err
		}
	}
	if err := s.Store.Enqueue(it); err != nil {
		return nil, err
	}
	s.Poke()
	return it, nil
}

// Dispatch starts the queued runs that may start now, in queue order:
// at most MaxRuns running in all, and for a flow with concurrency= at
// most that many per flow, or per value of its concurrency_key; an item
// that may not start waits, and the items behind it of other flows or
// keys go ahead.
func (s *Scheduler) Dispatch() {
	s.init()
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	items, err := s.Store.Pending()
	if err != nil {
		s.logf("queue: %v", err)
		return
	}
	running := 0
	per := map[string]int{}
	slot := func(it *store.QueueItem) string { return it.File + "\x00" + it.Key }
	for _, it := range items {
		if it.State == store.QueueRunning {
			running++
			per[slot(it)]++
			s.mu.Lock()
			_, mine := s.inflight[it.N]
			s.mu.Unlock()
			if !mine && it.Run != "" {
				s.reconcile(it, false) // run by a process that stopped, or another server
			}
		}
	}
	for _, it := range items {
		if it.State != store.QueueQueued {
			continue
		}
		if s.MaxRuns > 0 && running >= s.MaxRuns {
			return
		}
		if it.Conc > 0 && per[slot(it)] >= it.Conc {
			continue
		}
		ok, err := s.Store.Claim(it.N, s.now())
		if err != nil {
			s.logf("queue: %v", err)
			return
		}
		if !ok {
			continue
		}
		running++
		per[slot(it)]++
		id, run, err := s.Runner.Start(it)
		if err != nil {
			s.end(it, store.QueueFailed, err.Error())
			continue
		}
		if err := s.Store.Started(it.N, id); err != nil {
			s.logf("queue: %v", err)
		}
		s.launch(it, id, run)
	}
}

// launch runs run, the run id of item it, and ends the item after it.
func (s *Scheduler) launch(it *store.QueueItem, id string, run func()) {
	s.mu.Lock()
	s.inflight[it.N] = id
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		run()
		s.emitFrom(it, id)
		s.end(it, store.QueueDone, "") // before it leaves inflight: Dispatch would look at its run
		s.mu.Lock()
		delete(s.inflight, it.N)
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		s.Poke()
	}()
}

// Changed returns what is closed when a run the scheduler started ends
// next.
func (s *Scheduler) Changed() <-chan struct{} {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Running returns the runs the scheduler runs, by queue item.
func (s *Scheduler) Running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, id := range s.inflight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// emitFrom queues the work items run id of item it emitted (the
// hopper): when the run succeeded and its flow declares emit=, each
// element of its result's "emit" list is a queued run of that flow, one
// level deeper than it, linked to the run; an item deeper than the
// flow's max_depth is recorded as skipped and not run. Each is queued
// once, whatever restarts come between (its delivery id names the run
// and the element).
func (s *Scheduler) emitFrom(it *store.QueueItem, id string) {
	r, err := s.Store.Get(id)
	if err != nil || r.Status != "succeeded" || len(r.Result) == 0 {
		return
	}
	var res struct {
		Output struct {
			Emit []json.RawMessage `json:"emit"`
		} `json:"output"`
	}
	if json.Unmarshal(r.Result, &res) != nil || len(res.Output.Emit) == 0 {
		return
	}
	parent := frontend.Load(it.File, frontend.Options{Root: it.Root})
	g := parent.Graph
	if g == nil || g.Emit == "" {
		return
	}
	target := filepath.Join(filepath.Dir(it.File), filepath.FromSlash(g.Emit))
	var child Flow
	var loadErr error
	if err := confine.Check(it.Root, target); err != nil {
		loadErr = fmt.Errorf("emit %s: %v", g.Emit, err)
	} else if f := frontend.Load(target, frontend.Options{Root: it.Root}); f.Err() != nil {
		loadErr = fmt.Errorf("emit %s: %v", g.Emit, f.Err())
	} else {
		child = Flow{File: target, Root: it.Root, Graph: f.Graph}
	}
	depth := it.Depth + 1
	for i, in := range res.Output.Emit {
		delivery := fmt.Sprintf("%s/%d", id, i)
		var e *store.QueueItem
		switch {
		case loadErr != nil:
			e = &store.QueueItem{File: target, Root: it.Root, Name: g.Emit, Inputs: in, State: store.QueueFailed, Error: loadErr.Error()}
		case depth > g.MaxDepth:
			e = &store.QueueItem{File: target, Root: it.Root, Name: child.Graph.Name, Inputs: in, State: store.QueueSkipped,
				Error: fmt.Sprintf("depth %d is past max_depth %d of flow %s", depth, g.MaxDepth, g.Name)}
		default:
			e, err = s.item(child, "", in, "")
			if err != nil {
				e.State, e.Error = store.QueueFailed, err.Error()
			}
		}
		e.Trigger, e.Delivery, e.Depth, e.Parent, e.Enqueued = "emit", delivery, depth, id, s.now()
		if e.State != "" {
			e.Ended = s.now()
		}
		if err := s.Store.Enqueue(e); err != nil && !errors.Is(err, store.ErrDuplicate) {
			s.logf("emit: %v", err)
		}
	}
	s.Poke()
}
