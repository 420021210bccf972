package runs

// This file defines the seam to an engine that runs flows somewhere other
// than this process (a Temporal cluster's workers): what a front end asks
// of one ([Engine]), the shapes both engines answer in, and how a build
// links one in ([RegisterEngine]). The two engines keep different records
// (the store's journal against an engine's own history); what a front end
// shows of a run comes back as the same types from either: a run as
// [store.Run], a decision as [Approved], a cancel as [Cancelled], a result
// as [vm.Result].

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/model"
	"github.com/skeinlang/skein/vm/store"
)

// Engine runs flows elsewhere and keeps their records there. A [Service]
// with an Engine decides and cancels runs through it ([Service.Approve],
// [Service.Cancel]); what has no counterpart on a store (following a run
// from another machine, serving as a worker) a front end asks the Engine.
type Engine interface {
	// Find finds the run ref names (an id, a unique prefix of one, or
	// "last"): its ID, Status, File and times.
	Find(ctx context.Context, ref string) (*store.Run, error)
	// Start starts a run of spec (its Graph, Inputs, Sources and Options;
	// Models, Effects and Ask are this process's and are not used) and
	// returns it once the engine has it.
	Start(ctx context.Context, spec *Spec) (Remote, error)
	// Approve sends decision d for the approval step names ("" for the
	// one the run waits for) of the run ref names, as [Service.Approve].
	Approve(ctx context.Context, ref, step string, d Decision) (*Approved, error)
	// Fork starts a new run from the run spec.Ref names, as
	// [Service.Resume] does with From or Set (a what-if): what ran
	// before the step is answered from the record the engine keeps of
	// the run, with no task or model call made again, and the new run
	// names the old one in its resumed_from.
	Fork(ctx context.Context, spec *ForkSpec) (Remote, error)
	// Cancel asks the run ref names to cancel, as [Service.Cancel] does a
	// running run (the result's Requested is true).
	Cancel(ctx context.Context, ref string, spec CancelSpec) (*Cancelled, error)
	// List lists the runs, newest first, as the store's records; cut,
	// when not "", says that older runs were not read.
	List(ctx context.Context, f store.Filter) (list []*store.Run, cut string, err error)
	// Summary is the run ref names: its result object (for a run still
	// going, its record so far).
	Summary(ctx context.Context, ref string) (*Summary, error)
	// Approvals are the approvals of run id, and the decisions it refused.
	Approvals(ctx context.Context, id string) (*EngineApprovals, error)
	// Logs gives h what the task and shell steps of the run ref names
	// printed (of step only, unless ""), in the order they ended; with
	// follow, until the run ends or ctx is done. A step that never ran
	// is a [*NoStepError].
	Logs(ctx context.Context, ref, step string, follow bool, h *LogHooks) error
	// Serve serves the engine's runs from this machine until ctx is done.
	Serve(ctx context.Context, w *Worker) error
	// Close closes the connection.
	Close()
}

// Conn is how to reach an engine.
type Conn struct {
	Address, Namespace string
	// TaskQueue is where its runs start and its workers serve.
	TaskQueue string
	// Log receives the engine's client log (nil: discarded).
	Log *slog.Logger
}

// Dialer connects to an engine.
type Dialer func(ctx context.Context, c Conn) (Engine, error)

var (
	enginesMu sync.Mutex
	engines   = map[string]Dialer{}
)

// RegisterEngine makes the engine name available to [DialEngine]: an
// engine's package does it as it is linked in.
func RegisterEngine(name string, dial Dialer) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	engines[name] = dial
}

// HasEngine reports whether the engine name is linked in.
func HasEngine(name string) bool {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	return engines[name] != nil
}

// ErrNoEngine is [DialEngine]'s error for an engine that is not linked in.
var ErrNoEngine = errors.New("engine not linked in")

// DialEngine connects to the engine name.
func DialEngine(ctx context.Context, name string, c Conn) (Engine, error) {
	enginesMu.Lock()
	dial := engines[name]
	enginesMu.Unlock()
	if dial == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoEngine, name)
	}
	return dial(ctx, c)
}

// ForkSpec is what [Engine.Fork] forks, and how: Ref, From and Set are
// as in [ResumeSpec] (the values replace those of a fork being forked
// again; without Set, its values are kept).
type ForkSpec struct {
	Ref  string
	From string
	Set  map[string]json.RawMessage
}

// Remote is a run an [Engine] started.
type Remote interface {
	// ID is the run's id.
	ID() string
	// Unserved reports that no worker serves the run yet: it waits until
	// one does.
	Unserved() bool
	// Follow follows the run to its end, giving h what it sees. When ctx
	// is done the run is asked to cancel, and followed on; when exitCtx
	// is done, Follow stops following and returns [ErrStopped], the run
	// going on without it.
	Follow(ctx, exitCtx context.Context, h *Follow) (*Ended, error)
}

// ErrStopped is [Remote.Follow]'s error when it stopped following.
var ErrStopped = errors.New("stopped following the run")

// Follow is what a front end wants to hear of a run it follows on an
// engine.
type Follow struct {
	// OnEvent receives each event, in the --events format and decoded.
	OnEvent func(raw json.RawMessage, ev *vm.Event)
	// OnWaiting receives each approval that begins to wait.
	OnWaiting func(*Waiting)
	// OnDropped is told how many events of where (the run, or a child
	// flow's) the engine no longer had.
	OnDropped func(where string, n int)
	// OnCancelFailed is told why the cancel asked for failed.
	OnCancelFailed func(error)
}

// Waiting is an approval a run on an engine waits for.
type Waiting struct {
	Step    string
	Where   string // its place, as [Place] writes it
	Message string
	// Deadline is when it times out (zero: never).
	Deadline time.Time
}

// Ended is how a run followed on an engine ended.
type Ended struct {
	Status vm.Status
	// Result is the result object, as `skein run --json` prints it.
	Result json.RawMessage
}

// Summary is a run on an engine, as the engine has it.
type Summary struct {
	// ID is the run's id.
	ID string
	// Result is its result object (for a run still going, the steps as
	// their latest events left them), and JSON the same as the engine
	// encoded it.
	Result *vm.Result
	JSON   json.RawMessage
	// File is the flow file's absolute path on the machine that started
	// the run ("": the run does not say).
	File           string
	Started, Ended time.Time
}

// EngineApprovals are the approvals of a run on an engine.
type EngineApprovals struct {
	Approvals []*EngineApproval
	Refused   []Refusal
}

// EngineApproval is one approval a run on an engine asked for.
type EngineApproval struct {
	Step, Where string
	Visit       int
	// Waiting says it waits for a decision, since Requested; else
	// Outcome says what became of it, for people.
	Waiting   bool
	Requested time.Time
	Outcome   string
}

// Refusal is a decision a run refused, and why.
type Refusal struct {
	At      time.Time
	By, Why string
}

// LogHooks receive what [Engine.Logs] and [Service.Logs] read.
type LogHooks struct {
	// OnLog receives what one attempt of a task printed.
	OnLog func(*Log)
	// OnLive receives, piece by piece, an attempt still running that
	// [Service.Logs] follows (an engine gives each attempt once it has
	// ended, to OnLog).
	OnLive func(*LiveOutput)
	// OnDropped is told how many events of where the engine no longer
	// had.
	OnDropped func(where string, n int)
}

// Log is what one attempt of a task or shell step printed.
type Log struct {
	Where          string // the step's place, as [Place] writes it
	Visit, Attempt int
	Status, Error  string
	Stdout, Stderr string
}

// NoStepError is the error for logs asked of a step that never ran.
type NoStepError struct {
	Run, Step string
	// Steps are the task and shell steps that ran.
	Steps []string
}

func (e *NoStepError) Error() string {
	return fmt.Sprintf("run %s has no task or shell step %q that ran", e.Run, e.Step) + spell.Suggest(e.Step, e.Steps)
}

// Worker is how a machine serves an engine's runs.
type Worker struct {
	// Dir is where the flows' files are kept ("": the paths as given).
	Dir string
	// Parallel bounds the effects running at once.
	Parallel int
	// Models answers model calls (nil: the VM's own client).
	Models model.Provider
	// Started is called once the worker serves.
	Started func()
}

// UsageError is an engine's error for what it was asked that cannot be
// (inputs it cannot carry): a mistake of the asker's, not a failure of
// the engine's.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
