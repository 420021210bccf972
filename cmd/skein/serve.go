package main

// This file is skein serve: its flags, and the wiring of the HTTP server
// (engine/serve) to a store, an address and the process's signals.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/skeinlang/skein/engine/serve"
	"github.com/skeinlang/skein/graphir"
)

type serveOptions struct {
	store     string
	addr      string
	tokenFile string
	by        string
	roots     []string
	maxRuns   int
	keep      string
}

func init() {
	register(&command{
		name:    "serve",
		args:    "[--addr HOST:PORT] [--root DIR]... [--store PATH] [--token-file FILE] [--by NAME] [--max-runs N] [--keep D]",
		summary: "serve the runs, approvals and flows in a browser, and as a JSON API",
		long: `Serves a web UI and an HTTP JSON API over the run store (docs/serve.md): the
runs with their graphs, steps and output, live; the approvals waiting, to
approve or reject; the flows under the flow roots, to start. Every action
goes through the same run service as skein run, resume and approve, so
the command line sees the page's runs and decisions at once.

It listens on 127.0.0.1:7077 unless --addr says otherwise; an address that
is not loopback needs a token (--token-file, else $SKEIN_SERVE_TOKEN),
which every request must then carry. --by names who the decisions made
through it are recorded as (default $SKEIN_USER, else $USER, else
$LOGNAME).

It runs the flows' triggers (trigger() in a flow: cron, every, webhook):
each firing and delivery becomes a queued run, started in order with at
most --max-runs at once in all, and a flow's concurrency= per flow or
per concurrency_key. Queued runs wait across restarts; runs left
running by a stopped server are resumed when it starts again. With
--keep D, the runs that ended longer ago than D are deleted, with
their logs (as skein gc --older-than D), at start and once a day.

On an interrupt or SIGTERM it stops; the runs it was running are left
interrupted, for skein resume (or the page) to continue.`,
		flags: withOptions(func(fs *pflag.FlagSet, o *serveOptions) {
			storeFlag(fs, &o.store)
			fs.StringVar(&o.addr, "addr", "127.0.0.1:7077", "where to listen, HOST:PORT (not loopback: needs a token)")
			fs.StringVar(&o.tokenFile, "token-file", "", "a file whose first line is the token every request must carry (default $SKEIN_SERVE_TOKEN)")
			fs.StringVar(&o.by, "by", "", "who decisions made through the server are recorded as (default $SKEIN_USER, else $USER, else $LOGNAME)")
			fs.StringArrayVar(&o.roots, "root", nil, "a flow root whose flows can be started (repeatable; default: the current directory)")
			fs.IntVar(&o.maxRuns, "max-runs", 8, "the most queued runs (triggers, webhooks) running at once; 0 for no bound")
			fs.StringVar(&o.keep, "keep", "", "delete the runs (and queue items) that ended longer ago than this, as 30d; at start and once a day")
		}, runServe, nil),
	})
}

func runServe(ctx context.Context, io stdio, opts *serveOptions, args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(io.err, "skein serve: takes no arguments\nusage: skein serve [--addr HOST:PORT] [--root DIR]... [--store PATH] [--token-file FILE] [--by NAME] [--max-runs N] [--keep D]")
		return exitUsage
	}
	if opts.maxRuns < 0 {
		fmt.Fprintln(io.err, "skein serve: --max-runs must be 0 (no bound) or more")
		return exitUsage
	}
	var keep time.Duration
	if opts.keep != "" {
		d, err := graphir.ParseDuration(opts.keep)
		if err != nil || d <= 0 {
			fmt.Fprintf(io.err, "skein serve: --keep must be a duration such as 30d or 12h, got %q\n", opts.keep)
			return exitUsage
		}
		keep = d
	}
	token, err := serveToken(opts.tokenFile)
	if err != nil {
		fmt.Fprintf(io.err, "skein serve: %v\n", err)
		return exitUsage
	}
	loopback := serve.IsLoopback(opts.addr)
	if !loopback && token == "" {
		fmt.Fprintf(io.err, "skein serve: %s is not a loopback address: give a token (--token-file FILE, or $SKEIN_SERVE_TOKEN), which every request must then carry\n", opts.addr)
		return exitUsage
	}
	roots := opts.roots
	if len(roots) == 0 {
		roots = []string{"."}
	}
	for _, r := range roots {
		if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
			fmt.Fprintf(io.err, "skein serve: --root %s: not a directory\n", r)
			return exitUsage
		}
	}
	wd, _ := os.Getwd()
	st, err := openStore(opts.store, wd)
	if err != nil {
		fmt.Fprintf(io.err, "skein serve: %v\n", err)
		return exitFail
	}
	defer st.Close()
	srv, err := serve.New(serve.Config{Store: st, Roots: roots, Token: token, By: byOrUser(opts.by), Loopback: loopback,
		Load: loadOptions("", 0), OpenCassette: openCassette, MaxRuns: opts.maxRuns, Keep: keep,
		Logf: func(format string, args ...any) { fmt.Fprintf(io.err, "skein serve: "+format+"\n", args...) }})
	if err != nil {
		fmt.Fprintf(io.err, "skein serve: %v\n", err)
		return exitFail
	}
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		fmt.Fprintf(io.err, "skein serve: %v\n", err)
		return exitFail
	}
	hs := srv.HTTPServer()
	fmt.Fprintf(io.err, "skein serve: http://%s (store %s)\n", ln.Addr(), st.Path())

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	go srv.Schedule()
	select {
	case err := <-served:
		fmt.Fprintf(io.err, "skein serve: %v\n", err)
		return exitFail
	case <-ctx.Done():
	}
	srv.Close() // the event streams end, so Shutdown need not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(io.err, "skein serve: %v\n", err)
	}
	if ids := srv.Running(); len(ids) > 0 {
		// Left as a crash leaves them: the keeper ends their tasks when
		// this process is gone, and they are interrupted, for a resume.
		// (Cancelling them would end them for good; letting the process
		// exit normally would stop the keeper first, and the tasks it
		// killed would be recorded as failed.)
		fmt.Fprintf(io.err, "skein serve: stopped; %d running runs left interrupted (skein resume %s)\n", len(ids), strings.Join(ids, ", "))
		os.Exit(exitFail)
	}
	fmt.Fprintln(io.err, "skein serve: stopped")
	return exitOK
}

// serveToken is the token: the first line of file, else
// $SKEIN_SERVE_TOKEN, else "" for none. A token is at least 16
// characters: one short enough to guess is refused.
func serveToken(file string) (string, error) {
	tok, where := strings.TrimSpace(os.Getenv("SKEIN_SERVE_TOKEN")), "$SKEIN_SERVE_TOKEN"
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %v", err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		tok, where = strings.TrimSpace(first), "--token-file "+file
	}
	if tok != "" && len(tok) < 16 {
		return "", fmt.Errorf("%s: the token must be at least 16 characters", where)
	}
	return tok, nil
}
