package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/lang/frontend"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

const deployFlow = `
flow(name = "deploy", inputs = {"v": "1.0"})
build = step("build", shell = "echo build >> log")
deploy = step("deploy", approve = "Deploy {{ inputs.v }} to prod?")
ship = step("ship", env = {"BY": "{{ deploy.by }}", "WHY": "{{ deploy.reason }}"}, shell = "echo ship by $BY: $WHY >> log")
chain(START, build, deploy, ship, END)
`

// setup writes the flow files into a fresh directory, opens a store
// there, and loads and checks the first file.
func setup(t *testing.T, files ...string) (*Service, *graphir.Graph, string) {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < len(files); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &Service{Store: st}
	f := frontend.Load(filepath.Join(dir, files[0]), frontend.Options{Root: dir})
	if err := f.Err(); err != nil {
		t.Fatalf("the flow does not check: %v", err)
	}
	return s, f.Graph, dir
}

func bind(t *testing.T, g *graphir.Graph, kv ...string) *Spec {
	t.Helper()
	given := map[string]starlark.Value{}
	for i := 0; i < len(kv); i += 2 {
		given[kv[i]] = starlark.String(kv[i+1])
	}
	in, err := vm.BindInputs(g, given)
	if err != nil {
		t.Fatal(err)
	}
	// The texts the flow was loaded from, recorded for a resume.
	var sources []store.Source
	for _, f := range g.Files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, store.Source{Path: confine.Abs(f), Text: text})
	}
	return &Spec{Graph: g, Inputs: in, Sources: sources}
}

// parked starts a run of g, with its inputs' defaults, and runs it until
// it waits for an approval.
func parked(t *testing.T, s *Service, g *graphir.Graph) *Run {
	t.Helper()
	r, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, r); res.Status != vm.Waiting {
		t.Fatalf("got %s; want waiting", res.Status)
	}
	return r
}

func run(t *testing.T, r *Run) *vm.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatalf("recording the end: %v", err)
	}
	return res
}

func readLog(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A run parks on an approval nobody is there to decide; the decision is
// recorded with its reason, and the resumed run continues under its own
// id without running build again.
func TestParkApproveResume(t *testing.T) {
	s, g, dir := setup(t, "deploy.star", deployFlow)
	r, err := s.Start(bind(t, g, "v", "1.4"))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, r)
	if res.Status != vm.Waiting || res.RunID != r.ID {
		t.Fatalf("got status %s, run %s; want waiting, run %s", res.Status, res.RunID, r.ID)
	}
	open, closed := s.Parked(res)
	if len(open) != 1 || open[0].Step != "deploy" || len(closed) != 0 {
		t.Fatalf("parked: open %v, closed %v; want deploy open", open, closed)
	}

	list, err := s.List(store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != r.ID || list[0].Status != store.Waiting {
		t.Fatalf("List: %+v; want the one waiting run", list)
	}
	rec, err := s.Record("last")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Approvals) != 1 || !rec.Approvals[0].Pending(time.Now()) || rec.Approvals[0].Message != "Deploy 1.4 to prod?" {
		t.Fatalf("approvals: %+v; want deploy pending", rec.Approvals)
	}

	// What the journal has so far, as a result: build's output, deploy
	// waiting, ship not reached.
	so, err := rec.SoFar()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range so.Steps {
		got = append(got, st.Name+" "+string(st.Status))
	}
	if diff := cmp.Diff([]string{"build succeeded", "deploy waiting"}, got); diff != "" || so.RunID != r.ID {
		t.Errorf("so far, run %s (-want +got):\n%s", so.RunID, diff)
	}

	if _, err := s.Approve(context.Background(), r.ID, "deploy", Decision{Approved: true, By: "ann", Values: map[string]any{"region": "eu"}}); err == nil || !strings.Contains(err.Error(), `approval "deploy" takes no values (it declares no fields), got region`) {
		t.Fatalf("a decision with values: got %v", err)
	}
	done, err := s.Approve(context.Background(), "last", "", Decision{Approved: true, By: "ann", Reason: "looks good"})
	if err != nil {
		t.Fatal(err)
	}
	if done.Approval.Step != "deploy" || done.Run.Status != store.Waiting {
		t.Fatalf("approved %q of a run %s; want deploy of a waiting run", done.Approval.Step, done.Run.Status)
	}
	if _, err := s.Approve(context.Background(), "last", "deploy", Decision{By: "bob"}); !errors.Is(err, store.ErrDecided) {
		t.Fatalf("a second decision: got %v, want ErrDecided", err)
	}

	if flows, err := s.Flows(); err != nil || !slices.Equal(flows, []string{"deploy"}) {
		t.Fatalf("Flows: %v %v; want deploy", flows, err)
	}
	if steps, err := s.Steps("last"); err != nil || !slices.Equal(steps, []string{"build", "deploy"}) {
		t.Fatalf("Steps: %v %v; want build and deploy", steps, err)
	}
	if _, _, err := s.Resume(&ResumeSpec{Ref: "nosuchrun"}); err == nil {
		t.Fatal("resuming a run that is not there: no error")
	}
	// The run the reference names is read, then adjusted from its
	// recorded options.
	spec := &ResumeSpec{Ref: "last", Adjust: func(r *store.Run, spec *ResumeSpec) error {
		spec.Options = r.Options
		return nil
	}}
	r2, ds, err := s.Resume(spec)
	if err != nil {
		t.Fatalf("Resume: %v (%v)", err, ds)
	}
	if spec.Run == nil || spec.Run.ID != r.ID || spec.Options.By != done.Run.Options.By {
		t.Fatalf("spec after Resume: run %v, options %+v", spec.Run, spec.Options)
	}
	if r2.ID != r.ID || r2.ResumedFrom != "" {
		t.Fatalf("resumed as %q from %q; want under its own id", r2.ID, r2.ResumedFrom)
	}
	if res := run(t, r2); res.Status != vm.Succeeded {
		t.Fatalf("resumed run: %s %v", res.Status, res.Error)
	}
	if diff := cmp.Diff("build\nship by ann: looks good\n", readLog(t, dir)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}

	rec, err = s.Record(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Approvals[0]
	if rec.Run.Status != "succeeded" || !a.Approved || a.By != "ann" || a.Reason != "looks good" {
		t.Fatalf("record: run %s, approval %+v", rec.Run.Status, a)
	}
	var steps []string
	for i, e := range rec.Effects {
		steps = append(steps, e.Step+" "+rec.EffectStatus(i))
	}
	// build ran once; the approval's attempt that parked, then the one
	// the resumed run decided from the store.
	if diff := cmp.Diff([]string{"build succeeded", "deploy waiting", "deploy succeeded", "ship succeeded"}, steps); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
	// As a person reads them, the park and the decision are one attempt.
	var attempts []string
	for _, a := range rec.Attempts() {
		attempts = append(attempts, fmt.Sprintf("%s %d %s", a.Step, a.Number, a.Status))
	}
	if diff := cmp.Diff([]string{"build 1 succeeded", "deploy 1 succeeded", "ship 1 succeeded"}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if text, v, ok := rec.Output(); !ok || v == nil || string(text) == "" {
		t.Errorf("Output: %s %v %v; want the run's output", text, v, ok)
	} else if _, isTask := vm.TaskStdout(v); !isTask {
		t.Errorf("Output: %s; want the last task's record", text)
	}

	// An ended run is never changed: resuming it from a step is a new
	// run that names it.
	refused := errors.New("refused")
	if _, _, err := s.Resume(&ResumeSpec{Run: rec.Run, From: "ship", Adjust: func(*store.Run, *ResumeSpec) error { return refused }}); !errors.Is(err, refused) {
		t.Fatalf("Adjust's error: got %v", err)
	}
	if _, _, err := s.Resume(&ResumeSpec{Run: rec.Run}); !errors.Is(err, ErrNothingLeft) {
		t.Fatalf("resuming a succeeded run: got %v, want ErrNothingLeft", err)
	}
	r3, _, err := s.Resume(&ResumeSpec{Run: rec.Run, From: "ship"})
	if err != nil {
		t.Fatal(err)
	}
	if r3.ResumedFrom != r.ID || r3.ID == r.ID {
		t.Fatalf("resumed as %q from %q; want a new run from %s", r3.ID, r3.ResumedFrom, r.ID)
	}
	if res := run(t, r3); res.Status != vm.Succeeded || res.ResumedFrom != r.ID {
		t.Fatalf("new run: %s, resumed from %q", res.Status, res.ResumedFrom)
	}
	if diff := cmp.Diff("build\nship by ann: looks good\nship by ann: looks good\n", readLog(t, dir)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// asker answers every approval with one decision, or none.
type asker struct {
	d  Decision
	ok bool
}

func (a asker) Ask(context.Context, *vm.EffectRequest, time.Time) (Decision, bool) { return a.d, a.ok }

// With someone to ask, the decision is recorded as theirs; without a
// store and nobody to ask, the approval fails saying what to do.
func TestAsk(t *testing.T) {
	s, g, dir := setup(t, "deploy.star", deployFlow)
	spec := bind(t, g)
	spec.Ask = asker{Decision{Approved: true, By: "cy", Reason: "asked"}, true}
	r, err := s.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, r); res.Status != vm.Succeeded {
		t.Fatalf("got %s %v", res.Status, res.Error)
	}
	if got := readLog(t, dir); got != "build\nship by cy: asked\n" {
		t.Errorf("log: %q", got)
	}
	rec, err := s.Record(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a := rec.Approvals[0]; a.By != "cy" || a.Reason != "asked" {
		t.Errorf("recorded %+v", a)
	}

	unrecorded := &Service{}
	spec = bind(t, g)
	spec.Ask, spec.NoDecision = asker{}, "find someone"
	r, err = unrecorded.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, r)
	if res.Status != vm.Failed || r.ID != "" {
		t.Fatalf("got %s (run %q), want failed unrecorded", res.Status, r.ID)
	}
	if want := `approval "deploy" needs a decision: find someone`; !strings.Contains(res.Error.Msg, want) {
		t.Errorf("error %q, want it to say %q", res.Error.Msg, want)
	}
}

// A step that names no approval of the run, or none of several, is
// refused with what there is to choose from.
func TestApproveChoice(t *testing.T) {
	s, g, _ := setup(t, "two.star", `
left = step("left", approve = "Left?")
right = step("right", approve = "Right?")
edge(START, left)
edge(START, right)
edge(left, END)
edge(right, END)
`)
	parked(t, s, g)
	var ce *ChoiceError
	if _, err := s.Approve(context.Background(), "last", "", Decision{Approved: true, By: "ann"}); !errors.As(err, &ce) || len(ce.Pending) != 2 {
		t.Fatalf("no step: got %v, want a choice of two", err)
	}
	if _, err := s.Approve(context.Background(), "last", "rigt", Decision{Approved: true, By: "ann"}); !errors.As(err, &ce) || ce.Nearest != "right" {
		t.Fatalf("a misspelt step: got %v, want a suggestion of right", err)
	}
	if _, err := s.Approve(context.Background(), "last", "right", Decision{By: "ann", Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(context.Background(), "last", "", Decision{Approved: true, By: "ann"}); err != nil {
		t.Fatalf("one left pending: %v", err)
	}
}

// Cancel before Run ends the run at once, cancelled, and recorded so.
func TestCancel(t *testing.T) {
	s, g, _ := setup(t, "deploy.star", deployFlow)
	r, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	r.Cancel()
	if res := run(t, r); res.Status != vm.Cancelled {
		t.Fatalf("got %s", res.Status)
	}
	rec, err := s.Record(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Status != "cancelled" {
		t.Errorf("recorded %s", rec.Run.Status)
	}
}

const releaseFlow = `
gate = step("gate", approve = "Release?", fields = {
    "version": input(type = "string"),
    "rollout": input("canary", choices = ["canary", "all"]),
    "replicas": input(type = "int"),
})
ship = step("ship", env = {"V": "{{ gate.values.version }}", "R": "{{ gate.values.rollout }}", "N": "{{ gate.values.replicas + 1 }}"},
    shell = "echo $V $R $N >> log")
chain(START, gate, ship, END)
`

// An approval's fields: skein approve's values are checked against them
// (unknown, missing, of the wrong type, not a choice), recorded with the
// decision, and read downstream once the run is resumed.
func TestApproveValues(t *testing.T) {
	s, g, dir := setup(t, "release.star", releaseFlow)
	r := parked(t, s, g)
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"version": "1.2", "replicas": "3", "rolout": "all"}, `approval "gate" has no field "rolout"; it declares version (string, required), rollout (string, default "canary", one of "canary", "all"), replicas (int, required) (did you mean "rollout"?)`},
		{map[string]any{"version": "1.2"}, `approval "gate" needs a value for field "replicas"`},
		{map[string]any{"version": "1.2", "replicas": "three"}, `approval "gate": field "replicas" must be an int, got "three"`},
		{map[string]any{"version": "1.2", "replicas": 3.5}, `approval "gate": field "replicas" must be an int, got a float 3.5`},
		{map[string]any{"version": "1.2", "replicas": "3", "rollout": "most"}, `approval "gate": field "rollout" must be one of "canary", "all", got "most"`},
	} {
		_, err := s.Approve(context.Background(), r.ID, "gate", Decision{Approved: true, By: "ann", Values: c.values})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.As(err, new(*ValuesError)) {
			t.Errorf("values %v: got %v, want %s", c.values, err, c.want)
		}
	}
	if _, err := s.Approve(context.Background(), r.ID, "gate", Decision{Approved: true, By: "ann", Values: map[string]any{"version": "1.2", "replicas": 3.0}}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Record(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Approvals[0].Values; got != `{"version":"1.2","rollout":"canary","replicas":3}` {
		t.Errorf("recorded values %s", got)
	}
	r2, ds, err := s.Resume(&ResumeSpec{Run: rec.Run, Options: rec.Run.Options})
	if err != nil {
		t.Fatalf("Resume: %v (%v)", err, ds)
	}
	res := run(t, r2)
	if res.Status != vm.Succeeded {
		t.Fatalf("resumed run: %s %v", res.Status, res.Error)
	}
	if diff := cmp.Diff("1.2 canary 4\n", readLog(t, dir)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	// A rejection needs no values.
	r3, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	run(t, r3)
	if _, err := s.Approve(context.Background(), r3.ID, "", Decision{By: "bob", Reason: "not today"}); err != nil {
		t.Fatalf("a rejection without values: %v", err)
	}
}

// An Asker's decision gives values too; one that does not fit fails the
// step, saying why.
func TestAskedValues(t *testing.T) {
	s, g, dir := setup(t, "release.star", releaseFlow)
	spec := bind(t, g)
	spec.Ask = asker{Decision{Approved: true, By: "cy", Values: map[string]any{"version": "2.0", "rollout": "all", "replicas": "1"}}, true}
	r, err := s.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, r); res.Status != vm.Succeeded {
		t.Fatalf("status %s %v", res.Status, res.Error)
	}
	if diff := cmp.Diff("2.0 all 2\n", readLog(t, dir)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	spec = bind(t, g)
	spec.Ask = asker{Decision{Approved: true, By: "cy"}, true}
	r, err = s.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, r)
	if res.Status != vm.Failed || !strings.Contains(res.Error.Msg, `approval "gate" needs a value for field "version", field "replicas"`) {
		t.Fatalf("status %s %v; want failed for the missing values", res.Status, res.Error)
	}
}

// A run parked on an approval in a child flow waits for it at the place
// the store records it under.
func TestPendingPath(t *testing.T) {
	s, g, _ := setup(t, "parent.star", `
flow(name = "parent")
sub = step("sub", flow = "gated.star")
chain(START, sub, END)
`, "gated.star", `
flow(name = "gated", output = "gate")
gate = step("gate", approve = "Go?")
chain(START, gate, END)
`)
	r, err := s.Start(bind(t, g))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, r)
	open, _ := s.Parked(res)
	rec, err := s.Record(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || len(rec.Approvals) != 1 {
		t.Fatalf("waits for %d approvals, %d recorded; want 1", len(open), len(rec.Approvals))
	}
	if got, want := PendingPath(open[0]), rec.Approvals[0].Path; got != want || got == "" || Place(got, open[0].Step) != "sub › gate" {
		t.Fatalf("PendingPath: %q; want %q, placed as sub › gate", got, want)
	}
}
