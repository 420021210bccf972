package serve

// This file is the actions: start, cancel, resume, approve and reject,
// the approvals waiting across runs, and the runs this process runs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// noDecision is why an approval fails in a run without a store (never:
// the server's runs are recorded, and park).
const noDecision = "decide it from the approvals page"

// startRun is POST /api/runs.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Flow   string          `json:"flow"`
		Inputs json.RawMessage `json:"inputs"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.Flow == "" {
		fail(w, http.StatusBadRequest, "bad_request", `want "flow": the path of a flow under a flow root, as GET /api/flows lists it`)
		return
	}
	file, root, ok := s.flowPath(w, body.Flow)
	if !ok {
		return
	}
	lo := s.cfg.Load
	lo.Root = root
	f := frontend.Load(file, lo)
	if f.Graph == nil || f.Errors() > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"error":       map[string]string{"code": "invalid_flow", "message": fmt.Sprintf("%s does not check: %s", body.Flow, plural(max(f.Errors(), 1), "error"))},
			"diagnostics": diagnostics(f.Diagnostics)})
		return
	}
	g := f.Graph
	given := &frontend.Inputs{}
	if len(body.Inputs) > 0 && string(body.Inputs) != "null" {
		if err := given.SetJSON(body.Inputs); err != nil {
			fail(w, http.StatusBadRequest, "bad_input", err.Error())
			return
		}
	}
	inputs, err := given.Bind(g)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_input", err.Error())
		return
	}
	if err := vm.CheckModels(g, os.Environ()); err != nil {
		fail(w, http.StatusUnprocessableEntity, "model_config", err.Error())
		return
	}
	if g.Concurrency > 0 { // its bound holds for every start: through the queue (triggers.go)
		s.startQueued(w, r, file, root, g, inputs)
		return
	}
	spec := &runs.Spec{Graph: g, Inputs: inputs, Sources: f.Sources.List(), Options: store.RunOptions{By: s.cfg.By}, NoDecision: noDecision,
		Parent: telemetry.Parent(r.Header)} // the caller's trace, continued
	run, err := s.svc.Start(spec)
	if err != nil {
		storeFail(w, err)
		return
	}
	s.track(file, root, g, run.ID) // a restart resumes it (triggers.go)
	s.runAnswer(w, run)
}

// runAnswer runs run in the background and answers 201 with it as
// recorded.
func (s *Server) runAnswer(w http.ResponseWriter, run *runs.Run) {
	s.launch(run)
	rec, err := s.cfg.Store.Get(run.ID)
	if err != nil {
		storeFail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"run": s.runJSON(rec)})
}

// launch runs run in the server's process. A run that parks while a
// decision came for it as it went on (the store has an outcome for every
// approval it waits for) is resumed at once.
func (s *Server) launch(run *runs.Run) {
	a := &active{run: run, done: make(chan struct{}), wake: make(chan struct{})}
	s.mu.Lock()
	s.active[run.ID] = a
	s.mu.Unlock()
	run.OnEvent = func(ev *vm.Event) {
		s.metrics.observe(ev)
		s.wake(run.ID)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// A run goes on when the request that started it ends; it
		// stops with the process (left interrupted), or when cancelled.
		res, err := run.Run(context.Background())
		if err != nil {
			s.logf("run %s: %v", run.ID, err)
		}
		s.mu.Lock()
		if s.active[run.ID] == a {
			delete(s.active, run.ID)
		}
		close(a.done)
		close(a.wake) // its streams look again, and then poll
		s.mu.Unlock()
		s.sched.Poke() // the queue's item for it ends, and what it emitted is queued
		if res.Status == vm.Waiting && s.ctx.Err() == nil {
			if open, closed := s.svc.Parked(res); len(open) == 0 && len(closed) > 0 {
				if _, err := s.continueParked(run.ID); err != nil {
					s.logf("run %s: %v", run.ID, err)
				}
			}
		}
	}()
}

// continueParked resumes run id in the server's process if it is parked
// (waiting) and this process is not running or resuming it already, and
// returns the run as it is then.
func (s *Server) continueParked(id string) (*store.Run, error) {
	s.mu.Lock()
	if s.active[id] != nil || s.resuming[id] {
		s.mu.Unlock()
		return s.cfg.Store.Get(id)
	}
	s.resuming[id] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.resuming, id)
		s.mu.Unlock()
	}()
	r, err := s.cfg.Store.Get(id)
	if err != nil || r.Status != store.Waiting {
		return r, err
	}
	next, _, err := s.svc.Resume(&runs.ResumeSpec{Run: r, Options: r.Options, NoDecision: noDecision})
	if err != nil {
		return r, err
	}
	s.launch(next)
	return s.cfg.Store.Get(next.ID)
}

// wake tells the event streams following run id to look again.
func (s *Server) wake(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.active[id]; a != nil {
		close(a.wake)
		a.wake = make(chan struct{})
	}
}

// woken returns what is closed when run id records something next (nil
// for a run this process does not run: its streams poll).
func (s *Server) woken(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.active[id]; a != nil {
		return a.wake
	}
	return nil
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// cancelRun is POST /api/runs/{id}/cancel: through the run service,
// for a run of any process (one of this process is waited for, briefly).
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	run, ok := s.getRunRef(w, r)
	if !ok {
		return
	}
	// Not the request's context: a client that goes away does not stop
	// a cancel half done (a waiting run's exit handler).
	c, err := s.svc.Cancel(s.ctx, run.ID, runs.CancelSpec{By: s.cfg.By, Reason: body.Reason})
	switch {
	case errors.Is(err, store.ErrEnded):
		fail(w, http.StatusConflict, "conflict", err.Error())
		return
	case err != nil:
		storeFail(w, err)
		return
	}
	s.mu.Lock()
	a := s.active[run.ID]
	s.mu.Unlock()
	if a != nil {
		select {
		case <-a.done:
		case <-time.After(5 * time.Second): // still finishing: answer with it as it is
		case <-r.Context().Done():
		}
	}
	cur := c.Run
	if got, err := s.cfg.Store.Get(run.ID); err == nil {
		cur = got
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": s.runJSON(cur)})
}

// resumeRun is POST /api/runs/{id}/resume.
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	var body struct {
		From   string `json:"from"`
		Reload bool   `json:"reload"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	run, ok := s.getRunRef(w, r)
	if !ok {
		return
	}
	if err := runs.Resumable(run, body.From, body.Reload); err != nil {
		fail(w, http.StatusConflict, "conflict", err.Error())
		return
	}
	ropts := run.Options
	ropts.By = s.cfg.By
	spec := &runs.ResumeSpec{Run: run, From: body.From, Reload: body.Reload, Options: ropts, NoDecision: noDecision}
	if ropts.Cassette != "" {
		if s.cfg.OpenCassette == nil {
			fail(w, http.StatusNotImplemented, "not_implemented", "run "+run.ID+" answered its model calls from a cassette; resume it with skein resume")
			return
		}
		m, err := s.cfg.OpenCassette(ropts.Cassette, ropts.ReplayOnly)
		if err != nil {
			fail(w, http.StatusUnprocessableEntity, "model_config", err.Error())
			return
		}
		spec.Models = m
	}
	next, ds, err := s.svc.Resume(spec)
	var invalid *runs.InvalidFlowError
	switch {
	case errors.As(err, &invalid):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"error": map[string]string{"code": "invalid_flow", "message": err.Error()}, "diagnostics": diagnostics(ds)})
		return
	case errors.Is(err, runs.ErrReloadDiverged):
		fail(w, http.StatusConflict, "conflict", err.Error())
		return
	case errors.Is(err, runs.ErrStillRunning):
		fail(w, http.StatusConflict, "conflict", err.Error())
		return
	case err != nil && body.From != "" && strings.Contains(err.Error(), "to resume from"):
		// from names no step the run completed.
		fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	case err != nil:
		storeFail(w, err)
		return
	}
	s.runAnswer(w, next)
}

// decide is POST /api/runs/{id}/approve and reject.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, approved bool) {
	body := struct {
		Step   string         `json:"step"`
		Reason string         `json:"reason"`
		Values map[string]any `json:"values"`
		Resume *bool          `json:"resume"`
	}{}
	if !readJSON(w, r, &body) {
		return
	}
	run, ok := s.getRunRef(w, r)
	if !ok {
		return
	}
	done, err := s.svc.Approve(r.Context(), run.ID, body.Step, runs.Decision{Approved: approved, By: s.cfg.By, Reason: body.Reason, Values: body.Values})
	var choice *runs.ChoiceError
	switch {
	case errors.As(err, &choice) && len(choice.Pending) > 0:
		fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	case errors.As(err, &choice):
		fail(w, http.StatusNotFound, "not_found", err.Error())
		return
	case errors.Is(err, store.ErrDecided) || errors.Is(err, store.ErrTimedOut) ||
		errors.Is(err, store.ErrEnded) || errors.Is(err, store.ErrCancelling):
		fail(w, http.StatusConflict, "conflict", err.Error())
		return
	case errors.As(err, new(*runs.ValuesError)):
		fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	case err != nil:
		storeFail(w, err)
		return
	}
	decided := done.Approval
	if aps, err := s.cfg.Store.Approvals(done.Run.ID); err == nil {
		for _, a := range aps {
			if a.Path == decided.Path && a.Step == decided.Step && a.Visit == decided.Visit {
				decided = a
			}
		}
	}
	out := map[string]any{"approval": approval(decided)}
	cur := done.Run
	if cur.Status == store.Waiting && (body.Resume == nil || *body.Resume) && s.allDecided(cur.ID) {
		if c, err := s.continueParked(cur.ID); err != nil {
			s.logf("run %s: %v", cur.ID, err)
		} else if c != nil {
			cur = c
		}
	}
	out["run"] = s.runJSON(cur)
	writeJSON(w, http.StatusOK, out)
}

// allDecided reports whether run id waits for no approval any more.
func (s *Server) allDecided(id string) bool {
	aps, err := s.cfg.Store.Approvals(id)
	if err != nil {
		return false
	}
	for _, a := range aps {
		if a.Pending(time.Now()) {
			return false
		}
	}
	return true
}

// listApprovals is GET /api/approvals.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	aps, ids, err := s.cfg.Store.Undecided()
	if err != nil {
		storeFail(w, err)
		return
	}
	out := []*approvalJSON{}
	seen := map[string]*runJSON{}
	byRun := map[string][]*store.Approval{} // where each run waits
	for i, a := range aps {
		byRun[ids[i]] = append(byRun[ids[i]], a)
	}
	now := time.Now()
	for i, a := range aps {
		if !a.Pending(now) {
			continue
		}
		rj, ok := seen[ids[i]]
		if !ok {
			run, err := s.cfg.Store.Get(ids[i])
			if err == nil {
				j := runWith(run, byRun[ids[i]])
				rj = &j
			}
			seen[ids[i]] = rj
		}
		if rj == nil || rj.Status == store.Running && !s.heldOpen(rj.ID, a) {
			continue
		}
		j := approval(a)
		j.Run = rj
		out = append(out, j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

// heldOpen reports whether approval a of running run id is held open: its
// attempt still runs (a running run's approval that is undecided and not
// held was asked by a run that went on without it, resumed since).
func (s *Server) heldOpen(id string, a *store.Approval) bool {
	rec, err := s.svc.Record(id)
	if err != nil {
		return false
	}
	return rec.IsHeld(a.Path, a.Step, a.Visit)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
