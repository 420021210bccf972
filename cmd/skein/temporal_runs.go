//go:build temporal

package main

// skein approve and skein show for runs on Temporal: the run is the
// workflow (its id is the run id), asked by query and decided by signal.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.starlark.net/starlark"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// askTimeout bounds each question to Temporal (a query waits for a worker
// to answer it).
const askTimeout = 10 * time.Second

// workflowRun is what Temporal says of a run's workflow.
type workflowRun struct {
	id              string // the workflow id: the run id
	status          enumspb.WorkflowExecutionStatus
	started, closed time.Time
	// file is the flow file's absolute path on the machine that started
	// the run (its memo), "" when the run does not say.
	file string
}

// describeRun finds the workflow of the run ref names (an id, a unique
// prefix of one, or last, as for a local run), with errors that say
// where it was looked for.
func (e *engineFlags) describeRun(ctx context.Context, c client.Client, ref string) (*workflowRun, error) {
	dctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	id := ref
	d, err := c.DescribeWorkflowExecution(dctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		if id, err = e.resolveRun(dctx, c, ref); err == nil {
			d, err = c.DescribeWorkflowExecution(dctx, id, "")
		} else if !errors.As(err, &nf) {
			return nil, err // ambiguous, or no runs at all
		}
	}
	if err != nil {
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("run %s not found on Temporal at %s (namespace %s)", ref, e.address, e.namespace)
		}
		return nil, fmt.Errorf("run %s on Temporal at %s: %v", ref, e.address, err)
	}
	info := d.GetWorkflowExecutionInfo()
	w := &workflowRun{id: id, status: info.GetStatus()}
	if t := info.GetStartTime(); t != nil {
		w.started = t.AsTime()
	}
	if t := info.GetCloseTime(); t != nil {
		w.closed = t.AsTime()
	}
	if p := info.GetMemo().GetFields()[temporal.FileMemo]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &w.file)
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
func (e *engineFlags) resolveRun(ctx context.Context, c client.Client, ref string) (string, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", temporal.WorkflowName)
	if ref != "last" {
		if strings.ContainsAny(ref, `'"\`) {
			return "", &serviceerror.NotFound{}
		}
		q += fmt.Sprintf(" AND WorkflowId STARTS_WITH '%s'", ref)
	}
	started := map[string]time.Time{}
	var token []byte
	for n := 0; n < maxListed; {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: e.namespace, Query: q, NextPageToken: token})
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
		return "", fmt.Errorf("no runs on Temporal at %s (namespace %s) yet", e.address, e.namespace)
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

// askErr says what failed when a run did not answer a query.
func askErr(id string, err error) error {
	var de *serviceerror.DeadlineExceeded
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &de) {
		return fmt.Errorf("run %s did not answer in time: is a worker serving its task queue (skein worker --engine temporal)?", id)
	}
	return fmt.Errorf("run %s: %v", id, err)
}

func approveOnTemporal(ctx context.Context, io stdio, opts *approveOptions, args []string) int {
	if opts.resume {
		fmt.Fprintln(io.err, "skein approve: --resume is for the local engine: a run on Temporal goes on by itself once decided")
		return exitUsage
	}
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
	}
	defer c.Close()
	id, step := args[0], ""
	if len(args) == 2 {
		step = args[1]
	}
	wr, err := opts.describeRun(ctx, c, id)
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
	}
	status, id := wr.status, wr.id
	// An ended run answers too: it says what was decided, by whom, when.
	qctx, cancel := context.WithTimeout(ctx, askTimeout)
	w, err := temporal.Locate(qctx, query(c), id, step)
	cancel()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		err = askErr(id, err)
	case status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && !errors.As(err, new(*temporal.ClosedError)):
		// What became of a decided approval says more than that.
		err = fmt.Errorf("run %s has ended (%s): it waits for no approval", id, workflowStatus(status))
	}
	if err != nil {
		fmt.Fprintf(io.err, "skein approve: %v\n", err)
		return exitFail
	}
	by := opts.by
	if by == "" {
		by = currentUser()
	}
	d := temporal.Decision{ID: vm.NewRunID(time.Now()), Step: w.Step, Scope: w.Scope, Visit: w.Visit,
		Reject: opts.reject, Reason: opts.reason, By: by}
	if err := c.SignalWorkflow(ctx, w.Workflow, "", temporal.ApproveSignal, d); err != nil {
		fmt.Fprintf(io.err, "skein approve: cannot send the decision to run %s: %v\n", id, err)
		return exitFail
	}
	// The run decides whether the decision counts: read what it made of it.
	what := "approved"
	if opts.reject {
		what = "rejected"
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var as temporal.Approvals
		qctx, cancel := context.WithTimeout(ctx, askTimeout)
		err := query(c)(qctx, w.Workflow, temporal.ApprovalsQuery, nil, &as)
		cancel()
		if err == nil {
			if why, refused := as.Refusal(d.ID); refused {
				fmt.Fprintf(io.err, "skein approve: run %s refused the decision: %s\n", id, why)
				return exitFail
			}
			if as.Decided(d.ID) != nil {
				fmt.Fprintf(io.err, "%s %q of run %s\n", what, w.Where(), id)
				return exitOK
			}
		}
		time.Sleep(followEvery)
	}
	fmt.Fprintf(io.err, "sent: %s %q of run %s; the run has not read it yet (is a worker running?): skein show %s%s tells\n", what, w.Where(), id, id, opts.connArgs())
	return exitOK
}

// workflowStatus is a workflow's status in words: "completed".
func workflowStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"), "_", " "))
}

func showOnTemporal(ctx context.Context, io stdio, opts *showOptions, id string) int {
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	defer c.Close()
	wr, err := opts.describeRun(ctx, c, id)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	status, started, closed, id := wr.status, wr.started, wr.closed, wr.id
	var raw json.RawMessage
	qctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		err = query(c)(qctx, id, temporal.StatusQuery, nil, &raw)
		if err != nil {
			err = askErr(id, err)
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var out temporal.RunOutput
		if err = c.GetWorkflow(ctx, id, "").Get(qctx, &out); err == nil {
			raw = out.Result
		}
	default:
		err = c.GetWorkflow(ctx, id, "").Get(qctx, nil)
		if err == nil {
			err = errors.New("no result")
		}
		err = fmt.Errorf("run %s ended on Temporal without a result (%s): %v", id, workflowStatus(status), err)
	}
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	if opts.json {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			fmt.Fprintf(io.err, "skein show: the run's result: %v\n", err)
			return exitFail
		}
		b.WriteByte('\n')
		io.out.Write(b.Bytes())
		return exitOK
	}
	res, err := vm.DecodeResult(raw)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	file := res.File
	if wr.file != "" {
		file = wr.file // absolute, as a local run's record has it
	}
	fmt.Fprintf(io.out, "run %s\nflow %s (%s)\nstatus %s\n", res.RunID, res.Flow, file, res.Status)
	fmt.Fprintf(io.out, "started %s", started.Local().Format("2006-01-02 15:04:05.000"))
	if !closed.IsZero() {
		fmt.Fprintf(io.out, ", took %s", closed.Sub(started).Round(time.Millisecond))
	}
	fmt.Fprintln(io.out)
	if e := res.Error; e != nil {
		fmt.Fprintf(io.out, "error %s: %s\n", e.Code, visible(e.Msg, false))
	}
	if res.Status == vm.Succeeded {
		fmt.Fprintf(io.out, "output %s\n", valueJSON(res.Output))
	}
	if len(res.Steps) > 0 {
		fmt.Fprintln(io.out, "steps:")
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		writeStepRows(tw, "", res)
		tw.Flush()
	}
	var as temporal.Approvals
	if query(c)(qctx, id, temporal.ApprovalsQuery, nil, &as) == nil && (len(as.Approvals) > 0 || len(as.Refused) > 0) {
		fmt.Fprintln(io.out, "approvals:")
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		for _, a := range as.Approvals {
			state := a.Outcome()
			if a.State == temporal.ApprovalWaiting {
				state = fmt.Sprintf("waiting since %s: skein approve %s %s%s", a.Requested.Local().Format("2006-01-02 15:04:05"), id, a.Step, opts.connArgs())
			}
			fmt.Fprintf(tw, "  %s\tvisit %d\t%s\n", a.Where(), a.Visit, visible(state, false))
		}
		tw.Flush()
		for _, r := range as.Refused {
			fmt.Fprintf(io.out, "  refused at %s, from %s: %s\n", r.At.Local().Format("2006-01-02 15:04:05"), r.Decision.By, visible(r.Why, false))
		}
	}
	return exitOK
}

// writeStepRows writes one row per step of res, and under a child-flow
// step the rows of its child's steps, prefixed by where they are.
func writeStepRows(tw *tabwriter.Writer, prefix string, res *vm.Result) {
	for _, s := range res.Steps {
		detail := s.Error
		if s.Status == vm.StepSucceeded && s.Output != nil {
			detail = valueJSON(s.Output)
		}
		fmt.Fprintf(tw, "  %s%s\t%s\tvisits %d\t%s\t%s\n", prefix, s.Name, s.Status, s.Visits, s.Duration.Round(time.Millisecond), visible(oneLine(detail, 60), false))
		if s.Child != nil {
			writeStepRows(tw, prefix+s.Name+" › ", s.Child)
		}
	}
}

// valueJSON is a flow value as compact JSON.
func valueJSON(v starlark.Value) string {
	b, err := stdlib.AppendJSON(nil, v, "", 0)
	if err != nil {
		return v.String()
	}
	return string(b)
}

// listOnTemporal lists the runs on the namespace for skein runs; cut,
// when it is not "", says that older runs were not read.
func listOnTemporal(ctx context.Context, opts *runsOptions, f store.Filter) (list []*store.Run, cut string, err error) {
	c, err := dialRuns(ctx, &opts.engineFlags)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	list, more, err := opts.listRuns(ctx, c, f)
	if more {
		cut = fmt.Sprintf("listed from the latest %s on Temporal; older runs are not shown", plural(listCap, "workflow execution"))
	}
	return list, cut, err
}

// dialRuns is how skein runs reaches Temporal (a variable for tests).
var dialRuns = func(ctx context.Context, e *engineFlags) (client.Client, error) { return e.dial(ctx) }

// listCap bounds the workflow executions listRuns reads: skein runs then
// says that older runs are not shown. (A variable for tests.)
var listCap = 100_000

// listRuns lists the runs on the namespace, newest first, as the run
// store's records: the flow and its file from the workflow's memo, the
// status and error of an ended run from its result. Workflow executions
// of child flows and those that continued as new (the run goes on in the
// next) are left out. It pages through the executions, newest first, until
// there are none left, or, unless f filters by flow or status (known only
// from each run's record), until it has f.Limit runs; cut says it stopped
// at listCap executions with more left.
func (e *engineFlags) listRuns(ctx context.Context, c client.Client, f store.Filter) (runs []*store.Run, cut bool, err error) {
	q := fmt.Sprintf("WorkflowType = '%s'", temporal.WorkflowName)
	latest := map[string]*workflowpb.WorkflowExecutionInfo{}
	started := map[string]time.Time{}
	var token []byte
	for n := 0; ; {
		if n >= listCap {
			cut = true
			break
		}
		lctx, cancel := context.WithTimeout(ctx, askTimeout)
		resp, err := c.ListWorkflow(lctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: e.namespace, Query: q, NextPageToken: token})
		cancel()
		if err != nil {
			return nil, false, fmt.Errorf("cannot list the runs on Temporal at %s (namespace %s): %v", e.address, e.namespace, err)
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
		r := e.runRecord(ctx, c, latest[id])
		r.Started = started[id]
		if (f.Flow == "" || r.Flow == f.Flow) && (f.Status == "" || r.Status == f.Status) {
			runs = append(runs, r)
		}
	}
	return runs, cut, nil
}

// runRecord is what the run store would record of the run whose latest
// execution is ex.
func (e *engineFlags) runRecord(ctx context.Context, c client.Client, ex *workflowpb.WorkflowExecutionInfo) *store.Run {
	r := &store.Run{ID: ex.GetExecution().GetWorkflowId(), Flow: "-", Status: workflowStatus(ex.GetStatus())}
	if t := ex.GetStartTime(); t != nil {
		r.Started = t.AsTime()
	}
	if t := ex.GetCloseTime(); t != nil && ex.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		r.Ended = t.AsTime()
	}
	if p := ex.GetMemo().GetFields()[temporal.FileMemo]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &r.File)
	}
	if p := ex.GetMemo().GetFields()[temporal.FlowMemo]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &r.Flow)
	}
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		r.Status = store.Running
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		gctx, cancel := context.WithTimeout(ctx, askTimeout)
		defer cancel()
		var out temporal.RunOutput
		if err := c.GetWorkflow(gctx, r.ID, ex.GetExecution().GetRunId()).Get(gctx, &out); err != nil {
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

// logsOnTemporal prints what a run's tasks printed, from the event logs
// of its workflow and its child workflows: each task attempt's stdout and
// stderr as its step_finished event has them, and those of an attempt
// that was retried as its log entry of a failed attempt has them.
func logsOnTemporal(ctx context.Context, io stdio, opts *logsOptions, args []string) int {
	c, err := opts.dial(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "skein logs: %v\n", err)
		return exitFail
	}
	defer c.Close()
	wr, err := opts.describeRun(ctx, c, args[0])
	if err != nil {
		fmt.Fprintf(io.err, "skein logs: %v\n", err)
		return exitFail
	}
	id, step := wr.id, ""
	if len(args) == 2 {
		step = args[1]
	}
	tty := isTerminal(io.out)
	var steps []string
	printed := 0
	// The visit and the retries so far of each place (a step with its
	// child flows and scope), from its latest step_started, and what its
	// latest failed attempt printed.
	visits, attempts := map[string]int{}, map[string]int{}
	failed := map[string]*temporal.FailedAttempt{}
	f := follower(c, id)
	f.OnEvent = func(_ json.RawMessage, ev vm.Event) {
		if ev.Kind != "task" && ev.Kind != "shell" {
			return
		}
		where := ev.Where()
		switch ev.Type {
		case vm.StepStarted:
			visits[where], attempts[where] = ev.Visit, 0
		case vm.StepRetrying:
			if step == "" || ev.Step == step {
				printed++
				var stdout, stderr string
				if a := failed[where]; a != nil && a.Attempt == ev.Attempt-1 {
					stdout, stderr = a.Stdout, a.Stderr
				}
				writeLog(io.out, tty, where, visits[where], ev.Attempt-1, "failed", ev.Error, stdout, stderr)
			}
			attempts[where] = ev.Attempt - 1
		case vm.StepFinished:
			if !slices.Contains(steps, ev.Step) {
				steps = append(steps, ev.Step)
			}
			if step != "" && ev.Step != step {
				return
			}
			printed++
			var stdout, stderr string
			if m, ok := ev.Output.(starlark.Mapping); ok {
				if v, ok, _ := m.Get(starlark.String("stdout")); ok {
					stdout, _ = starlark.AsString(v)
				}
				if v, ok, _ := m.Get(starlark.String("stderr")); ok {
					stderr, _ = starlark.AsString(v)
				}
			}
			writeLog(io.out, tty, where, ev.Visit, attempts[where]+1, ev.Status, ev.Error, stdout, stderr)
		}
	}
	f.OnFailed = func(_ string, a *temporal.FailedAttempt) { failed[a.Where()] = a }
	f.OnDropped = func(w string, n int) {
		fmt.Fprintf(io.err, "(%s of %s not shown: the run's event log keeps the latest only)\n", plural(n, "event"), w)
	}
	status := wr.status
	for status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		qctx, cancel := context.WithTimeout(ctx, askTimeout)
		err := f.Poll(qctx)
		cancel()
		if err != nil {
			fmt.Fprintf(io.err, "skein logs: %v\n", askErr(id, err))
			return exitFail
		}
		if !opts.follow {
			break
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(followEvery):
		}
		if wr, err = opts.describeRun(ctx, c, id); err != nil {
			fmt.Fprintf(io.err, "skein logs: %v\n", err)
			return exitFail
		}
		status = wr.status
	}
	if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f.Drain(dctx)
		cancel()
		if err != nil {
			fmt.Fprintf(io.err, "skein logs: %v\n", askErr(id, err))
			return exitFail
		}
	}
	if step != "" && printed == 0 && !slices.Contains(steps, step) {
		msg := fmt.Sprintf("skein logs: run %s has no task or shell step %q that ran", id, step)
		msg += spell.Suggest(step, steps)
		fmt.Fprintln(io.err, msg)
		return exitFail
	}
	return exitOK
}
