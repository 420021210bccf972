package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/engine/telemetry"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/secrets"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/proc"
)

// Activities are what a worker runs for the workflow: task and shell
// attempts, as processes on this machine.
type Activities struct {
	// Dir is where this worker keeps the flow's files: a task whose
	// directory is under the flow root on the machine that started the
	// run runs in the same place under Dir. Empty: the directory as
	// given.
	Dir string
	// Env is the environment tasks start from, and model calls read API
	// keys from; nil means os.Environ().
	Env []string
	// Models answers model calls; nil means an OpenAI-compatible client
	// (a model.Cassette records and replays, counting each run's answers
	// apart).
	Models model.Provider
}

// Register registers the workflow and the activities on w.
func Register(w worker.Registry, a *Activities) {
	w.RegisterWorkflowWithOptions(Run, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(a.Task, activity.RegisterOptions{Name: TaskActivity})
	w.RegisterActivityWithOptions(a.Model, activity.RegisterOptions{Name: ModelActivity})
}

// Model makes one model call, heartbeating while it waits for the model;
// a cancelled activity cancels the request. A model whose key variable is
// not set on this worker fails the call with the variable's name.
func (a *Activities) Model(ctx context.Context, job vm.ModelJob) (*vm.ModelOutcome, error) {
	getenv := os.Getenv
	if a.Env != nil {
		getenv = func(k string) string { return lookupEnv(a.Env, k) }
	}
	if job.Chat.Model == "" {
		return &vm.ModelOutcome{Code: model.CodeModel, Error: fmt.Sprintf("step %q: no model configured where the run started: set %s for skein run (the default model's variables travel with the run), or declare one with model()", job.Step, model.EnvModel)}, nil
	}
	if a.Models == nil {
		cfg := model.Config{Model: job.Chat.Model, Provider: job.Chat.Provider, BaseURL: job.Endpoint.BaseURL, KeyEnv: job.Endpoint.KeyEnv, AnswersFile: job.Endpoint.AnswersFile}
		if err := cfg.Usable(getenv); err != nil {
			return &vm.ModelOutcome{Model: job.Chat.Model, Code: model.CodeModel, Error: "on the worker: " + err.Error()}, nil
		}
	}
	p := a.Models
	if p == nil {
		p = &model.Client{Getenv: getenv}
	}
	if c, ok := p.(interface{ ForRun(string) model.Provider }); ok {
		// A cassette counts its answers by run (the run's workflow id,
		// which its child flows' ids begin with), as for a local run,
		// not across all the runs this worker serves.
		run, _, _ := strings.Cut(activity.GetInfo(ctx).WorkflowExecution.ID, "/")
		p = c.ForRun(run)
	}
	wctx, stop := keepAlive(ctx)
	defer stop()
	o := job.Call(wctx, p)
	if err := stopped(wctx); err != nil {
		return nil, err
	}
	// A server may echo the key: it is masked before the outcome, kept
	// in the run's history, leaves the worker.
	var m secrets.Masker
	if job.Endpoint.KeyEnv != "" {
		m.Add(getenv(job.Endpoint.KeyEnv))
	}
	if !m.Empty() {
		o.Answer, o.Error = m.Mask(o.Answer), m.Mask(o.Error)
		if len(o.Object) > 0 {
			o.Object = json.RawMessage(m.Mask(string(o.Object)))
		}
		for i := range o.ToolCalls {
			o.ToolCalls[i].Function.Arguments = m.Mask(o.ToolCalls[i].Function.Arguments)
		}
	}
	return o, nil
}

// lookupEnv looks key up in env, the last entry winning.
func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Task runs one attempt of a task or shell step, heartbeating while it
// runs. The workflow cancelling the activity (the run cancelled, the
// step's branch abandoned) reaches it through the heartbeat and kills the
// task's process group, as locally. The task's SKEIN_ATTEMPT counts the
// step's attempts and the times Temporal ran this one again after a lost
// worker (the activity's attempts past the first).
func (a *Activities) Task(ctx context.Context, in TaskInput) (*proc.Outcome, error) {
	env := a.Env
	if env == nil {
		env = os.Environ()
	}
	job := in.Job
	// The step's secret() values are read here, from this worker's
	// environment and files: the workflow, and so its history, holds
	// only references to them (vm.SecretRef).
	var m secrets.Masker
	path := func(file string) string { return a.dir(TaskInput{Job: proc.Job{Dir: file}, Root: in.Root}) }
	stepEnv := append([]string(nil), in.Env...)
	for i, kv := range stepEnv {
		v, err := vm.ResolveSecretRefs(kv, env, path, &m)
		if err != nil {
			return &proc.Outcome{Code: codes.BadInput, ExitCode: -1, Error: err.Error()}, nil
		}
		stepEnv[i] = v
	}
	if job.Stdin != nil {
		v, err := vm.ResolveSecretRefs(*job.Stdin, env, path, &m)
		if err != nil {
			return &proc.Outcome{Code: codes.BadInput, ExitCode: -1, Error: err.Error()}, nil
		}
		job.Stdin = &v
	}
	job.Env = append(append([]string(nil), env...), stepEnv...)
	job.Dir = a.dir(in)
	job.Attempt += int(activity.GetInfo(ctx).Attempt) - 1
	// This worker's span of the attempt, under the attempt's span (a
	// traced run's task has its TRACEPARENT: RunInput.Traced).
	tp, _ := telemetry.Default()
	host, _ := os.Hostname()
	end := tp.Remote(ctx, lookupEnv(in.Env, "TRACEPARENT"), "worker "+in.Kind.String()+" "+job.Step,
		attribute.String("skein.step.name", job.Step), attribute.String("skein.run.id", job.RunID),
		attribute.Int("temporal.activity.attempt", int(activity.GetInfo(ctx).Attempt)), attribute.String("host.name", host))
	wctx, stop := keepAlive(ctx)
	defer stop()
	o := proc.Run(wctx, &job, nil, nil)
	// What the task printed is masked before it leaves the worker: the
	// activity's result is kept in the run's history.
	o.Stdout, o.Stderr, o.Error = m.Mask(o.Stdout), m.Mask(o.Stderr), m.Mask(o.Error)
	end(o.Error)
	if err := stopped(wctx); err != nil {
		return nil, err
	}
	return o, nil
}

// keepAlive returns the context an activity's work runs on, and
// heartbeats the activity every heartbeat until stop is called.
//
// It heartbeats by the worker's client's service rather than
// activity.RecordHeartbeat, because the SDK cancels an activity whose
// heartbeat does not reach the server within its throttle interval (a
// second here): a server paused or restarting for a second would stop
// every running task, and the task would end as cancelled. Here only an
// answer from the server stops the work: the activity cancelled (the
// run cancelled, the step's branch abandoned), paused or reset, or not
// found (the server timed the attempt out and runs it again elsewhere).
// A server out of reach is no answer: the work goes on, the heartbeat is
// tried again, and the server's heartbeat timeout alone decides whether
// the worker was lost. The SDK still cancels ctx when the worker shuts
// down or the activity's start-to-close timeout passes.
func keepAlive(ctx context.Context) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	info := activity.GetInfo(ctx)
	svc := activity.GetClient(ctx).WorkflowService()
	req := &workflowservice.RecordActivityTaskHeartbeatRequest{TaskToken: info.TaskToken, Namespace: info.Namespace}
	log := activity.GetLogger(ctx)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		unreachable := false
		for {
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			hctx, hcancel := context.WithTimeout(wctx, heartbeatAnswer)
			err := answer(svc.RecordActivityTaskHeartbeat(hctx, req))
			hcancel()
			switch {
			case err == nil:
				if unreachable {
					log.Info("the heartbeat reaches Temporal again", "step", info.ActivityType.Name)
				}
				unreachable = false
			case answered(err):
				cancel(err)
				return
			case wctx.Err() != nil:
				return
			case !unreachable:
				unreachable = true
				log.Warn("the heartbeat did not reach Temporal; the work goes on and the heartbeat is tried again", "error", err)
			}
		}
	}()
	return wctx, func() { close(done); cancel(nil) }
}

// heartbeatAnswer is how long one heartbeat waits for the server.
const heartbeatAnswer = 5 * time.Second

// answer is a heartbeat's answer as an error: the activity cancelled,
// paused or reset, or err.
func answer(r *workflowservice.RecordActivityTaskHeartbeatResponse, err error) error {
	switch {
	case err != nil:
		return err
	case r.GetCancelRequested():
		return sdktemporal.NewCanceledError()
	case r.GetActivityPaused():
		return activity.ErrActivityPaused
	case r.GetActivityReset():
		return activity.ErrActivityReset
	}
	return nil
}

// answered reports whether err, a heartbeat's, is the server's answer
// that the activity must stop, rather than the server out of reach.
func answered(err error) bool {
	var nf *serviceerror.NotFound
	return sdktemporal.IsCanceledError(err) || errors.Is(err, activity.ErrActivityPaused) ||
		errors.Is(err, activity.ErrActivityReset) || errors.As(err, &nf)
}

// stopped is the error an activity returns when its work (on wctx, from
// keepAlive) was stopped by anything but the workflow cancelling it: the
// worker shutting down, the server no longer knowing the attempt, a
// pause or a reset. The work's own outcome is then not the step's: the
// error is retryable, so Temporal runs the attempt again (on another
// worker), as for a lost worker. nil when the work ran to its end or the
// workflow cancelled it (its outcome says so).
func stopped(wctx context.Context) error {
	if wctx.Err() == nil {
		return nil
	}
	cause := context.Cause(wctx)
	if sdktemporal.IsCanceledError(cause) {
		return nil
	}
	return sdktemporal.NewApplicationError(fmt.Sprintf("the activity was stopped before its work ended (%v); Temporal runs it again", cause), "activity_stopped")
}

// dir is where the task runs on this worker.
func (a *Activities) dir(in TaskInput) string {
	if a.Dir == "" || in.Root == "" {
		return in.Dir
	}
	rel, ok := confine.Rel(in.Root, in.Dir)
	if !ok {
		return in.Dir
	}
	return filepath.Join(a.Dir, rel)
}
