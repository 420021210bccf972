package servertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
)

// TestLegibleInTemporal reads a failed run back through Temporal's own
// client as an operator's tools show it: the workflow completes, but its
// memo and search attribute say the run failed (and a list query on them
// finds it); each activity, timer and child workflow is summarized by its
// step's place, and a child workflow's id carries it.
func TestLegibleInTemporal(t *testing.T) {
	dir := t.TempDir()
	flow, err := (&temporaltest.Scenario{Files: map[string]string{"kid.star": `chain(START, step("inner", run = ["true"]), END)`, "flow.star": `
flow(name = "legible", inputs = {"files": ["a", "b"]})
per_file = map("per_file", over = "inputs.files", body = [step("lint", run = ["echo", "{{ item }}"])])
pause = step("pause", wait = "10ms")
kid = step("kid", flow = "kid.star")
boom = step("boom", run = ["false"])
chain(START, per_file, pause, kid, boom, END)
`}}).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := queue(t)
	worker(t, q, nil)
	id := detach(t, dir, flow, q)
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out temporal.RunOutput
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
		t.Fatalf("the run's result: %v", err)
	}
	if out.Status != "failed" {
		t.Fatalf("status %s, want failed\n%s", out.Status, out.Result)
	}

	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	info := d.GetWorkflowExecutionInfo()
	if got := decodeString(t, info.GetMemo().GetFields()[temporal.StatusMemo]); got != "failed" {
		t.Errorf("memo %s = %q, want failed", temporal.StatusMemo, got)
	}
	sa := info.GetSearchAttributes().GetIndexedFields()
	if got, flowName := decodeString(t, sa["skein_status"]), decodeString(t, sa["skein_flow"]); got != "failed" || flowName != "legible" {
		t.Errorf("search attributes skein_status %q, skein_flow %q; want failed, legible", got, flowName)
	}
	// Visibility is eventually consistent: wait for the list to say so.
	query := `skein_status = "failed" AND skein_flow = "legible"`
	waitFor(t, time.Minute, "the run in the list for "+query, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetWorkflowId() == id {
				return true
			}
		}
		return false
	})

	var summaries []string
	var child string
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if s := e.GetUserMetadata().GetSummary(); s != nil {
			summaries = append(summaries, fmt.Sprintf("%s: %s", e.GetEventType(), decodeString(t, s)))
		}
		if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			child = a.GetWorkflowId()
		}
	}
	for _, want := range []string{
		"WorkflowExecutionStarted: skein run of legible",
		"ActivityTaskScheduled: per_file[0] › lint",
		"ActivityTaskScheduled: per_file[1] › lint",
		"TimerStarted: pause",
		"StartChildWorkflowExecutionInitiated: kid: kid.star",
		"ActivityTaskScheduled: boom",
	} {
		if !slices.Contains(summaries, want) {
			t.Errorf("no event summarized %q; the summaries:\n%s", want, strings.Join(summaries, "\n"))
		}
	}
	if want := id + "/kid#1.1"; child != want {
		t.Errorf("the child workflow's id is %q, want %q", child, want)
	}
	// The child says how it ended too.
	cd, err := c.DescribeWorkflowExecution(ctx, child, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeString(t, cd.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()["skein_status"]); got != "succeeded" {
		t.Errorf("the child's skein_status %q, want succeeded", got)
	}
}

// decodeString decodes a payload holding a string ("" for none).
func decodeString(t *testing.T, p *commonpb.Payload) string {
	t.Helper()
	if p == nil {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		t.Fatalf("payload %v: %v", p, err)
	}
	return s
}
