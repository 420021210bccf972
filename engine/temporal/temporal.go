// Package temporal runs flows on Temporal: the VM's deciding half runs as
// Temporal workflow code (the same code that decides for the local engine,
// through vm's Runtime and EffectProducer seams), tasks, shells and model
// calls run as activities on any worker of the task queue, child flows as
// child workflows, waits as durable timers, and approvals wait for a
// decision sent as a signal (approval.go).
//
// The flow's sources travel in the workflow input (every file its load
// read, by path) and are loaded and checked in the workflow, so the same
// input always gives the same graph wherever a workflow task is replayed.
// Temporal's own retries are off for everything a step decides (one
// attempt per child workflow; a task's failures come back as its
// activity's result): a step's retries, backoff and retry_when decide, in
// the VM. Temporal retries only a lost worker: the same task attempt runs
// again on another worker (LostWorkerAttempts).
package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"go.starlark.net/starlark"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/engine/temporal/limits"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/proc"
	"github.com/skeinlang/skein/vm/store"
)

// Names registered by [Register].
const (
	// WorkflowName is the workflow that runs one flow.
	WorkflowName = "skein.run"
	// TaskActivity runs one attempt of a task or shell step.
	TaskActivity = "skein.task"
	// ModelActivity makes one model call (an llm step's, an LLM router's,
	// a judge's, one turn of an agent step).
	ModelActivity = "skein.model"
	// FileMemo is the memo field of a run's workflow that holds the
	// flow file's absolute path on the machine that started it, for
	// skein show (the run's messages name it as the user did).
	FileMemo = "skein.file"
	// FlowMemo holds the flow's name, for skein runs.
	FlowMemo = "skein.flow"
	// StatusMemo holds the run's status once it ended ("succeeded",
	// "failed", "cancelled", "waiting"): the workflow completes whatever
	// the run's status, its result saying which.
	StatusMemo = "skein.status"
)

// The search attributes a run sets when the namespace has them (see
// RunInput.Searchable): its status ("running" until it ends) and its
// flow's name, so `temporal workflow list --query 'skein_status="failed"'`
// finds the failed runs. Both are Keyword attributes an operator
// registers (temporal operator search-attribute create).
var (
	StatusAttribute = sdktemporal.NewSearchAttributeKeyKeyword("skein_status")
	FlowAttribute   = sdktemporal.NewSearchAttributeKeyKeyword("skein_flow")
)

// statusVersion marks, in a workflow's history, the runs that set the
// status memo and search attributes: histories recorded before replay
// without them.
const statusVersion = "skein-status"

// heartbeat is how often a task's activity heartbeats (a cancellation
// reaches the activity with the answer to a heartbeat, so this bounds how
// late a cancelled task is killed, with the worker's heartbeat throttle);
// limits.DefaultHeartbeatTimeout is how long Temporal waits for one
// before it declares the worker lost, unless the run says otherwise
// (RunInput.HeartbeatTimeout).
const heartbeat = time.Second

// LostWorkerAttempts is how many times in all one attempt of a task runs
// when the workers running it are lost (no heartbeat in time, or no
// answer before the activity's close timeout). A lost worker is not the
// step's failure: Temporal runs the same attempt again on another worker.
// The task's own failures (exit codes, its timeout) come back as the
// activity's result, never as an activity error, so Temporal never
// retries them: the step's retries decide.
const LostWorkerAttempts = 3

// RunInput is the input of the workflow: the flow, its sources and the
// run's options.
type RunInput struct {
	// Flow is the path of the flow file as the load named it; Root the
	// flow root. Either may be relative to Cwd, as the user named them:
	// the workflow loads the flow under the same names as a local run, so
	// its messages name files alike (`flow.star:3:5`).
	Flow string
	Root string
	// Cwd is the absolute directory of the machine that started the run
	// that relative paths are relative to; tasks run in directories made
	// absolute with it. Empty: paths are absolute (or relative to the
	// worker's directory).
	Cwd string `json:",omitempty"`
	// Sources holds every file the load read, by the path the loader
	// read it under.
	Sources map[string]string
	// Inputs are the flow's inputs as JSON values, by name.
	Inputs map[string]json.RawMessage `json:",omitempty"`

	Parallel  int           `json:",omitempty"`
	Timeout   time.Duration `json:",omitempty"`
	EvalSteps uint64        `json:",omitempty"`
	MaxOutput int           `json:",omitempty"`
	KillGrace time.Duration `json:",omitempty"`
	MaxPath   int           `json:",omitempty"`
	ExitGrace time.Duration `json:",omitempty"`
	// HeartbeatTimeout is how long a task's activity may go without a
	// heartbeat before its worker counts as lost; 0 means
	// limits.DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration `json:",omitempty"`
	// Nesting is set for child flows.
	Nesting *vm.Nesting `json:",omitempty"`
	// ModelEnv holds the variables the default model is resolved from
	// (SKEIN_MODEL, SKEIN_BASE_URL, OPENAI_BASE_URL) as the machine that
	// started the run has them; API keys are read on the workers.
	ModelEnv []string `json:",omitempty"`
	// MaxTokens bounds the tokens the run's model calls spend (0: the
	// flow's max_tokens).
	MaxTokens int `json:",omitempty"`
	// Traced: the run's spans are exported (engine/telemetry), by the
	// machine that started it as it follows the run or, with Spans, by
	// the workers: each task gets its attempt's TRACEPARENT.
	Traced bool `json:",omitempty"`
	// Spans: the workflow makes the run's spans (engine/telemetry) from
	// its events, on the workers whose environment configures traces,
	// because no client follows the run to make them (skein run
	// --detach). SpanParent is, for a child flow, the W3C traceparent of
	// the span of the step that runs it; SpanCarry the spans the
	// execution before this one left open (continue-as-new).
	Spans      bool               `json:",omitempty"`
	SpanParent string             `json:",omitempty"`
	SpanCarry  *telemetry.Carried `json:",omitempty"`
	// SpanFlow is the name of the flow at the top, which a child flow's
	// steps' metrics name (a top run with Spans sets it to its own).
	SpanFlow string `json:",omitempty"`

	// ContinueEvery is how many effects one workflow execution starts
	// before the run continues as new (0: DefaultContinueEvery); the run
	// also continues as new when Temporal suggests it.
	ContinueEvery int `json:",omitempty"`
	// MaxPayload bounds the input a continue-as-new carries (0:
	// DefaultMaxPayload).
	MaxPayload int `json:",omitempty"`
	// Snapshot is the state of the run to continue (vm.Snapshot.Encode),
	// set when the run continued as new.
	Snapshot []byte `json:",omitempty"`
	// Executions counts the executions before this one (continue-as-new).
	Executions int `json:",omitempty"`
	// EventLog bounds the entries of the run's event log (EventsQuery;
	// 0: 10,000).
	EventLog int `json:",omitempty"`
	// Carry is what the queries of the execution before this one answered
	// from (continue-as-new).
	Carry *Carried `json:",omitempty"`
	// Searchable: the namespace has the search attributes
	// StatusAttribute and FlowAttribute, which the run then sets (the
	// client that starts it looks; upserting one the namespace does not
	// have would fail the workflow's task).
	Searchable bool `json:",omitempty"`
	// Fork, set for a fork of another run (and for its child flows),
	// is the record it answers from (fork.go).
	Fork *Fork `json:",omitempty"`
}

// Continue-as-new: a workflow execution's history is bounded (Temporal
// warns at 10,240 events and ends an execution at 51,200, or at 50 MB),
// and each effect adds about six events. DefaultContinueEvery keeps an
// execution well under the warning; DefaultMaxPayload is Temporal's
// default limit on one payload (limit.blobSize.error), which the input
// carrying a run's snapshot must fit.
const (
	DefaultContinueEvery = 1000
	DefaultMaxPayload    = 2 << 20
)

// RunOutput is the result of the workflow: the run's status and its
// result object, the same JSON as `skein run --json` prints locally.
type RunOutput struct {
	Status string
	Result json.RawMessage
	// ModelCalls counts the run's model calls, child flows included (the
	// result has their usage).
	ModelCalls int `json:",omitempty"`
	// Journal is a child flow's journal, for its parent's (fork.go);
	// JournalLost says why it is not whole.
	Journal     []JournalEntry `json:",omitempty"`
	JournalLost string         `json:",omitempty"`
}

// ModelEnv picks from env the variables the default model is resolved
// from, for RunInput.ModelEnv: never a key.
func ModelEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case model.EnvModel, model.EnvBaseURL, model.EnvOpenAIBase:
			out = append(out, kv)
		}
	}
	return out
}

// EncodeInputs turns bound-by-name flow values into the workflow's inputs.
func EncodeInputs(in map[string]starlark.Value) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(in))
	for k, v := range in {
		b, err := stdlib.AppendJSON(nil, v, "", 0)
		if err != nil {
			return nil, fmt.Errorf("input %q: %v", k, err)
		}
		out[k] = b
	}
	return out, nil
}

// frontend is how a workflow loads its flow and the child flows it names
// at run time: as a local run does, from the sources sent with the run,
// under the names the client's load read them by.
func (in *RunInput) frontend() frontend.Options {
	return frontend.Options{Remote: true, ReadFile: func(name string) ([]byte, error) {
		s, ok := in.Sources[name]
		if !ok {
			return nil, fmt.Errorf("%s is not among the sources sent with the run: %w", name, fs.ErrNotExist)
		}
		return []byte(s), nil
	}}
}

// Run is the workflow: it loads and checks the flow from its sources, runs
// it with the VM on the workflow's runtime and returns the result. A flow
// that fails to load or check, or inputs that do not fit, fail the
// workflow (the client checks both before it starts one); everything the
// run itself does ends in the result.
func Run(ctx workflow.Context, in RunInput) (*RunOutput, error) {
	load := in.frontend().ChildLoader(nil)
	g, err := load(context.Background(), in.Flow, in.Root)
	if err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), string(codes.LoadError), nil)
	}
	var given frontend.Inputs
	for k, raw := range in.Inputs {
		v, err := stdlib.FromStoredJSON(raw)
		if err != nil {
			return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("input %q: %v", k, err), string(codes.BadInput), nil)
		}
		given.Set(k, v)
	}
	bound, err := given.Bind(g)
	if err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), string(codes.BadInput), nil)
	}

	labelled := workflow.GetVersion(ctx, statusVersion, workflow.DefaultVersion, 1) == 1
	if labelled && in.Searchable {
		if err := workflow.UpsertTypedSearchAttributes(ctx, StatusAttribute.ValueSet("running"), FlowAttribute.ValueSet(g.Name)); err != nil {
			return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), "search_attributes", nil)
		}
	}

	// The VM's context: cancelled when the workflow is.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workflow.Go(ctx, func(c workflow.Context) {
		c.Done().Receive(c, nil)
		cancel()
	})
	info := workflow.GetInfo(ctx)
	st := newState(ctx, g.Name, g.File, g.OnExitName, in.EventLog, in.Carry)
	if err := st.register(dctx); err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), "register", nil)
	}
	if err := workflow.SetQueryHandler(dctx, JournalQuery, func() (*Journal, error) { return st.journalOf(&in), nil }); err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), "register", nil)
	}
	if in.Spans && in.Nesting == nil {
		in.SpanFlow = g.Name // its child flows' metrics name it
	}
	p := &producer{ctx: dctx, in: &in, id: info.WorkflowExecution.ID, st: st}
	var effects vm.EffectProducer = p
	var set map[string]starlark.Value
	onEvent := st.event
	if in.Fork != nil {
		replay, values, err := forking(&in, p)
		if err != nil {
			return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), string(codes.BadInput), nil)
		}
		effects, set = replay, values
		if in.Nesting == nil {
			st.resumedFrom = in.Fork.From
			if len(in.Fork.CutAt) > 0 {
				onEvent = cutWhere(replay, in.Fork.CutAt, onEvent)
			}
		}
	}
	tel := spans(ctx, g, &in)
	onEvent = tel.Events(onEvent)
	prog := vm.Prepare(g)
	var restore *vm.Snapshot
	if in.Snapshot != nil {
		if restore, err = prog.DecodeSnapshot(in.Snapshot); err != nil {
			return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), "bad_snapshot", nil)
		}
		st.seed(restore.Record())
	}
	every := in.ContinueEvery
	if every <= 0 {
		every = DefaultContinueEvery
	}
	opts := vm.Options{
		Parallel: in.Parallel, Timeout: in.Timeout, EvalSteps: in.EvalSteps, MaxOutput: in.MaxOutput,
		KillGrace: in.KillGrace, MaxPath: in.MaxPath, ExitGrace: in.ExitGrace,
		Env: []string{}, // the worker's environment is the activity's
		// secret() is read on the worker that runs the task: the
		// workflow's state, history and snapshots hold references.
		SecretRefs: true,
		ModelEnv:   append([]string{}, in.ModelEnv...),
		MaxTokens:  in.MaxTokens,
		Runtime:    &wfRuntime{ctx: dctx},
		Effects:    &journaled{inner: effects, st: st},
		Set:        set,
		RunID:      info.WorkflowExecution.ID,
		Nesting:    in.Nesting,
		OnEvent:    onEvent,
		LoadFlow:   load,
		Restore:    restore,
		// Before the history gets long, the run stops at a quiescent
		// point and continues as a new execution from its snapshot.
		Suspend: func() bool {
			return p.started >= every || p.started > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()
		},
	}
	res := prog.Run(runCtx, bound, opts)
	st.drain(dctx)
	if res.Status == vm.Suspended {
		st.journalFits(in.MaxPayload, "to carry on as a new execution")
		in.Carry = st.carry()
		in.SpanCarry = tel.Carry()
		if p.replay != nil {
			in.Fork = carryFork(in.Fork, p.replay)
		}
		return nil, continueAsNew(ctx, in, res.Snapshot)
	}
	tel.End(res)
	res.ResumedFrom = st.resumedFrom
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError("result: "+err.Error(), "result", nil)
	}
	if labelled {
		if err := labelStatus(dctx, in.Searchable, string(res.Status)); err != nil {
			return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), "search_attributes", nil)
		}
	}
	out := &RunOutput{Status: string(res.Status), Result: b, ModelCalls: res.ModelCalls}
	if in.Nesting != nil {
		// A child flow's journal goes into its parent's.
		st.journalFits(in.MaxPayload, "to pass to its parent")
		out.Journal, out.JournalLost = st.journal, st.lost
	}
	return out, nil
}

// labelStatus says in the workflow's memo, and its search attribute when
// searchable, how the run ended, for Temporal's own tools.
func labelStatus(ctx workflow.Context, searchable bool, status string) error {
	if err := workflow.UpsertMemo(ctx, map[string]any{StatusMemo: status}); err != nil {
		return err
	}
	if searchable {
		return workflow.UpsertTypedSearchAttributes(ctx, StatusAttribute.ValueSet(status))
	}
	return nil
}

// summary is how Temporal's tools (the Web UI, temporal workflow
// describe) name an effect's activity, timer or child workflow: the
// step's place as events name it ("per_file[2] › lint"), with its visit
// and attempt past the first.
func summary(req *vm.EffectRequest) string {
	s := strings.Join(append(append(append([]string{}, req.Flow...), req.Scope...), req.Step), " › ")
	if req.Visit > 1 {
		s += fmt.Sprintf(", visit %d", req.Visit)
	}
	if req.Attempt > 1 {
		s += fmt.Sprintf(", attempt %d", req.Attempt)
	}
	if req.OnExit {
		s += " (exit handler)"
	}
	return s
}

// continueAsNew continues the run as a new execution of the workflow from
// snapshot s, or fails the workflow when the input carrying it would be
// over the payload limit.
func continueAsNew(ctx workflow.Context, in RunInput, s *vm.Snapshot) error {
	b, err := s.Encode()
	if err != nil {
		return sdktemporal.NewNonRetryableApplicationError("continue-as-new: "+err.Error(), "snapshot", nil)
	}
	next := in
	next.Snapshot, next.Executions = b, in.Executions+1
	limit := in.MaxPayload
	if limit <= 0 {
		limit = DefaultMaxPayload
	}
	size, err := json.Marshal(next)
	if err != nil {
		return sdktemporal.NewNonRetryableApplicationError("continue-as-new: "+err.Error(), "snapshot", nil)
	}
	if len(size) > limit {
		return sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"run %s cannot continue as new: the run's state and the flow's sources take %d bytes (the snapshot %d compressed), over the payload limit of %d bytes; keep fewer or smaller outputs in long loops, or run the loop in a child flow",
			workflow.GetInfo(ctx).WorkflowExecution.ID, len(size), len(b), limit), "payload_limit", nil)
	}
	return workflow.NewContinueAsNewError(ctx, WorkflowName, next)
}

// producer is the effect producer of a run on Temporal.
type producer struct {
	ctx     workflow.Context // disconnected: the VM cancels effects
	in      *RunInput
	id      string // the workflow id
	started int    // effects started in this execution
	st      *state
	replay  *store.Replay // a fork's (fork.go)
}

// Start implements [vm.EffectProducer]. It runs on the workflow's driver;
// each effect completes from a workflow coroutine of its own.
func (p *producer) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	p.started++
	if req.Chat != nil {
		p.model(ctx, req, done)
		return
	}
	switch req.Kind {
	case graphir.KindTask, graphir.KindShell:
		p.task(ctx, req, done)
	case graphir.KindWait:
		p.wait(ctx, req, done)
	case graphir.KindSubflow:
		p.child(ctx, req, done)
	case graphir.KindApproval:
		p.approve(ctx, req, done)
	default:
		done(&vm.EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("step %q: %s steps cannot run on the temporal engine", req.Step, req.Kind)})
	}
}

// follow completes an effect once fut is ready, or cancels it (cancel)
// when ctx ends first and then waits for it to acknowledge.
func (p *producer) follow(ctx context.Context, fut workflow.Future, cancel workflow.CancelFunc, get func(c workflow.Context, cancelled bool) *vm.EffectCompletion, done func(*vm.EffectCompletion)) {
	workflow.Go(p.ctx, func(c workflow.Context) {
		_ = workflow.Await(c, func() bool { return fut.IsReady() || ctx.Err() != nil })
		cancelled := !fut.IsReady()
		if cancelled {
			cancel()
		}
		done(get(c, cancelled))
	})
}

// TaskInput is the task activity's input: one attempt of a task or shell
// step, rendered (its [proc.Job], built by [vm.EffectRequest.TaskJob]),
// with the flow root its directory is under. Its JSON field names are
// those of the histories of runs in flight: they do not change.
type TaskInput struct {
	proc.Job
	Kind graphir.Kind
	Root string // the flow root Job.Dir is under, on the machine that loaded it
}

func (p *producer) task(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	job, _ := req.TaskJob()
	// The job's Env is the step's env= alone (the workflow has no
	// environment of its own); the worker puts its own under it.
	job.Dir = p.in.abs(job.Dir)
	if p.in.Traced {
		// The attempt's span, as the spans made from the run's events
		// name it (a pure function of the request: deterministic).
		job.Env = append(job.Env[:len(job.Env):len(job.Env)], "TRACEPARENT="+traceparent(req))
	}
	in := TaskInput{Job: job, Kind: req.Kind, Root: p.in.abs(p.in.Root)}
	close := 30 * 24 * time.Hour
	if req.Timeout > 0 {
		close = req.Timeout + req.KillGrace + time.Minute
	}
	actx, cancel := workflow.WithCancel(p.ctx)
	actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
		Summary:             summary(req),
		StartToCloseTimeout: close,
		HeartbeatTimeout:    p.heartbeatTimeout(),
		WaitForCancellation: true,
		RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: LostWorkerAttempts, InitialInterval: time.Second},
	})
	fut := workflow.ExecuteActivity(actx, TaskActivity, in)
	p.follow(ctx, fut, cancel, func(c workflow.Context, cancelled bool) *vm.EffectCompletion {
		var out proc.Outcome
		err := fut.Get(c, &out)
		switch {
		case cancelled && err != nil:
			// As locally: a task stopped before it told how it ended
			// has no exit status.
			return &vm.EffectCompletion{Cancelled: true, ExitCode: -1}
		case cancelled:
			// The activity killed the task and says how it ended: the
			// output it wrote until then stays in the record, as locally.
			out.Cancelled = out.Cancelled || !out.OK
		case err != nil:
			return &vm.EffectCompletion{Code: codes.StepFailed, ExitCode: -1, Error: "the task's activity failed: " + activityError(err)}
		}
		if !out.OK && !out.Cancelled {
			p.st.attemptFailed(&FailedAttempt{Flow: req.Flow, Scope: req.Scope, Step: req.Step, Visit: req.Visit, Attempt: req.Attempt,
				Stdout: out.Stdout, Stderr: out.Stderr})
		}
		return req.TaskCompletion(&out)
	}, done)
}

// abs is path on the machine that started the run: a relative path is
// relative to its Cwd.
func (in *RunInput) abs(path string) string {
	if in.Cwd == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(in.Cwd, path)
}

// underRoot is path as the flow root names it ("sub/child.star"), or as
// given when it is not under the root.
func (in *RunInput) underRoot(path string) string {
	if rel, ok := confine.Rel(in.abs(in.Root), in.abs(path)); ok {
		return filepath.ToSlash(rel)
	}
	return path
}

func (p *producer) heartbeatTimeout() time.Duration {
	if p.in.HeartbeatTimeout > 0 {
		return p.in.HeartbeatTimeout
	}
	return limits.DefaultHeartbeatTimeout
}

// activityError is the message of an activity's failure, without the
// wrapping Temporal adds.
func activityError(err error) string {
	var te *sdktemporal.TimeoutError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s timeout (the workers running it were lost or stopped heartbeating, %d times)", strings.ToLower(strings.TrimPrefix(te.TimeoutType().String(), "TIMEOUT_TYPE_")), LostWorkerAttempts)
	}
	var ae *sdktemporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	return err.Error()
}

// model makes a model call as an activity on a worker, which holds the
// API keys (and the cassette, if any); the run's token budget is charged
// here with what the call spent.
func (p *producer) model(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	job, _ := req.ModelJob()
	actx, cancel := workflow.WithCancel(p.ctx)
	actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
		Summary:             "model call: " + summary(req),
		StartToCloseTimeout: 24 * time.Hour, // the call's own timeout and retries bound it
		HeartbeatTimeout:    p.heartbeatTimeout(),
		WaitForCancellation: true,
		// As for tasks: only a lost worker makes the activity fail (the
		// call's own failures are in its outcome), and the call then
		// runs again on another.
		RetryPolicy: &sdktemporal.RetryPolicy{MaximumAttempts: LostWorkerAttempts, InitialInterval: time.Second},
	})
	fut := workflow.ExecuteActivity(actx, ModelActivity, job)
	p.follow(ctx, fut, cancel, func(c workflow.Context, cancelled bool) *vm.EffectCompletion {
		var out vm.ModelOutcome
		err := fut.Get(c, &out)
		switch {
		case cancelled:
			return &vm.EffectCompletion{Cancelled: true}
		case err != nil:
			return &vm.EffectCompletion{Code: codes.ModelError, Model: job.Chat.Model, Error: "the model call's activity failed: " + activityError(err)}
		}
		return req.ModelCompletion(&out)
	}, done)
}

func (p *producer) wait(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	tctx, cancel := workflow.WithCancel(p.ctx)
	fut := workflow.NewTimerWithOptions(tctx, max(req.Wait, 0), workflow.TimerOptions{Summary: summary(req)})
	p.follow(ctx, fut, cancel, func(c workflow.Context, cancelled bool) *vm.EffectCompletion {
		if cancelled {
			return &vm.EffectCompletion{Cancelled: true}
		}
		return &vm.EffectCompletion{OK: true, Output: starlark.None}
	}, done)
}

func (p *producer) child(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	inputs, err := EncodeInputs(req.ChildInputs)
	if err != nil {
		done(&vm.EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("child flow %s: %v", req.ChildPath, err)})
		return
	}
	nest := req.Nesting()
	cin := RunInput{Flow: req.ChildPath, Root: p.in.Root, Cwd: p.in.Cwd, Sources: p.in.Sources, Inputs: inputs,
		Parallel: p.in.Parallel, EvalSteps: p.in.EvalSteps, MaxOutput: p.in.MaxOutput, KillGrace: p.in.KillGrace,
		MaxPath: p.in.MaxPath, ExitGrace: p.in.ExitGrace, HeartbeatTimeout: p.in.HeartbeatTimeout, Nesting: &nest,
		ContinueEvery: p.in.ContinueEvery, MaxPayload: p.in.MaxPayload, ModelEnv: p.in.ModelEnv, MaxTokens: p.in.MaxTokens,
		Searchable: p.in.Searchable, Traced: p.in.Traced, Spans: p.in.Spans, Fork: p.childFork(req)}
	if cin.Spans {
		cin.SpanParent, cin.SpanFlow = traceparent(req), p.in.SpanFlow
	}
	id := p.id + "/"
	for _, s := range req.Scope {
		id += s + "/"
	}
	id += fmt.Sprintf("%s#%d.%d", req.Step, req.Visit, req.Attempt)
	if req.OnExit {
		id += ".exit"
	}
	cctx, cancel := workflow.WithCancel(p.ctx)
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
		WorkflowID:          id,
		StaticSummary:       summary(req) + ": " + p.in.underRoot(req.ChildPath),
		WaitForCancellation: true,
		RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: 1},
	})
	fut := workflow.ExecuteChildWorkflow(cctx, WorkflowName, cin)
	p.st.childStarted(&ChildRun{ID: id, Step: req.Step, Scope: req.Scope, Visit: req.Visit})
	p.follow(ctx, fut, cancel, func(c workflow.Context, cancelled bool) *vm.EffectCompletion {
		var out RunOutput
		err := fut.Get(c, &out)
		p.st.childEnded(id)
		if err == nil {
			p.st.journalChild(id, &out)
		}
		if cancelled {
			// The child ran until it was cancelled (a timeout, a race):
			// its record is kept, as locally.
			if err == nil {
				if cc := childCompletion(&out); cc.Child != nil {
					return &vm.EffectCompletion{Cancelled: true, Child: cc.Child}
				}
			}
			return &vm.EffectCompletion{Cancelled: true}
		}
		if err != nil {
			return &vm.EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("child flow %s: %s", req.ChildPath, childError(err))}
		}
		cc := childCompletion(&out)
		if cc.Child != nil {
			// The child spent from the run tree's token budget.
			req.ChargeTokens(cc.Child.Usage)
		}
		return cc
	}, done)
}

func childError(err error) string {
	var ae *sdktemporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	return err.Error()
}

// childCompletion turns a child workflow's result into the completion of
// its step, as a nested run's result is locally: the step record carries
// the child's run with its own step records.
func childCompletion(out *RunOutput) *vm.EffectCompletion {
	res, err := vm.DecodeResult(out.Result)
	if err != nil {
		return &vm.EffectCompletion{Code: codes.StepFailed, Error: "child flow " + err.Error()}
	}
	res.ModelCalls = out.ModelCalls
	switch res.Status {
	case vm.Succeeded:
		return &vm.EffectCompletion{OK: true, Output: res.Output, Child: res}
	case vm.Cancelled:
		return &vm.EffectCompletion{Cancelled: true, Child: res}
	case vm.Waiting:
		return &vm.EffectCompletion{Park: true, Child: res}
	}
	if res.Error != nil {
		switch res.Error.Code {
		case codes.SubflowDepth, codes.SubflowCycle, codes.BudgetExceeded, codes.ReplayMiss:
			return &vm.EffectCompletion{Stop: res.Error, Child: res}
		}
	}
	msg := "failed"
	if res.Error != nil {
		msg = res.Error.Msg
	}
	return &vm.EffectCompletion{Code: codes.StepFailed, Error: fmt.Sprintf("child flow %s failed: %s", res.Flow, msg), Child: res}
}
