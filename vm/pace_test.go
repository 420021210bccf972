package vm_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinlang/skein/internal/fakeclock"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/model/modeltest"
)

// stamped records the fake clock's time of each attempt it sends on.
type stamped struct {
	inner model.Provider
	clock *fakeclock.Clock
	mu    sync.Mutex
	times []time.Time
}

func (s *stamped) Complete(ctx context.Context, req model.Request) (*model.Reply, error) {
	s.mu.Lock()
	s.times = append(s.times, s.clock.Now())
	s.mu.Unlock()
	return s.inner.Complete(ctx, req)
}

// Two maps of model calls, one in a child flow, running in parallel under
// one model(rpm=): the run tree shares one pacer, so by any moment t after
// the first request at most 1 + (t - first) / (60s / rpm) requests were
// sent (in the fake clock's time). Without pacing the fake clock never
// moves and every request is sent at its start.
func TestPacingSharedByRunTree(t *testing.T) {
	srv := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "ok", Prompt: 3, Completion: 1}}})
	defer srv.Close()
	decl := `model("m", model = "gpt-4o", base_url = "` + srv.BaseURL() + `", api_key_env = "", rpm = 30)
`
	files := map[string]string{
		"flow.star": decl + `
say = step("say", llm = "say {{ item }}", model = "m")
mine = map("mine", over = "range(5)", body = [say], concurrency = 5)
kid = step("kid", flow = "kid.star")
done = step("done", fn = lambda r: "done")
edge(START, mine)
edge(START, kid)
edge(mine, done)
edge(kid, done)
edge(done, END)
`,
		"kid.star": decl + `
ask = step("ask", llm = "ask {{ item }}", model = "m")
theirs = map("theirs", over = "range(5)", body = [ask], concurrency = 5)
chain(START, theirs, END)
`,
	}
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	start := clock.Now()
	prov := &stamped{inner: &model.Client{}, clock: clock}
	res := runFiles(t, files, nil, vm.Options{Models: prov, Parallel: 8, Pacers: &model.Pacers{Now: clock.Now, SleepUntil: clock.SleepUntil}})
	if res.Status != vm.Succeeded {
		t.Fatalf("%s: %v", res.Status, res.Error)
	}
	times := slices.Clone(prov.times)
	if len(times) != 10 || len(srv.Requests()) != 10 {
		t.Fatalf("%d attempts, %d requests, want 10", len(times), len(srv.Requests()))
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	gap := 2 * time.Second // 60s / 30
	for k, at := range times {
		if earliest := start.Add(time.Duration(k) * gap); at.Before(earliest) {
			t.Errorf("request %d of 10 sent %s after the start, before %s: more than rpm = 30", k+1, at.Sub(start), earliest.Sub(start))
		}
	}
	// Evenly paced: the tenth request is not later than needed either.
	if last := times[9].Sub(start); last != 9*gap {
		t.Errorf("the last request went at %s, want %s", last, 9*gap)
	}
}

// A turn farther away than the step's timeout fails the call at once
// (timeout); a cancelled run stops waiting.
func TestPacingTimeoutAndCancel(t *testing.T) {
	srv := modeltest.New(modeltest.Rule{Replies: []modeltest.Reply{{Content: "ok"}}})
	defer srv.Close()
	src := `model("m", model = "gpt-4o", base_url = "` + srv.BaseURL() + `", api_key_env = "", rpm = 1)
a = step("a", llm = "first", model = "m")
b = step("b", llm = "second", model = "m", timeout = "10s", retries = 0)
chain(START, a, b, END)
`
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	res := run(t, src, nil, vm.Options{Pacers: &model.Pacers{Now: clock.Now, SleepUntil: clock.SleepUntil}})
	if b := res.Step("b"); res.Status != vm.Failed || b.Code != "timeout" || !strings.Contains(b.Error, "pacing would wait 1m0s, longer than the step's timeout of 10s") {
		t.Errorf("%s: b %s %q", res.Status, b.Code, b.Error)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}

	// On the real clock, the second call waits a minute for its turn:
	// cancelling the run ends the wait.
	src = strings.Replace(src, `, timeout = "10s"`, "", 1)
	ctx, cancel := context.WithCancel(context.Background())
	pacers := &model.Pacers{SleepUntil: func(ctx context.Context, t time.Time) error {
		cancel() // the wait has begun
		<-ctx.Done()
		return ctx.Err()
	}}
	g := load(t, map[string]string{"flow.star": src})
	r := vm.Prepare(g).Run(ctx, nil, vm.Options{Pacers: pacers, Parallel: 1})
	if r.Status != vm.Cancelled {
		t.Errorf("cancelled run: %s", r.Status)
	}
}
