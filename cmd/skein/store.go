package main

// This file is the run store on the command line: where the store lives,
// recording a run's sources, and the commands that read the store (runs,
// show, logs, gc).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/check"
	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/spell"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// localService is the run service on the store a command that names no
// flow uses: flag, else $SKEIN_STORE, else the nearest .skein/runs.db at
// or above the current directory (runs.OpenExistingStore). It never
// creates one. The caller closes its Store.
func localService(flag string) (*runs.Service, error) {
	wd, _ := os.Getwd()
	st, err := runs.OpenExistingStore(flag, wd)
	if err != nil {
		return nil, explainStoreErr(flag, err)
	}
	return &runs.Service{Store: st}, nil
}

// openStore opens the store that records the runs of a flow whose root
// is root (runs.OpenStore: flag, else $SKEIN_STORE, else the nearest
// .skein).
func openStore(flag, root string) (*store.Store, error) {
	st, err := runs.OpenStore(flag, root)
	return st, explainStoreErr(flag, err)
}

// explainStoreErr adds to err what to do about it: where to name a store
// when none was found, and for a path that is not a run store what to do
// about whichever named it.
func explainStoreErr(flag string, err error) error {
	var none *runs.NoStoreError
	var ns *store.NotStoreError
	switch {
	case errors.As(err, &none):
		return fmt.Errorf("%w (runs are recorded beside the flow; pass --store PATH)", err)
	case !errors.As(err, &ns):
		return err
	}
	switch runs.StoreOrigin(flag) {
	case runs.Named:
		return fmt.Errorf("%w; --store names the store: give it a run store's file, such as .skein/runs.db, or leave it out", err)
	case runs.FromEnv:
		return fmt.Errorf("%w; $SKEIN_STORE names the store: set it to a run store's file, such as .skein/runs.db, or unset it", err)
	}
	return fmt.Errorf("%w; move it away (the next skein run makes a new store there), or name another store with --store PATH", err)
}

type runsOptions struct {
	engineFlags
	store, flow, status string
	limit               int
	json                bool
}

type showOptions struct {
	engineFlags
	store string
	json  bool
}

type logsOptions struct {
	engineFlags
	store  string
	follow bool
}

type gcOptions struct {
	store     string
	keep      int
	olderThan time.Duration
}

func init() {
	register(&command{
		name:    "runs",
		args:    "[--flow NAME] [--status S] [--limit N] [--json] [--engine temporal [--address HOST:PORT] [--namespace N]]",
		summary: "list the recorded runs, newest first",
		long: `Lists the runs recorded in the store: id, flow, status, start, duration and,
for a failed run, the failing step. A run whose process died shows as
interrupted (skein resume continues it); one parked on an approval as waiting.
With --engine temporal, lists the runs on the Temporal namespace instead
(child flows' workflows are not runs of their own).

Exit status: 0, 1 when there is no store, 2 on bad usage.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *runsOptions) {
			fs.StringVar(&o.flow, "flow", "", "only runs of the flow with this name")
			fs.StringVar(&o.status, "status", "", "only runs with this status (succeeded, failed, cancelled, running, waiting, interrupted)")
			fs.IntVarP(&o.limit, "limit", "n", 20, "at most this many runs (0 for all)")
			fs.BoolVar(&o.json, "json", false, "print a JSON array of run objects")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "whose runs to list: local (the run store) or temporal (a Temporal namespace)")
		}, runRuns, nil),
	})
	register(&command{
		name:    "show",
		args:    "RUN [--json] [--engine temporal [--address HOST:PORT] [--namespace N]]",
		summary: "show a recorded run",
		long: `Shows a run's record: status, error, output, every attempt of the effects
it ran, and its approvals (who decided what and when; for a pending one, the
skein approve command). RUN is a run id, a unique prefix of one, or last.
--json prints the result object that skein run --json prints (for a run
still running or interrupted, what the record knows so far).

With --engine temporal, RUN is the id of a run on Temporal (its workflow
id): a run still going answers with its record so far (its steps as their
latest events left them, the approvals it waits for), an ended one with its
result; the steps of child flows are listed under their step.

Exit status: 0, 1 when the run is not found, 2 on bad usage.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *showOptions) {
			fs.BoolVar(&o.json, "json", false, "print the result object as JSON")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "where the run runs: local (the run store) or temporal (RUN is the workflow id)")
		}, runShow, nil),
	})
	register(&command{
		name:    "logs",
		args:    "RUN [STEP] [--follow] [--engine temporal [--address HOST:PORT] [--namespace N]]",
		summary: "print the captured output of a run's tasks",
		long: `Prints the stdout and stderr captured from a run's task and shell steps in the
order they ran, each under a header naming the step, its scope, visit and
attempt. With STEP, only that step's. --follow prints a running task's
output as the task prints it (from files the skein running the flow writes
beside the store, on the same machine), then the rest when it ends, and the
next task's, until the run is no longer running. With --engine temporal,
reads a run on Temporal from its event log.

Exit status: 0, 1 when the run or step is not found, 2 on bad usage.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *logsOptions) {
			fs.BoolVarP(&o.follow, "follow", "f", false, "keep printing until the run ends")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "where the run is: local (the run store) or temporal (a Temporal namespace)")
		}, runLogs, nil),
	})
	register(&command{
		name:    "gc",
		args:    "[--keep N] [--older-than D]",
		summary: "delete old runs and compact the store",
		long: `Deletes the ended runs that are both beyond the newest N (--keep, default
100) and ended longer ago than D (--older-than, default 0: any age), then
compacts the store. With --older-than it also deletes the runs left
waiting or interrupted (their process gone) since longer ago than D:
nobody came back for them. A run still going is never deleted. D is a
duration (720h, 90m) or a number of days (30d).

Exit status: 0, 1 when there is no store or it cannot be written, 2 on bad usage.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *gcOptions) {
			fs.IntVar(&o.keep, "keep", 100, "keep this many newest ended runs")
			fs.Var(ageFlag{&o.olderThan}, "older-than", "delete only runs that ended, or were left waiting or interrupted, longer ago than this (30d, 720h)")
			storeFlag(fs, &o.store)
		}, runGC, nil),
	})
}

func runRuns(ctx context.Context, io stdio, opts *runsOptions, args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(io.err, "skein runs: takes no arguments\nusage: skein runs [--flow NAME] [--status S] [--limit N] [--json]")
		return exitUsage
	}
	switch opts.status {
	case "", "succeeded", "failed", "cancelled", store.Running, store.Waiting, store.Interrupted:
	default:
		fmt.Fprintf(io.err, "skein runs: unknown status %q: want succeeded, failed, cancelled, running, waiting or interrupted\n", opts.status)
		return exitUsage
	}
	if err := opts.engineFlags.check("runs"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	var list []*store.Run
	var svc *runs.Service // the local engine's
	if opts.engine != "local" {
		eng, err := opts.dial(ctx, nil)
		if err != nil {
			fmt.Fprintf(io.err, "skein runs: %v\n", err)
			return exitFail
		}
		defer eng.Close()
		var cut string
		if list, cut, err = eng.List(ctx, store.Filter{Flow: opts.flow, Status: opts.status, Limit: opts.limit}); err != nil {
			fmt.Fprintf(io.err, "skein runs: %v\n", err)
			return exitFail
		}
		if cut != "" {
			defer fmt.Fprintf(io.err, "skein runs: %s\n", cut)
		}
	} else {
		var err error
		if svc, err = localService(opts.store); err != nil {
			fmt.Fprintf(io.err, "skein runs: %v\n", err)
			return exitFail
		}
		defer svc.Store.Close()
		if list, err = svc.List(store.Filter{Flow: opts.flow, Status: opts.status, Limit: opts.limit}); err != nil {
			fmt.Fprintf(io.err, "skein runs: %v\n", err)
			return exitFail
		}
	}
	if opts.json {
		objs := make([]any, len(list))
		for i, r := range list {
			objs[i] = runObject(r)
		}
		b, _ := json.MarshalIndent(objs, "", "  ")
		fmt.Fprintf(io.out, "%s\n", b)
		return exitOK
	}
	if len(list) == 0 {
		if opts.engine == "temporal" {
			fmt.Fprintf(io.err, "no runs on Temporal at %s (namespace %s)\n", opts.address, opts.namespace)
		} else if opts.flow != "" || opts.status != "" {
			msg := fmt.Sprintf("no runs%s%s in %s", quotedIf(" of flow ", opts.flow), quotedIf(" with status ", opts.status), svc.Store.Path())
			if opts.flow != "" {
				if flows, err := svc.Flows(); err == nil {
					if n := spell.Nearest(opts.flow, flows); n != "" && n != opts.flow {
						msg += fmt.Sprintf(" (did you mean --flow %s?)", n)
					}
				}
			}
			fmt.Fprintln(io.err, msg)
		} else {
			fmt.Fprintf(io.err, "no runs recorded yet in %s\n", svc.Store.Path())
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFLOW\tSTATUS\tSTARTED\tDURATION\tSTEP")
	for _, r := range list {
		step := r.ErrorStep
		if svc != nil {
			if s, err := svc.StepOf(r); err == nil {
				step = s
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Flow, r.Status, r.Started.Local().Format("2006-01-02 15:04:05"), runDuration(r), visible.Text(step, false))
	}
	tw.Flush()
	return exitOK
}

// quotedIf is prefix and v quoted, or "" for no v.
func quotedIf(prefix, v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf("%s%q", prefix, v)
}

func runDuration(r *store.Run) string {
	if r.Ended.IsZero() {
		return "-"
	}
	return r.Ended.Sub(r.Started).Round(time.Millisecond).String()
}

type jsonError struct {
	Code    string `json:"code"`
	Step    string `json:"step"`
	Message string `json:"message"`
}

type jsonRun struct {
	RunID       string     `json:"run_id"`
	Flow        string     `json:"flow"`
	File        string     `json:"file"`
	Status      string     `json:"status"`
	Error       *jsonError `json:"error"`
	Started     string     `json:"started"`
	Ended       *string    `json:"ended"`
	DurationMS  *float64   `json:"duration_ms"`
	ResumedFrom string     `json:"resumed_from,omitempty"`
}

func runObject(r *store.Run) jsonRun {
	o := jsonRun{RunID: r.ID, Flow: r.Flow, File: r.File, Status: r.Status, Started: r.Started.UTC().Format(time.RFC3339Nano), ResumedFrom: r.ResumedFrom}
	if r.ErrorCode != "" {
		o.Error = &jsonError{r.ErrorCode, r.ErrorStep, r.ErrorMsg}
	}
	if !r.Ended.IsZero() {
		e := r.Ended.UTC().Format(time.RFC3339Nano)
		d := float64(r.Ended.Sub(r.Started).Microseconds()) / 1000
		o.Ended, o.DurationMS = &e, &d
	}
	return o
}

func runShow(ctx context.Context, io stdio, opts *showOptions, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(io.err, "skein show: want one run (an id, a prefix of one, or last)\nusage: skein show RUN [--json]")
		return exitUsage
	}
	if err := opts.engineFlags.check("show"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	if opts.engine != "local" {
		return showOnEngine(ctx, io, opts, args[0])
	}
	svc, err := localService(opts.store)
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	defer svc.Store.Close()
	rec, err := svc.Record(args[0])
	if err != nil {
		fmt.Fprintf(io.err, "skein show: %v\n", err)
		return exitFail
	}
	r, effects, approvals := rec.Run, rec.Effects, rec.Approvals
	if opts.json {
		var buf bytes.Buffer
		if err := rec.WriteResult(&buf, "  "); err != nil {
			fmt.Fprintf(io.err, "skein show: %v\n", err)
			return exitFail
		}
		io.out.Write(buf.Bytes())
		return exitOK
	}
	fmt.Fprintf(io.out, "run %s\nflow %s (%s)\nstatus %s\n", r.ID, visible.Text(r.Flow, false), visible.Text(r.File, false), r.Status)
	fmt.Fprintf(io.out, "started %s", r.Started.Local().Format("2006-01-02 15:04:05.000"))
	if r.Options.By != "" {
		fmt.Fprintf(io.out, " by %s", visible.Text(r.Options.By, false))
	}
	if !r.Ended.IsZero() {
		fmt.Fprintf(io.out, ", took %s", runDuration(r))
	}
	fmt.Fprintln(io.out)
	if r.ResumedFrom != "" {
		fmt.Fprintf(io.out, "resumed from %s\n", r.ResumedFrom)
	}
	if c := rec.Cancel; c != nil {
		fmt.Fprintf(io.out, "cancel requested")
		if c.By != "" {
			fmt.Fprintf(io.out, " by %s", visible.Text(c.By, false))
		}
		fmt.Fprintf(io.out, " at %s", c.At.Local().Format("2006-01-02 15:04:05"))
		if c.Reason != "" {
			fmt.Fprintf(io.out, ": %s", visible.Text(c.Reason, false))
		}
		fmt.Fprintln(io.out, " (not acted on yet)")
	}
	if r.ErrorCode != "" {
		fmt.Fprintf(io.out, "error %s: %s\n", r.ErrorCode, visible.Text(r.ErrorMsg, false))
	}
	if out, v, ok := rec.Output(); ok {
		// A task's record as what it printed, as run's summary shows
		// it (show --json has the record).
		text := string(out)
		if v != nil {
			if _, isTask := vm.TaskStdout(v); isTask {
				text = outputText(v, "       ")
			}
		}
		fmt.Fprintf(io.out, "output %s\n", text)
	}
	if fe := svc.Envelope(rec); fe != nil {
		fmt.Fprintf(io.out, "spent %s\n", spentLine(rec.Spent(), fe.Total))
	}
	if len(effects) > 0 {
		fmt.Fprintln(io.out, "effects:")
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		for _, a := range rec.Attempts() {
			e := a.Effect
			took := "-"
			if !e.Ended.IsZero() {
				took = e.Ended.Sub(e.Started).Round(time.Millisecond).String()
			}
			detail := e.Error
			if e.Status == "succeeded" && e.Output != nil {
				detail = string(e.Output)
			}
			if detail == "" && e.Rendered != nil && len(e.Rendered.Argv) > 0 {
				// What a task ran, its templates filled in.
				detail = visible.Text("$ "+commandLine(e.Rendered.Argv), false)
			}
			switch a.Status {
			case store.Waiting:
				detail = "waiting for a decision"
			case runs.Interrupted:
				detail = "running when the run's process died"
			case runs.Unrecorded:
				detail = "its completion was not recorded"
			}
			fmt.Fprintf(tw, "  %s\t%s\tvisit %d\tattempt %d\t%s\t%s\t%s\n", runs.Place(e.Path, e.Step), e.Kind, e.Visit, a.Number, a.Status, took, oneLine(detail, 60))
		}
		tw.Flush()
	}
	if len(approvals) > 0 {
		// Who decided what, and what is still to decide: the audit trail
		// and the command that goes on.
		fmt.Fprintln(io.out, "approvals:")
		tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
		for _, a := range approvals {
			step := runs.Place(a.Path, a.Step)
			var decision string
			switch {
			case !a.Decided.IsZero():
				decision = "rejected"
				if a.Approved {
					decision = "approved"
				}
				decision += " by " + a.By + " at " + a.Decided.Local().Format("2006-01-02 15:04:05")
				if a.Reason != "" {
					decision += ": " + a.Reason
				}
				if a.Values != "" {
					decision += " values " + a.Values
				}
			case !a.Expired.IsZero() && a.Timeout <= 0:
				decision = "timed out at " + a.Expired.Local().Format("2006-01-02 15:04:05")
			case !a.Expired.IsZero() || !a.Pending(time.Now()):
				decision = "no decision within " + graphir.FormatDuration(a.Timeout)
			case r.Status == store.Waiting || r.Status == store.Interrupted || rec.IsHeld(a.Path, a.Step, a.Visit):
				decision = "waiting: skein approve " + r.ID + " " + approveArg(a.Path, a.Step)
			default:
				decision = "not decided"
			}
			fmt.Fprintf(tw, "  %s\tvisit %d\t%s\t%s\n", step, a.Visit, visible.Text(oneLine(a.Message, 40), false), visible.Text(decision, false))
		}
		tw.Flush()
	}
	return exitOK
}

// commandLine is argv as a shell line, the words that need it quoted; a
// shell step's ("/bin/sh -c SCRIPT") is its script.
func commandLine(argv []string) string {
	if len(argv) == 3 && argv[0] == "/bin/sh" && argv[1] == "-c" {
		return argv[2]
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r))
		}) {
			words[i] = strconv.Quote(a)
		}
	}
	return strings.Join(words, " ")
}

func oneLine(s string, max int) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

func runLogs(ctx context.Context, io stdio, opts *logsOptions, args []string) int {
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(io.err, "skein logs: want a run and optionally a step\nusage: skein logs RUN [STEP] [--follow]")
		return exitUsage
	}
	if err := opts.engineFlags.check("logs"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	step := ""
	if len(args) == 2 {
		step = args[1]
	}
	svc, closeSvc, ok := opts.engineFlags.service(ctx, io, "logs", opts.store)
	if !ok {
		return exitFail
	}
	defer closeSvc()
	tty := isTerminal(io.out)
	live := &livePrinter{w: io.out, show: logShow(tty)}
	err := svc.Logs(ctx, args[0], step, opts.follow, &runs.LogHooks{
		OnLog: func(l *runs.Log) {
			writeLog(io.out, tty, l.Where, l.Visit, l.Attempt, l.Status, l.Error, l.Stdout, l.Stderr)
		},
		OnLive: live.print,
		OnDropped: func(w string, n int) {
			fmt.Fprintf(io.err, "(%s of %s not shown: the run's event log keeps the latest only)\n", plural(n, "event"), w)
		},
	})
	if err != nil {
		fmt.Fprintf(io.err, "skein logs: %v\n", err)
		return exitFail
	}
	return exitOK
}

// logShow is how logs shows what a task printed: on a terminal shown,
// never interpreted; piped, passed on as it was.
func logShow(tty bool) func(string) string {
	if tty {
		return func(s string) string { return visible.Text(s, true) }
	}
	return func(s string) string { return s }
}

// writeLog writes what one attempt of a task printed, under a header
// naming it and how it ended.
func writeLog(w io.Writer, tty bool, where string, visit, attempt int, status, errMsg, stdout, stderr string) {
	if status == "failed" && errMsg != "" {
		status += ": " + errMsg
	}
	fmt.Fprintf(w, "==> %s (visit %d, attempt %d) %s <==\n", where, visit, attempt, visible.Text(status, false))
	show := logShow(tty)
	io.WriteString(w, show(stdout))
	if stdout != "" && !strings.HasSuffix(stdout, "\n") {
		fmt.Fprintln(w)
	}
	if stderr != "" {
		fmt.Fprintln(w, "--- stderr ---")
		io.WriteString(w, show(stderr))
		if !strings.HasSuffix(stderr, "\n") {
			fmt.Fprintln(w)
		}
	}
}

// ageFlag is --older-than: a duration, or a whole number of days ("30d"),
// the unit a store's age is thought of in.
type ageFlag struct{ d *time.Duration }

func (a ageFlag) String() string {
	if a.d == nil {
		return "0s"
	}
	return a.d.String()
}

func (a ageFlag) Set(s string) error {
	d, err := graphir.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 720h, or days such as 30d")
	}
	*a.d = d
	return nil
}

func (a ageFlag) Type() string { return "duration" }

func runGC(_ context.Context, io stdio, opts *gcOptions, args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(io.err, "skein gc: takes no arguments\nusage: skein gc [--keep N] [--older-than D]")
		return exitUsage
	}
	if opts.keep < 0 || opts.olderThan < 0 {
		fmt.Fprintln(io.err, "skein gc: --keep and --older-than must not be negative")
		return exitUsage
	}
	svc, err := localService(opts.store)
	if err != nil {
		fmt.Fprintf(io.err, "skein gc: %v\n", err)
		return exitFail
	}
	defer svc.Store.Close()
	c, err := svc.GC(opts.keep, opts.olderThan)
	if err != nil {
		fmt.Fprintf(io.err, "skein gc: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(io.out, "deleted %s; the store is %s (was %s)\n", plural(c.Runs, "run"), sizeText(c.After), sizeText(c.Before))
	return exitOK
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// spentLine says what a run spent against its envelope: "model calls 3
// of at most 18, completion tokens 1,234 of at most 24,576, ...".
func spentLine(s runs.Spent, env check.Envelope) string {
	var parts []string
	add := func(what string, n float64, a check.Amount, f check.Format) {
		if a.IsZero() && n == 0 {
			return
		}
		spent := check.Thousands(n)
		if f == check.FormatDollars {
			spent = check.Amount{Max: n}.Format(f)
		}
		bound := "at most " + a.Format(f)
		if !a.Bounded() {
			bound = a.Format(f)
		}
		parts = append(parts, fmt.Sprintf("%s %s of %s", what, spent, bound))
	}
	add("model calls", float64(s.ModelCalls), env.ModelCalls, check.FormatCount)
	add("completion tokens", float64(s.CompletionTokens), env.Tokens, check.FormatCount)
	add("output cost", s.Cost, env.Cost, check.FormatDollars)
	add("processes", float64(s.Processes), env.Processes, check.FormatCount)
	add("approvals", float64(s.Approvals), env.Approvals, check.FormatCount)
	if len(parts) == 0 {
		return "nothing, as its envelope said"
	}
	return strings.Join(parts, ", ")
}
