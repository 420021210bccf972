package graphir

// This file holds what trigger() declares: how a flow starts itself under
// skein serve (docs/serve.md), on a clock or on a webhook delivery.

import (
	"fmt"
	"time"

	"go.starlark.net/starlark"
)

// TriggerKind says what starts a trigger's runs.
type TriggerKind string

const (
	TriggerCron    TriggerKind = "cron"    // trigger(cron = "0 3 * * *")
	TriggerEvery   TriggerKind = "every"   // trigger(every = "10m")
	TriggerWebhook TriggerKind = "webhook" // trigger(webhook = "deploy")
	TriggerWatch   TriggerKind = "watch"   // trigger(watch = "inbox")
)

// The overlap policies: what a firing does while a run of the flow is
// queued or running.
const (
	OverlapSkip    = "skip"    // the firing is dropped
	OverlapQueue   = "queue"   // the firing waits its turn
	OverlapReplace = "replace" // the runs queued or running are cancelled, the firing runs
)

// Overlaps lists the overlap policies, as trigger(overlap=) takes them.
var Overlaps = []string{OverlapSkip, OverlapQueue, OverlapReplace}

// Trigger is one trigger() declaration of a flow.
type Trigger struct {
	Kind TriggerKind
	// Cron is the schedule in cron's five fields (or a descriptor such
	// as "@daily"), read in TZ ("" for UTC).
	Cron string
	TZ   string
	// Every is the period of an every= trigger: it fires at the
	// multiples of Every since the Unix epoch.
	Every time.Duration
	// Webhook is the name a webhook trigger is delivered to
	// (POST /hooks/NAME); SecretEnv names the environment variable
	// holding its HMAC secret.
	Webhook   string
	SecretEnv string
	// Watch is the file or directory (relative to the flow's file) whose
	// changes fire a watch trigger, once they have settled for Debounce.
	Watch    string
	Debounce time.Duration
	// Inputs are the run's inputs: fixed values (HasInputs), or for a
	// webhook a function of the delivery (InputsFunc).
	Inputs     map[string]starlark.Value // flow data, frozen
	InputNames []string                  // Inputs' names, as written
	HasInputs  bool
	InputsPos  map[string]Pos // where each of Inputs is written
	InputsFunc *Expr
	// Overlap is one of [Overlaps] or "" (see [Trigger.OverlapPolicy]); CatchUp how far
	// back firings missed while no server ran are still run (0: none).
	Overlap string
	CatchUp time.Duration
	Pos     Pos
}

// Key names the trigger among the flow's: what the run store records its
// firings under, and what a run started by it shows.
func (t *Trigger) Key() string {
	switch t.Kind {
	case TriggerCron:
		if t.TZ != "" {
			return fmt.Sprintf("cron %s (%s)", t.Cron, t.TZ)
		}
		return "cron " + t.Cron
	case TriggerEvery:
		return "every " + FormatDuration(t.Every)
	case TriggerWebhook:
		return "webhook " + t.Webhook
	case TriggerWatch:
		return "watch " + t.Watch
	}
	return string(t.Kind)
}

// OverlapPolicy is Overlap, with its default: OverlapSkip for a clock
// trigger; for a webhook "", none (each delivery runs, within the flow's
// concurrency).
func (t *Trigger) OverlapPolicy() string {
	if t.Overlap == "" && t.Kind != TriggerWebhook {
		return OverlapSkip
	}
	return t.Overlap
}

type jsonTrigger struct {
	Kind      string         `json:"kind"`
	Cron      string         `json:"cron,omitempty"`
	TZ        string         `json:"tz,omitempty"`
	Every     string         `json:"every,omitempty"`
	Webhook   string         `json:"webhook,omitempty"`
	SecretEnv string         `json:"secret_env,omitempty"`
	Watch     string         `json:"watch,omitempty"`
	Debounce  string         `json:"debounce,omitempty"`
	Inputs    map[string]any `json:"inputs,omitempty"`
	// InputsFn says the inputs are a function of the delivery.
	InputsFn bool   `json:"inputs_fn,omitempty"`
	Overlap  string `json:"overlap,omitempty"`
	CatchUp  string `json:"catch_up,omitempty"`
}

func (t *Trigger) json() jsonTrigger {
	jt := jsonTrigger{Kind: string(t.Kind), Cron: t.Cron, TZ: t.TZ, Webhook: t.Webhook, SecretEnv: t.SecretEnv,
		InputsFn: t.InputsFunc != nil, Overlap: t.OverlapPolicy()}
	if t.Every > 0 {
		jt.Every = FormatDuration(t.Every)
	}
	if t.CatchUp > 0 {
		jt.CatchUp = FormatDuration(t.CatchUp)
	}
	if t.Kind == TriggerWatch {
		jt.Watch, jt.Debounce = t.Watch, FormatDuration(t.Debounce)
	}
	if t.HasInputs {
		jt.Inputs = map[string]any{}
		for k, v := range t.Inputs {
			jt.Inputs[k] = valueToJSON(v)
		}
	}
	return jt
}
