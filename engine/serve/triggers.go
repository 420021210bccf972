package serve

// This file is what starts runs by itself: the scheduler (engine/trigger)
// over the flows under the roots, the runner it starts queued runs
// through (the run service, as a start from the page), the queue's API
// (GET /api/queue) and the webhooks (POST /hooks/NAME).

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/trigger"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// maxHookBody bounds a webhook delivery's body.
const maxHookBody = 1 << 20

// newScheduler makes the server's scheduler; [Server.Schedule] runs it.
func (s *Server) newScheduler() *trigger.Scheduler {
	return &trigger.Scheduler{Store: s.cfg.Store, Runner: queueRunner{s}, Flows: s.triggerFlows, MaxRuns: s.cfg.MaxRuns, Keep: s.cfg.Keep, Logf: s.logf}
}

// Schedule fires the triggers of the flows under the roots and starts
// the queued runs, until the server is closed: the runs a stopped
// server left queued start, and those it left running are resumed.
// Without it, webhook deliveries and firings are queued, and wait.
func (s *Server) Schedule() { s.sched.Run(s.ctx) }

func (s *Server) triggerRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/queue", s.listQueue)
	m.HandleFunc("POST /hooks/{name}", s.hook)
	m.HandleFunc("GET /metrics", s.getMetrics)
}

// triggerFlows is the flows under the roots that declare triggers (or
// flow(keep=)) and check without errors.
func (s *Server) triggerFlows() []trigger.Flow {
	var out []trigger.Flow
	s.eachFlow(func(p, root string, f *frontend.Flow) {
		if f.Graph == nil || len(f.Graph.Triggers) == 0 && f.Graph.Keep == 0 || f.Errors() > 0 {
			return
		}
		out = append(out, trigger.Flow{File: p, Root: root, Graph: f.Graph})
	})
	return out
}

// startQueued answers POST /api/runs for flow g (file, under root), which
// declares concurrency=: the run is queued, and started at once if its
// bound allows (201 with the run, as any start), else left waiting its
// turn (202 with the queue item).
func (s *Server) startQueued(w http.ResponseWriter, r *http.Request, file, root string, g *graphir.Graph, inputs *stdlib.Map) {
	in, err := stdlib.ToGo(inputs)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_input", err.Error())
		return
	}
	js, err := json.Marshal(in)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_input", err.Error())
		return
	}
	tp, ts := traceContext(r)
	it, err := s.sched.EnqueueTraced(trigger.Flow{File: file, Root: root, Graph: g}, "api", "", js, "", tp, ts)
	if err != nil {
		if strings.HasPrefix(err.Error(), "run store") {
			storeFail(w, err)
			return
		}
		fail(w, http.StatusBadRequest, "bad_input", err.Error())
		return
	}
	s.sched.Dispatch()
	now, err := s.cfg.Store.Item(it.N)
	if err != nil {
		storeFail(w, err)
		return
	}
	switch {
	case now.Run != "":
		rec, err := s.cfg.Store.Get(now.Run)
		if err != nil {
			storeFail(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"run": s.runJSON(rec)})
	case now.State == store.QueueFailed:
		fail(w, http.StatusInternalServerError, "not_started", now.Error)
	default:
		writeJSON(w, http.StatusAccepted, map[string]any{"queued": itemJSON(now)})
	}
}

// track records run id, started from the page at once, in the queue as
// running, so that a server stopped while it runs resumes it when it
// starts again, as it does the queue's runs.
func (s *Server) track(file, root string, g *graphir.Graph, id string) {
	it := &store.QueueItem{File: file, Root: root, Name: g.Name, Trigger: "api", Conc: g.Concurrency, State: store.QueueRunning,
		Enqueued: time.Now(), Started: time.Now(), Run: id}
	if err := s.cfg.Store.Enqueue(it); err != nil {
		s.logf("run %s: %v", id, err)
	}
}

// queueRunner starts the scheduler's runs in the server's process, as
// a start from the page does: the page follows them live, and a server
// that stops leaves them interrupted.
type queueRunner struct{ s *Server }

func (q queueRunner) Start(it *store.QueueItem) (string, func(), error) {
	s := q.s
	lo := s.cfg.Load
	lo.Root = it.Root
	f := frontend.Load(it.File, lo)
	if err := f.Err(); err != nil {
		return "", nil, err
	}
	given := &frontend.Inputs{}
	if err := given.SetJSON(it.Inputs); err != nil {
		return "", nil, err
	}
	inputs, err := given.Bind(f.Graph)
	if err != nil {
		return "", nil, err
	}
	if err := vm.CheckModels(f.Graph, os.Environ()); err != nil {
		return "", nil, err
	}
	by := it.Trigger
	if by == "api" {
		by = s.cfg.By
	}
	spec := &runs.Spec{Graph: f.Graph, Inputs: inputs, Sources: f.Sources.List(), Options: store.RunOptions{By: by}, NoDecision: noDecision}
	if it.Traceparent != "" {
		// The trace of the request that queued it, continued.
		spec.Parent = telemetry.Parent(http.Header{"Traceparent": {it.Traceparent}, "Tracestate": {it.Tracestate}})
	}
	run, err := s.svc.Start(spec)
	if err != nil {
		return "", nil, err
	}
	return run.ID, s.launchAndWait(run), nil
}

func (q queueRunner) Resume(it *store.QueueItem) (func(), error) {
	s := q.s
	r, err := s.cfg.Store.Get(it.Run)
	if err != nil {
		return nil, err
	}
	next, _, err := s.svc.Resume(&runs.ResumeSpec{Run: r, Options: r.Options, NoDecision: noDecision})
	if err != nil {
		return nil, err
	}
	return s.launchAndWait(next), nil
}

func (q queueRunner) Cancel(id string) {
	s := q.s
	s.mu.Lock()
	a := s.active[id]
	s.mu.Unlock()
	if a != nil {
		a.run.Cancel()
	}
}

// launchAndWait returns what launches run and waits for it to end.
func (s *Server) launchAndWait(run *runs.Run) func() {
	return func() {
		s.launch(run)
		s.mu.Lock()
		a := s.active[run.ID]
		s.mu.Unlock()
		if a != nil {
			<-a.done
		}
	}
}

// hookFlows holds the flows the last webhook delivery looked among, for
// a second: deliveries, which need no token, walk the roots at most once
// a second between them.
type hookFlows struct {
	mu    sync.Mutex
	at    time.Time
	flows []trigger.Flow
}

// flowsForHooks is triggerFlows, as it was at most a second ago.
func (s *Server) flowsForHooks() []trigger.Flow {
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at.IsZero() || time.Since(h.at) > time.Second {
		h.flows, h.at = s.triggerFlows(), time.Now()
	}
	return h.flows
}

// queueJSON is a queue item as the API shows it.
type queueJSON struct {
	N        int64           `json:"n"`
	Flow     string          `json:"flow"`
	File     string          `json:"file"`
	Trigger  string          `json:"trigger"`
	Inputs   json.RawMessage `json:"inputs"`
	Key      string          `json:"key,omitempty"`
	State    string          `json:"state"`
	Run      string          `json:"run,omitempty"`
	Error    string          `json:"error,omitempty"`
	Fired    *time.Time      `json:"fired,omitempty"`
	Delivery string          `json:"delivery,omitempty"`
	Depth    int             `json:"depth,omitempty"`
	Parent   string          `json:"parent,omitempty"`
	Enqueued time.Time       `json:"enqueued"`
}

func itemJSON(it *store.QueueItem) queueJSON {
	j := queueJSON{N: it.N, Flow: it.Name, File: it.File, Trigger: it.Trigger, Inputs: it.Inputs, Key: it.Key, State: it.State,
		Run: it.Run, Error: it.Error, Delivery: it.Delivery, Depth: it.Depth, Parent: it.Parent, Enqueued: it.Enqueued.UTC()}
	if !it.Fired.IsZero() {
		f := it.Fired.UTC()
		j.Fired = &f
	}
	return j
}

// listQueue is GET /api/queue: the newest items, newest first (?limit=,
// default 100).
func (s *Server) listQueue(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			fail(w, http.StatusBadRequest, "bad_request", "limit must be a whole number from 1 to 1000")
			return
		}
		limit = n
	}
	items, err := s.cfg.Store.Queue(limit)
	if err != nil {
		storeFail(w, err)
		return
	}
	out := []queueJSON{}
	for _, it := range items {
		out = append(out, itemJSON(it))
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": out})
}

// hook is POST /hooks/{name}: a webhook delivery. It needs no token: the
// body's HMAC-SHA256 under the trigger's secret, in X-Hub-Signature-256
// (GitHub's) or X-Skein-Signature as "sha256=HEX", is its
// authentication. A delivery id (X-GitHub-Delivery, X-Skein-Delivery or
// Idempotency-Key; else the body's SHA-256) is queued once.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var flow trigger.Flow
	var t *graphir.Trigger
	for _, f := range s.flowsForHooks() {
		for i := range f.Graph.Triggers {
			if tt := &f.Graph.Triggers[i]; tt.Kind == graphir.TriggerWebhook && tt.Webhook == name {
				if t != nil {
					fail(w, http.StatusConflict, "conflict", fmt.Sprintf("webhook %q is declared by two flows, %s and %s: rename one", name, flow.File, f.File))
					return
				}
				flow, t = f, tt
			}
		}
	}
	if t == nil {
		fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no flow under the roots declares trigger(webhook = %q)", name))
		return
	}
	secret := os.Getenv(t.SecretEnv)
	if secret == "" {
		s.logf("webhook %s: $%s is not set: its deliveries are refused", name, t.SecretEnv)
		fail(w, http.StatusServiceUnavailable, "no_secret", fmt.Sprintf("webhook %q has no secret on this server", name))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a delivery's body may be at most %d bytes", maxHookBody))
			return
		}
		fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	if sig == "" {
		sig = r.Header.Get("X-Skein-Signature")
	}
	if !signed(body, sig, secret) {
		fail(w, http.StatusUnauthorized, "bad_signature", "the delivery's signature (X-Hub-Signature-256 or X-Skein-Signature: sha256=HMAC-SHA256 of the body) is missing or wrong")
		return
	}
	delivery := firstHeader(r, "X-GitHub-Delivery", "X-Skein-Delivery", "Idempotency-Key")
	if delivery == "" {
		sum := sha256.Sum256(body)
		delivery = "sha256:" + hex.EncodeToString(sum[:])
	}
	if len(delivery) > 200 {
		fail(w, http.StatusBadRequest, "bad_request", "the delivery id is longer than 200 bytes")
		return
	}
	inputs := json.RawMessage("{}")
	switch {
	case t.InputsFunc != nil:
		inputs, err = s.hookInputs(t, r, body, delivery)
		if err != nil {
			fail(w, http.StatusUnprocessableEntity, "bad_input", fmt.Sprintf("webhook %q: inputs: %v", name, err))
			return
		}
	case t.HasInputs:
		m := map[string]any{}
		for k, v := range t.Inputs {
			if m[k], err = stdlib.ToGo(v); err != nil {
				fail(w, http.StatusUnprocessableEntity, "bad_input", err.Error())
				return
			}
		}
		inputs, _ = json.Marshal(m)
	}
	// The caller's trace, kept with the queued delivery: its run
	// continues it, whenever it starts.
	tp, ts := traceContext(r)
	it, err := s.sched.EnqueueTraced(flow, t.Key(), t.OverlapPolicy(), inputs, delivery, tp, ts)
	switch {
	case errors.Is(err, store.ErrDuplicate):
		writeJSON(w, http.StatusOK, map[string]any{"duplicate": true, "delivery": delivery})
		return
	case err != nil && strings.HasPrefix(err.Error(), "run store"):
		storeFail(w, err)
		return
	case err != nil:
		fail(w, http.StatusUnprocessableEntity, "bad_input", err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": itemJSON(it)})
}

// signed reports whether sig, "sha256=HEX", is the HMAC-SHA256 of body
// under secret, compared in constant time.
func signed(body []byte, sig, secret string) bool {
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

func firstHeader(r *http.Request, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(r.Header.Get(n)); v != "" {
			return v
		}
	}
	return ""
}

// hookInputs calls a webhook trigger's inputs function with the
// delivery (body: its JSON decoded, else its text; headers, names in
// lower case; delivery: its id), with the load's step budget, and
// returns the dict it gives as JSON.
func (s *Server) hookInputs(t *graphir.Trigger, r *http.Request, body []byte, delivery string) (json.RawMessage, error) {
	var b starlark.Value = starlark.String(body)
	if json.Valid(body) {
		v, err := stdlib.FromJSON(body)
		if err != nil {
			return nil, err
		}
		b = v
	}
	headers := starlark.NewDict(len(r.Header))
	for k, v := range r.Header {
		headers.SetKey(starlark.String(strings.ToLower(k)), starlark.String(strings.Join(v, ", ")))
	}
	e := starlarkstruct.FromStringDict(starlark.String("delivery"), starlark.StringDict{
		"body": b, "headers": headers, "delivery": starlark.String(delivery)})
	e.Freeze()
	budget := s.cfg.Load.MaxSteps
	if budget == 0 {
		budget = lang.DefaultMaxSteps
	}
	th := &starlark.Thread{Name: "webhook", Print: func(*starlark.Thread, string) {}}
	th.SetMaxExecutionSteps(budget)
	v, err := starlark.Call(th, t.InputsFunc.Func, starlark.Tuple{e}, nil)
	if err != nil {
		var ee *starlark.EvalError
		if errors.As(err, &ee) {
			return nil, errors.New(ee.Msg)
		}
		return nil, err
	}
	if _, ok := v.(starlark.IterableMapping); !ok {
		return nil, fmt.Errorf("the function gave %s, not a dict of inputs", v.Type())
	}
	g, err := stdlib.ToGo(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(g)
}

// traceContext returns the W3C trace context a request carries, when it
// names a valid span: what a run it queues continues.
func traceContext(r *http.Request) (traceparent, tracestate string) {
	if !telemetry.Parent(r.Header).IsValid() {
		return "", ""
	}
	return r.Header.Get("Traceparent"), r.Header.Get("Tracestate")
}
