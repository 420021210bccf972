package main

// This file is skein cancel: cancelling a recorded run, running, waiting
// or interrupted (engine/runs does it; this is flags and output).

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/engine/runs"
)

type cancelOptions struct {
	engineFlags
	store  string
	reason string
	by     string
	json   bool
}

func init() {
	register(&command{
		name:    "cancel",
		args:    "RUN [--reason R] [--by NAME] [--json] [--engine temporal [--address HOST:PORT] [--namespace N]]",
		summary: "cancel a run: running, waiting for an approval, or interrupted",
		long: `Cancels a recorded run that has not ended; it ends cancelled, its exit
handler (flow(on_exit=)) runs, and its error says who cancelled it and why
("the run was cancelled by pat: release pulled").

A running run, in this or another process, is asked to stop through the
run store: the process running it notices within a quarter of a second and
stops it as Ctrl-C does (running tasks are signalled, the exit handler
runs). skein cancel returns once the request is recorded; skein show RUN
shows the run end. A run waiting for an approval, or whose process died
(interrupted), is cancelled by skein cancel itself: its record is read back
(nothing is run again), and its exit handler runs here.

--by defaults to $SKEIN_USER, else $USER, else $LOGNAME. --json prints the
run as skein runs --json does, after the cancel.

With --engine temporal, RUN is a run on Temporal (its workflow id, a prefix,
or last): its workflow is cancelled, Temporal cancels its running
activities (their tasks are killed on their workers), and the run ends
cancelled after its exit handler. Temporal's cancellation carries no
reason: --by and --reason are not recorded there.

Exit status: 0 when the run is cancelled or asked to stop; 1 when it is not
found or has ended already.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *cancelOptions) {
			fs.StringVar(&o.reason, "reason", "", "why, recorded in the run's error")
			fs.StringVar(&o.by, "by", "", "who cancels (default $SKEIN_USER, else $USER, else $LOGNAME)")
			fs.BoolVar(&o.json, "json", false, "print the run as JSON")
			storeFlag(fs, &o.store)
			o.defineConn(fs, "where the run runs: local (the run store) or temporal (RUN is a run on Temporal)")
		}, runCancel, nil),
	})
}

func runCancel(ctx context.Context, io stdio, opts *cancelOptions, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(io.err, "skein cancel: want one run (an id, a prefix of one, or last)\nusage: skein cancel RUN [--reason R] [--by NAME]")
		return exitUsage
	}
	if err := opts.engineFlags.check("cancel"); err != nil {
		fmt.Fprintln(io.err, err)
		return exitUsage
	}
	svc, closeSvc, ok := opts.service(ctx, io, "cancel", opts.store)
	if !ok {
		return exitFail
	}
	defer closeSvc()
	svc.Load = loadOptions("", 0)
	c, err := svc.Cancel(ctx, args[0], runs.CancelSpec{By: byOrUser(opts.by), Reason: opts.reason})
	if err != nil {
		fmt.Fprintf(io.err, "skein cancel: %v\n", err)
		return exitFail
	}
	r := c.Run
	switch {
	case c.Requested && svc.Engine != nil:
		// Temporal cancels its running activities: the run ends there.
		fmt.Fprintf(io.err, "asked Temporal to cancel run %s\n", r.ID)
		return exitOK
	case c.Requested:
		fmt.Fprintf(io.err, "asked the process running run %s to cancel it\n", r.ID)
	case r.Status == "cancelled":
		fmt.Fprintf(io.err, "cancelled run %s\n", r.ID)
	default:
		// Its record let it end before anything had to run again.
		fmt.Fprintf(io.err, "run %s ended %s before it could be cancelled\n", r.ID, r.Status)
	}
	if opts.json {
		b, _ := json.MarshalIndent(runObject(r), "", "  ")
		fmt.Fprintf(io.out, "%s\n", b)
	}
	return exitOK
}
