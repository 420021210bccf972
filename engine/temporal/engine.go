package temporal

// This file is the Temporal engine behind the run service: [runs.Engine]
// on one namespace of a Temporal cluster, registered as "temporal" when
// this package is linked in (skein built with -tags temporal). The run is
// the workflow (its id is the run id), asked by query, decided by signal
// and followed through the event logs of its workflow and its child
// workflows.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

func init() { runs.RegisterEngine("temporal", dialEngine) }

// Engine is the run service's engine on a Temporal namespace.
type Engine struct {
	c         *Client
	taskQueue string
}

// NewEngine is the engine through c, starting runs on and serving
// taskQueue.
func NewEngine(c *Client, taskQueue string) *Engine { return &Engine{c: c, taskQueue: taskQueue} }

// dialEngine connects to the Temporal frontend at conn's address, within
// 5 s, with an error that says which address.
func dialEngine(ctx context.Context, conn runs.Conn) (runs.Engine, error) {
	l := conn.Log
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	c, err := Dial(ctx, conn.Address, conn.Namespace, l)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = errors.New("no answer within 5s")
		}
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %v", conn.Address, conn.Namespace, err)
	}
	return NewEngine(c, conn.TaskQueue), nil
}

// Close closes the connection.
func (e *Engine) Close() { e.c.Close() }

// Start starts a run of spec as a workflow. The workflow loads the flow
// under the names spec's load read it by, so that its messages name files
// as a local run's do; tasks run in directories made absolute with this
// process's directory.
func (e *Engine) Start(ctx context.Context, spec *runs.Spec) (runs.Remote, error) {
	g := spec.Graph
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	given := map[string]starlark.Value{}
	if spec.Inputs != nil {
		for k, v := range spec.Inputs.All {
			given[k] = v
		}
	}
	if err := refuseSecretInputs(g, given); err != nil {
		return nil, &runs.UsageError{Err: err}
	}
	in, err := EncodeInputs(given)
	if err != nil {
		return nil, &runs.UsageError{Err: err}
	}
	o := spec.Options
	id := vm.NewRunID(time.Now())
	// The run's spans, made from the events Follow reads, or for a run
	// no one follows, by the workflow on the workers
	// (docs/observability.md).
	tel := spanProvider().Start(g, telemetry.RunInfo{File: confine.Abs(g.File), Engine: "temporal"})
	if tel != nil {
		// Temporal's spans under the run's.
		ctx = underRun(ctx, id)
	}
	run, err := e.c.Start(ctx, e.taskQueue, id, g,
		RunInput{Flow: g.File, Root: g.Root, Cwd: cwd, Sources: spec.Named, Inputs: in, Parallel: o.Parallel, Timeout: o.Timeout,
			HeartbeatTimeout: spec.Heartbeat, ModelEnv: ModelEnv(os.Environ()), MaxTokens: o.MaxTokens,
			Traced: tel != nil, Spans: tel != nil && spec.Detach})
	if err != nil || spec.Detach {
		tel.End(nil)
		tel = nil
	}
	if err != nil {
		return nil, err
	}
	return &remote{c: e.c, run: run, tel: tel, unserved: !e.c.HasWorker(e.taskQueue)}, nil
}

// remote is a run started on Temporal.
type remote struct {
	c        *Client
	run      *Started
	tel      *telemetry.Run // nil: no spans
	unserved bool
}

func (r *remote) ID() string     { return r.run.ID }
func (r *remote) Unserved() bool { return r.unserved }

// Follow reads the event logs of the workflow and its child workflows as
// the run goes, and once it has ended, the rest of them; the run's spans
// are exported from those events, the same tree as a local run's
// (docs/observability.md).
func (r *remote) Follow(ctx, exitCtx context.Context, h *runs.Follow) (*runs.Ended, error) {
	id := r.run.ID
	f := r.c.Follower(id)
	tel := r.tel
	defer tel.End(nil)
	if h.OnEvent != nil || tel != nil {
		f.OnEvent = func(raw json.RawMessage, ev vm.Event) {
			tel.Event(&ev)
			if h.OnEvent != nil {
				h.OnEvent(raw, &ev)
			}
		}
	}
	if h.OnWaiting != nil {
		f.OnApproval = func(_ string, a *Approval) {
			h.OnWaiting(&runs.Waiting{Step: a.Step, Where: a.Where(), Message: a.Message, Deadline: a.Deadline()})
		}
	}
	f.OnDropped = h.OnDropped
	if tel != nil {
		f.OnContinued = markContinued(f, tel, id)
	}
	var out *RunOutput
	ended := make(chan error, 1)
	go func() {
		var err error
		out, err = r.run.Wait(context.Background())
		ended <- err
	}()
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	cancelled := false
	var err error
follow:
	for {
		select {
		case err = <-ended:
			break follow
		case <-tick.C:
			pctx, cancel := context.WithTimeout(context.Background(), AskTimeout)
			f.Poll(pctx) // a query that fails is asked again on the next tick
			cancel()
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				cctx, cancel := context.WithTimeout(context.Background(), AskTimeout)
				if err := r.c.Cancel(cctx, id); err != nil && h.OnCancelFailed != nil {
					h.OnCancelFailed(fmt.Errorf("cannot cancel run %s: %v", id, err))
				}
				cancel()
			}
		case <-exitCtx.Done():
			return nil, runs.ErrStopped
		}
	}
	if err != nil {
		return nil, fmt.Errorf("run %s on Temporal: %v", id, err)
	}
	if f.OnEvent != nil {
		// The rest of the events: the workflow is closed, its logs final.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		f.Drain(dctx)
		cancel()
	}
	return &runs.Ended{Status: vm.Status(out.Status), Result: out.Result}, nil
}

// markContinued returns the follower f's OnContinued for the run of
// workflow id whose spans tel makes from f's events: it marks the span of
// the run whose workflow continued as new, the run's own or a child
// flow's.
func markContinued(f *Follower, tel *telemetry.Run, id string) func(workflow, from, to string) {
	return func(workflow, from, to string) {
		if flow := f.Flow(workflow); workflow == id || flow != nil {
			tel.Continued(flow, from, to)
		}
	}
}

// Find finds the workflow of the run ref names (see [Client.Describe]):
// its status is the workflow's in words ("completed"), or
// [store.Running].
func (e *Engine) Find(ctx context.Context, ref string) (*store.Run, error) {
	w, err := e.c.Describe(ctx, ref)
	if err != nil {
		return nil, err
	}
	r := &store.Run{ID: w.ID, Status: w.Status(), File: w.File, Started: w.Started, Ended: w.Closed}
	if w.Running() {
		r.Status = store.Running
	}
	return r, nil
}

// Cancel cancels the workflow of the run ref names: Temporal cancels its
// running activities (their tasks are killed on their workers), and the
// run ends cancelled after its exit handler. Temporal's cancellation
// carries no reason: spec is not recorded.
func (e *Engine) Cancel(ctx context.Context, ref string, _ runs.CancelSpec) (*runs.Cancelled, error) {
	r, err := e.Find(ctx, ref)
	if err != nil {
		return nil, err
	}
	if r.Status != store.Running {
		return &runs.Cancelled{Run: r}, fmt.Errorf("run %s %w (%s): there is nothing to cancel", r.ID, store.ErrEnded, r.Status)
	}
	if err := e.c.Cancel(ctx, r.ID); err != nil {
		return &runs.Cancelled{Run: r}, fmt.Errorf("run %s: %v", r.ID, err)
	}
	return &runs.Cancelled{Run: r, Requested: true}, nil
}

// Approve sends decision d by signal and waits up to 30 s for the run to
// read it (see [Client.Approve]); Unread says it had not.
func (e *Engine) Approve(ctx context.Context, ref, step string, d runs.Decision) (*runs.Approved, error) {
	sent, err := e.c.Approve(ctx, ref, step, d.By, !d.Approved, d.Reason, d.Values)
	if err != nil {
		return nil, err
	}
	return &runs.Approved{Run: &store.Run{ID: sent.ID, Status: store.Running}, Where: sent.Where, Unread: !sent.Read}, nil
}

// List lists the runs on the namespace (see [Client.List]).
func (e *Engine) List(ctx context.Context, f store.Filter) ([]*store.Run, string, error) {
	list, more, err := e.c.List(ctx, f)
	cut := ""
	if more {
		cut = fmt.Sprintf("listed from the latest %s on Temporal; older runs are not shown", count(ListCap, "workflow execution"))
	}
	return list, cut, err
}

// count is n things, in words: "1 workflow execution", "4 workflow
// executions".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Summary is the run ref names (see [Client.Result]).
func (e *Engine) Summary(ctx context.Context, ref string) (*runs.Summary, error) {
	wr, raw, err := e.c.Result(ctx, ref)
	if err != nil {
		return nil, err
	}
	res, err := vm.DecodeResult(raw)
	if err != nil {
		return nil, err
	}
	return &runs.Summary{ID: wr.ID, Result: res, JSON: raw, File: wr.File, Started: wr.Started, Ended: wr.Closed}, nil
}

// Approvals are the approvals of run id (see [Client.Approvals]).
func (e *Engine) Approvals(ctx context.Context, id string) (*runs.EngineApprovals, error) {
	as, err := e.c.Approvals(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &runs.EngineApprovals{}
	for _, a := range as.Approvals {
		out.Approvals = append(out.Approvals, &runs.EngineApproval{Step: a.Step, Where: a.Where(), Visit: a.Visit,
			Waiting: a.State == ApprovalWaiting, Requested: a.Requested, Outcome: a.Outcome()})
	}
	for _, r := range as.Refused {
		out.Refused = append(out.Refused, runs.Refusal{At: r.At, By: r.Decision.By, Why: r.Why})
	}
	return out, nil
}

// Logs reads what the run's tasks printed from the event logs of its
// workflow and its child workflows: each task attempt's stdout and stderr
// as its step_finished event has them, and those of an attempt that was
// retried as its log entry of a failed attempt has them.
func (e *Engine) Logs(ctx context.Context, ref, step string, follow bool, h *runs.LogHooks) error {
	wr, err := e.c.Describe(ctx, ref)
	if err != nil {
		return err
	}
	id := wr.ID
	var steps []string
	printed := 0
	// The visit and the retries so far of each place (a step with its
	// child flows and scope), from its latest step_started, and what its
	// latest failed attempt printed.
	visits, attempts := map[string]int{}, map[string]int{}
	failed := map[string]*FailedAttempt{}
	f := e.c.Follower(id)
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
				l := &runs.Log{Where: where, Visit: visits[where], Attempt: ev.Attempt - 1, Status: "failed", Error: ev.Error}
				if a := failed[where]; a != nil && a.Attempt == ev.Attempt-1 {
					l.Stdout, l.Stderr = a.Stdout, a.Stderr
				}
				h.OnLog(l)
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
			l := &runs.Log{Where: where, Visit: ev.Visit, Attempt: attempts[where] + 1, Status: ev.Status, Error: ev.Error}
			if m, ok := ev.Output.(starlark.Mapping); ok {
				if v, ok, _ := m.Get(starlark.String("stdout")); ok {
					l.Stdout, _ = starlark.AsString(v)
				}
				if v, ok, _ := m.Get(starlark.String("stderr")); ok {
					l.Stderr, _ = starlark.AsString(v)
				}
			}
			h.OnLog(l)
		}
	}
	f.OnFailed = func(_ string, a *FailedAttempt) { failed[a.Where()] = a }
	f.OnDropped = h.OnDropped
	for wr.Running() {
		qctx, cancel := context.WithTimeout(ctx, AskTimeout)
		err := f.Poll(qctx)
		cancel()
		if err != nil {
			return AskErr(id, err)
		}
		if !follow {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
		if wr, err = e.c.Describe(ctx, id); err != nil {
			return err
		}
	}
	if !wr.Running() {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f.Drain(dctx)
		cancel()
		if err != nil {
			return AskErr(id, err)
		}
	}
	if step != "" && printed == 0 && !slices.Contains(steps, step) {
		return &runs.NoStepError{Run: id, Step: step, Steps: steps}
	}
	return nil
}

// Serve serves the workflow and activities on the engine's task queue
// until ctx is done: tasks run under w.Dir, model calls go to w.Models.
func (e *Engine) Serve(ctx context.Context, w *runs.Worker) error {
	return e.c.Serve(ctx, e.taskQueue, w.Parallel, &Activities{Dir: w.Dir, Models: w.Models}, w.Started)
}

// refuseSecretInputs refuses a value given for a secret input of g: the
// workflow's input is kept in clear in its history, and a worker could
// not read the value anywhere else. A secret the run needs is read on
// the workers with secret() (docs/security.md#secrets-on-temporal).
func refuseSecretInputs(g *graphir.Graph, given map[string]starlark.Value) error {
	for _, in := range g.Inputs {
		if _, ok := given[in.Name]; ok && in.Secret {
			return &graphir.Error{Code: codes.BadInput, Pos: in.Pos, Msg: fmt.Sprintf(
				"input %q is secret: a run on Temporal cannot take it (the workflow's input is kept in its history); read it on the workers with secret(%q) instead", in.Name, strings.ToUpper(in.Name))}
		}
	}
	return nil
}
