package serve

// This file is the runs API: the list, one run's record and graph, and
// the JSON shapes they share with the event stream.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// runJSON is a run as the list has it.
type runJSON struct {
	ID          string     `json:"id"`
	Flow        string     `json:"flow"`
	File        string     `json:"file"`
	Status      string     `json:"status"`
	Started     time.Time  `json:"started"`
	Ended       *time.Time `json:"ended"`
	DurationMS  int64      `json:"duration_ms"`
	StartedBy   string     `json:"started_by"`
	ResumedFrom string     `json:"resumed_from"`
	// Trigger is what queued the run in skein serve: "api", "cron
	// 0 3 * * *", "webhook push", "every 10m", "watch ...", "emit"; ""
	// for a run started by skein run.
	Trigger string   `json:"trigger"`
	At      string   `json:"at"`
	Error   *errJSON `json:"error"`
}

// runDetailJSON is a run as GET /api/runs/{id} has it.
type runDetailJSON struct {
	runJSON
	Inputs json.RawMessage `json:"inputs"`
	Result json.RawMessage `json:"result"`
	// Parent is the run whose result emitted this one (the hopper), and
	// Depth how deep it lies below one queued from outside.
	Parent string `json:"parent"`
	Depth  int    `json:"depth"`
	// Children is the work items this run emitted, each a queued run.
	Children []queueJSON `json:"children"`
}

type errJSON struct {
	Code    string   `json:"code"`
	Step    string   `json:"step,omitempty"`
	Message string   `json:"message"`
	Trace   []string `json:"trace,omitempty"`
	File    string   `json:"file,omitempty"`
	Line    int      `json:"line,omitempty"`
	Col     int      `json:"col,omitempty"`
}

func (s *Server) runJSON(r *store.Run) runJSON {
	var aps []*store.Approval
	if r.Status == store.Waiting {
		aps, _ = s.cfg.Store.Approvals(r.ID)
	}
	return runWith(r, aps)
}

// runWith is r as JSON, aps its approvals (read only for a waiting run:
// the place it waits at).
func runWith(r *store.Run, aps []*store.Approval) runJSON {
	j := runJSON{ID: r.ID, Flow: r.Flow, File: r.File, Status: r.Status, Started: r.Started.UTC(), ResumedFrom: r.ResumedFrom, StartedBy: r.Options.By}
	j.Ended, j.DurationMS = span(r.Started, r.Ended)
	if r.ErrorCode != "" {
		j.Error = &errJSON{Code: r.ErrorCode, Step: r.ErrorStep, Message: r.ErrorMsg}
		j.At = r.ErrorStep
	}
	if r.Status == store.Waiting {
		for _, a := range aps {
			if a.Pending(time.Now()) {
				j.At = runs.Place(a.Path, a.Step)
				break
			}
		}
	}
	return j
}

// span is the end (nil while there is none) and duration in
// milliseconds, up to now while it has not ended, of what started at
// started and ended at ended (zero: not yet).
func span(started, ended time.Time) (*time.Time, int64) {
	if ended.IsZero() {
		return nil, max(time.Since(started).Milliseconds(), 0)
	}
	e := ended.UTC()
	return &e, max(ended.Sub(started).Milliseconds(), 0)
}

// listRuns is GET /api/runs.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.Filter{Flow: q.Get("flow"), Status: q.Get("status"), Text: q.Get("text"), Before: q.Get("cursor"), Limit: 50}
	switch f.Status {
	case "", store.Running, store.Waiting, store.Interrupted, "succeeded", "failed", "cancelled":
	default:
		fail(w, http.StatusBadRequest, "bad_request", "unknown status "+strconv.Quote(f.Status)+": want running, waiting, interrupted, succeeded, failed or cancelled")
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			fail(w, http.StatusBadRequest, "bad_request", "limit must be a number from 1 to 500")
			return
		}
		f.Limit = n
	}
	want := f.Limit
	f.Limit++ // one more tells whether there is a next page
	list, err := s.svc.List(f)
	if err != nil {
		storeFail(w, err)
		return
	}
	out := struct {
		Runs []runJSON `json:"runs"`
		Next string    `json:"next"`
	}{Runs: []runJSON{}}
	if len(list) > want {
		list = list[:want]
		out.Next = list[want-1].ID
	}
	// The waiting runs' approvals, for where each waits: one query for
	// the page.
	var waiting []string
	for _, run := range list {
		if run.Status == store.Waiting {
			waiting = append(waiting, run.ID)
		}
	}
	aps, err := s.cfg.Store.ApprovalsOf(waiting)
	if err != nil {
		storeFail(w, err)
		return
	}
	ids := make([]string, len(list))
	for i, run := range list {
		ids[i] = run.ID
	}
	items, err := s.cfg.Store.QueueOfRuns(ids)
	if err != nil {
		storeFail(w, err)
		return
	}
	for _, run := range list {
		j := runWith(run, aps[run.ID])
		if it := items[run.ID]; it != nil {
			j.Trigger = it.Trigger
		}
		out.Runs = append(out.Runs, j)
	}
	writeJSON(w, http.StatusOK, out)
}

// getRunRef reads the run the path's {id} names, or answers the error.
func (s *Server) getRunRef(w http.ResponseWriter, r *http.Request) (*store.Run, bool) {
	run, err := s.cfg.Store.Get(r.PathValue("id"))
	if err != nil {
		storeFail(w, err)
		return nil, false
	}
	return run, true
}

// attemptJSON is one attempt of an effect.
type attemptJSON struct {
	ID               int64           `json:"id"`
	Place            string          `json:"place"`
	Path             string          `json:"path"`
	Step             string          `json:"step"`
	Kind             string          `json:"kind"`
	Visit            int             `json:"visit"`
	Attempt          int             `json:"attempt"`
	Status           string          `json:"status"`
	OnExit           bool            `json:"on_exit"`
	Started          time.Time       `json:"started"`
	Ended            *time.Time      `json:"ended"`
	DurationMS       int64           `json:"duration_ms"`
	Code             string          `json:"code"`
	Error            string          `json:"error"`
	ExitCode         int             `json:"exit_code"`
	Stdout           *string         `json:"stdout,omitempty"`
	Stderr           *string         `json:"stderr,omitempty"`
	Truncated        bool            `json:"truncated"`
	Output           json.RawMessage `json:"output"`
	Model            string          `json:"model"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	Answer           string          `json:"answer"`
	// Rendered is what the attempt ran, after its templates: argv, or a
	// model call's messages (null for neither, and for attempts
	// recorded before skein kept it).
	Rendered *vm.Rendered `json:"rendered"`
}

// attempt is e as JSON, with status; with streams, its stdout and stderr.
func attempt(e *store.Effect, status string, streams bool) *attemptJSON {
	a := &attemptJSON{ID: e.ID, Place: runs.Place(e.Path, e.Step), Path: e.Path, Step: e.Step, Kind: e.Kind, Visit: e.Visit, Attempt: e.Attempt,
		Status: status, OnExit: e.OnExit, Started: e.Started.UTC(), Code: e.Code, Error: e.Error, ExitCode: e.ExitCode,
		Truncated: e.Truncated, Output: e.Output, Model: e.Model, PromptTokens: e.PromptTokens, CompletionTokens: e.CompletionTokens, Answer: e.Answer,
		Rendered: e.Rendered}
	ended := e.Ended
	if status == store.Running {
		ended = time.Time{}
	}
	a.Ended, a.DurationMS = span(e.Started, ended)
	if a.Output == nil {
		a.Output = json.RawMessage("null")
	}
	if streams {
		a.Stdout, a.Stderr = &e.Stdout, &e.Stderr
	}
	return a
}

// approvalJSON is an approval of a run.
type approvalJSON struct {
	Run       *runJSON   `json:"run,omitempty"`
	Place     string     `json:"place"`
	Path      string     `json:"path"`
	Step      string     `json:"step"`
	Visit     int        `json:"visit"`
	Message   string     `json:"message"`
	Requested time.Time  `json:"requested"`
	Deadline  *time.Time `json:"deadline"`
	Status    string     `json:"status"` // waiting, approved, rejected, timed_out
	Decided   *time.Time `json:"decided"`
	Approved  *bool      `json:"approved"`
	By        string     `json:"by"`
	Reason    string     `json:"reason"`
	Fields    []any      `json:"fields"`
	// Values are the values decided for the fields (null for none).
	Values json.RawMessage `json:"values"`
}

func approval(a *store.Approval) *approvalJSON {
	j := &approvalJSON{Place: runs.Place(a.Path, a.Step), Path: a.Path, Step: a.Step, Visit: a.Visit, Message: a.Message,
		Requested: a.Requested.UTC(), Status: store.Waiting, By: a.By, Reason: a.Reason, Fields: []any{}}
	if a.Fields != "" {
		_ = json.Unmarshal([]byte(a.Fields), &j.Fields) // as graphir.FieldsJSON wrote it
	}
	if a.Values != "" {
		j.Values = json.RawMessage(a.Values)
	}
	if d := a.Deadline(); !d.IsZero() {
		d = d.UTC()
		j.Deadline = &d
	}
	switch {
	case !a.Decided.IsZero():
		d, ok := a.Decided.UTC(), a.Approved
		j.Decided, j.Approved = &d, &ok
		j.Status = "rejected"
		if ok {
			j.Status = "approved"
		}
	case !a.Expired.IsZero() || !a.Pending(time.Now()):
		j.Status = "timed_out"
	}
	return j
}

// stepJSON is a step of the flow with what one run did of it.
type stepJSON struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Parent     string   `json:"parent,omitempty"`
	Status     string   `json:"status"`
	Visits     int      `json:"visits"`
	Attempts   int      `json:"attempts"`
	DurationMS float64  `json:"duration_ms"`
	File       string   `json:"file,omitempty"`
	Line       int      `json:"line,omitempty"`
	Col        int      `json:"col,omitempty"`
	Error      *errJSON `json:"error"`
	Model      string   `json:"model,omitempty"`
	Tokens     *struct {
		Prompt     int `json:"prompt"`
		Completion int `json:"completion"`
	} `json:"tokens,omitempty"`
	Iterations *int `json:"iterations,omitempty"`
	Items      *int `json:"items,omitempty"`
	// Agent is an agent step's record of its latest visit, as the
	// result object has it: turns, conversation, tool calls (each with
	// its turn, tool, arguments, ok and result), grants.
	Agent json.RawMessage `json:"agent,omitempty"`
}

// resultStep is what a step's entry in a result object says, of what
// stepJSON shows.
type resultStep struct {
	Status     string   `json:"status"`
	Visits     int      `json:"visits"`
	Error      *string  `json:"error"`
	Code       string   `json:"code"`
	Trace      []string `json:"trace"`
	DurationMS float64  `json:"duration_ms"`
	Model      string   `json:"model"`
	Usage      struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Iterations *int            `json:"iterations"`
	Items      *int            `json:"items"`
	Agent      json.RawMessage `json:"agent"`
}

// getRun is GET /api/runs/{id}.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, ok := s.getRunRef(w, r)
	if !ok {
		return
	}
	rec, err := s.svc.Record(run.ID)
	if err != nil {
		storeFail(w, err)
		return
	}
	run = rec.Run
	out := struct {
		Run       runDetailJSON   `json:"run"`
		Steps     []*stepJSON     `json:"steps"`
		Attempts  []*attemptJSON  `json:"attempts"`
		Approvals []*approvalJSON `json:"approvals"`
		Path      []string        `json:"path"`
		Graph     json.RawMessage `json:"graph"`
	}{Steps: []*stepJSON{}, Attempts: []*attemptJSON{}, Approvals: []*approvalJSON{}, Path: []string{}}
	out.Run = runDetailJSON{runJSON: s.runJSON(run), Inputs: run.Inputs, Result: run.Result, Children: []queueJSON{}}
	if it, err := s.cfg.Store.QueueOf(run.ID); err != nil {
		storeFail(w, err)
		return
	} else if it != nil {
		out.Run.Trigger, out.Run.Parent, out.Run.Depth = it.Trigger, it.Parent, it.Depth
	}
	children, err := s.cfg.Store.Children(run.ID)
	if err != nil {
		storeFail(w, err)
		return
	}
	for _, c := range children {
		out.Run.Children = append(out.Run.Children, itemJSON(c))
	}
	if out.Run.Result == nil || run.Status == store.Running || run.Status == store.Interrupted {
		out.Run.Result = json.RawMessage("null")
	}
	for i, e := range rec.Effects {
		out.Attempts = append(out.Attempts, attempt(e, rec.EffectStatus(i), true))
	}
	for _, a := range rec.Approvals {
		out.Approvals = append(out.Approvals, approval(a))
	}
	// The steps' outcomes: the result's when it has one, else what the
	// journal has so far.
	var result struct {
		Path  []string                   `json:"path"`
		Steps map[string]json.RawMessage `json:"steps"`
	}
	if res := run.Result; res != nil && (run.HasEnded() || run.Status == store.Waiting) {
		json.Unmarshal(res, &result)
	} else if sofar, err := rec.SoFar(); err == nil {
		var b bytes.Buffer
		sofar.WriteJSON(&b, "")
		json.Unmarshal(b.Bytes(), &result)
	}
	if result.Path != nil {
		out.Path = result.Path
	}
	attempts := map[string]int{}
	for _, e := range rec.Effects {
		attempts[e.Step]++
	}
	g, _ := s.runGraph(run)
	steps := map[string]*stepJSON{}
	if g != nil {
		for _, n := range g.Steps() {
			st := &stepJSON{Name: n.Name, Kind: n.Kind.String(), Status: "not_run", File: n.Pos.File, Line: n.Pos.Line, Col: n.Pos.Col}
			if n.Parent != graphir.None {
				st.Parent = g.Nodes[n.Parent].Name
			}
			steps[n.Name] = st
			out.Steps = append(out.Steps, st)
		}
	}
	for name, raw := range result.Steps {
		st := steps[name]
		if st == nil {
			st = &stepJSON{Name: name}
			steps[name] = st
			out.Steps = append(out.Steps, st)
		}
		var rs resultStep
		if json.Unmarshal(raw, &rs) != nil {
			continue
		}
		st.Status, st.Visits, st.DurationMS, st.Model = rs.Status, rs.Visits, rs.DurationMS, rs.Model
		st.Iterations, st.Items = rs.Iterations, rs.Items
		if len(rs.Agent) > 0 && string(rs.Agent) != "null" {
			st.Agent = rs.Agent
		}
		if rs.Usage.PromptTokens+rs.Usage.CompletionTokens > 0 {
			st.Tokens = &struct {
				Prompt     int `json:"prompt"`
				Completion int `json:"completion"`
			}{rs.Usage.PromptTokens, rs.Usage.CompletionTokens}
		}
		if rs.Error != nil {
			st.Error = &errJSON{Code: rs.Code, Message: *rs.Error, Trace: rs.Trace, File: st.File, Line: st.Line, Col: st.Col}
			if f, l, c, ok := tracePos(rs.Trace); ok {
				st.Error.File, st.Error.Line, st.Error.Col = f, l, c
			}
		}
	}
	for _, st := range out.Steps {
		st.Attempts = attempts[st.Name]
		if run.Status == store.Interrupted && st.Status == store.Running {
			st.Status = runs.Interrupted
		}
	}
	out.Graph = graphJSON(g, steps)
	writeJSON(w, http.StatusOK, out)
}

// tracePos is the position of a trace's innermost frame
// ("file:line:col: in f").
func tracePos(trace []string) (file string, line, col int, ok bool) {
	if len(trace) == 0 {
		return "", 0, 0, false
	}
	head, _, _ := strings.Cut(trace[0], ": ")
	parts := strings.Split(head, ":")
	if len(parts) < 3 {
		return "", 0, 0, false
	}
	n := len(parts)
	l, err1 := strconv.Atoi(parts[n-2])
	c, err2 := strconv.Atoi(parts[n-1])
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return strings.Join(parts[:n-2], ":"), l, c, true
}

// graphJSON is g as skein graph --format json writes it, with clusters
// for the loop and map bodies, and each node's status, visits and
// attempts from steps (nil: a flow's graph, without them). A nil g is
// null.
func graphJSON(g *graphir.Graph, steps map[string]*stepJSON) json.RawMessage {
	if g == nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(g)
	if err != nil {
		return json.RawMessage("null")
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return json.RawMessage("null")
	}
	type cluster struct {
		ID     string   `json:"id"`
		Kind   string   `json:"kind"`
		Parent string   `json:"parent,omitempty"`
		Body   []string `json:"body"`
	}
	clusters := []cluster{}
	for _, n := range g.Steps() {
		if n.Kind != graphir.KindLoop && n.Kind != graphir.KindMap {
			continue
		}
		c := cluster{ID: n.Name, Kind: n.Kind.String(), Body: []string{}}
		if n.Parent != graphir.None {
			c.Parent = g.Nodes[n.Parent].Name
		}
		for _, id := range n.Body {
			c.Body = append(c.Body, g.Nodes[id].Name)
		}
		clusters = append(clusters, c)
	}
	m["clusters"] = clusters
	if steps != nil {
		if nodes, ok := m["nodes"].([]any); ok {
			for _, n := range nodes {
				node, ok := n.(map[string]any)
				if !ok {
					continue
				}
				id, _ := node["id"].(string)
				if st := steps[id]; st != nil {
					node["status"], node["visits"], node["attempts"] = st.Status, st.Visits, st.Attempts
				}
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(m) != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimSpace(buf.Bytes())
}

// graphCache keeps the graphs of recent runs, loaded from their recorded
// sources: a run's graph does not change (a resume with reload records
// more sources, and is loaded again).
type graphCache struct {
	mu sync.Mutex
	m  map[string]cachedGraph
}

type cachedGraph struct {
	sources int
	g       *graphir.Graph
	ds      []check.Diagnostic
}

func (c *graphCache) init() { c.m = map[string]cachedGraph{} }

// runGraph is run's flow as it recorded it, loaded from its sources.
func (s *Server) runGraph(run *store.Run) (*graphir.Graph, []check.Diagnostic) {
	sources, err := s.cfg.Store.Sources(run.ID)
	if err != nil {
		return nil, nil
	}
	c := &s.graphs
	c.mu.Lock()
	cg, ok := c.m[run.ID]
	c.mu.Unlock()
	if ok && cg.sources == len(sources) {
		return cg.g, cg.ds
	}
	lo := s.cfg.Load
	lo.Root, lo.Recorded = run.Root, frontend.RecordedSources(sources)
	f := frontend.Load(run.File, lo)
	c.mu.Lock()
	if len(c.m) >= 256 {
		clear(c.m)
	}
	c.m[run.ID] = cachedGraph{sources: len(sources), g: f.Graph, ds: f.Diagnostics}
	c.mu.Unlock()
	return f.Graph, f.Diagnostics
}

// fail answers an error.
func fail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// storeFail answers a store's error: a run not found, or the store
// failing.
func storeFail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNoRun):
		fail(w, http.StatusNotFound, "not_found", err.Error())
	case strings.Contains(err.Error(), "ambiguous") || strings.HasPrefix(err.Error(), "want a run id"):
		fail(w, http.StatusBadRequest, "bad_request", err.Error())
	default:
		fail(w, http.StatusInternalServerError, "store_error", err.Error())
	}
}

// readJSON decodes the request's JSON body into v (an empty body leaves
// v as it is), or answers why it cannot.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil || errors.Is(err, io.EOF):
		return true
	case errors.As(err, &tooBig):
		fail(w, http.StatusRequestEntityTooLarge, "too_large", "the request body is over 1 MiB")
	default:
		fail(w, http.StatusBadRequest, "bad_request", "the body: "+err.Error())
	}
	return false
}
