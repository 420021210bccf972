package temporal

// This file defines the client side of the engine: what a front end does
// with runs on a Temporal cluster (start, wait for, cancel, follow,
// approve, list and show them, and serve its task queue as a worker).
// It returns values and errors and knows no terminal and no flag; the
// run service's Engine (engine.go) is made of it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// AskTimeout bounds each question to Temporal (a query waits for a worker
// to answer it).
const AskTimeout = 10 * time.Second

// Client reaches the runs on one namespace of a Temporal cluster.
type Client struct {
	sdk                client.Client
	address, namespace string
}

// Dial connects to the Temporal frontend at address, with the SDK's log
// going to l, within 5 s.
func Dial(ctx context.Context, address, namespace string, l *slog.Logger) (*Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// Temporal's own spans, when the environment configures traces.
	tp, _ := telemetry.Default()
	tracers, err := tracing(tp)
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(dctx, client.Options{HostPort: address, Namespace: namespace,
		Logger: sdklog.NewStructuredLogger(slog.New(stopQuiet{l.Handler()})), Interceptors: tracers})
	if err != nil {
		return nil, err
	}
	return NewClient(c, address, namespace), nil
}

// NewClient is a Client through c, which reaches address and namespace
// (a fake in tests).
func NewClient(c client.Client, address, namespace string) *Client {
	return &Client{sdk: c, address: address, namespace: namespace}
}

// Close closes the connection.
func (c *Client) Close() { c.sdk.Close() }

// query is a [QueryFunc] on c.
func (c *Client) query(ctx context.Context, id, name string, arg any, out any) error {
	var args []any
	if arg != nil {
		args = []any{arg}
	}
	v, err := c.sdk.QueryWorkflow(ctx, id, "", name, args...)
	if err != nil {
		return err
	}
	return v.Get(out)
}

// stopQuiet passes the SDK's log records on to h but for a poll that
// failed because the worker is stopping: a worker stopped by Ctrl-C or
// SIGTERM could log "Failed to poll for task." (Error="worker stopping")
// at WARN as it stopped, about one stop in fifty.
type stopQuiet struct{ h slog.Handler }

func (q stopQuiet) Enabled(ctx context.Context, l slog.Level) bool { return q.h.Enabled(ctx, l) }

func (q stopQuiet) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "Failed to poll for task") {
		stopping := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "Error" && strings.Contains(a.Value.String(), "worker stopping") {
				stopping = true
			}
			return !stopping
		})
		if stopping {
			return nil
		}
	}
	return q.h.Handle(ctx, r)
}

func (q stopQuiet) WithAttrs(as []slog.Attr) slog.Handler { return stopQuiet{q.h.WithAttrs(as)} }
func (q stopQuiet) WithGroup(name string) slog.Handler    { return stopQuiet{q.h.WithGroup(name)} }

// Follower follows the run id, across its continued runs.
func (c *Client) Follower(id string) *Follower {
	f := NewFollower(id, c.query)
	f.QueryRun = func(ctx context.Context, id, run, name string, arg any, out any) error {
		v, err := c.sdk.QueryWorkflow(ctx, id, run, name, arg)
		if err != nil {
			return err
		}
		return v.Get(out)
	}
	return f
}

// Started is a run started on Temporal.
type Started struct {
	ID  string
	run client.WorkflowRun
}

// Start starts a run of in as a workflow with id on the task queue; the
// workflow's memo holds g's file (made absolute) and name, for the run
// lists and records. It returns once the workflow is started.
func (c *Client) Start(ctx context.Context, taskQueue, id string, g *graphir.Graph, in RunInput) (*Started, error) {
	in.Searchable = c.searchable(ctx)
	run, err := c.sdk.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue,
		StaticSummary: "skein run of " + g.Name,
		Memo:          map[string]any{FileMemo: confine.Abs(g.File), FlowMemo: g.Name}}, WorkflowName, in)
	if err != nil {
		return nil, fmt.Errorf("cannot start the run on Temporal at %s: %v", c.address, err)
	}
	return &Started{ID: run.GetID(), run: run}, nil
}

// searchable reports whether the namespace has Skein's search attributes
// (StatusAttribute and FlowAttribute, as keywords); false when the server
// does not say.
func (c *Client) searchable(ctx context.Context) bool {
	actx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	resp, err := c.sdk.OperatorService().ListSearchAttributes(actx, &operatorservice.ListSearchAttributesRequest{Namespace: c.namespace})
	if err != nil {
		return false
	}
	for _, k := range []sdktemporal.SearchAttributeKeyKeyword{StatusAttribute, FlowAttribute} {
		if resp.GetCustomAttributes()[k.GetName()] != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			return false
		}
	}
	return true
}

// Wait waits for the run to end (across its continued runs) and returns
// its output.
func (s *Started) Wait(ctx context.Context) (*RunOutput, error) {
	var out RunOutput
	if err := s.run.Get(ctx, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Cancel asks the run id to cancel: its running tasks are killed on their
// workers and its exit handler runs.
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.sdk.CancelWorkflow(ctx, id, "")
}

// HasWorker reports whether a worker has lately polled the task queue for
// workflow tasks (true when the server cannot tell).
func (c *Client) HasWorker(taskQueue string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), AskTimeout)
	defer cancel()
	resp, err := c.sdk.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	return err != nil || len(resp.GetPollers()) > 0
}

// Serve serves the workflow and activities on the task queue until ctx is
// done, running at most parallel activities at once; started is called
// once the worker polls.
func (c *Client) Serve(ctx context.Context, taskQueue string, parallel int, acts *Activities, started func()) error {
	w := worker.New(c.sdk, taskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: parallel,
		MaxHeartbeatThrottleInterval:       time.Second,
		// The driver yields during long stretches of fn steps (see
		// Pace); one evaluation, bounded by its step budget, or loading
		// a big flow may still take more than the SDK's default of 1 s
		// under load.
		DeadlockDetectionTimeout: 5 * time.Second,
	})
	Register(w, acts)
	if err := w.Start(); err != nil {
		return err
	}
	started()
	<-ctx.Done()
	w.Stop()
	return nil
}

// WorkflowRun is what Temporal says of a run's workflow.
type WorkflowRun struct {
	ID     string // the workflow id: the run id
	status enumspb.WorkflowExecutionStatus
	// Started is when the run's first execution started (a run that
	// continued as new has several), Closed when its last one closed.
	Started, Closed time.Time
	// File is the flow file's absolute path on the machine that started
	// the run (its memo), "" when the run does not say.
	File string
}

// Running reports whether the workflow is still running.
func (w *WorkflowRun) Running() bool {
	return w.status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// Status is the workflow's status in words: "completed".
func (w *WorkflowRun) Status() string { return workflowStatus(w.status) }

// Describe finds the workflow of the run ref names (an id, a unique
// prefix of one, or last, as for a local run), with errors that say
// where it was looked for.
func (c *Client) Describe(ctx context.Context, ref string) (*WorkflowRun, error) {
	dctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	id := ref
	d, err := c.sdk.DescribeWorkflowExecution(dctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		if id, err = c.resolveRun(dctx, ref); err == nil {
			d, err = c.sdk.DescribeWorkflowExecution(dctx, id, "")
		} else if !errors.As(err, &nf) {
			return nil, err // ambiguous, or no runs at all
		}
	}
	if err != nil {
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("run %s not found on Temporal at %s (namespace %s)", ref, c.address, c.namespace)
		}
		return nil, fmt.Errorf("run %s on Temporal at %s: %v", ref, c.address, err)
	}
	info := d.GetWorkflowExecutionInfo()
	w := &WorkflowRun{ID: id, status: info.GetStatus()}
	if t := info.GetStartTime(); t != nil {
		w.Started = t.AsTime()
	}
	if first := info.GetFirstRunId(); first != "" && first != info.GetExecution().GetRunId() {
		// The run continued as new: it started with its first execution.
		if f, err := c.sdk.DescribeWorkflowExecution(dctx, id, first); err == nil && f.GetWorkflowExecutionInfo().GetStartTime() != nil {
			w.Started = f.GetWorkflowExecutionInfo().GetStartTime().AsTime()
		}
	}
	if t := info.GetCloseTime(); t != nil {
		w.Closed = t.AsTime()
	}
	if p := info.GetMemo().GetFields()[FileMemo]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &w.File)
	}
	return w, nil
}

// maxListed bounds the runs resolveRun reads to find the latest.
const maxListed = 1000

// resolveRun finds the run ref names when it is no workflow id: last, the
// latest run started (run ids sort by their start), or a prefix that
// only one run's id has. Child flows' workflows (RUN/STEP#...) are not
// runs of their own. A server that cannot list by prefix answers as if
// no run had it.
func (c *Client) resolveRun(ctx context.Context, ref string) (string, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", WorkflowName)
	if ref != "last" {
		if strings.ContainsAny(ref, `'"\`) {
			return "", &serviceerror.NotFound{}
		}
		q += fmt.Sprintf(" AND WorkflowId STARTS_WITH '%s'", ref)
	}
	started := map[string]time.Time{}
	var token []byte
	for n := 0; n < maxListed; {
		resp, err := c.sdk.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: c.namespace, Query: q, NextPageToken: token})
		if err != nil {
			if ref == "last" {
				return "", fmt.Errorf("cannot list its runs: %v", err)
			}
			return "", &serviceerror.NotFound{}
		}
		for _, ex := range resp.GetExecutions() {
			n++
			firstStart(started, ex)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sorted := newestFirst(started)
	switch {
	case len(sorted) == 0 && ref == "last":
		return "", fmt.Errorf("no runs on Temporal at %s (namespace %s) yet", c.address, c.namespace)
	case len(sorted) == 0:
		return "", &serviceerror.NotFound{}
	case ref == "last", len(sorted) == 1:
		return sorted[0], nil
	}
	slices.Sort(sorted)
	more := ""
	if len(sorted) > 2 {
		more = ", ..."
	}
	return "", fmt.Errorf("run %q is ambiguous: it starts %s, %s%s", ref, sorted[0], sorted[1], more)
}

// firstStart notes in started when the run of execution ex started (its
// first execution's start: a run that continued as new has one execution
// each time), unless ex is a child flow's.
func firstStart(started map[string]time.Time, ex *workflowpb.WorkflowExecutionInfo) {
	id := ex.GetExecution().GetWorkflowId()
	if strings.Contains(id, "/") {
		return
	}
	t := ex.GetStartTime().AsTime()
	if s, ok := started[id]; !ok || t.Before(s) {
		started[id] = t
	}
}

// newestFirst are the runs of started, the latest started first.
func newestFirst(started map[string]time.Time) []string {
	ids := slices.Collect(maps.Keys(started))
	slices.SortFunc(ids, func(a, b string) int {
		if c := started[b].Compare(started[a]); c != 0 {
			return c
		}
		return strings.Compare(b, a)
	})
	return ids
}

// AskErr says what failed when a run did not answer a query.
func AskErr(id string, err error) error {
	var de *serviceerror.DeadlineExceeded
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &de) {
		return fmt.Errorf("run %s did not answer in time: is a worker serving its task queue (skein worker --engine temporal)?", id)
	}
	return fmt.Errorf("run %s: %v", id, err)
}

// workflowStatus is a workflow's status in words: "completed".
func workflowStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"), "_", " "))
}

// Sent is a decision [Client.Approve] sent.
type Sent struct {
	ID    string // the run's
	Where string // the approval's place
	// Read says the run took the decision; false: it had not read it
	// within 30 s (no worker running, say).
	Read bool
}

// Approve sends a decision (by, reject, reason, and the values of the
// step's fields, as [Decision.Values]) on the approval step that the run
// ref waits for ("" when it waits for one only), then waits up to 30 s
// for the run to read it: a decision the run refuses (values that do not
// fit the fields among the reasons) is an error.
func (c *Client) Approve(ctx context.Context, ref, step, by string, reject bool, reason string, values map[string]any) (*Sent, error) {
	wr, err := c.Describe(ctx, ref)
	if err != nil {
		return nil, err
	}
	id := wr.ID
	// An ended run answers too: it says what was decided, by whom, when.
	qctx, cancel := context.WithTimeout(ctx, AskTimeout)
	w, err := Locate(qctx, c.query, id, step)
	cancel()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		err = AskErr(id, err)
	case !wr.Running() && !errors.As(err, new(*ClosedError)):
		// What became of a decided approval says more than that.
		err = fmt.Errorf("run %s has ended (%s): it waits for no approval", id, wr.Status())
	}
	if err != nil {
		return nil, err
	}
	d := Decision{ID: vm.NewRunID(time.Now()), Step: w.Step, Scope: w.Scope, Visit: w.Visit,
		Reject: reject, Reason: reason, By: by, Values: values}
	if err := c.sdk.SignalWorkflow(ctx, w.Workflow, "", ApproveSignal, d); err != nil {
		return nil, fmt.Errorf("cannot send the decision to run %s: %v", id, err)
	}
	// The run decides whether the decision counts: read what it made of it.
	sent := &Sent{ID: id, Where: w.Where()}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if as, err := c.Approvals(ctx, w.Workflow); err == nil {
			if why, refused := as.Refusal(d.ID); refused {
				return nil, fmt.Errorf("run %s refused the decision: %s", id, why)
			}
			if as.Decided(d.ID) != nil {
				sent.Read = true
				return sent, nil
			}
		}
		time.Sleep(followEvery)
	}
	return sent, nil
}

// followEvery is how often a run is asked again.
const followEvery = 200 * time.Millisecond

// Result is the result object of the run ref names: for a run still
// running, its record so far (the steps as their latest events left
// them); for one that completed, its result; a run that ended otherwise
// (terminated, timed out) has none, which is an error.
func (c *Client) Result(ctx context.Context, ref string) (*WorkflowRun, json.RawMessage, error) {
	wr, err := c.Describe(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	id := wr.ID
	var raw json.RawMessage
	qctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	switch wr.status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		if err = c.query(qctx, id, StatusQuery, nil, &raw); err != nil {
			err = AskErr(id, err)
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var out RunOutput
		if err = c.sdk.GetWorkflow(ctx, id, "").Get(qctx, &out); err == nil {
			raw = out.Result
		}
	default:
		err = c.sdk.GetWorkflow(ctx, id, "").Get(qctx, nil)
		if err == nil {
			err = errors.New("no result")
		}
		err = fmt.Errorf("run %s ended on Temporal without a result (%s): %v", id, wr.Status(), err)
	}
	if err != nil {
		return nil, nil, err
	}
	return wr, raw, nil
}

// Approvals are the approvals of run id, decided and waiting, and the
// decisions it refused.
func (c *Client) Approvals(ctx context.Context, id string) (*Approvals, error) {
	var as Approvals
	qctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	if err := c.query(qctx, id, ApprovalsQuery, nil, &as); err != nil {
		return nil, err
	}
	return &as, nil
}

// ListCap bounds the workflow executions [Client.List] reads. (A variable
// for tests.)
var ListCap = 100_000

// List lists the runs on the namespace, newest first, as the run store's
// records: the flow and its file from the workflow's memo, the status and
// error of an ended run from its result. Workflow executions of child
// flows and those that continued as new (the run goes on in the next)
// are left out. It pages through the executions, newest first, until
// there are none left, or, unless f filters by flow or status (known only
// from each run's record), until it has f.Limit runs; cut says it stopped
// at ListCap executions with more left.
func (c *Client) List(ctx context.Context, f store.Filter) (runs []*store.Run, cut bool, err error) {
	q := fmt.Sprintf("WorkflowType = '%s'", WorkflowName)
	latest := map[string]*workflowpb.WorkflowExecutionInfo{}
	started := map[string]time.Time{}
	var token []byte
	for n := 0; ; {
		if n >= ListCap {
			cut = true
			break
		}
		lctx, cancel := context.WithTimeout(ctx, AskTimeout)
		resp, err := c.sdk.ListWorkflow(lctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: c.namespace, Query: q, NextPageToken: token})
		cancel()
		if err != nil {
			return nil, false, fmt.Errorf("cannot list the runs on Temporal at %s (namespace %s): %v", c.address, c.namespace, err)
		}
		for _, ex := range resp.GetExecutions() {
			n++
			firstStart(started, ex)
			id := ex.GetExecution().GetWorkflowId()
			if strings.Contains(id, "/") || ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
				continue
			}
			latest[id] = ex
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
		if f.Limit > 0 && f.Flow == "" && f.Status == "" && len(latest) >= f.Limit {
			break // enough runs
		}
	}
	for _, id := range newestFirst(started) {
		if f.Limit > 0 && len(runs) == f.Limit {
			break
		}
		if latest[id] == nil {
			continue // its latest execution was beyond the ones read
		}
		r := c.runRecord(ctx, latest[id])
		r.Started = started[id]
		if (f.Flow == "" || r.Flow == f.Flow) && (f.Status == "" || r.Status == f.Status) {
			runs = append(runs, r)
		}
	}
	return runs, cut, nil
}

// runRecord is what the run store would record of the run whose latest
// execution is ex.
func (c *Client) runRecord(ctx context.Context, ex *workflowpb.WorkflowExecutionInfo) *store.Run {
	r := &store.Run{ID: ex.GetExecution().GetWorkflowId(), Flow: "-", Status: workflowStatus(ex.GetStatus())}
	if t := ex.GetStartTime(); t != nil {
		r.Started = t.AsTime()
	}
	if t := ex.GetCloseTime(); t != nil && ex.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		r.Ended = t.AsTime()
	}
	if p := ex.GetMemo().GetFields()[FileMemo]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &r.File)
	}
	if p := ex.GetMemo().GetFields()[FlowMemo]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &r.Flow)
	}
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		r.Status = store.Running
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		gctx, cancel := context.WithTimeout(ctx, AskTimeout)
		defer cancel()
		var out RunOutput
		if err := c.sdk.GetWorkflow(gctx, r.ID, ex.GetExecution().GetRunId()).Get(gctx, &out); err != nil {
			return r
		}
		res, err := vm.DecodeResult(out.Result)
		if err != nil {
			return r
		}
		r.Flow, r.Status = res.Flow, string(res.Status)
		if r.File == "" {
			r.File = res.File
		}
		if res.Error != nil {
			r.ErrorCode, r.ErrorStep, r.ErrorMsg = string(res.Error.Code), res.Error.Step, res.Error.Msg
		}
	}
	return r
}
