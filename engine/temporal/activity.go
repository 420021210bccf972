package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/internal/confine"
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
	// (a model.Cassette records and replays).
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
		cfg := model.Config{Model: job.Chat.Model, BaseURL: job.Endpoint.BaseURL, KeyEnv: job.Endpoint.KeyEnv}
		if err := cfg.Usable(getenv); err != nil {
			return &vm.ModelOutcome{Model: job.Chat.Model, Code: model.CodeModel, Error: "on the worker: " + err.Error()}, nil
		}
	}
	p := a.Models
	if p == nil {
		p = &model.Client{Getenv: getenv}
	}
	ch := make(chan *vm.ModelOutcome, 1)
	go func() { ch <- job.Call(ctx, p) }()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case o := <-ch:
			return o, nil
		case <-tick.C:
			activity.RecordHeartbeat(ctx)
		}
	}
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
// task's process group, as locally.
func (a *Activities) Task(ctx context.Context, in TaskInput) (*proc.Outcome, error) {
	env := a.Env
	if env == nil {
		env = os.Environ()
	}
	job := in.Job
	job.Env = append(append([]string(nil), env...), in.Env...)
	job.Dir = a.dir(in)
	ch := make(chan *proc.Outcome, 1)
	go func() { ch <- proc.Run(ctx, &job, nil, nil) }()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case o := <-ch:
			return o, nil
		case <-tick.C:
			activity.RecordHeartbeat(ctx)
		}
	}
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
