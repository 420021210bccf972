package runs

// This file reads runs back from the store: the list, and one run's
// record with what became of each attempt of its effects.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// List returns the recorded runs f selects, newest first.
func (s *Service) List(f store.Filter) ([]*store.Run, error) {
	return s.Store.Runs(f)
}

// Flows are the names of the flows with recorded runs, each once, the
// newest run's first.
func (s *Service) Flows() ([]string, error) {
	all, err := s.Store.Runs(store.Filter{})
	if err != nil {
		return nil, err
	}
	var flows []string
	for _, r := range all {
		if !slices.Contains(flows, r.Flow) {
			flows = append(flows, r.Flow)
		}
	}
	return flows, nil
}

// Steps are the names of the steps the run ref names (an id, a unique
// prefix of one, or "last") recorded effects of, approvals included,
// sorted, each once.
func (s *Service) Steps(ref string) ([]string, error) {
	r, err := s.Store.Get(ref)
	if err != nil {
		return nil, err
	}
	effects, err := s.Store.RunEffects(r, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range effects {
		if !slices.Contains(out, e.Step) {
			out = append(out, e.Step)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Record is what the store knows of one run.
type Record struct {
	Run *store.Run
	// Effects are every attempt of its effects, in the order they
	// started.
	Effects []*store.Effect
	// Approvals are its approvals in the order they were asked; Held
	// those of them that wait for a decision while the run goes on
	// (other steps still work).
	Approvals []*store.Approval
	Held      []*store.Approval
	// Cancel is a request to cancel the run that it has not acted on
	// yet ([Service.Cancel] of a running run), or nil.
	Cancel *store.CancelRequest
}

// Record reads back the run ref names (an id, a unique prefix of one, or
// "last").
func (s *Service) Record(ref string) (*Record, error) {
	r, err := s.Store.Get(ref)
	if err != nil {
		return nil, err
	}
	rec := &Record{Run: r}
	if rec.Effects, err = s.Store.RunEffects(r, 0); err != nil {
		return nil, err
	}
	if rec.Approvals, err = s.Store.Approvals(r.ID); err != nil {
		return nil, err
	}
	rec.Held = heldOpen(r, rec.Effects, rec.Approvals)
	if !r.HasEnded() {
		if rec.Cancel, err = s.Store.CancelRequested(r.ID); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// CancelAsked is rec.Cancel as a result reports it (nil for none).
func (rec *Record) CancelAsked() *vm.CancelAsked {
	if rec.Cancel == nil {
		return nil
	}
	return &vm.CancelAsked{By: rec.Cancel.By, Reason: rec.Cancel.Reason, At: rec.Cancel.At}
}

// EffectStatus is the status of the i'th attempt of rec.Effects: as
// [EffectStatus] says, and [store.Waiting] for a held approval.
func (rec *Record) EffectStatus(i int) string {
	e := rec.Effects[i]
	if rec.IsHeld(e.Path, e.Step, e.Visit) {
		return store.Waiting
	}
	return EffectStatus(rec.Run, e, rec.Effects[i+1:])
}

// Attempt is one attempt of a run's effects as a person reads the
// record: an approval that parked its run and was then decided is one
// attempt, the park not an attempt of its own.
type Attempt struct {
	*store.Effect
	// Number counts the attempts of its visit, parks left out.
	Number int
	// Status is as [Record.EffectStatus] says.
	Status string
}

// Attempts are rec.Effects as attempts, in the order they started, the
// parks of approvals decided since left out.
func (rec *Record) Attempts() []Attempt {
	type place struct {
		path, step string
		visit      int
	}
	parked := map[place]int{} // parks left out, by place and visit
	var out []Attempt
	for i, e := range rec.Effects {
		at := place{e.Path, e.Step, e.Visit}
		if e.Kind == "approval" && e.Status == store.Waiting && slices.ContainsFunc(rec.Effects[i+1:], func(l *store.Effect) bool {
			return l.Path == e.Path && l.Step == e.Step && l.Visit == e.Visit
		}) {
			parked[at]++
			continue
		}
		out = append(out, Attempt{Effect: e, Number: e.Attempt - parked[at], Status: rec.EffectStatus(i)})
	}
	return out
}

// Output is the output of the run's recorded result: its JSON text and
// its value (nil when the text does not decode); ok is false when the
// run has no result yet or its output is null.
func (rec *Record) Output() (text json.RawMessage, v starlark.Value, ok bool) {
	if rec.Run.Result == nil {
		return nil, nil, false
	}
	var res struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(rec.Run.Result, &res) != nil || string(res.Output) == "null" {
		return nil, nil, false
	}
	v, err := stdlib.FromStoredJSON(res.Output)
	if err != nil {
		v = nil
	}
	return res.Output, v, true
}

// IsHeld reports whether the approval at path, step and visit is held
// open while the run goes on.
func (rec *Record) IsHeld(path, step string, visit int) bool {
	return slices.ContainsFunc(rec.Held, func(a *store.Approval) bool { return a.Path == path && a.Step == step && a.Visit == visit })
}

// How an attempt that the journal still has as running, but that is not
// running any more, is named.
const (
	// Interrupted: the run's process died while the attempt ran (the run
	// is interrupted, or was resumed and ran the attempt again).
	Interrupted = "interrupted"
	// Unrecorded: the run ended without recording how the attempt ended
	// (the store could not be written).
	Unrecorded = "unrecorded"
)

// EffectStatus is the status of attempt e of run r: its recorded one,
// except for an attempt recorded as running that is not running: its
// run's process is gone (the run is interrupted), a later attempt of the
// same visit was started (the run was resumed after its process died), or
// the run has ended. later are the effects recorded after e.
func EffectStatus(r *store.Run, e *store.Effect, later []*store.Effect) string {
	if e.Status != store.Running {
		return e.Status
	}
	if r.Status == store.Interrupted {
		return Interrupted
	}
	for _, l := range later {
		if l.Path == e.Path && l.Step == e.Step && l.Visit == e.Visit && l.Attempt > e.Attempt {
			return Interrupted
		}
	}
	if r.HasEnded() {
		return Unrecorded
	}
	return store.Running
}

// StepOf is the step a person looks at first in run r, for a list of
// runs: the step a failed run failed at, or for a run routed to ABORT
// the step whose failure began that path (not the router that took it
// there); the approval a waiting run waits for; the step a run was at
// when it was cancelled or its process died; "" when there is none.
func (s *Service) StepOf(r *store.Run) (string, error) {
	switch r.Status {
	case string(vm.Failed):
		if r.ErrorCode != string(codes.Aborted) {
			return r.ErrorStep, nil
		}
		full, err := s.Store.Get(r.ID)
		if err != nil {
			return "", err
		}
		var res struct {
			Error *struct {
				Cause *struct {
					Step string `json:"step"`
				} `json:"cause"`
			} `json:"error"`
		}
		if json.Unmarshal(full.Result, &res) == nil && res.Error != nil && res.Error.Cause != nil && res.Error.Cause.Step != "" {
			return res.Error.Cause.Step, nil
		}
		return r.ErrorStep, nil
	case store.Waiting:
		approvals, err := s.Store.Approvals(r.ID)
		if err != nil {
			return "", err
		}
		now := time.Now()
		for _, a := range approvals {
			if a.Pending(now) {
				return Place(a.Path, a.Step), nil
			}
		}
	case store.Interrupted, string(vm.Cancelled):
		effects, err := s.Store.Effects(r.ID, 0)
		if err != nil {
			return "", err
		}
		for i := len(effects) - 1; i >= 0; i-- {
			e := effects[i]
			switch EffectStatus(r, e, effects[i+1:]) {
			case string(vm.StepSucceeded), string(vm.StepFailed):
			default: // interrupted, cancelled, or an approval never decided
				return Place(e.Path, e.Step), nil
			}
		}
	}
	return r.ErrorStep, nil
}

// heldOpen returns the approvals of run r that wait for a decision while
// the run goes on (other steps still work), in the order they were asked:
// the run is running, the approval's effect is still running and it has
// neither a decision nor a timeout.
func heldOpen(r *store.Run, effects []*store.Effect, approvals []*store.Approval) []*store.Approval {
	if r.Status != store.Running {
		return nil
	}
	var out []*store.Approval
	now := time.Now()
	for _, a := range approvals {
		if !a.Pending(now) {
			continue
		}
		for i, e := range effects {
			if e.Kind == "approval" && e.Path == a.Path && e.Step == a.Step && e.Visit == a.Visit && EffectStatus(r, e, effects[i+1:]) == store.Running {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// SoFar is the result of a run that has not ended (or whose result was
// not recorded), from its journal: the run's fields, the path of effects
// started, each effect step's latest attempt and the approvals held open.
// fn steps are not recorded and do not appear. (A run that ended has its
// result in Run.Result.)
func (rec *Record) SoFar() (*vm.Result, error) {
	r, effects, held := rec.Run, rec.Effects, rec.Held
	res := &vm.Result{RunID: r.ID, Flow: r.Flow, File: r.File, Status: vm.Status(r.Status), ResumedFrom: r.ResumedFrom, CancelAsked: rec.CancelAsked(), Path: []string{}}
	if r.ErrorCode != "" {
		// A run that ended without its result recorded (it did not fit).
		res.Error = &graphir.Error{Code: codes.Code(r.ErrorCode), Step: r.ErrorStep, Msg: r.ErrorMsg}
	}
	// The approvals held open, in the shape of a waiting run's, in the
	// order they were asked.
	for _, a := range held {
		scope := []string{}
		if a.Path != "" {
			scope = strings.Split(a.Path, "/")
		}
		res.Pending = append(res.Pending, &vm.Pending{Step: a.Step, Scope: scope, Visit: a.Visit, Message: a.Message})
	}
	for i, e := range effects {
		s := res.Step(e.Step)
		if s == nil {
			s = &vm.StepRecord{Name: e.Step}
			res.Steps = append(res.Steps, s)
		}
		if e.Attempt == 1 {
			res.Path = append(res.Path, e.Step)
		}
		s.Visits = max(s.Visits, e.Visit)
		s.Status, s.Error, s.Code = vm.StepStatus(rec.EffectStatus(i)), "", ""
		switch {
		case e.Kind == "task" || e.Kind == "shell":
			// The shape of a task's output in a result: error and code
			// say why it failed, as in the step's own, and are null
			// while it has not.
			var errMsg, code starlark.Value = starlark.None, starlark.None
			switch e.Status {
			case "failed":
				errMsg, code = starlark.String(e.Error), starlark.String(e.Code)
			case "cancelled":
				errMsg, code = starlark.String("cancelled"), starlark.String(codes.Cancelled)
			}
			s.Output = vm.TaskOutput(e.Stdout, e.Stderr, e.ExitCode, errMsg, code)
		case e.Output != nil:
			v, err := stdlib.FromStoredJSON(e.Output)
			if err != nil {
				return nil, fmt.Errorf("the recorded output of step %s is not valid JSON: %v", e.Step, err)
			}
			s.Output = v
		default:
			s.Output = nil
		}
		if e.Status == "failed" {
			s.Error, s.Code = e.Error, codes.Code(e.Code)
		}
	}
	return res, nil
}

// WriteResult writes the run's result object, indented by indent and
// ending in a newline, with the store's status (a run recorded as running
// may have been interrupted since), resumed_from and cancel_requested:
// its recorded result, or for a run without one what its journal has so
// far. It is what `skein run --json` printed, as the store has it now.
func (rec *Record) WriteResult(w io.Writer, indent string) error {
	r := rec.Run
	if r.Result == nil {
		res, err := rec.SoFar()
		if err != nil {
			return err
		}
		b, err := res.AppendSoFar(nil, indent, false)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	// Its status first: the outputs in it, which can be tens of
	// megabytes, are made into values only when it must be encoded again.
	var head struct {
		Status      vm.Status `json:"status"`
		ResumedFrom string    `json:"resumed_from"`
	}
	if err := json.Unmarshal(r.Result, &head); err != nil {
		return fmt.Errorf("the recorded result is not valid JSON: %v", err)
	}
	if head.Status == vm.Status(r.Status) && (head.ResumedFrom != "" || r.ResumedFrom == "") && rec.Cancel == nil {
		// As recorded. Encoded again it would read the same, but a
		// U+FFFD that the record escapes (it replaced invalid UTF-8)
		// would not be escaped.
		var b bytes.Buffer
		b.Grow(len(r.Result) + len(r.Result)/4 + 1)
		if err := json.Indent(&b, r.Result, "", indent); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := w.Write(b.Bytes())
		return err
	}
	res, err := vm.DecodeResult(r.Result)
	if err != nil {
		return fmt.Errorf("the recorded result is not valid JSON: %v", err)
	}
	// A parked run resumed since, for instance: the store's status.
	res.Status = vm.Status(r.Status)
	res.CancelAsked = rec.CancelAsked()
	if res.ResumedFrom == "" {
		res.ResumedFrom = r.ResumedFrom
	}
	return res.WriteJSON(w, indent)
}

// Collected is what [Service.GC] did.
type Collected struct {
	// Runs is how many runs it deleted.
	Runs int
	// Before and After are the store's size on disk (its file and its
	// write-ahead log), in bytes.
	Before, After int64
}

// GC deletes the runs [store.Store.GC] deletes with keep and olderThan,
// and says how the store's size changed.
func (s *Service) GC(keep int, olderThan time.Duration) (*Collected, error) {
	c := &Collected{Before: diskSize(s.Store.Path())}
	n, err := s.Store.GC(keep, olderThan)
	if err != nil {
		return nil, err
	}
	c.Runs, c.After = n, diskSize(s.Store.Path())
	return c, nil
}

// diskSize is the size of the store at path with its write-ahead log.
func diskSize(path string) int64 {
	var total int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			total += fi.Size()
		}
	}
	return total
}
