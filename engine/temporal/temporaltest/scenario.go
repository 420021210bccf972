// Package temporaltest holds what the Temporal engine's tests share across
// modules: the scenario table both engines must agree on, kept as txtar
// files under engine/temporal/testdata/scenarios so the SDK-testsuite
// tests (package temporal) and the real-server tests (the servertest
// module) run the same flows.
//
// A scenario file is a txtar archive: its comment's first line is the
// scenario's name, the lines after it options, one "key: value" a line:
//
//	inputs: {"label": "ham"}   the run's inputs, a JSON object
//	parallel: 4                the run's --parallel (default 1)
//	all-sources                send every file of the archive as a source
//	                           (for templated child flow paths)
//	decide: {"step": "gate", "values": {"version": "1.2"}, "by": "ann"}
//	                           a person's decision on the next approval the
//	                           run waits for at that step (an approve= step,
//	                           or a tool with approve= by the tool's name),
//	                           one line per decision, in order; "reject":
//	                           true rejects, "reason" says why
//	store                      run locally with a run store, as the server
//	                           suite's scripted runs do (an approval nobody
//	                           decides is then held open while other steps
//	                           run, as on Temporal)
//	cancel: started            cancel the run (skein cancel) once the file
//	                           named exists in the run's directory (a task
//	                           of the flow makes it)
//	fork: {"set": {"score": 42}}
//	fork: {"from": "score"}    once the run ends, fork it (skein resume
//	                           RUN --set / --from), one line per fork, each
//	                           of the first run; every fork must name the
//	                           run in resumed_from and call no model again
//	                           upstream of what it runs again; "output"
//	                           says the fork's output
//
// Its files are flow.star, the flow run, and the files it uses. A flow
// that calls models declares model(provider = "stub", answers = [...]):
// the offline stub model answers the same on both engines.
package temporaltest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// Scenario is one flow run on both engines.
type Scenario struct {
	Name string
	// Files holds flow.star and the files it uses, by slash path.
	Files map[string]string
	// Inputs are the run's inputs, as JSON values by name.
	Inputs map[string]json.RawMessage
	// Parallel is the run's parallelism; 0 means 1.
	Parallel int
	// AllSources sends every file as a source (templated child flows).
	AllSources bool
	// Decisions are a person's decisions on the run's approvals, in the
	// order the run asks for them.
	Decisions []Decision
	// CancelWhen, when set, names a file: the run is cancelled once it
	// exists in the run's directory.
	CancelWhen string
	// Store runs the scenario locally with a run store.
	Store bool
	// Forks are forks of the run once it ended, each of the first run.
	Forks []Fork
}

// Fork is a fork of a scenario's run: skein resume RUN --from From
// --set STEP=VALUE.
type Fork struct {
	From string                     `json:"from"`
	Set  map[string]json.RawMessage `json:"set"`
	// Output, when set, is the fork's output on both engines.
	Output any `json:"output"`
}

// Scripted reports whether a person acts in the scenario, or it needs a
// run store locally: the server suite then drives both runs step by step
// (skein approve, skein cancel, skein resume) instead of one skein run.
func (sc *Scenario) Scripted() bool {
	return len(sc.Decisions) > 0 || sc.CancelWhen != "" || sc.Store
}

// Decision is a person's decision on an approval the run waits for.
type Decision struct {
	// Step is the approval step, or a tool with approve= (by its name).
	Step   string         `json:"step"`
	Reject bool           `json:"reject"`
	By     string         `json:"by"`
	Reason string         `json:"reason"`
	Values map[string]any `json:"values"`
}

// Load reads every scenario file (*.txtar) in dir, sorted by file name.
func Load(dir string) ([]Scenario, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no scenario files (*.txtar) in %s", dir)
	}
	sort.Strings(names)
	var out []Scenario
	for _, name := range names {
		sc, err := parse(name)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

func parse(file string) (Scenario, error) {
	a, err := txtar.ParseFile(file)
	if err != nil {
		return Scenario{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(a.Comment)), "\n")
	sc := Scenario{Name: strings.TrimSpace(lines[0]), Files: map[string]string{}}
	if sc.Name == "" {
		return Scenario{}, fmt.Errorf("%s:1: the first line names the scenario", file)
	}
	for i, line := range lines[1:] {
		key, val, _ := strings.Cut(line, ":")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		pos := fmt.Sprintf("%s:%d", file, i+2)
		switch key {
		case "inputs":
			if err := json.Unmarshal([]byte(val), &sc.Inputs); err != nil {
				return Scenario{}, fmt.Errorf("%s: inputs: %v", pos, err)
			}
		case "parallel":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return Scenario{}, fmt.Errorf("%s: parallel: want a positive integer, got %q", pos, val)
			}
			sc.Parallel = n
		case "all-sources":
			sc.AllSources = true
		case "store":
			sc.Store = true
		case "decide":
			var d Decision
			dec := json.NewDecoder(strings.NewReader(val))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&d); err != nil || d.Step == "" {
				return Scenario{}, fmt.Errorf("%s: decide: want a JSON object with step and optionally reject, by, reason, values (%v)", pos, err)
			}
			sc.Decisions = append(sc.Decisions, d)
		case "cancel":
			if val == "" || strings.ContainsAny(val, "/\\") {
				return Scenario{}, fmt.Errorf("%s: cancel: want the name of a file in the run's directory, got %q", pos, val)
			}
			sc.CancelWhen = val
		case "fork":
			var f Fork
			dec := json.NewDecoder(strings.NewReader(val))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&f); err != nil || f.From == "" && len(f.Set) == 0 {
				return Scenario{}, fmt.Errorf("%s: fork: want a JSON object with from, set or both, and optionally output (%v)", pos, err)
			}
			sc.Forks = append(sc.Forks, f)
		case "":
		default:
			return Scenario{}, fmt.Errorf("%s: unknown option %q; want inputs, parallel, all-sources, store, decide, cancel or fork", pos, key)
		}
	}
	for _, f := range a.Files {
		sc.Files[f.Name] = string(f.Data)
	}
	if _, ok := sc.Files["flow.star"]; !ok {
		return Scenario{}, fmt.Errorf("%s: no flow.star in the archive", file)
	}
	return sc, nil
}

// Write writes the scenario's files under dir and returns the path of its
// flow.star.
func (sc *Scenario) Write(dir string) (string, error) {
	for name, src := range sc.Files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "flow.star"), nil
}

// ParallelOrOne is the scenario's parallelism, 1 when unset.
func (sc *Scenario) ParallelOrOne() int {
	if sc.Parallel == 0 {
		return 1
	}
	return sc.Parallel
}
