package builtins

// This file defines trigger() (docs/serve.md): how a flow starts itself
// under skein serve, on a cron schedule, every period, or on a webhook
// delivery.

import (
	"path/filepath"
	"strings"
	"time"
	_ "time/tzdata" // time zones are checked the same on every machine

	"github.com/robfig/cron/v3"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/stdlib"
)

// CronParser reads a trigger's cron= as the scheduler does: five fields
// (minute, hour, day of month, month, day of week) or a descriptor such
// as "@daily".
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// minEvery is the shortest every= period.
const minEvery = time.Second

// trigger(*, cron=None, every=None, webhook=None, tz=None, inputs=None,
// overlap=None, catch_up=None, secret_env=None)
func triggerFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	c, err := newCall(thread, fn)
	if err != nil {
		return nil, err
	}
	if len(args) > 0 {
		return nil, c.errorf("takes keyword arguments only: cron=, every= or webhook=, and what goes with it")
	}
	var vals [10]starlark.Value
	if err := c.unpack(args, kwargs, triggerParams, vals[:]); err != nil {
		return nil, err
	}
	watch, debounce := vals[8], vals[9]
	cronV, every, webhook, tz, inputs, overlap, catchUp, secretEnv := vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6], vals[7]
	t := graphir.Trigger{Pos: c.pos}
	var kinds []string
	for _, k := range []struct {
		param string
		v     starlark.Value
	}{{"cron", cronV}, {"every", every}, {"webhook", webhook}, {"watch", watch}} {
		if !isNone(k.v) {
			kinds = append(kinds, k.param)
		}
	}
	switch len(kinds) {
	case 0:
		return nil, c.errorf("give one of cron, every, webhook, watch")
	case 1:
	default:
		return nil, c.errorf("give one of cron, every, webhook, watch; got %s and %s", kinds[0], kinds[1])
	}
	if !isNone(debounce) && isNone(watch) {
		return nil, c.errorf("debounce= is for watch triggers")
	}
	clock := true
	switch {
	case !isNone(cronV):
		t.Kind = graphir.TriggerCron
		if t.Cron, err = c.str("cron", cronV, false); err != nil {
			return nil, err
		}
		if _, err := CronParser.Parse(t.Cron); err != nil {
			return nil, c.hintf(`five fields: minute hour day-of-month month day-of-week, as "0 3 * * *" (03:00 every day), or @hourly, @daily, @weekly`,
				"cron %q: %v", t.Cron, err)
		}
		if strings.HasPrefix(t.Cron, "TZ=") || strings.HasPrefix(t.Cron, "CRON_TZ=") {
			return nil, c.errorf("cron: give the time zone as tz=, not in the schedule")
		}
		if !isNone(tz) {
			if t.TZ, err = c.str("tz", tz, false); err != nil {
				return nil, err
			}
			if _, err := time.LoadLocation(t.TZ); err != nil || t.TZ == "Local" {
				return nil, c.hintf(`an IANA time zone name, such as "Europe/Berlin", "America/New_York" or "UTC"`, "tz: unknown time zone %q", t.TZ)
			}
		}
	case !isNone(every):
		t.Kind = graphir.TriggerEvery
		if t.Every, err = c.duration("every", every); err != nil {
			return nil, err
		}
		if t.Every < minEvery {
			return nil, c.errorf("every must be at least 1s, got %q", string(every.(starlark.String)))
		}
	case !isNone(watch):
		clock = false
		t.Kind = graphir.TriggerWatch
		if t.Watch, err = c.str("watch", watch, false); err != nil {
			return nil, err
		}
		if filepath.IsAbs(t.Watch) || strings.Contains(t.Watch, "{{") {
			return nil, c.errorf("watch must be a literal path relative to the flow's file, inside its flow root, got %q", t.Watch)
		}
		t.Debounce = defaultDebounce
		if !isNone(debounce) {
			if t.Debounce, err = c.duration("debounce", debounce); err != nil {
				return nil, err
			}
		}
		if !isNone(secretEnv) {
			return nil, c.errorf("secret_env= is for webhook triggers")
		}
	default:
		clock = false
		t.Kind = graphir.TriggerWebhook
		if t.Webhook, err = c.str("webhook", webhook, false); err != nil {
			return nil, err
		}
		if !graphir.ValidName(strings.ReplaceAll(t.Webhook, "-", "_")) {
			return nil, c.errorf("webhook: name %q must match [a-z_][a-z0-9_-]* (it is the path /hooks/NAME)", t.Webhook)
		}
		if isNone(secretEnv) {
			return nil, c.hintf(`name the environment variable that holds the shared secret, as secret_env = "DEPLOY_HOOK_SECRET"; a delivery must carry the body's HMAC-SHA256 under it`,
				"webhook %q: missing secret_env=", t.Webhook)
		}
		if t.SecretEnv, err = c.str("secret_env", secretEnv, false); err != nil {
			return nil, err
		}
	}
	if clock {
		if !isNone(secretEnv) {
			return nil, c.errorf("secret_env= is for webhook triggers")
		}
		if !isNone(tz) && t.Kind != graphir.TriggerCron {
			return nil, c.errorf("tz= is for cron triggers")
		}
		if !isNone(catchUp) {
			if t.CatchUp, err = c.duration("catch_up", catchUp); err != nil {
				return nil, err
			}
		}
	} else {
		if !isNone(tz) {
			return nil, c.errorf("tz= is for cron triggers")
		}
		if !isNone(catchUp) {
			return nil, c.errorf("catch_up= is for cron and every triggers")
		}
	}
	if !isNone(overlap) {
		s, ok := overlap.(starlark.String)
		if !ok {
			return nil, c.errorf("overlap must be one of %s, got %s", quoteAll(graphir.Overlaps), describe(overlap))
		}
		if err := oneOf("overlap", string(s), graphir.Overlaps...); err != nil {
			if near := spell.Nearest(string(s), graphir.Overlaps); near != "" {
				return nil, c.errorf("%v (did you mean %q?)", err, near)
			}
			return nil, c.errorf("%v", err)
		}
		t.Overlap = string(s)
	}
	switch in := inputs.(type) {
	case nil, starlark.NoneType:
	case *starlark.Dict:
		keys, vals, err := c.dict("inputs", in)
		if err != nil {
			return nil, err
		}
		t.HasInputs, t.Inputs, t.InputsPos = true, map[string]starlark.Value{}, map[string]graphir.Pos{}
		for i, k := range keys {
			v, err := stdlib.Data(vals[i])
			if err != nil {
				return nil, c.errorf("inputs: %q: %v", k, err)
			}
			v.Freeze()
			t.Inputs[k] = v
			t.InputNames = append(t.InputNames, k)
			t.InputsPos[k], _ = c.locate("inputs", k)
		}
	case starlark.Callable:
		if t.Kind != graphir.TriggerWebhook {
			what := "a cron"
			if t.Kind == graphir.TriggerWatch {
				what = "a watch"
			}
			if t.Kind == graphir.TriggerEvery {
				what = "an every"
			}
			return nil, c.errorf("inputs of %s trigger must be a dict of the run's inputs; a function of the delivery is for webhooks", what)
		}
		if f, ok := in.(*starlark.Function); ok {
			if n := f.NumParams(); n != 1 || f.HasVarargs() || f.HasKwargs() {
				return nil, c.errorf("inputs must be a function of one parameter, the delivery; %s takes %d", f.Name(), n)
			}
		}
		t.InputsFunc = c.b.Compiler.Func(in, c.pos, nil)
	default:
		return nil, c.errorf("inputs must be a dict, or for a webhook a function of the delivery, got %s", describe(inputs))
	}
	if err := c.b.AddTrigger(t); err != nil {
		return nil, c.errorf("%v", err)
	}
	return starlark.None, nil
}

// concurrency reads flow(concurrency=, concurrency_key=) into f.
func (c *call) concurrency(f *graphir.FlowDecl, n, key starlark.Value) error {
	var err error
	if !isNone(n) {
		if f.Concurrency, err = c.intAtLeast("concurrency", n, 1); err != nil {
			return err
		}
	}
	if isNone(key) {
		return nil
	}
	if f.Concurrency == 0 {
		return c.errorf("concurrency_key= needs concurrency=, the runs allowed at once per key")
	}
	if f.ConcurrencyKey, err = c.str("concurrency_key", key, false); err != nil {
		return err
	}
	f.ConcurrencyKeyPos, _ = c.locate("concurrency_key", f.ConcurrencyKey)
	name, ok := strings.CutPrefix(f.ConcurrencyKey, "inputs.")
	if !ok || !graphir.ValidName(name) {
		return c.errorf("concurrency_key must name an input, as %q, got %q", "inputs.repo", f.ConcurrencyKey)
	}
	return nil
}

// emit reads flow(emit=, max_depth=) into f. A missing max_depth is
// the checker's to report (emit_unbounded), with its position.
func (c *call) emit(f *graphir.FlowDecl, emit, depth starlark.Value) error {
	var err error
	if !isNone(emit) {
		if f.Emit, err = c.str("emit", emit, false); err != nil {
			return err
		}
		if !strings.HasSuffix(f.Emit, ".star") || strings.Contains(f.Emit, "{{") {
			return c.errorf("emit must be the literal path of a flow file, as \"research.star\", got %q", f.Emit)
		}
		f.EmitPos, _ = c.locate("emit", f.Emit)
	}
	if !isNone(depth) {
		if isNone(emit) {
			return c.errorf("max_depth= bounds emit=: give the flow the items are queued for")
		}
		if f.MaxDepth, err = c.intAtLeast("max_depth", depth, 1); err != nil {
			return err
		}
	}
	return nil
}

var triggerParams = []string{"cron?", "every?", "webhook?", "tz?", "inputs?", "overlap?", "catch_up?", "secret_env?", "watch?", "debounce?"}

// defaultDebounce is how long a watched path must stay unchanged before
// its trigger fires, unless debounce= says otherwise.
const defaultDebounce = time.Second

// KeyInput is the input a concurrency_key names ("repo" for
// "inputs.repo"), or "".
func KeyInput(key string) string {
	name, _ := strings.CutPrefix(key, "inputs.")
	return name
}
