package main

// skein approve and skein show for runs on Temporal: the run is the
// workflow (its id is the run id), asked by query and decided by signal.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"go.starlark.net/starlark"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
)

// askTimeout bounds each question to Temporal (a query waits for a worker
// to answer it).
const askTimeout = 10 * time.Second

// workflowRun is what Temporal says of a run's workflow.
type workflowRun struct {
	status          enumspb.WorkflowExecutionStatus
	started, closed time.Time
	// file is the flow file's absolute path on the machine that started
	// the run (its memo), "" when the run does not say.
	file string
}

// describeRun finds the run's workflow, with errors that say where it was
// looked for.
func (e *engineFlags) describeRun(ctx context.Context, c client.Client, id string) (*workflowRun, error) {
	dctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(dctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("run %s not found on Temporal at %s (namespace %s)", id, e.address, e.namespace)
		}
		return nil, fmt.Errorf("run %s on Temporal at %s: %v", id, e.address, err)
	}
	info := d.GetWorkflowExecutionInfo()
	w := &workflowRun{status: info.GetStatus()}
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

// askErr says what failed when a run did not answer a query.
func askErr(id string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("run %s did not answer within %s: is a worker running (skein worker --engine temporal)?", id, askTimeout)
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
	status := wr.status
	// An ended run answers too: it says what was decided, by whom, when.
	qctx, cancel := context.WithTimeout(ctx, askTimeout)
	w, err := temporal.Locate(qctx, query(c), id, step)
	cancel()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		err = askErr(id, err)
	case err == nil && status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
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
	status, started, closed := wr.status, wr.started, wr.closed
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
	res, err := temporal.DecodeResult(raw)
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
