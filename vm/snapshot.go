package vm

// This file is the run's snapshot: everything the deciding core holds about
// a run, taken at a quiescent point (no effect, retry timer or evaluation in
// flight) as a plain serialisable value, and restored into a fresh run that
// carries on with the same driver from exactly there. An engine whose
// executions have a bounded history (Temporal) suspends a long run before
// the bound and continues it as a new execution from its snapshot; the
// local engine never asks for one.
//
// A snapshot holds the run's records, the path's tail, the live frames
// (their token state, loop counters and histories, map items and outputs),
// the ready queue in heap order, and the counters that order what comes
// next, so the restored run decides exactly what the suspended one would
// have. Values are encoded with their types (an int stays an int, a float
// a float, a tuple a tuple), unlike flow JSON.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm/model"
)

// Suspended is the status of a run that stopped at a quiescent point
// because [Options.Suspend] asked it to; [Result.Snapshot] holds its state,
// to be continued with [Options.Restore]. Only runs given Options.Suspend
// end so.
const Suspended Status = "suspended"

// snapshotVersion is the version of the snapshot's encoding.
const snapshotVersion = 1

// maxSnapshot bounds the decompressed size of a snapshot DecodeSnapshot
// accepts.
const maxSnapshot = 1 << 30

// Snapshot is the state of a suspended run (see [Suspended]). Encode it
// with [Snapshot.Encode]; [Program.DecodeSnapshot] decodes and checks one
// against the program it continues.
type Snapshot struct {
	Version int
	Flow    string // the flow's file, to catch a snapshot of another flow
	Nodes   int    // the graph's node count, likewise

	Seq      uint64
	FrameOrd uint64
	Result   snapResult // the run's result so far: its records, output, usage
	Path     []string   // the path's tail, oldest first
	Reached  bool
	Stopped  []string
	Seen     []graphir.NodeID `json:",omitempty"` // stoppedSeen
	Distinct int              `json:",omitempty"` // stoppedDistinct
	Cause    *snapError       `json:",omitempty"`
	Grants   []Grant          `json:",omitempty"`
	Tokens   int64            `json:",omitempty"` // the token budget spent
	Cost     float64          `json:",omitempty"` // the cost budget spent, US dollars
	Frames   []snapFrame      // parents before children; the root first
	Maps     []snapMap        `json:",omitempty"`
	Queue    []snapTask       // the ready queue, in heap order
}

type snapResult struct {
	RunID       string
	ResumedFrom string `json:",omitempty"`
	Flow        string
	File        string
	Status      Status
	Error       *snapError `json:",omitempty"`
	Output      sv
	Inputs      sv
	Started     time.Time
	Duration    time.Duration `json:",omitempty"`
	Path        []string
	PathTotal   int
	Pending     []*Pending  `json:",omitempty"`
	Steps       []snapStep  `json:",omitempty"`
	OnExit      *snapStep   `json:",omitempty"`
	Usage       model.Usage `json:",omitempty"`
	ModelCalls  int         `json:",omitempty"`
	Warnings    []string    `json:",omitempty"`
	Grants      []Grant     `json:",omitempty"`
	Findings    []string    `json:",omitempty"`
}

type snapStep struct {
	Name          string
	Kind          graphir.Kind
	Status        StepStatus
	Visits        int           `json:",omitempty"`
	Output        sv            // nil when it never completed
	Error         string        `json:",omitempty"`
	Code          codes.Code    `json:",omitempty"`
	Duration      time.Duration `json:",omitempty"`
	Truncated     bool          `json:",omitempty"`
	Log           []string      `json:",omitempty"`
	Trace         []string      `json:",omitempty"`
	Iterations    int           `json:",omitempty"`
	Exhausted     bool          `json:",omitempty"`
	StoppedReason string        `json:",omitempty"`
	Items         int           `json:",omitempty"`
	Child         *snapResult   `json:",omitempty"`
	Model         string        `json:",omitempty"`
	Usage         model.Usage   `json:",omitempty"`
	Answer        string        `json:",omitempty"`
	Agent         *AgentRecord  `json:",omitempty"`
}

type snapError struct {
	Code  codes.Code
	Msg   string
	Step  string      `json:",omitempty"`
	Hint  string      `json:",omitempty"`
	Pos   graphir.Pos `json:",omitzero"`
	Trace []string    `json:",omitempty"`
	Cause *snapError  `json:",omitempty"`
}

type snapFrame struct {
	Ord       uint64
	Parent    uint64         `json:",omitempty"`
	Scope     graphir.NodeID // the loop or map owning the body; None for the root
	Dead      bool           `json:",omitempty"`
	Live      int            `json:",omitempty"`
	States    []snapState
	Iteration int  `json:",omitempty"`
	Feedback  sv   // nil when there is none yet
	History   []sv `json:",omitempty"`
	Index     int  `json:",omitempty"`
	Item      sv
	Map       int `json:",omitempty"` // 1 + the index of its map in Maps; 0 for none
	Judging   sv
}

type snapState struct {
	Visits  int32 `json:",omitempty"`
	Arrived int32 `json:",omitempty"`
	LiveIn  int32 `json:",omitempty"`
	Fired   bool  `json:",omitempty"`
	Lost    bool  `json:",omitempty"`
	Done    bool  `json:",omitempty"`
	Last    uint8 `json:",omitempty"`
	Iter    int32 `json:",omitempty"`
	Started int64 `json:",omitempty"`
	Value   sv
}

type snapMap struct {
	Frame   uint64 // the frame the map step runs in
	Node    graphir.NodeID
	Items   []sv
	Outputs []sv     // nil for items not finished
	Frames  []uint64 // the item frames still running
	Next    int
	Done    int
}

type snapTask struct {
	Frame uint64
	Node  graphir.NodeID
	Seq   uint64
	Decl  int32
}

// quiescent reports whether the run can be suspended now: nothing in
// flight, not in its exit handler, nothing parked, and something left to
// start.
func (r *run) quiescent() bool {
	return r.running == 0 && len(r.slotq) == 0 && !r.exiting && len(r.parked) == 0 && len(r.queue) > 0 && r.ctx.Err() == nil
}

// suspend ends the driver loop with the run's state in a snapshot.
func (r *run) suspend() {
	r.res.Snapshot = r.snapshot()
	r.res.Status = Suspended
	r.over = true
	r.stopExec()
}

// snapshot takes the state of the run at a quiescent point.
func (r *run) snapshot() *Snapshot {
	s := &Snapshot{Version: snapshotVersion, Flow: r.g.File, Nodes: len(r.g.Nodes), Seq: r.seq, FrameOrd: r.frameOrd,
		Reached: r.reached, Stopped: append([]string(nil), r.stopped...), Distinct: r.stoppedDistinct,
		Cause: snapErr(r.cause), Grants: append([]Grant(nil), r.grants...), Tokens: r.opts.budget.Used(), Cost: r.opts.budget.Cost()}
	s.Result = *snapRes(r.res)
	if len(r.path) == r.opts.MaxPath && r.pathNext > 0 {
		s.Path = append(append([]string(nil), r.path[r.pathNext:]...), r.path[:r.pathNext]...)
	} else {
		s.Path = append([]string(nil), r.path...)
	}
	for id, seen := range r.stoppedSeen {
		if seen {
			s.Seen = append(s.Seen, graphir.NodeID(id))
		}
	}
	// The frames: those the queue refers to, their parents, and the
	// running items of their maps; parents first.
	index := map[*frame]bool{}
	maps := map[*mapRun]int{}
	var order []*frame
	var add func(f *frame)
	add = func(f *frame) {
		if f == nil || index[f] {
			return
		}
		add(f.parent)
		if f.m != nil {
			add(f.m.f)
		}
		index[f] = true
		order = append(order, f)
		if m := f.m; m != nil {
			if _, ok := maps[m]; !ok {
				maps[m] = len(maps)
				s.Maps = append(s.Maps, snapMap{})
				for _, x := range m.frames {
					add(x)
				}
			}
		}
	}
	add(r.root)
	for _, t := range r.queue {
		add(t.f)
		s.Queue = append(s.Queue, snapTask{Frame: t.f.ord, Node: t.n.ID, Seq: t.seq, Decl: t.decl})
	}
	for m, i := range maps {
		sm := snapMap{Frame: m.f.ord, Node: m.n.ID, Items: svs(m.items), Outputs: svs(m.outputs), Next: m.next, Done: m.done}
		for _, x := range m.frames {
			sm.Frames = append(sm.Frames, x.ord)
		}
		s.Maps[i] = sm
	}
	for _, f := range order {
		sf := snapFrame{Ord: f.ord, Scope: f.scope, Dead: f.dead, Live: f.live, Iteration: f.iteration,
			Feedback: sv{f.feedback}, History: svs(f.history), Index: f.index, Item: sv{f.item}, Judging: sv{f.judging}}
		if f.parent != nil {
			sf.Parent = f.parent.ord
		}
		if f.m != nil {
			sf.Map = maps[f.m] + 1
		}
		sf.States = make([]snapState, len(f.states))
		for i, st := range f.states {
			sf.States[i] = snapState{Visits: st.visits, Arrived: st.arrived, LiveIn: st.liveIn, Fired: st.fired, Lost: st.lost, Done: st.done,
				Last: st.last, Iter: st.iter, Started: st.started, Value: sv{st.value}}
		}
		s.Frames = append(s.Frames, sf)
	}
	return s
}

func svs(vs []starlark.Value) []sv {
	if vs == nil {
		return nil
	}
	out := make([]sv, len(vs))
	for i, v := range vs {
		out[i] = sv{v}
	}
	return out
}

func values(ss []sv) []starlark.Value {
	if ss == nil {
		return nil
	}
	out := make([]starlark.Value, len(ss))
	for i, s := range ss {
		out[i] = s.v
	}
	return out
}

func snapErr(e *graphir.Error) *snapError {
	if e == nil {
		return nil
	}
	return &snapError{Code: e.Code, Msg: e.Msg, Step: e.Step, Hint: e.Hint, Pos: e.Pos, Trace: e.Trace, Cause: snapErr(e.Cause)}
}

func (e *snapError) error() *graphir.Error {
	if e == nil {
		return nil
	}
	return &graphir.Error{Code: e.Code, Msg: e.Msg, Step: e.Step, Hint: e.Hint, Pos: e.Pos, Trace: e.Trace, Cause: e.Cause.error()}
}

func snapRes(res *Result) *snapResult {
	s := &snapResult{RunID: res.RunID, ResumedFrom: res.ResumedFrom, Flow: res.Flow, File: res.File, Status: res.Status,
		Error: snapErr(res.Error), Output: sv{res.Output}, Started: res.Started, Duration: res.Duration,
		Path: res.Path, PathTotal: res.PathTotal, Pending: res.Pending, Usage: res.Usage, ModelCalls: res.ModelCalls,
		Warnings: res.Warnings, Grants: res.Grants, Findings: res.Findings}
	if res.Inputs != nil {
		s.Inputs = sv{res.Inputs}
	}
	for _, rec := range res.Steps {
		s.Steps = append(s.Steps, *snapRec(rec))
	}
	if res.OnExit != nil {
		s.OnExit = snapRec(res.OnExit)
	}
	return s
}

func snapRec(rec *StepRecord) *snapStep {
	s := &snapStep{Name: rec.Name, Kind: rec.Kind, Status: rec.Status, Visits: rec.Visits, Output: sv{rec.Output},
		Error: rec.Error, Code: rec.Code, Duration: rec.Duration, Truncated: rec.Truncated, Log: rec.Log, Trace: rec.Trace,
		Iterations: rec.Iterations, Exhausted: rec.Exhausted, StoppedReason: rec.StoppedReason, Items: rec.Items,
		Model: rec.Model, Usage: rec.Usage, Answer: rec.Answer, Agent: rec.Agent}
	if rec.Child != nil {
		s.Child = snapRes(rec.Child)
	}
	return s
}

// fill sets rec from its snapshot.
func (s *snapStep) fill(rec *StepRecord) {
	*rec = StepRecord{Name: s.Name, Kind: s.Kind, Status: s.Status, Visits: s.Visits, Output: s.Output.v,
		Error: s.Error, Code: s.Code, Duration: s.Duration, Truncated: s.Truncated, Log: s.Log, Trace: s.Trace,
		Iterations: s.Iterations, Exhausted: s.Exhausted, StoppedReason: s.StoppedReason, Items: s.Items,
		Model: s.Model, Usage: s.Usage, Answer: s.Answer, Agent: s.Agent}
	if s.Child != nil {
		rec.Child = s.Child.result()
	}
}

func (s *snapResult) result() *Result {
	res := &Result{RunID: s.RunID, ResumedFrom: s.ResumedFrom, Flow: s.Flow, File: s.File, Status: s.Status,
		Error: s.Error.error(), Output: s.Output.v, Started: s.Started, Duration: s.Duration, Path: s.Path,
		PathTotal: s.PathTotal, Pending: s.Pending, Usage: s.Usage, ModelCalls: s.ModelCalls, Warnings: s.Warnings,
		Grants: s.Grants, Findings: s.Findings}
	if m, ok := s.Inputs.v.(*stdlib.Map); ok {
		res.Inputs = m
	}
	for i := range s.Steps {
		rec := &StepRecord{}
		s.Steps[i].fill(rec)
		res.Steps = append(res.Steps, rec)
	}
	if s.OnExit != nil {
		res.OnExit = &StepRecord{}
		s.OnExit.fill(res.OnExit)
	}
	return res
}

// Record returns the run's result as it stood when it was suspended: its
// step records, output so far, usage and the path's tail (an engine shows
// it as the record so far of the continued run).
func (s *Snapshot) Record() *Result {
	res := s.Result.result()
	res.Path, res.Status = append([]string(nil), s.Path...), Suspended
	return res
}

// restore puts the state of snapshot s into the fresh run r, whose records
// and root frame are made. s was checked against the program.
func (r *run) restore(s *Snapshot) {
	r.seq, r.frameOrd = s.Seq, s.FrameOrd
	res := r.res
	res.Started, res.Output, res.PathTotal = s.Result.Started, s.Result.Output.v, s.Result.PathTotal
	res.Usage, res.ModelCalls, res.Warnings = s.Result.Usage, s.Result.ModelCalls, s.Result.Warnings
	res.Grants, res.Findings = s.Result.Grants, s.Result.Findings
	for i, rec := range res.Steps {
		s.Result.Steps[i].fill(rec)
	}
	if res.OnExit != nil {
		s.Result.OnExit.fill(res.OnExit)
	}
	r.path = append(r.path[:0], s.Path...)
	r.pathNext = 0
	r.reached, r.stopped, r.stoppedDistinct = s.Reached, s.Stopped, s.Distinct
	if len(s.Seen) > 0 {
		r.stoppedSeen = make([]bool, len(r.g.Nodes))
		for _, id := range s.Seen {
			r.stoppedSeen[id] = true
		}
	}
	r.cause, r.grants = s.Cause.error(), s.Grants
	r.opts.budget.Restore(s.Tokens)
	r.opts.budget.RestoreCost(s.Cost)

	frames := map[uint64]*frame{}
	var withMap []*frame
	for i := range s.Frames {
		sf := &s.Frames[i]
		f := r.root
		if sf.Scope != graphir.None {
			f = r.newFrame(frames[sf.Parent], r.g.Nodes[sf.Scope])
			f.ord = sf.Ord
		}
		frames[sf.Ord] = f
		f.dead, f.live, f.iteration, f.feedback, f.history = sf.Dead, sf.Live, sf.Iteration, sf.Feedback.v, values(sf.History)
		f.index, f.item, f.judging = sf.Index, sf.Item.v, sf.Judging.v
		for j, st := range sf.States {
			f.states[j] = nodeState{visits: st.Visits, arrived: st.Arrived, liveIn: st.LiveIn, fired: st.Fired, lost: st.Lost, done: st.Done,
				last: st.Last, iter: st.Iter, started: st.Started, value: st.Value.v}
		}
		if sf.Map > 0 {
			withMap = append(withMap, f)
		}
	}
	r.frameOrd = s.FrameOrd // newFrame counted
	maps := make([]*mapRun, len(s.Maps))
	for i, sm := range s.Maps {
		m := &mapRun{f: frames[sm.Frame], n: r.g.Nodes[sm.Node], items: values(sm.Items), outputs: values(sm.Outputs), next: sm.Next, done: sm.Done}
		for _, ord := range sm.Frames {
			m.frames = append(m.frames, frames[ord])
		}
		maps[i] = m
	}
	for _, f := range withMap {
		for i := range s.Frames {
			if s.Frames[i].Ord == f.ord {
				f.m = maps[s.Frames[i].Map-1]
			}
		}
	}
	all := make([]*frame, 0, len(frames))
	for i := range s.Frames {
		all = append(all, frames[s.Frames[i].Ord])
	}
	r.rearmBodies(all)
	r.queue = r.queue[:0]
	for _, t := range s.Queue {
		r.queue = append(r.queue, task{f: frames[t.Frame], n: r.g.Nodes[t.Node], seq: t.Seq, decl: t.Decl})
	}
}

// Encode returns the snapshot as compressed JSON, for [Program.DecodeSnapshot].
func (s *Snapshot) Encode() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %v", err)
	}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	w.Write(b)
	if err := w.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

// DecodeSnapshot decodes a snapshot [Snapshot.Encode] made of a run of p
// and checks that it fits p, so that restoring it cannot go wrong.
func (p *Program) DecodeSnapshot(b []byte) (*Snapshot, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %v", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxSnapshot+1))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %v", err)
	}
	if len(raw) > maxSnapshot {
		return nil, fmt.Errorf("snapshot: more than %d bytes", maxSnapshot)
	}
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("snapshot: %v", err)
	}
	if err := p.check(&s); err != nil {
		return nil, fmt.Errorf("snapshot of flow %s: %v", s.Flow, err)
	}
	return &s, nil
}

// check reports how snapshot s does not fit p.
func (p *Program) check(s *Snapshot) error {
	g := p.g
	switch {
	case s.Version != snapshotVersion:
		return fmt.Errorf("version %d, want %d", s.Version, snapshotVersion)
	case s.Flow != g.File || s.Nodes != len(g.Nodes):
		return fmt.Errorf("taken of another flow than %s", g.File)
	}
	node := func(id graphir.NodeID) bool { return id >= 0 && int(id) < len(g.Nodes) }
	var names []string
	for _, n := range g.Steps() {
		if n.ID != g.OnExit {
			names = append(names, n.Name)
		}
	}
	if (g.OnExit != graphir.None) != (s.Result.OnExit != nil) {
		return errors.New("the exit handler's record does not fit")
	}
	if len(s.Result.Steps) != len(names) {
		return fmt.Errorf("%d step records, want %d", len(s.Result.Steps), len(names))
	}
	for i, name := range names {
		if s.Result.Steps[i].Name != name {
			return fmt.Errorf("step record %d is of %q, want %q", i, s.Result.Steps[i].Name, name)
		}
	}
	for _, id := range s.Seen {
		if !node(id) {
			return fmt.Errorf("no node %d", id)
		}
	}
	scopes := map[uint64]graphir.NodeID{}
	for i, f := range s.Frames {
		if i == 0 {
			if f.Scope != graphir.None {
				return errors.New("the first frame is not the root")
			}
		} else {
			if !node(f.Scope) || !g.Nodes[f.Scope].HasBody() {
				return fmt.Errorf("frame %d: no loop or map %d", f.Ord, f.Scope)
			}
			ps, ok := scopes[f.Parent]
			if !ok || g.Nodes[f.Scope].Parent != ps {
				return fmt.Errorf("frame %d: parent %d is not the frame its loop or map runs in", f.Ord, f.Parent)
			}
		}
		if _, dup := scopes[f.Ord]; dup {
			return fmt.Errorf("frame %d appears twice", f.Ord)
		}
		if f.Ord > s.FrameOrd {
			return fmt.Errorf("frame %d is newer than the frame count %d", f.Ord, s.FrameOrd)
		}
		scopes[f.Ord] = f.Scope
		if len(f.States) != len(p.scopes[f.Scope]) {
			return fmt.Errorf("frame %d: %d step states, want %d", f.Ord, len(f.States), len(p.scopes[f.Scope]))
		}
		if f.Map < 0 || f.Map > len(s.Maps) || (f.Map > 0) != (f.Scope != graphir.None && g.Nodes[f.Scope].Kind == graphir.KindMap) {
			return fmt.Errorf("frame %d: bad map %d", f.Ord, f.Map)
		}
	}
	for _, f := range s.Frames {
		switch {
		case f.Map > 0 && s.Maps[f.Map-1].Node != f.Scope:
			return fmt.Errorf("frame %d: its map %d is of another step", f.Ord, f.Map)
		case f.Map > 0 && (f.Index < 0 || f.Index >= len(s.Maps[f.Map-1].Items)):
			return fmt.Errorf("frame %d: item %d of %d", f.Ord, f.Index, len(s.Maps[f.Map-1].Items))
		case f.Scope != graphir.None && g.Nodes[f.Scope].Kind == graphir.KindLoop && f.Iteration < 1:
			return fmt.Errorf("frame %d: iteration %d", f.Ord, f.Iteration)
		}
	}
	for i, m := range s.Maps {
		sc, ok := scopes[m.Frame]
		if !ok || !node(m.Node) || g.Nodes[m.Node].Kind != graphir.KindMap || g.Nodes[m.Node].Parent != sc {
			return fmt.Errorf("map %d: no map %d in frame %d", i, m.Node, m.Frame)
		}
		if len(m.Outputs) != len(m.Items) || m.Next < 0 || m.Next > len(m.Items) || m.Done < 0 || m.Done > m.Next {
			return fmt.Errorf("map %d: bad progress", i)
		}
		for _, ord := range m.Frames {
			if scopes[ord] != m.Node {
				return fmt.Errorf("map %d: frame %d is not one of its items", i, ord)
			}
		}
	}
	for _, t := range s.Queue {
		sc, ok := scopes[t.Frame]
		if !ok || !node(t.Node) || !g.Nodes[t.Node].IsStep() || g.Nodes[t.Node].Parent != sc {
			return fmt.Errorf("queued step %d is not in frame %d", t.Node, t.Frame)
		}
	}
	return nil
}

// sv is a flow value in a snapshot, in the typed form of
// [stdlib.AppendTaggedJSON] (which keeps tuples, and Go's nil, apart).
type sv struct{ v starlark.Value }

func (s sv) MarshalJSON() ([]byte, error) { return stdlib.AppendTaggedJSON(nil, s.v) }

func (s *sv) UnmarshalJSON(b []byte) error {
	v, err := stdlib.FromTaggedJSON(b)
	s.v = v
	return err
}
