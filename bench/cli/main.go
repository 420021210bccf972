// Command cli measures `skein run` as a user runs it, whole processes side
// by side in one invocation, and reports each figure as a ratio to a
// baseline measured in the same rounds, so the ratios hold on a busy
// machine. It is what `make bench-cli` runs; see bench/README.md.
//
// Figures (each the median over -rounds rounds; within a round the
// variants run one after another):
//
//   - loop: per iteration of a draft -> critique loop of two fn steps, as
//     (T(n iterations) - T(1 iteration)) / (n - 1), so that process start,
//     load and check cancel out. In-process (vm.Program.Run, no events)
//     is the baseline; the CLI modes are piped stdout (default progress),
//     stdout on a pseudo-terminal, --events and --json.
//   - loop with dict results: the same loop with fn steps returning small
//     dicts, as flows are written: in process next to the int loop (goal
//     ≤ 1.3x), and through the CLI in every mode the int loop has, each
//     next to the dict loop in process, with the same goals.
//   - json100k: --json of a 100,000-step chain of noop steps, per step, as
//     (T(run --json) - T(check)) / 100,000: running the steps plus encoding
//     and writing the result, with loading and checking taken out.
//   - fan200: 200 parallel `sleep 0.1` task steps at the default --parallel
//     next to a bash script that starts 200 `sleep 0.1 &` and waits.
//   - load1m: peak RSS of `skein check` of a generated 1,000,000-step chain.
//
// The results are printed and written to bench/CLI.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"go.starlark.net/starlark"

	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/vm"
)

const loopFlow = `flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: r.visits("draft"), max_visits = 1 << 30)
critique = step("critique", fn = lambda r: r.draft)
chain(START, draft, critique)
edge(critique, draft, when = "critique < inputs.n")
edge(critique, END, when = "critique >= inputs.n")
`

// loopDictFlow is loopFlow with fn steps returning small dicts.
const loopDictFlow = `flow(inputs = {"n": 10}, output = "critique")
draft = step("draft", fn = lambda r: {"n": r.visits("draft")}, max_visits = 1 << 30)
critique = step("critique", fn = lambda r: {"ok": r.draft.n >= r.inputs.n})
chain(START, draft, critique)
edge(critique, draft, when = "not critique.ok")
edge(critique, END, when = "critique.ok")
`

// chainFlow generates a chain of N noop steps.
const chainFlow = `def build(n):
    prev = START
    for i in range(n):
        s = step("s%d" % i)
        edge(prev, s)
        prev = s
    edge(prev, END)
build(N)
`

func fanFlow(n int) string {
	var b strings.Builder
	b.WriteString("src = step(\"src\")\nedge(START, src)\njoin = step(\"join\", join = \"and\")\nedge(join, END)\n")
	fmt.Fprintf(&b, "def branch(i):\n    s = step(\"s%%d\" %% i, run = [\"sleep\", \"0.1\"])\n    edge(src, s)\n    edge(s, join)\n")
	fmt.Fprintf(&b, "for i in range(%d):\n    branch(i)\n", n)
	return b.String()
}

const fanScript = "for i in $(seq 200); do sleep 0.1 & done; wait\n"

func main() {
	goCmd := flag.String("go", "go", "go command used to build skein")
	rounds := flag.Int("rounds", 5, "rounds; each figure is the median over them (minimum 3)")
	best := flag.Int("best", 3, "in each round, each timing is the best of this many runs")
	iters := flag.Int("n", 50_000, "loop iterations")
	skip1m := flag.Bool("skip-1m", false, "skip the 1,000,000-step load (about 10 s and 1 GB)")
	out := flag.String("out", "bench/CLI.md", "results file, relative to the repository root")
	vmFlow := flag.String("vm", "", "internal: run this flow once in this process with the VM alone (input n from -n) and exit")
	flag.Parse()
	if *vmFlow != "" {
		vmAlone(*vmFlow, *iters)
		return
	}
	if *rounds < 3 {
		*rounds = 3
	}
	root, err := repoRoot()
	if err != nil {
		fatal(err)
	}
	dir, err := os.MkdirTemp("", "skein-bench-cli")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "skein")
	logf("building skein")
	build := exec.Command(*goCmd, "build", "-o", exe, "./cmd/skein")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build and make install do
	if err := build.Run(); err != nil {
		fatal(fmt.Errorf("go build: %v", err))
	}
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			fatal(err)
		}
		return p
	}
	loop := write("loop.star", loopFlow)
	loopDict := write("loopdict.star", loopDictFlow)
	chain100k := write("chain100k.star", strings.Replace(chainFlow, "build(N)", "build(100000)", 1))
	fan := write("fan.star", fanFlow(200))
	fanSh := write("fan.sh", fanScript)
	chain1m := write("chain1m.star", strings.Replace(chainFlow, "build(N)", "build(1000000)", 1))
	n, k := *iters, *best
	loadStart := loadAvg()
	started := time.Now()

	// In-process baseline: the same flow, loaded once, run by the VM.
	inProc, inProcDict := loadLoop(loop), loadLoop(loopDict)
	// The VM alone in a process of its own: this program, re-run with -vm.
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	// iterCost is a loop's cost per iteration, (T(n) - T(1)) / (n - 1),
	// each time the best of k runs.
	iterCost := func(run func(n int) time.Duration) float64 {
		return perUnit(minOf(k, func() time.Duration { return run(n) })-minOf(k, func() time.Duration { return run(1) }), n-1)
	}
	vmProcIter := func(file string) float64 {
		return iterCost(func(n int) time.Duration {
			return timeCmd(exec.Command(self, "-vm", file, "-n", fmt.Sprint(n)), dir, false).wall
		})
	}

	type mode struct {
		name string
		args []string
		tty  bool
	}
	modes := []mode{
		{"default, stdout a pipe", nil, false},
		{"default, stdout a terminal", nil, true},
		{"--events", []string{"--events"}, false},
		{"--json", []string{"--json"}, false},
		{"default, stdout a pipe, --no-store", []string{"--no-store"}, false},
		{"--json --no-store", []string{"--json", "--no-store"}, false},
	}
	perIter := map[string][]float64{}
	ratios := map[string][]float64{}
	var inProcRuns []float64
	// The VM alone in a fresh process, and each mode's ratio to it.
	var vmProcRuns, vmProcVsInProc, vmProcDictRuns, vmProcDictVsInt []float64
	procRatios, dictProcRatios := map[string][]float64{}, map[string][]float64{}
	// The dict loop: in process (and its ratio to the int loop's), and
	// per CLI mode, per iteration and as a ratio to itself in process.
	dictModes := modes
	var dictRuns, dictVsInt []float64
	dictPerIter, dictRatios := map[string][]float64{}, map[string][]float64{}
	var json100k, json100kNoStore, encode100k []float64
	var fanSkein, fanBash, fanRatio, fanNoStore, fanNoStoreRatio []float64
	chainG, err := lang.Load(chain100k, lang.Options{})
	if err != nil {
		fatal(err)
	}
	chainRes := vm.Prepare(chainG).Run(context.Background(), nil, vm.Options{})
	for r := 1; r <= *rounds; r++ {
		logf("round %d of %d", r, *rounds)
		inProc(n) // warm
		base := iterCost(inProc)
		inProcRuns = append(inProcRuns, base)
		vmBase := vmProcIter(loop)
		vmProcRuns, vmProcVsInProc = append(vmProcRuns, vmBase), append(vmProcVsInProc, vmBase/base)
		cliIter := func(m mode, file string) float64 {
			return iterCost(func(n int) time.Duration {
				args := append([]string{"run", "--input", fmt.Sprintf("n=%d", n)}, m.args...)
				return timeRun(exe, dir, append(args, file), m.tty).wall
			})
		}
		for _, m := range modes {
			v := cliIter(m, loop)
			perIter[m.name] = append(perIter[m.name], v)
			ratios[m.name] = append(ratios[m.name], v/base)
			procRatios[m.name] = append(procRatios[m.name], v/vmBase)
		}
		inProcDict(n) // warm
		dictBase := iterCost(inProcDict)
		dictRuns, dictVsInt = append(dictRuns, dictBase), append(dictVsInt, dictBase/base)
		vmDictBase := vmProcIter(loopDict)
		vmProcDictRuns, vmProcDictVsInt = append(vmProcDictRuns, vmDictBase), append(vmProcDictVsInt, vmDictBase/vmBase)
		for _, m := range dictModes {
			v := cliIter(m, loopDict)
			dictPerIter[m.name] = append(dictPerIter[m.name], v)
			dictRatios[m.name] = append(dictRatios[m.name], v/dictBase)
			dictProcRatios[m.name] = append(dictProcRatios[m.name], v/vmDictBase)
		}
		tc := minOf(k, func() time.Duration { return timeRun(exe, dir, []string{"check", chain100k}, false).wall })
		tj := minOf(k, func() time.Duration { return timeRun(exe, dir, []string{"run", "--json", chain100k}, false).wall })
		json100k = append(json100k, perUnit(tj-tc, 100_000))
		tn := minOf(k, func() time.Duration {
			return timeRun(exe, dir, []string{"run", "--json", "--no-store", chain100k}, false).wall
		})
		json100kNoStore = append(json100kNoStore, perUnit(tn-tc, 100_000))
		encode100k = append(encode100k, perUnit(minOf(k, func() time.Duration {
			t0 := time.Now()
			if err := chainRes.WriteJSON(io.Discard, "  "); err != nil {
				fatal(err)
			}
			return time.Since(t0)
		}), 100_000))
		fs := minOf(k, func() time.Duration { return timeRun(exe, dir, []string{"run", fan}, false).wall })
		fb := minOf(k, func() time.Duration { return timeCmd(exec.Command("bash", fanSh), dir, false).wall })
		fanSkein, fanBash = append(fanSkein, float64(fs)), append(fanBash, float64(fb))
		fanRatio = append(fanRatio, float64(fs)/float64(fb))
		fn := minOf(k, func() time.Duration { return timeRun(exe, dir, []string{"run", "--no-store", fan}, false).wall })
		fanNoStore, fanNoStoreRatio = append(fanNoStore, float64(fn)), append(fanNoStoreRatio, float64(fn)/float64(fb))
	}
	// What the terminal itself costs: the bytes skein writes to a terminal
	// for the loop, written to a pseudo-terminal by cat.
	var ttyOut bytes.Buffer
	timeCapture(exec.Command(exe, "run", "--input", fmt.Sprintf("n=%d", n), loop), dir, true, &ttyOut)
	ttyFile := write("tty.out", strings.ReplaceAll(ttyOut.String(), "\r\n", "\n"))
	var catTTY []float64
	for range *rounds {
		catTTY = append(catTTY, perUnit(minOf(k, func() time.Duration { return timeCmd(exec.Command("cat", ttyFile), dir, true).wall }), n-1))
	}
	var rss int64
	var loadWall time.Duration
	if !*skip1m {
		logf("load + check of 1,000,000 steps")
		m := timeRun(exe, dir, []string{"check", "--max-load-steps", "100000000", chain1m}, false)
		rss, loadWall = m.maxRSS, m.wall
	}

	base := median(inProcRuns)
	var b strings.Builder
	fmt.Fprintf(&b, "# skein run, whole process\n\nGenerated by `make bench-cli` (bench/cli) on %s; took %s. "+
		"Medians of %d rounds; in each round every variant runs one after another (each timing the best of %d runs), and a ratio is taken within the round, "+
		"so ratios compare runs made at the same moment. "+
		"Machine: %d logical CPUs, %s/%s, %s; load average at start %s, at end %s.\n\n",
		started.UTC().Format("2006-01-02 15:04 UTC"), time.Since(started).Round(time.Second), *rounds, k,
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadStart, loadAvg())
	fmt.Fprintf(&b, "Loop iteration (draft -> critique, two fn steps; (T(%d) - T(1)) / %d):\n\n", n, n-1)
	b.WriteString("| mode | µs per iteration | vs in-process VM | vs the VM alone in a process | goal (vs in-process VM) | rounds (µs; ratio to in-process; ratio to the VM alone) |\n|---|---:|---:|---:|---|---|\n")
	fmt.Fprintf(&b, "| in-process VM (`vm.Program.Run`, no events) | %.2f | 1.0x | | | %s |\n", base/1e3, list(inProcRuns))
	fmt.Fprintf(&b, "| the VM alone in a process of its own | %.2f | %.2fx | 1.0x | | %s; %s |\n", median(vmProcRuns)/1e3, median(vmProcVsInProc), list(vmProcRuns), listRatio(vmProcVsInProc))
	goals := map[string]float64{"default, stdout a pipe": 1.5, "default, stdout a terminal": 2, "--events": 2.5, "--json": 1.1,
		"default, stdout a pipe, --no-store": 1.5, "--json --no-store": 1.1}
	for _, m := range modes {
		v, q := median(perIter[m.name]), median(ratios[m.name])
		fmt.Fprintf(&b, "| %s | %.2f | %.2fx | %.2fx | ≤ %.1fx %s | %s; %s; %s |\n", m.name, v/1e3, q, median(procRatios[m.name]), goals[m.name], met(q <= goals[m.name]),
			list(perIter[m.name]), listRatio(ratios[m.name]), listRatio(procRatios[m.name]))
	}
	fmt.Fprintf(&b, "\nThe same loop with fn steps returning small dicts, `{\"n\": r.visits(\"draft\")}` and `{\"ok\": r.draft.n >= r.inputs.n}`, as flows are written:\n\n")
	b.WriteString("| mode | µs per iteration | ratio | vs the VM alone in a process | goal | rounds (µs; ratio; ratio to the VM alone) |\n|---|---:|---:|---:|---|---|\n")
	dv := median(dictVsInt)
	fmt.Fprintf(&b, "| in-process VM, dict results | %.2f | %.2fx the int loop in process | | ≤ 1.3x %s | %s; %s |\n",
		median(dictRuns)/1e3, dv, met(dv <= 1.3), list(dictRuns), listRatio(dictVsInt))
	fmt.Fprintf(&b, "| the VM alone in a process of its own, dict results | %.2f | %.2fx the int loop there | 1.0x | | %s; %s |\n",
		median(vmProcDictRuns)/1e3, median(vmProcDictVsInt), list(vmProcDictRuns), listRatio(vmProcDictVsInt))
	for _, m := range dictModes {
		v, q := median(dictPerIter[m.name]), median(dictRatios[m.name])
		fmt.Fprintf(&b, "| %s | %.2f | %.2fx the dict loop in process | %.2fx | ≤ %.1fx %s | %s; %s; %s |\n", m.name, v/1e3, q, median(dictProcRatios[m.name]), goals[m.name], met(q <= goals[m.name]),
			list(dictPerIter[m.name]), listRatio(dictRatios[m.name]), listRatio(dictProcRatios[m.name]))
	}
	b.WriteString("\nThe in-process VM runs in this harness, whose heap is grown and warm (it holds the 100,000-step result, hundreds of MB) and whose collector seldom runs. " +
		"The VM alone in a process of its own is this program re-run with `-vm FLOW -n N`: it loads, prepares and runs the flow as the in-process row does, with Go's default collector, and exits; " +
		"its T(n) - T(1) keeps what a fresh process pays as its heap grows (on this kind of VM a fresh 4 KiB page costs about 10 µs to fault in), which the in-process row does not. " +
		"The CLI's own cost is its ratio to that row.\n")
	b.WriteString("\nThe run store is on unless `--no-store`: when the run ends it writes the result, whose path holds up to 10,000 entries, and checkpoints; " +
		"that is a cost per run, not per iteration, but (T(n) - T(1)) counts it. The `--no-store` rows leave it out.\n")
	fmt.Fprintf(&b, "\nThe terminal device alone: `cat` of the %d KB skein writes to a terminal for this loop, to a pseudo-terminal: %.2f µs per iteration (rounds: %s). "+
		"A pseudo-terminal moves a few tens of MB/s, so on a terminal most of the cost above the pipe is the device's.\n", ttyOut.Len()>>10, median(catTTY)/1e3, list(catTTY))
	j := median(json100k)
	fmt.Fprintf(&b, "\n`--json` of a 100,000-step chain, per step, (T(run --json) - T(check)) / 100,000 (running the step, encoding and writing its record): "+
		"**%.2f µs** (goal ≤ 1.5 µs %s; rounds: %s µs). Encoding alone (`Result.WriteJSON` of the same result in process): %.2f µs per step (rounds: %s).\n",
		j/1e3, met(j <= 1500), list(json100k), median(encode100k)/1e3, list(encode100k))
	jn := median(json100kNoStore)
	fmt.Fprintf(&b, "With `--no-store` (the store writes the whole result, here 100,000 step records, when the run ends): **%.2f µs** per step (%s; rounds: %s µs).\n",
		jn/1e3, met(jn <= 1500), list(json100kNoStore))
	fs, fb, fr := median(fanSkein), median(fanBash), median(fanRatio)
	fmt.Fprintf(&b, "\n200 parallel `sleep 0.1` task steps, `skein run` at the default --parallel (%d) vs bash `&`/`wait`: "+
		"**%s vs %s = %.2fx** (median of the per-round ratios; goal ≤ 1.3x %s; skein rounds: %s; bash rounds: %s).\n",
		vm.DefaultParallel, human(fs), human(fb), fr, met(fr <= 1.3), listHuman(fanSkein), listHuman(fanBash))
	fmt.Fprintf(&b, "The same with `--no-store` (the run store commits each task's completion before the run goes on): %s = %.2fx (rounds: %s).\n",
		human(median(fanNoStore)), median(fanNoStoreRatio), listHuman(fanNoStore))
	if !*skip1m {
		fmt.Fprintf(&b, "\nLoad + check of a generated 1,000,000-step chain (`skein check --max-load-steps 100000000`): "+
			"**peak RSS %d MB** in %s (goal ≤ 1 GB %s).\n", rss>>20, loadWall.Round(10*time.Millisecond), met(rss <= 1<<30))
	}
	md := b.String()
	fmt.Print(md)
	if err := os.WriteFile(filepath.Join(root, *out), []byte(md), 0o644); err != nil {
		fatal(err)
	}
	logf("wrote %s", *out)
}

// vmAlone loads file and runs it once with input n by the VM alone, as
// the in-process baseline does but in a process of its own.
func vmAlone(file string, n int) { loadLoop(file)(n) }

// loadLoop loads and prepares the loop flow in file, once, and returns
// what runs it by the VM with input n and times the run; a run that
// does not succeed is fatal.
func loadLoop(file string) func(n int) time.Duration {
	g, err := lang.Load(file, lang.Options{})
	if err != nil {
		fatal(err)
	}
	prog := vm.Prepare(g)
	return func(n int) time.Duration {
		in, err := vm.BindInputs(g, map[string]starlark.Value{"n": starlark.MakeInt(n)})
		if err != nil {
			fatal(err)
		}
		t0 := time.Now()
		res := prog.Run(context.Background(), in, vm.Options{Parallel: 1})
		d := time.Since(t0)
		if res.Status != vm.Succeeded {
			fatal(fmt.Errorf("loop %s: %s", filepath.Base(file), res.Status))
		}
		return d
	}
}

func met(ok bool) string {
	if ok {
		return "— met"
	}
	return "— **not met**"
}

type measure struct {
	wall   time.Duration
	maxRSS int64 // bytes
}

// timeRun runs skein with args in dir and times it; output is read and
// thrown away (through a pipe, or a pseudo-terminal when tty is set).
func timeRun(exe, dir string, args []string, tty bool) measure {
	return timeCmd(exec.Command(exe, args...), dir, tty)
}

func timeCmd(cmd *exec.Cmd, dir string, tty bool) measure {
	return timeCapture(cmd, dir, tty, io.Discard)
}

// timeCapture is timeCmd copying the output to w.
func timeCapture(cmd *exec.Cmd, dir string, tty bool, w io.Writer) measure {
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "TERM=xterm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var t0 time.Time
	var err error
	if tty {
		t0 = time.Now()
		f, perr := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
		if perr != nil {
			fatal(perr)
		}
		drain(w, f) // ends with EIO when the process exits
		err = cmd.Wait()
		f.Close()
	} else {
		out, perr := cmd.StdoutPipe()
		if perr != nil {
			fatal(perr)
		}
		t0 = time.Now()
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
		drain(w, out)
		err = cmd.Wait()
	}
	wall := time.Since(t0)
	if err != nil {
		fatal(fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, tail(stderr.String(), 2000)))
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10 // KiB on Linux
	}
	return measure{wall: wall, maxRSS: rss}
}

// drain copies r to w as a consumer that keeps up would, `cat` say: in
// reads of up to 256 KiB. (io.Copy to io.Discard reads 8 KiB at a time:
// for the 26 MB of --events of the loop, 3,300 reads, each a wakeup of a
// writer blocked on a full pipe, and the reader, not skein, set the pace.)
func drain(w io.Writer, r io.Reader) {
	io.CopyBuffer(struct{ io.Writer }{w}, r, make([]byte, 256<<10))
}

func perUnit(d time.Duration, units int) float64 { return float64(d) / float64(units) }

// minOf returns the best of k timings.
func minOf(k int, f func() time.Duration) time.Duration {
	best := f()
	for i := 1; i < k; i++ {
		best = min(best, f())
	}
	return best
}

func listRatio(xs []float64) string {
	var parts []string
	for _, v := range xs {
		parts = append(parts, fmt.Sprintf("%.2fx", v))
	}
	return strings.Join(parts, ", ")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func list(ns []float64) string {
	var parts []string
	for _, v := range ns {
		parts = append(parts, fmt.Sprintf("%.2f", v/1e3))
	}
	return strings.Join(parts, ", ")
}

func listHuman(ns []float64) string {
	var parts []string
	for _, v := range ns {
		parts = append(parts, human(v))
	}
	return strings.Join(parts, ", ")
}

func human(ns float64) string {
	return time.Duration(ns).Round(time.Millisecond).String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the skein repository")
		}
		dir = parent
	}
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, "bench-cli: "+format+"\n", a...) }

func fatal(err error) {
	logf("%v", err)
	os.Exit(1)
}
