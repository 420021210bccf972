package vm_test

// The keyword x kind table: every bound a step builtin accepts (retries,
// backoff, retry_when, timeout, max_visits, join) does what docs/runs.md
// says on every kind of step, or is a load error with the step's position
// where it cannot apply. Each pair is proved by a run (or by the load
// error), not by reading the graph.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// kindDecl declares step "x" of one kind: ok succeeds, fail fails (""
// when the kind cannot fail), slow takes 3 s or more. Each has a %s where
// the keywords go, and may declare helper steps before x.
type kindDecl struct {
	ok, fail, slow string
}

var kindDecls = map[string]kindDecl{
	"task": {`x = step("x", run = ["true"]%s)`, `x = step("x", run = ["false"]%s)`, `x = step("x", run = ["sleep", "3"]%s)`},
	"shell": {`x = step("x", shell = "true"%s)`, `x = step("x", shell = "exit 3"%s)`,
		`x = step("x", shell = "sleep 3"%s)`},
	"fn": {`x = step("x", fn = lambda r: 1%s)`, `x = step("x", fn = lambda r: fail("no")%s)`, spin + `
x = step("x", fn = spin%s)`},
	"flow":    {`x = step("x", flow = "ok.star"%s)`, `x = step("x", flow = "bad.star"%s)`, `x = step("x", flow = "slow.star"%s)`},
	"llm":     {`x = step("x", llm = "answer please"%s)`, `x = step("x", llm = "fail please"%s)`, `x = step("x", llm = "slow please", retries = 0%s)`},
	"agent":   {`x = step("x", agent = "answer please"%s)`, `x = step("x", agent = "fail please"%s)`, `x = step("x", agent = "slow please", retries = 0%s)`},
	"approve": {`x = step("x", approve = "answer please"%s)`, `x = step("x", approve = "fail please"%s)`, `x = step("x", approve = "slow please"%s)`},
	"wait":    {`x = step("x", wait = "1ms"%s)`, ``, `x = step("x", wait = "3s"%s)`},
	"noop":    {`x = step("x"%s)`, ``, ``},
	"router":  {`x = router("x", cases = [("True", "after")]%s)`, ``, ``},
	"loop": {`xb = step("xb", fn = lambda r: 1)
x = loop("x", body = [xb], until = lambda it: True, max_iterations = 1%s)`, `xb = step("xb", run = ["false"])
x = loop("x", body = [xb], until = lambda it: True, max_iterations = 1%s)`, `xb = step("xb", run = ["sleep", "3"])
x = loop("x", body = [xb], until = lambda it: True, max_iterations = 1%s)`},
	"map": {`xb = step("xb", fn = lambda r: 1)
x = map("x", over = "[1, 2]", body = [xb]%s)`, `xb = step("xb", run = ["false"])
x = map("x", over = "[1, 2]", body = [xb]%s)`, `xb = step("xb", run = ["sleep", "3"])
x = map("x", over = "[1, 2]", body = [xb]%s)`},
}

// The child flows the flow= kind runs.
var kindChildren = map[string]string{
	"ok.star":   `step("c", fn = lambda r: 1)`,
	"bad.star":  `step("c", run = ["false"])`,
	"slow.star": `step("c", run = ["sleep", "3"])`,
}

// fakeApprovals decides approvals as their message says: "fail" rejects,
// "slow" gets no decision (but its step's timeout, as the store's and
// Temporal's producers keep it), anything else approves.
type fakeApprovals struct {
	vm.Local
	mu       sync.Mutex
	timeouts []time.Duration
}

func (p *fakeApprovals) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.Kind != graphir.KindApproval {
		p.Local.Start(ctx, req, done)
		return
	}
	p.mu.Lock()
	p.timeouts = append(p.timeouts, req.Timeout)
	p.mu.Unlock()
	switch {
	case strings.Contains(req.Message, "fail"):
		done(vm.ApprovalDecision(false, "tester", "no", time.Now(), nil))
	case strings.Contains(req.Message, "slow"):
		go func() {
			if req.Timeout <= 0 {
				<-ctx.Done()
				done(&vm.EffectCompletion{Cancelled: true})
				return
			}
			t := time.NewTimer(req.Timeout)
			defer t.Stop()
			select {
			case <-t.C:
				done(vm.ApprovalTimedOut(req.Timeout))
			case <-ctx.Done():
				done(&vm.EffectCompletion{Cancelled: true})
			}
		}()
	default:
		done(vm.ApprovalDecision(true, "tester", "", time.Now(), nil))
	}
}

// kwCase is how one keyword is proved: the flow around x (with %s for
// x's declaration), the variant of x and its keywords, and what must
// hold afterwards.
type kwCase struct {
	variant string // "ok", "fail" or "slow"
	kw      string
	around  string
	check   func(t *testing.T, res *vm.Result, evs []vm.Event)
}

// retryEvents returns the step_retrying events of step x.
func retryEvents(evs []vm.Event) []vm.Event {
	var out []vm.Event
	for _, ev := range evs {
		if ev.Type == vm.StepRetrying && ev.Step == "x" {
			out = append(out, ev)
		}
	}
	return out
}

const straight = `%s
after = step("after", fn = lambda r: 1)
EDGE
edge(START, x)
edge(after, END)
`

var kwCases = map[string]kwCase{
	// Two retries: three attempts, and the step's failure after them.
	"retries": {variant: "fail", kw: `, retries = 2, backoff = "1ms"`, around: straight,
		check: func(t *testing.T, res *vm.Result, evs []vm.Event) {
			if n := len(retryEvents(evs)); n != 2 || res.Step("x").Status != vm.StepFailed {
				t.Errorf("%d retries, x %s; want 2 retries and x failed", n, res.Step("x").Status)
			}
		}},
	// The first retry waits the backoff.
	"backoff": {variant: "fail", kw: `, retries = 1, backoff = "7ms"`, around: straight,
		check: func(t *testing.T, res *vm.Result, evs []vm.Event) {
			r := retryEvents(evs)
			if len(r) != 1 || r[0].Duration != 7*time.Millisecond {
				t.Errorf("retries %+v; want one, after 7ms", r)
			}
		}},
	// backoff_factor = 1.0: both retries wait the same (with max_backoff
	// and jitter, TestRetryShapes).
	"backoff_factor": {variant: "fail", kw: `, retries = 2, backoff = "3ms", backoff_factor = 1.0`, around: straight,
		check: func(t *testing.T, res *vm.Result, evs []vm.Event) {
			r := retryEvents(evs)
			if len(r) != 2 || r[0].Duration != 3*time.Millisecond || r[1].Duration != 3*time.Millisecond {
				t.Errorf("retries %+v; want two, each after 3ms", r)
			}
		}},
	// retry_when false: no retry, the first failure is the step's.
	"retry_when": {variant: "fail", kw: `, retries = 2, backoff = "1ms", retry_when = "False"`, around: straight,
		check: func(t *testing.T, res *vm.Result, evs []vm.Event) {
			if n := len(retryEvents(evs)); n != 0 || res.Step("x").Status != vm.StepFailed {
				t.Errorf("%d retries, x %s; want none and x failed", n, res.Step("x").Status)
			}
		}},
	// The slow variant stops at its timeout with code timeout.
	"timeout": {variant: "slow", kw: `, timeout = "300ms"`, around: straight,
		check: func(t *testing.T, res *vm.Result, evs []vm.Event) {
			if rec := res.Step("x"); rec.Status != vm.StepFailed || rec.Code != "timeout" {
				t.Errorf("x %s with code %q; want failed with timeout", rec.Status, rec.Code)
			}
			fast(t, res, 2500*time.Millisecond)
		}},
	// Entering x a second time goes past max_visits = 1.
	"max_visits": {variant: "ok", kw: `, max_visits = 1`, around: `%s
after = step("after", fn = lambda r: 1)
EDGE
edge(START, x)
edge(after, x, when = "visits('x') < 2")
edge(after, END, when = "visits('x') >= 2")
`, check: func(t *testing.T, res *vm.Result, evs []vm.Event) {
		if res.Error == nil || res.Error.Code != "max_visits_exceeded" || res.Error.Step != "x" {
			t.Errorf("run error %+v; want max_visits_exceeded at x", res.Error)
		}
	}},
	// join = "all" with one in-edge dead: x is skipped (the default
	// "and" would run it).
	"join": {variant: "ok", kw: `, join = "all"`, around: `a = step("a", fn = lambda r: 1)
b = step("b", fn = lambda r: 2)
%s
after = step("after", fn = lambda r: 1)
EDGE
edge(START, a)
edge(START, b)
edge(a, x)
edge(b, x, when = "False")
edge(after, END)
`, check: func(t *testing.T, res *vm.Result, evs []vm.Event) {
		if s := res.Step("x").Status; s != vm.StepSkipped {
			t.Errorf("x %s; want skipped", s)
		}
	}},
}

// kwRefused is where a keyword is a load error, with what the error says;
// kwAlone is the keyword given alone there.
var kwRefused = map[[2]string]string{
	{"wait", "retries"}:       "retries does not apply to wait= and wait_until= steps",
	{"wait", "backoff"}:       "backoff does not apply to wait= and wait_until= steps",
	{"wait", "retry_when"}:    "retry_when does not apply to wait= and wait_until= steps",
	{"approve", "retries"}:    "retries does not apply to approve= steps",
	{"approve", "backoff"}:    "backoff does not apply to approve= steps",
	{"approve", "retry_when"}: "retry_when does not apply to approve= steps",
	{"noop", "retries"}:       "retries does not apply to a step with no run=",
	{"noop", "backoff"}:       "backoff does not apply to a step with no run=",
	{"noop", "retry_when"}:    "retry_when does not apply to a step with no run=",
	{"noop", "timeout"}:       "timeout does not apply to a step with no run=",
	{"llm", "retry_when"}:     "retry_when does not apply to llm= steps",
	{"agent", "retry_when"}:   "retry_when does not apply to agent= steps",
	{"router", "retries"}:     `unexpected keyword argument "retries"`,
	{"router", "backoff"}:     `unexpected keyword argument "backoff"`,
	{"router", "retry_when"}:  `unexpected keyword argument "retry_when"`,
	{"router", "timeout"}:     `unexpected keyword argument "timeout"`,
	{"loop", "retries"}:       `unexpected keyword argument "retries"`,
	{"loop", "backoff"}:       `unexpected keyword argument "backoff"`,
	{"loop", "retry_when"}:    `unexpected keyword argument "retry_when"`,
	{"map", "retries"}:        `unexpected keyword argument "retries"`,
	{"map", "backoff"}:        `unexpected keyword argument "backoff"`,
	{"map", "retry_when"}:     `unexpected keyword argument "retry_when"`,

	{"llm", "backoff_factor"}:     "backoff_factor applies only to run=, shell=, fn= and flow= steps",
	{"agent", "backoff_factor"}:   "backoff_factor applies only to run=, shell=, fn= and flow= steps",
	{"wait", "backoff_factor"}:    "backoff_factor applies only to run=, shell=, fn= and flow= steps",
	{"approve", "backoff_factor"}: "backoff_factor applies only to run=, shell=, fn= and flow= steps",
	{"noop", "backoff_factor"}:    "backoff_factor applies only to run=, shell=, fn= and flow= steps",
	{"router", "backoff_factor"}:  `unexpected keyword argument "backoff_factor"`,
	{"loop", "backoff_factor"}:    `unexpected keyword argument "backoff_factor"`,
	{"map", "backoff_factor"}:     `unexpected keyword argument "backoff_factor"`,
}

var kwAlone = map[string]string{
	"retries":    `, retries = 2`,
	"backoff":    `, backoff = "7ms"`,
	"retry_when": `, retry_when = "False"`,
	"timeout":    `, timeout = "300ms"`,
	// Alone: the kind is refused before a missing retries= is.
	"backoff_factor": `, backoff_factor = 1.0`,
}

// writeFlow writes a flow tree into a temporary directory and returns the
// path of its flow.star.
func writeFlow(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "flow.star")
}

func TestKeywordKinds(t *testing.T) {
	s := modeltest.New(
		modeltest.Rule{Match: "fail please", Replies: []modeltest.Reply{{Status: 500, Content: "down"}}},
		modeltest.Rule{Match: "slow please", Replies: []modeltest.Reply{{Content: "late", Delay: 5 * time.Second}}},
		modeltest.Rule{Replies: []modeltest.Reply{{Content: "done"}}},
	)
	t.Cleanup(s.Close) // after the parallel subtests
	for kind, d := range kindDecls {
		for kw, c := range kwCases {
			t.Run(kind+"/"+kw, func(t *testing.T) {
				t.Parallel()
				decl := map[string]string{"ok": d.ok, "fail": d.fail, "slow": d.slow}[c.variant]
				refused, isRefused := kwRefused[[2]string{kind, kw}]
				if decl == "" {
					if !isRefused {
						t.Fatalf("no %s variant of %s, and %s is not refused on it", c.variant, kind, kw)
					}
					decl = d.ok // the keyword is refused before the kind could matter
				}
				edge := "edge(x, after)"
				if kind == "router" {
					edge = ""
				}
				kwSrc := c.kw
				if isRefused {
					kwSrc = kwAlone[kw]
				}
				src := strings.Replace(fmt.Sprintf(c.around, fmt.Sprintf(decl, kwSrc)), "EDGE", edge, 1)
				files := map[string]string{"flow.star": src}
				for k, v := range kindChildren {
					files[k] = v
				}
				if isRefused {
					_, err := lang.Load(writeFlow(t, files), lang.Options{})
					if err == nil || !strings.Contains(err.Error(), refused) || !strings.Contains(err.Error(), "flow.star:") {
						t.Fatalf("load error %v; want one at flow.star:LINE:COL saying %q", err, refused)
					}
					return
				}
				var evs events
				opts := modelOpts(s, &evs)
				opts.Effects = &fakeApprovals{}
				opts.KillGrace = quickKill.KillGrace
				opts.EvalSteps = 1 << 62
				res := runFiles(t, files, nil, opts)
				if res.Step("x") == nil {
					t.Fatalf("no record of x: %+v", res.Error)
				}
				evs.mu.Lock()
				defer evs.mu.Unlock()
				c.check(t, res, evs.list)
			})
		}
	}
}

// TestApprovalTimeoutHandedOn: an approval's timeout is its producer's to
// keep (the store's, Temporal's): the request carries it.
func TestApprovalTimeoutHandedOn(t *testing.T) {
	p := &fakeApprovals{}
	res := run(t, `x = step("x", approve = "answer please", timeout = "2h")`, nil, vm.Options{Effects: p})
	check(t, res, want{status: vm.Succeeded})
	if len(p.timeouts) != 1 || p.timeouts[0] != 2*time.Hour {
		t.Errorf("timeouts handed on %v; want [2h]", p.timeouts)
	}
}
