// Command harness runs Skein's peer benchmarks next to the same workloads in
// LangGraph.js and XState and writes bench/RESULTS.md. It is what
// `make bench-peers` runs; see bench/README.md.
//
// Steps: `npm ci` in bench/peers (pinned versions, package-lock.json), then
// `go test -run '^$' -bench '^(BenchmarkPeerLoop10k|...)$' -count 5 -benchmem ./vm/ ./lang/`
// (the workloads' benchmarks; median of the five counts), then each peer script under
// bench/peers/<engine>/<workload>.mjs (warm-up runs, then at least five timed
// runs; each prints one JSON line with the median). A missing Skein benchmark shows as "n/a"; a
// failing peer script shows as "failed" and makes the command exit 1 after
// the results are written.
//
// Standard library only, so a fresh machine needs nothing but Go, node and npm.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

type workload struct {
	name      string
	unit      string  // what one of `units` is, for the per-unit table
	units     float64 // units per op
	bench     string  // Skein benchmark name
	pkg       string  // Go package holding it
	skeinDesc string  // what the Skein benchmark measures
	// perUnit: the benchmark's op is one unit (a loop iteration of a run
	// of b.N iterations), and the figures are scaled to units per op.
	perUnit bool
}

var workloads = []workload{
	{"loop10k", "iteration", 10_000, "BenchmarkPeerLoop10k", "vm",
		"one run of a flow whose draft -> critique loop (two fn steps; the back-edge has the Starlark condition " +
			"`when = \"critique < inputs.n\"`) runs 10,000 iterations, `Parallel: 1`; the flow is loaded and prepared once, outside timing", false},
	{"loopdict10k", "iteration", 10_000, "BenchmarkLoopIterationDict", "vm",
		"loop10k as flows are written: the fn steps return small dicts (`{\"n\": r.visits(\"draft\")}`, `{\"ok\": r.draft.n >= r.inputs.n}`) " +
			"and the edges test `critique.ok`; the benchmark's op is one iteration of a run of b.N iterations, `Parallel: 1`, shown here times 10,000", true},
	{"chain1k", "node", 1_000, "BenchmarkPeerChain1k", "vm",
		"one run of a flow that is a chain of 1,000 fn steps (each returns a constant), `Parallel: 1`; loaded once, outside timing", false},
	{"fanout1k", "branch", 1_000, "BenchmarkPeerFanout1k", "vm",
		"one run of a flow: one fn source step -> 1,000 fn branch steps -> one fn step with the default AND-join, `Parallel: 1`; loaded once, outside timing", false},
	{"build10k", "node", 10_000, "BenchmarkPeerBuild10k", "lang",
		"lang.LoadSource (Starlark execution of the generated source text, whose builtin calls record the graph; freeze) + check.Graph " +
			"of a 10,000-step flow: a chain of task steps with `{{ }}` templates, plus a conditional edge into every tenth step and a bounded back-edge", false},
}

var engines = []struct{ id, title string }{
	{"langgraph", "LangGraph.js"},
	{"xstate", "XState"},
}

// pinned packages, in the order they are reported.
var pinned = []string{"@langchain/langgraph", "@langchain/core", "xstate"}

type result struct {
	ns       float64   // median ns per op; NaN when missing
	runs     []float64 // every timed run / count, ns
	bytes    float64   // Skein only: median B/op (NaN if not reported)
	allocs   float64   // Skein only: median allocs/op
	warmups  int       // peer only: warm-up runs before the timed ones
	measures string    // peer only: the script's own description
	err      string    // why the figure is missing
}

func missing(why string) result {
	return result{ns: math.NaN(), bytes: math.NaN(), allocs: math.NaN(), err: why}
}

func main() {
	goCmd := flag.String("go", "go", "go command used for the Skein benchmarks")
	runs := flag.Int("runs", 5, "timed runs per peer script and -count for go test (minimum 5)")
	skipInstall := flag.Bool("skip-install", false, "do not run npm ci (node_modules must already be installed)")
	only := flag.String("workloads", "", "comma-separated subset of workloads to run (default: all)")
	out := flag.String("out", "bench/RESULTS.md", "results file, relative to the repository root")
	flag.Parse()
	if *runs < 5 {
		*runs = 5
	}

	root, err := repoRoot()
	if err != nil {
		fatal(err)
	}
	peers := filepath.Join(root, "bench", "peers")
	selected := workloads
	if *only != "" {
		selected = nil
		for _, name := range strings.Split(*only, ",") {
			w, ok := findWorkload(strings.TrimSpace(name))
			if !ok {
				fatal(fmt.Errorf("unknown workload %q", name))
			}
			selected = append(selected, w)
		}
	}
	loadStart := loadAvg()
	started := time.Now()

	// 1. Peer dependencies.
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			fatal(fmt.Errorf("%s not found on PATH: bench-peers needs node (>= 18) and npm", tool))
		}
	}
	if !*skipInstall {
		install := "ci"
		if _, err := os.Stat(filepath.Join(peers, "package-lock.json")); err != nil {
			install = "install"
		}
		logf("npm %s in bench/peers", install)
		cmd := exec.Command("npm", install, "--no-audit", "--no-fund")
		cmd.Dir = peers
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fatal(fmt.Errorf("npm %s: %v", install, err))
		}
	}
	versions, versionWarnings := packageVersions(peers)

	// 2. Skein.
	skein, skeinNote, goCPU := runSkein(root, *goCmd, *runs, selected)
	cli := runSkeinCLI(root, *goCmd, *runs, selected)

	// 3. Peers.
	peer := map[string]map[string]result{}
	failed := false
	for _, e := range engines {
		peer[e.id] = map[string]result{}
		for _, w := range selected {
			r := runPeer(peers, e.id, w.name, *runs)
			if r.err != "" {
				failed = true
			}
			peer[e.id][w.name] = r
		}
	}

	// 4. Report.
	env := environment(root, *goCmd, versions, versionWarnings, loadStart, loadAvg(), started)
	env.goCPU = goCPU
	md := render(selected, skein, cli, skeinNote, peer, env, *runs)
	path := filepath.Join(root, *out)
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		fatal(err)
	}
	fmt.Print(md)
	logf("wrote %s", path)
	if failed {
		fatal(errors.New("some peer scripts failed (marked \"failed\" above)"))
	}
}

func findWorkload(name string) (workload, bool) {
	for _, w := range workloads {
		if w.name == name {
			return w, true
		}
	}
	return workload{}, false
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "bench", "peers", "package.json")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the skein repository (no go.mod with bench/peers/package.json above the working directory)")
		}
		dir = parent
	}
}

// ---- Skein ----

var benchLine = regexp.MustCompile(`^(Benchmark[^\s-]+)(?:-\d+)?\s+\d+\s+([0-9.eE+]+) ns/op(.*)$`)
var benchMetric = regexp.MustCompile(`([0-9.eE+]+) (B/op|allocs/op)`)

func runSkein(root, goCmd string, count int, selected []workload) (res map[string]result, note, goCPU string) {
	pkgs := []string{}
	seen := map[string]bool{}
	for _, w := range selected {
		if !seen[w.pkg] {
			seen[w.pkg] = true
			pkgs = append(pkgs, "./"+w.pkg+"/")
		}
	}
	var names []string
	for _, w := range selected {
		names = append(names, w.bench)
	}
	args := append([]string{"test", "-run", "^$", "-bench", "^(" + strings.Join(names, "|") + ")$", "-count", strconv.Itoa(count), "-benchmem"}, pkgs...)
	logf("%s %s", goCmd, strings.Join(quoteArgs(args), " "))
	var buf bytes.Buffer
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = root
	cmd.Stdout = io.MultiWriter(os.Stderr, &buf)
	cmd.Stderr = io.MultiWriter(os.Stderr, &buf)
	runErr := cmd.Run()

	type acc struct{ ns, b, allocs []float64 }
	got := map[string]*acc{}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok {
			goCPU = strings.TrimSpace(cpu)
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		a := got[m[1]]
		if a == nil {
			a = &acc{}
			got[m[1]] = a
		}
		a.ns = append(a.ns, ns)
		for _, mm := range benchMetric.FindAllStringSubmatch(m[3], -1) {
			v, _ := strconv.ParseFloat(mm[1], 64)
			if mm[2] == "B/op" {
				a.b = append(a.b, v)
			} else {
				a.allocs = append(a.allocs, v)
			}
		}
	}

	if runErr != nil {
		note = fmt.Sprintf("`go test` exited with an error (%v); benchmarks it did not report are n/a", runErr)
	}
	res = map[string]result{}
	for _, w := range selected {
		a := got[w.bench]
		if a == nil {
			res[w.name] = missing(w.bench + " not found in ./" + w.pkg)
			continue
		}
		if w.perUnit {
			for _, xs := range [][]float64{a.ns, a.b, a.allocs} {
				for i := range xs {
					xs[i] *= w.units
				}
			}
		}
		res[w.name] = result{ns: median(a.ns), runs: a.ns, bytes: median(a.b), allocs: median(a.allocs)}
	}
	return res, note, goCPU
}

// cliFlows are the workloads measured through `skein run` as well: the flow,
// and the --input that sizes it for one op and for one unit.
var cliFlows = map[string]struct{ src, input, one string }{
	"loop10k": {`flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"), max_visits = 1 << 30)
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`, "n=10000", "n=1"},
	"loopdict10k": {`flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: {"n": r.visits("draft")}, max_visits = 1 << 30)
critique = step("critique", fn = lambda r: {"ok": r.draft.n >= r.inputs.n})
chain(START, draft, critique)
edge(critique, draft, when = "not critique.ok")
edge(critique, END, when = "critique.ok")
`, "n=10000", "n=1"},
}

// runSkeinCLI builds skein and times the workloads of cliFlows as whole
// processes: per round, one run of the workload and one of a single unit,
// the op being the difference.
func runSkeinCLI(root, goCmd string, runs int, selected []workload) map[string]result {
	res := map[string]result{}
	dir, err := os.MkdirTemp("", "skein-peers-cli")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "skein")
	logf("go build ./cmd/skein (for the CLI column)")
	build := exec.Command(goCmd, "build", "-o", exe, "./cmd/skein")
	build.Dir, build.Stderr = root, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build and make install do
	if err := build.Run(); err != nil {
		fatal(fmt.Errorf("go build ./cmd/skein: %v", err))
	}
	for _, w := range selected {
		f, ok := cliFlows[w.name]
		if !ok {
			continue
		}
		flow := filepath.Join(dir, w.name+".star")
		if err := os.WriteFile(flow, []byte(f.src), 0o644); err != nil {
			fatal(err)
		}
		timeRun := func(input string) (float64, error) {
			cmd := exec.Command(exe, "run", "--input", input, flow)
			cmd.Dir = dir
			out, err := cmd.StdoutPipe()
			if err != nil {
				return 0, err
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				return 0, err
			}
			// Read as a consumer that keeps up would (cat: 128 KiB at a
			// time); io.Copy to io.Discard reads 8 KiB at a time.
			io.CopyBuffer(struct{ io.Writer }{io.Discard}, out, make([]byte, 256<<10))
			if err := cmd.Wait(); err != nil {
				return 0, fmt.Errorf("%v: %s", err, tail(stderr.String(), 500))
			}
			return float64(time.Since(t0)), nil
		}
		logf("skein run %s, %d rounds", w.name, runs)
		r := result{bytes: math.NaN(), allocs: math.NaN()}
		timeRun(f.input) // warm the file cache
		// Each timing is the best of three runs: a difference of two
		// whole-process times is otherwise at the mercy of the machine.
		best := func(input string) (float64, error) {
			t, err := timeRun(input)
			for j := 1; j < 3 && err == nil; j++ {
				var u float64
				if u, err = timeRun(input); err == nil {
					t = math.Min(t, u)
				}
			}
			return t, err
		}
		for i := 0; i < runs; i++ {
			one, err := best(f.one)
			if err == nil {
				var all float64
				if all, err = best(f.input); err == nil {
					r.runs = append(r.runs, all-one)
				}
			}
			if err != nil {
				res[w.name] = missing("skein run failed: " + err.Error())
				break
			}
		}
		if _, failed := res[w.name]; !failed {
			r.ns = median(r.runs)
			res[w.name] = r
		}
	}
	return res
}

func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$ ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return q
}

// ---- peers ----

type peerLine struct {
	Workload string    `json:"workload"`
	Engine   string    `json:"engine"`
	NS       float64   `json:"ns"`
	Runs     []float64 `json:"runs"`
	Warmups  int       `json:"warmups"`
	Measures string    `json:"measures"`
}

func runPeer(peers, engine, name string, runs int) result {
	script := filepath.Join(engine, name+".mjs")
	logf("node %s (warm-up + %d runs)", filepath.Join("bench/peers", script), runs)
	if _, err := os.Stat(filepath.Join(peers, script)); err != nil {
		return missing("no script " + script)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", "--expose-gc", script)
	cmd.Dir = peers
	// Tracing off explicitly: the figures are for the engine as shipped, with
	// no network; an inherited LANGSMITH_TRACING=true would change that.
	cmd.Env = append(os.Environ(), "RUNS="+strconv.Itoa(runs), "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if err != nil {
		logf("  FAILED (%v):\n%s", err, tail(stderr.String(), 2000))
		return missing(fmt.Sprintf("script failed: %v", err))
	}
	var line peerLine
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil || line.Workload != name || line.Engine != engine || line.NS <= 0 || len(line.Runs) < 5 {
		logf("  FAILED: unexpected output:\n%s\n%s", tail(stdout.String(), 1000), tail(stderr.String(), 1000))
		return missing("unexpected script output")
	}
	logf("  median %s per op (warm-up runs: %d; %s total)", human(line.NS), line.Warmups, time.Since(start).Round(time.Second))
	return result{ns: line.NS, runs: line.Runs, bytes: math.NaN(), allocs: math.NaN(), warmups: line.Warmups, measures: line.Measures}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// ---- environment ----

type envInfo struct {
	cpus, cpuModel, goCPU, memory, kernel string
	goVersion, nodeVersion                string
	versions                              []string
	versionWarnings                       []string
	loadStart, loadEnd                    string
	date                                  string
	duration                              time.Duration
}

func packageVersions(peers string) ([]string, []string) {
	var want struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if b, err := os.ReadFile(filepath.Join(peers, "package.json")); err == nil {
		_ = json.Unmarshal(b, &want)
	}
	var vs, warns []string
	for _, p := range pinned {
		var got struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(peers, "node_modules", filepath.FromSlash(p), "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &got)
		}
		if err != nil || got.Version == "" {
			vs = append(vs, p+" (not installed)")
			warns = append(warns, p+" is not installed")
			continue
		}
		vs = append(vs, p+"@"+got.Version)
		if w := want.Dependencies[p]; w != got.Version {
			warns = append(warns, fmt.Sprintf("%s: installed %s, package.json pins %q", p, got.Version, w))
		}
	}
	for _, w := range warns {
		logf("warning: %s", w)
	}
	return vs, warns
}

func environment(root, goCmd string, versions, warns []string, loadStart, loadEnd string, started time.Time) envInfo {
	e := envInfo{
		cpus:            strconv.Itoa(runtime.NumCPU()),
		cpuModel:        "unknown",
		memory:          "unknown",
		kernel:          runtime.GOOS + "/" + runtime.GOARCH,
		versions:        versions,
		versionWarnings: warns,
		loadStart:       loadStart,
		loadEnd:         loadEnd,
		date:            started.UTC().Format("2006-01-02 15:04 MST"),
		duration:        time.Since(started).Round(time.Second),
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		e.cpus = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.cpuModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					e.memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.kernel = "Linux " + strings.TrimSpace(string(b)) + " " + runtime.GOARCH
	}
	cmd := exec.Command(goCmd, "env", "GOVERSION")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		e.goVersion = strings.TrimSpace(string(out))
	} else {
		e.goVersion = runtime.Version()
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		e.nodeVersion = strings.TrimSpace(string(out))
	}
	return e
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// ---- rendering ----

func render(selected []workload, skein, cli map[string]result, skeinNote string, peer map[string]map[string]result, e envInfo, runs int) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }

	p("# Skein vs. peer workflow engines\n\n")
	p("Generated by `make bench-peers` (bench/peers/harness) on %s; took %s. ", e.date, e.duration)
	p("Wall-clock time per op, median of %d timed runs after warm-up runs (Skein: median of `go test -count %d`). ", runs, runs)
	p("Lower is better; a ratio is peer time / Skein time. See bench/README.md for the workloads and the honesty notes.\n\n")

	p("| workload | Skein | LangGraph.js | XState | LangGraph/Skein | XState/Skein |\n")
	p("|---|---:|---:|---:|---:|---:|\n")
	for _, w := range selected {
		s, lg, xs := skein[w.name], peer["langgraph"][w.name], peer["xstate"][w.name]
		p("| %s | %s | %s | %s | %s | %s |\n", w.name, cell(s, 1), cell(lg, 1), cell(xs, 1), ratio(lg, s), ratio(xs, s))
	}
	if len(cli) > 0 {
		p("\nThe same workloads through the command line: `skein run FLOW` in its default mode (progress lines, stdout a pipe, the run recorded in the run store), ")
		p("one op being T(run of the workload) - T(run of one iteration), each the best of 3 runs, so that process start, load and check cancel out; median of %d:\n\n", runs)
		p("| workload | Skein CLI | per %s | LangGraph/Skein CLI | XState/Skein CLI |\n|---|---:|---:|---:|---:|\n", "unit")
		for _, w := range selected {
			c, ok := cli[w.name]
			if !ok {
				continue
			}
			p("| %s | %s | %s | %s | %s |\n", w.name, cell(c, 1), cell(c, w.units), ratio(peer["langgraph"][w.name], c), ratio(peer["xstate"][w.name], c))
		}
		if c, ok := cli["loopdict10k"]; ok {
			lg, xs := peer["langgraph"]["loopdict10k"], peer["xstate"]["loopdict10k"]
			p("\nGoals for loopdict10k through the command line (issue 31): LangGraph/Skein CLI ≥ 500x: %s (%s); XState/Skein CLI ≥ 8x: %s (%s).\n",
				goal(lg, c, 500), ratio(lg, c), goal(xs, c, 8), ratio(xs, c))
		}
	}
	p("\nThe same figures per unit of work (op time / units per op):\n\n")
	p("| workload | per | Skein | LangGraph.js | XState |\n")
	p("|---|---|---:|---:|---:|\n")
	for _, w := range selected {
		p("| %s | %s (x%s) | %s | %s | %s |\n", w.name, w.unit, strconv.FormatFloat(w.units, 'f', -1, 64),
			cell(skein[w.name], w.units), cell(peer["langgraph"][w.name], w.units), cell(peer["xstate"][w.name], w.units))
	}
	if skeinNote != "" {
		p("\nNote: %s.\n", skeinNote)
	}

	p("\n## What is measured\n\n")
	for _, w := range selected {
		p("- **%s**\n  - Skein (`%s` in ./%s): %s.\n", w.name, w.bench, w.pkg, w.skeinDesc)
		for _, eng := range engines {
			desc := peer[eng.id][w.name].measures
			if desc == "" {
				desc = "see the script"
			}
			p("  - %s (bench/peers/%s/%s.mjs): %s.\n", eng.title, eng.id, w.name, desc)
		}
	}

	p("\n## Machine and versions\n\n")
	cpu := e.cpuModel
	if e.goCPU != "" && e.goCPU != e.cpuModel {
		cpu += " (`go test` reports: " + e.goCPU + ")"
	}
	p("- CPU: %s, %s logical CPUs (nproc); memory %s; %s\n", cpu, e.cpus, e.memory, e.kernel)
	p("- Load average (1/5/15 min) at start: %s; at end: %s\n", e.loadStart, e.loadEnd)
	p("- Go: %s; node: %s\n", e.goVersion, e.nodeVersion)
	p("- Packages: %s\n", strings.Join(e.versions, ", "))
	for _, w := range e.versionWarnings {
		p("- WARNING: %s\n", w)
	}

	p("\n## All runs\n\n")
	p("| workload | engine | runs (per op) | Skein B/op | Skein allocs/op |\n|---|---|---|---:|---:|\n")
	for _, w := range selected {
		rows := []struct {
			title string
			r     result
		}{{"Skein", skein[w.name]}}
		if c, ok := cli[w.name]; ok {
			rows = append(rows, struct {
				title string
				r     result
			}{"Skein CLI", c})
		}
		for _, eng := range engines {
			rows = append(rows, struct {
				title string
				r     result
			}{eng.title, peer[eng.id][w.name]})
		}
		for _, row := range rows {
			runsCell := row.r.err
			if runsCell == "" {
				parts := make([]string, len(row.r.runs))
				for i, v := range row.r.runs {
					parts[i] = human(v)
				}
				runsCell = strings.Join(parts, ", ")
				if row.r.warmups > 0 {
					runsCell += fmt.Sprintf(" (warm-up runs: %d)", row.r.warmups)
				}
			}
			bytesCell, allocsCell := "", ""
			if row.title == "Skein" && row.r.err == "" {
				bytesCell, allocsCell = num(row.r.bytes), num(row.r.allocs)
			}
			p("| %s | %s | %s | %s | %s |\n", w.name, row.title, runsCell, bytesCell, allocsCell)
		}
	}
	return b.String()
}

func cell(r result, per float64) string {
	if math.IsNaN(r.ns) {
		if strings.HasPrefix(r.err, "script failed") || r.err == "unexpected script output" {
			return "failed"
		}
		return "n/a"
	}
	return human(r.ns / per)
}

func ratio(peer, skein result) string {
	if math.IsNaN(peer.ns) || math.IsNaN(skein.ns) || skein.ns <= 0 {
		return "n/a"
	}
	return sig3(peer.ns/skein.ns) + "x"
}

// goal says whether peer / skein is at least want.
func goal(peer, skein result, want float64) string {
	switch {
	case math.IsNaN(peer.ns) || math.IsNaN(skein.ns) || skein.ns <= 0:
		return "n/a"
	case peer.ns/skein.ns >= want:
		return "met"
	}
	return fmt.Sprintf("**not met**, short by %.0f%%", 100*(1-peer.ns/skein.ns/want))
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// human formats nanoseconds with three significant digits in a fitting unit.
func human(ns float64) string {
	switch {
	case ns < 1e3:
		return sig3(ns) + " ns"
	case ns < 1e6:
		return sig3(ns/1e3) + " µs"
	case ns < 1e9:
		return sig3(ns/1e6) + " ms"
	default:
		return sig3(ns/1e9) + " s"
	}
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench-peers: "+format+"\n", a...)
}

func fatal(err error) {
	logf("error: %v", err)
	os.Exit(1)
}
