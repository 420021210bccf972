package temporal

// This file is what a running workflow tells those who ask (queries,
// which read and never change it): its recent events, for a client to
// show progress as a local run does; the record so far, for skein show;
// its approvals. The workflow code builds it as the run goes, from the
// VM's events, deterministically; queries only read it.

import (
	"encoding/json"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.temporal.io/sdk/workflow"

	"github.com/skeinlang/skein/graphir/codes"
	"github.com/skeinlang/skein/vm"
)

// Queries a run answers besides [ApprovalsQuery].
const (
	// EventsQuery answers an [EventsPage]: the entries of the run's event
	// log after a sequence number (its argument, an int).
	EventsQuery = "skein.events"
	// StatusQuery answers the run's result object so far (as skein show
	// --json prints it for a run still going).
	StatusQuery = "skein.status"
)

// The event log keeps at most this many entries (a client that falls
// further behind is told how many it missed); a page answered to a query
// holds at most maxPageBytes of them (and one at least). Events are kept
// as the VM gave them (their outputs are the step records' own values)
// and encoded when asked for.
const (
	maxLogEntries = 10000
	maxPageBytes  = 1 << 20
)

// Entry is one entry of a run's event log: an event of the VM (in the
// --events format), a child workflow started (its id: its own log has its
// events), an approval that began to wait, or the output of a task
// attempt that failed (which a retry's event does not carry).
type Entry struct {
	Seq      int
	Event    json.RawMessage `json:",omitempty"`
	Child    *ChildRun       `json:",omitempty"`
	Approval *Approval       `json:",omitempty"`
	Failed   *FailedAttempt  `json:",omitempty"`
}

// FailedAttempt is what a task or shell attempt that failed printed, for
// skein logs: the step's step_finished event has the output of its last
// attempt only.
type FailedAttempt struct {
	Flow    []string `json:",omitempty"`
	Scope   []string `json:",omitempty"`
	Step    string
	Visit   int
	Attempt int
	Stdout  string `json:",omitempty"`
	Stderr  string `json:",omitempty"`
}

// Where is the attempt's place as events name it ("kid › per_file[2] ›
// lint").
func (a *FailedAttempt) Where() string {
	return strings.Join(append(append(append([]string{}, a.Flow...), a.Scope...), a.Step), " › ")
}

// ChildRun is a child workflow a child-flow step started.
type ChildRun struct {
	ID    string
	Step  string
	Scope []string `json:",omitempty"`
	Visit int
}

// EventsPage answers [EventsQuery].
type EventsPage struct {
	// Run is the workflow run this log belongs to (a workflow continued
	// as new starts a new log).
	Run string
	// First is the sequence number of the oldest entry kept; entries
	// between the one asked after and First were dropped.
	First int
	// Next is the sequence number after the last entry of the page.
	Next    int
	Entries []Entry
	// More: the page stopped at its size bound; ask again from Next.
	More bool `json:",omitempty"`
}

// state is what the workflow keeps for queries and signals.
type state struct {
	runID, flow, file string
	onExit            string // the exit handler's step, "" for none
	run               string // the workflow run id

	maxLog int // entries the log keeps
	log    []logEntry
	next   int // sequence number of the next entry

	approvals Approvals
	signals   workflow.ReceiveChannel

	// The record so far, folded from the events.
	status string
	steps  []*liveStep
	byName map[string]*liveStep
	path   []string
	paths  int

	resumedFrom string // a fork's: the run it forked

	// The journal of the effects completed (fork.go).
	journal []JournalEntry
	done    int64  // completions journaled, child flows' included
	lost    string // why the journal is not whole ("": it is)
}

// logEntry is an entry of the log as kept: an event not yet encoded.
type logEntry struct {
	ev       *vm.Event
	child    *ChildRun
	approval *Approval
	failed   *FailedAttempt
}

type liveStep struct {
	name     string
	status   vm.StepStatus
	visits   int
	output   starlark.Value
	err      string
	code     codes.Code
	duration time.Duration
}

// maxLivePath bounds the path the record so far keeps (the latest).
const maxLivePath = 1000

func newState(ctx workflow.Context, flow, file, onExit string, maxLog int, c *Carried) *state {
	info := workflow.GetInfo(ctx)
	if maxLog <= 0 {
		maxLog = maxLogEntries
	}
	s := &state{runID: info.WorkflowExecution.ID, run: info.WorkflowExecution.RunID, flow: flow, file: file, onExit: onExit,
		maxLog: maxLog, status: "running", byName: map[string]*liveStep{}}
	if c != nil {
		s.next, s.path, s.paths = c.Seq, c.Path, c.Paths
		s.journal, s.done, s.lost = c.Journal, c.Done, c.JournalLost
		s.approvals.Approvals, s.approvals.Refused = c.Approvals, c.Refused
		for _, cs := range c.Steps {
			st := s.step(cs.Name)
			st.status, st.visits, st.err, st.code, st.duration = cs.Status, cs.Visits, cs.Error, cs.Code, cs.Duration
		}
	}
	return s
}

// Carried is what a run's queries answer from that continue-as-new
// carries to the next execution: the log's sequence number, the approvals
// (all decided by then) and refused decisions, and the record so far
// without its outputs (the run's snapshot has those).
type Carried struct {
	Seq       int           `json:",omitempty"`
	Approvals []*Approval   `json:",omitempty"`
	Refused   []Refusal     `json:",omitempty"`
	Steps     []CarriedStep `json:",omitempty"`
	Path      []string      `json:",omitempty"`
	Paths     int           `json:",omitempty"`
	// The journal (fork.go), and why it is not whole.
	Journal     []JournalEntry `json:",omitempty"`
	Done        int64          `json:",omitempty"`
	JournalLost string         `json:",omitempty"`
}

// CarriedStep is a step of the record so far, without its output.
type CarriedStep struct {
	Name     string
	Status   vm.StepStatus
	Visits   int           `json:",omitempty"`
	Error    string        `json:",omitempty"`
	Code     codes.Code    `json:",omitempty"`
	Duration time.Duration `json:",omitempty"`
}

// maxCarried bounds the approvals carried.
const maxCarried = 100

// carry is what the next execution takes over.
func (s *state) carry() *Carried {
	c := &Carried{Seq: s.next, Refused: s.approvals.Refused, Paths: s.paths,
		Path: s.path[max(len(s.path)-maxLivePath, 0):], Journal: s.journal, Done: s.done, JournalLost: s.lost}
	as := s.approvals.Approvals
	c.Approvals = as[max(len(as)-maxCarried, 0):]
	for _, st := range s.steps {
		c.Steps = append(c.Steps, CarriedStep{Name: st.name, Status: st.status, Visits: st.visits, Error: st.err, Code: st.code, Duration: st.duration})
	}
	return c
}

// seed starts the record so far of an execution that continued as new
// from where the execution before left it.
func (s *state) seed(res *vm.Result) {
	for _, rec := range res.Steps {
		if rec.Status == vm.StepNotRun {
			continue
		}
		st := s.step(rec.Name)
		st.status, st.visits, st.output, st.err, st.code, st.duration = rec.Status, rec.Visits, rec.Output, rec.Error, rec.Code, rec.Duration
	}
	s.path = append(s.path[:0], res.Path[max(len(res.Path)-maxLivePath, 0):]...)
	s.paths = res.PathTotal
}

// register answers the queries and receives the signals of the run.
func (s *state) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, EventsQuery, s.page); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, ApprovalsQuery, func() (*Approvals, error) { return &s.approvals, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, StatusQuery, func() (json.RawMessage, error) { return s.record() }); err != nil {
		return err
	}
	s.receiveDecisions(ctx)
	return nil
}

// add appends an entry to the log, dropping the oldest beyond its bound.
func (s *state) add(e logEntry) {
	s.next++
	if len(s.log) == s.maxLog {
		// Drop the older half at once: a copy per maxLog/2 entries.
		s.log = append(s.log[:0], s.log[len(s.log)/2:]...)
	}
	s.log = append(s.log, e)
}

// event is the VM's OnEvent: the event goes to the log and into the
// record so far. The log keeps a copy: the VM reuses ev.
func (s *state) event(ev *vm.Event) {
	kept := *ev
	s.add(logEntry{ev: &kept})
	switch ev.Type {
	case vm.StepStarted:
		st := s.step(ev.Step)
		// Visits over all frames, as the result counts them (ev.Visit
		// counts those of the step's loop iteration or map item).
		st.status, st.err, st.code = vm.StepRunning, "", ""
		st.visits++
		if len(ev.Scope) == 0 && ev.Step == s.onExit {
			break // the exit handler is not on the run's path
		}
		if s.paths++; len(s.path) == 2*maxLivePath {
			s.path = append(s.path[:0], s.path[maxLivePath:]...)
		}
		s.path = append(s.path, pathName(ev))
	case vm.StepFinished:
		st := s.step(ev.Step)
		st.status, st.output, st.err, st.code, st.duration = vm.StepStatus(ev.Status), ev.Output, ev.Error, ev.Code, ev.Duration
	case vm.StepPruned:
		if st := s.step(ev.Step); st.status == "" {
			st.status = vm.StepSkipped
		}
	case vm.RunFinished:
		s.status = ev.Status
	}
}

// pathName is how the step an event names appears in the run's path, as
// in its result: after its scope inside loops and maps
// ("per_file[2].count", "polish#3.draft").
func pathName(ev *vm.Event) string {
	if len(ev.Scope) == 0 {
		return ev.Step
	}
	return strings.Join(ev.Scope, ".") + "." + ev.Step
}

func (s *state) step(name string) *liveStep {
	st := s.byName[name]
	if st == nil {
		st = &liveStep{name: name}
		s.byName[name] = st
		s.steps = append(s.steps, st)
	}
	return st
}

// asked records an approval that begins to wait.
func (s *state) asked(a *Approval) {
	s.approvals.Approvals = append(s.approvals.Approvals, a)
	s.add(logEntry{approval: a})
}

// attemptFailed records the output of a task attempt that failed.
func (s *state) attemptFailed(a *FailedAttempt) { s.add(logEntry{failed: a}) }

// childStarted records a child workflow started, whose events are in its
// own log; childEnded one that ended.
func (s *state) childStarted(c *ChildRun) {
	s.approvals.Children = append(s.approvals.Children, c.ID)
	s.add(logEntry{child: c})
}

func (s *state) childEnded(id string) {
	for i, c := range s.approvals.Children {
		if c == id {
			s.approvals.Children = append(s.approvals.Children[:i], s.approvals.Children[i+1:]...)
			return
		}
	}
}

// page answers EventsQuery: the entries after seq after.
func (s *state) page(after int) (*EventsPage, error) {
	first := s.next - len(s.log)
	p := &EventsPage{Run: s.run, First: first, Next: s.next}
	size := 0
	var enc vm.EventEncoder
	for i := max(after-first, 0); i < len(s.log); i++ {
		e := Entry{Seq: first + i, Child: s.log[i].child, Approval: s.log[i].approval, Failed: s.log[i].failed}
		if f := e.Failed; f != nil {
			size += len(f.Stdout) + len(f.Stderr)
		}
		if ev := s.log[i].ev; ev != nil {
			e.Event = enc.Append(nil, ev)
		}
		if size += 64 + len(e.Event); size > maxPageBytes && len(p.Entries) > 0 {
			p.Next, p.More = e.Seq, true
			break
		}
		p.Entries = append(p.Entries, e)
	}
	return p, nil
}

// record is the run's result object so far: the run, the path, each step
// as its latest event left it, and the approvals waiting.
func (s *state) record() (json.RawMessage, error) {
	res := &vm.Result{RunID: s.runID, ResumedFrom: s.resumedFrom, Flow: s.flow, File: s.file, Status: vm.Status(s.status),
		Path: append([]string{}, s.path[max(len(s.path)-maxLivePath, 0):]...), PathTotal: s.paths}
	for _, a := range s.approvals.Waiting() {
		res.Pending = append(res.Pending, &vm.Pending{Step: a.Step, Flow: a.Flow, Scope: a.Scope, Visit: a.Visit, Message: a.Message})
	}
	for _, st := range s.steps {
		res.Steps = append(res.Steps, &vm.StepRecord{Name: st.name, Status: st.status, Visits: st.visits,
			Output: st.output, Error: st.err, Code: st.code, Duration: st.duration})
	}
	return res.AppendSoFar(nil, "", true)
}
