package temporal

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/engine/temporal/temporaltest"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// countingModels runs effects locally and counts the model calls.
type countingModels struct{ calls atomic.Int64 }

func (c *countingModels) Start(ctx context.Context, req *vm.EffectRequest, done func(*vm.EffectCompletion)) {
	if req.Kind == graphir.KindLLM || req.Kind == graphir.KindAgent {
		c.calls.Add(1)
	}
	vm.Local{}.Start(ctx, req, done)
}

// forkBothEngines runs sc on a local run store and on the SDK's test
// environment, then forks each run as sc's forks say (skein resume
// --from / --set): each fork must agree across the engines, name the run
// it forks in resumed_from and call no model again.
func forkBothEngines(t *testing.T, sc temporaltest.Scenario) {
	dir := t.TempDir()
	if _, err := sc.Write(dir); err != nil {
		t.Fatal(err)
	}
	f := frontend.Load(filepath.Join(dir, "flow.star"), frontend.Options{Root: dir})
	if err := f.Err(); err != nil {
		t.Fatalf("load: %v", err)
	}
	g := f.Graph
	st, err := store.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := &runs.Service{Store: st}
	in, err := vm.BindInputs(g, givenInputs(t, sc))
	if err != nil {
		t.Fatal(err)
	}
	local := &countingModels{}
	r, err := svc.Start(&runs.Spec{Graph: g, Inputs: in, Sources: f.Sources.List(), Effects: local})
	if err != nil {
		t.Fatal(err)
	}
	first := runLocalFork(t, r)
	inputs, err := EncodeInputs(givenInputs(t, sc))
	if err != nil {
		t.Fatal(err)
	}
	rin := RunInput{Flow: g.File, Root: g.Root, Cwd: dir, Sources: f.Sources.ByName(), Inputs: inputs, Parallel: sc.ParallelOrOne()}
	var remote atomic.Int64
	rout, journal := forkRunCounting(t, rin, &remote)
	if diff := cmp.Diff(decode(t, first).WithoutTimes(), decode(t, rout.Result).WithoutTimes()); diff != "" {
		t.Fatalf("the first run: local (-) and temporal (+) differ:\n%s", diff)
	}
	if local.calls.Load() == 0 || remote.Load() == 0 {
		t.Fatalf("the first run made %d model calls locally, %d on temporal; the scenario wants a model call upstream", local.calls.Load(), remote.Load())
	}
	firstID := decodeID(t, first)
	for _, fk := range sc.Forks {
		local.calls.Store(0)
		remote.Store(0)
		r, _, err := svc.Resume(&runs.ResumeSpec{Ref: firstID, From: fk.From, Set: fk.Set, Effects: local})
		if err != nil {
			t.Fatalf("fork %+v locally: %v", fk, err)
		}
		lres := runLocalFork(t, r)
		fin, _, err := ForkInput(context.Background(), "RUN1", journal, fk.From, fk.Set)
		if err != nil {
			t.Fatalf("fork %+v on temporal: %v", fk, err)
		}
		fout, _ := forkRunCounting(t, *fin, &remote)
		if diff := cmp.Diff(decode(t, lres).WithoutTimes(), decode(t, fout.Result).WithoutTimes()); diff != "" {
			t.Errorf("fork %+v: local (-) and temporal (+) differ:\n%s", fk, diff)
		}
		if got := decode(t, lres).Output; fk.Output != nil && !cmp.Equal(got, fk.Output) {
			t.Errorf("fork %+v: output %v, want %v", fk, got, fk.Output)
		}
		if got := decodeResumedFrom(t, lres); got != firstID {
			t.Errorf("fork %+v locally: resumed_from %q, want %q", fk, got, firstID)
		}
		if got := decodeResumedFrom(t, fout.Result); got != "RUN1" {
			t.Errorf("fork %+v on temporal: resumed_from %q, want RUN1", fk, got)
		}
		if l, r := local.calls.Load(), remote.Load(); l != 0 || r != 0 {
			t.Errorf("fork %+v called a model again: %d times locally, %d on temporal", fk, l, r)
		}
	}
}

func runLocalFork(t *testing.T, r *runs.Run) []byte {
	t.Helper()
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forkRunCounting is forkRun counting the model activities started.
func forkRunCounting(t *testing.T, in RunInput, calls *atomic.Int64) (*RunOutput, *Journal) {
	t.Helper()
	env := newEnvWith(t, &Activities{})
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == ModelActivity {
			calls.Add(1)
		}
	})
	return runJournal(t, env, in)
}

func decodeID(t *testing.T, b []byte) string {
	t.Helper()
	var r struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.RunID == "" {
		t.Fatalf("no run_id in the result (%v): %s", err, b)
	}
	return r.RunID
}

func decodeResumedFrom(t *testing.T, b []byte) string {
	t.Helper()
	var r struct {
		ResumedFrom string `json:"resumed_from"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.ResumedFrom
}
