//go:build temporal

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/temporal"
	"github.com/skeinlang/skein/vm/store"
)

// pagedLister is a Temporal client whose ListWorkflow answers from pages
// of executions, newest first, and counts the pages asked for. Nothing
// else of the client is used.
type pagedLister struct {
	client.Client
	pages [][]*workflowpb.WorkflowExecutionInfo
	asked int
}

func (p *pagedLister) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	i := 0
	if len(req.NextPageToken) > 0 {
		fmt.Sscan(string(req.NextPageToken), &i)
	}
	p.asked++
	resp := &workflowservice.ListWorkflowExecutionsResponse{Executions: p.pages[i]}
	if i+1 < len(p.pages) {
		resp.NextPageToken = []byte(fmt.Sprint(i + 1))
	}
	return resp, nil
}

// execution is a running workflow execution of id, started at minute min.
func execution(id string, min int) *workflowpb.WorkflowExecutionInfo {
	return &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: id + "-run"},
		Status:    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		StartTime: timestamppb.New(time.Date(2026, 12, 1, 12, min, 0, 0, time.UTC)),
	}
}

// pages is n pages of child-flow executions (not runs of their own), then
// a page with runs a and b.
func pages(n int) [][]*workflowpb.WorkflowExecutionInfo {
	var ps [][]*workflowpb.WorkflowExecutionInfo
	for i := range n {
		ps = append(ps, []*workflowpb.WorkflowExecutionInfo{execution(fmt.Sprintf("c/kid#%d.1", i), 59-i), execution(fmt.Sprintf("c/kid#%d.2", i), 59-i)})
	}
	return append(ps, []*workflowpb.WorkflowExecutionInfo{execution("b", 20), execution("a", 10)})
}

func ids(runs []*store.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// skein runs --engine temporal pages through the executions: runs behind
// more child-flow executions than a page (or than the 1,000 it used to
// read) are listed; it stops once it has --limit runs, and says when it
// stopped at its cap with executions left.
func TestListRunsPages(t *testing.T) {
	ctx := context.Background()
	list := func(c *pagedLister, f store.Filter) ([]*store.Run, bool, error) {
		return temporal.NewClient(c, defaultAddress, defaultNamespace).List(ctx, f)
	}

	c := &pagedLister{pages: pages(600)} // 1,200 child-flow executions first
	runs, cut, err := list(c, store.Filter{Limit: 20})
	if err != nil || cut {
		t.Fatalf("listRuns: cut %v, %v", cut, err)
	}
	if d := cmp.Diff([]string{"b", "a"}, ids(runs)); d != "" {
		t.Errorf("runs (-want +got):\n%s", d)
	}

	c = &pagedLister{pages: [][]*workflowpb.WorkflowExecutionInfo{{execution("b", 20)}, {execution("a", 10)}, {execution("z", 1)}}}
	runs, _, _ = list(c, store.Filter{Limit: 1})
	if d := cmp.Diff([]string{"b"}, ids(runs)); d != "" || c.asked != 1 {
		t.Errorf("--limit 1 asked for %d pages, listed (-want +got):\n%s", c.asked, d)
	}

	defer func(n int) { temporal.ListCap = n }(temporal.ListCap)
	temporal.ListCap = 4
	c = &pagedLister{pages: pages(3)}
	runs, cut, err = list(c, store.Filter{})
	if err != nil || !cut || len(runs) != 0 {
		t.Errorf("at the cap: runs %v, cut %v, err %v; want none, cut", ids(runs), cut, err)
	}
}

func (p *pagedLister) Close() {}

// skein runs --engine temporal says when the list was cut, under it.
func TestRunsCutNote(t *testing.T) {
	defer func(n int) { temporal.ListCap = n }(temporal.ListCap)
	temporal.ListCap = 4
	defer func(d func(context.Context, string, runs.Conn) (runs.Engine, error)) { dialEngine = d }(dialEngine)
	dialEngine = func(_ context.Context, _ string, c runs.Conn) (runs.Engine, error) {
		return temporal.NewEngine(temporal.NewClient(&pagedLister{pages: pages(3)}, c.Address, c.Namespace), c.TaskQueue), nil
	}
	var out, errOut strings.Builder
	code := Main(context.Background(), []string{"runs", "--engine", "temporal"}, stdio{strings.NewReader(""), &out, &errOut})
	want := "no runs on Temporal at 127.0.0.1:7233 (namespace default)\n" +
		"skein runs: listed from the latest 4 workflow executions on Temporal; older runs are not shown\n"
	if code != exitOK || errOut.String() != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 0, stderr:\n%s", code, errOut.String(), want)
	}
}
