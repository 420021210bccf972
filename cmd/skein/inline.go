package main

// This file is what the REPL's :run and watch --run share with skein run:
// starting the run through the run service, asking for approvals inline (approve, or
// reject with an optional reason) and reading the answer in a way that a
// cancelled run can stop.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/internal/confine"
	"github.com/skeinlang/skein/internal/visible"
	"github.com/skeinlang/skein/lang"
	"github.com/skeinlang/skein/stdlib"
	"github.com/skeinlang/skein/vm"
	"github.com/skeinlang/skein/vm/store"
)

// lineReader reads one line of input, without its line break. It returns
// io.EOF at the end of the input and ctx's error once ctx is done.
type lineReader func(ctx context.Context) (string, error)

// inlineAsker asks for approval decisions where the REPL and watch --run
// are used: the question, then y or n, then for a rejection an optional
// reason ("n REASON" gives it on one line).
type inlineAsker struct {
	mu   sync.Mutex
	out  io.Writer
	read lineReader
	// hold pauses the live progress while a question is up (nil: none).
	hold func(on bool)
	// echo prints each answer read, where the terminal does not (a
	// script piped in).
	echo bool
	// usual, when set, puts the terminal in its usual mode (echo, erase,
	// Ctrl-C, Enter ends a line) and returns what puts it back. It is
	// called before the question is printed and undone after the last
	// answer: an answer typed as soon as the question shows must not
	// reach the terminal in line editing's mode, where it is not echoed
	// and its Enter does not end a line read in the usual mode.
	usual func() (restore func(), err error)
}

// ask returns the decision, or ok false when the input ended or could not
// be read (the run is then parked). When ctx ends or the deadline passes
// first it returns a rejection the caller does not use: it looks at ctx
// and the deadline itself.
func (a *inlineAsker) ask(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (approved bool, reason string, values map[string]any, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if a.hold != nil {
		a.hold(true)
		defer a.hold(false)
	}
	if a.usual != nil {
		restore, err := a.usual()
		if err != nil {
			return false, "", nil, false
		}
		defer restore()
	}
	q := fmt.Sprintf("approve %q: %s", req.Step, visible.Text(req.Message, false))
	if !deadline.IsZero() {
		q += fmt.Sprintf(" (times out at %s)", deadline.Local().Format("15:04:05"))
	}
	fmt.Fprintf(a.out, "%s [y/N] ", q)
	for {
		line, err := a.readLine(ctx)
		if err != nil {
			return false, "", nil, ctx.Err() != nil
		}
		answer, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToLower(answer) {
		case "y", "yes":
			values, ok := askFields(ctx, a.out, req, func(ctx context.Context) (string, bool) {
				line, err := a.readLine(ctx)
				return strings.TrimSpace(line), err == nil
			})
			if !ok {
				return false, "", nil, ctx.Err() != nil
			}
			return true, "", values, true
		case "", "n", "no":
			if rest = strings.TrimSpace(rest); rest != "" || answer == "" {
				return false, rest, nil, true
			}
			fmt.Fprint(a.out, "reason (Enter for none): ")
			line, err := a.readLine(ctx)
			if err != nil {
				return false, "", nil, ctx.Err() != nil
			}
			return false, strings.TrimSpace(line), nil, true
		}
		fmt.Fprintf(a.out, "answer y to approve, n to reject (n REASON to say why): ")
	}
}

// readLine reads an answer, echoing it when asked to, and ends the
// question's line when there is none.
func (a *inlineAsker) readLine(ctx context.Context) (string, error) {
	line, err := a.read(ctx)
	switch {
	case err != nil:
		fmt.Fprintln(a.out)
	case a.echo:
		fmt.Fprintln(a.out, visible.Text(line, false))
	}
	return line, err
}

// Ask implements [runs.Asker].
func (a *inlineAsker) Ask(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (runs.Decision, bool) {
	approved, reason, values, ok := a.ask(ctx, req, deadline)
	return runs.Decision{Approved: approved, By: currentUser(), Reason: reason, Values: values}, ok
}

// chanLines reads the lines of in on a goroutine of its own, so that a
// reader can stop waiting for one (a cancelled run) and the next reader
// still gets it. The goroutine ends at the end of in.
func chanLines(in io.Reader) lineReader {
	lines := make(chan string)
	end := make(chan struct{})
	var endErr error
	go func() {
		defer close(end)
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadString('\n')
			if err != nil && (err != io.EOF || line == "") {
				endErr = err
				return
			}
			lines <- strings.TrimRight(line, "\r\n")
		}
	}()
	return func(ctx context.Context) (string, error) {
		select {
		case l := <-lines:
			return l, nil
		case <-end:
			return "", endErr
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// fdLine reads one line from file descriptor fd (a terminal in its normal
// mode, or a pipe) through a non-blocking duplicate, so that ctx ending
// stops the read and nothing after the line break is consumed. It leaves
// fd blocking again, as line editing wants it.
func fdLine(fd int) lineReader {
	return func(ctx context.Context) (string, error) {
		dup, err := syscall.Dup(fd)
		if err != nil {
			return "", err
		}
		// The flag is on the open file, which fd shares: set it back.
		defer syscall.SetNonblock(fd, false)
		if err := syscall.SetNonblock(dup, true); err != nil {
			syscall.Close(dup)
			return "", err
		}
		f := os.NewFile(uintptr(dup), "stdin")
		defer f.Close()
		stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
		defer stop()
		var line []byte
		b := make([]byte, 1)
		for {
			n, err := f.Read(b)
			if n == 1 {
				if b[0] == '\n' {
					return strings.TrimRight(string(line), "\r"), nil
				}
				line = append(line, b[0])
				continue
			}
			switch {
			case ctx.Err() != nil:
				return "", ctx.Err()
			case err == io.EOF && len(line) > 0:
				return string(line), nil
			case err != nil:
				return "", err
			}
		}
	}
}

// sessionRun is a run the REPL's :run or watch --run starts, built as
// skein run builds one: progress, approvals asked inline when there are
// answers to read, child flows loaded from disk, and a record in the store.
type sessionRun struct {
	run   *runs.Run
	prog  *progress
	st    *store.Store // nil: not recorded
	setup *runSetup
}

// runSetup is what the REPL and watch each decide about their runs.
type runSetup struct {
	out  io.Writer // progress and summary
	errw io.Writer // why a run cannot start or be recorded
	tty  bool
	// answers reads approval decisions; nil parks runs on approvals.
	answers lineReader
	usual   func() (restore func(), err error) // see inlineAsker.usual
	echo    bool                               // print each answer read (a script piped in)
	exitCtx context.Context
	// record keeps the run in the store (--store, else as skein run finds
	// it); a store that cannot be written suggests noStoreFlag.
	record      bool
	store       string
	noStoreFlag string
	// file and sources are what the run is recorded as.
	file    string
	sources []store.Source
	// typed: the flow was typed in, so skein resume cannot continue it.
	typed bool
}

// newSessionRun builds a run of g with inputs. When it cannot (the models
// cannot be called, the store cannot be written) it says why on errw and
// returns nil.
func newSessionRun(s *runSetup, g *graphir.Graph, inputs *stdlib.Map) *sessionRun {
	if !modelsCallable(s.errw, g) {
		return nil
	}
	sr := &sessionRun{prog: newProgress(s.out, s.tty), setup: s}
	spec := &runs.Spec{Graph: g, Inputs: inputs, File: s.file, Sources: s.sources, NoDecision: noDecision}
	if s.answers != nil {
		spec.Ask = &inlineAsker{out: s.out, read: s.answers, hold: sr.prog.hold, echo: s.echo, usual: s.usual}
	}
	svc := &runs.Service{Load: loadOptions("", 0)}
	var err error
	if s.record {
		// The store the flow's root finds (--store, $SKEIN_STORE, the
		// nearest .skein), closed once the run is finished.
		if sr.st, err = openStore(s.store, g.Root); err == nil {
			svc.Store = sr.st
			if sr.run, err = svc.Start(spec); err != nil {
				sr.st.Close()
			}
		}
		if err != nil {
			writeError(s.errw, err)
			fmt.Fprintf(s.errw, "not run: the run store cannot be written (%s runs without it)\n", s.noStoreFlag)
			return nil
		}
	} else if sr.run, err = svc.Start(spec); err != nil {
		writeError(s.errw, err) // not recorded: nothing to fail
		return nil
	}
	sr.run.OnEvent, sr.run.ExitCtx = sr.prog.event, s.exitCtx
	return sr
}

// start starts the run under ctx; its result arrives on the channel once
// it has ended and its record is finished.
func (sr *sessionRun) start(ctx context.Context) <-chan *vm.Result {
	sr.prog.start()
	done := make(chan *vm.Result, 1)
	go func() {
		res, err := sr.run.Run(ctx)
		if err != nil {
			writeError(sr.setup.errw, err)
		}
		if sr.st != nil {
			sr.st.Close()
		}
		done <- res
	}()
	return done
}

// report ends the progress and prints the summary of res, its run ID and
// how to decide each approval it waits for.
func (sr *sessionRun) report(res *vm.Result) {
	sr.prog.stop()
	sr.prog.summary(res)
	if sr.st == nil {
		return
	}
	out := sr.setup.out
	fmt.Fprintf(out, "  run:    %s\n", res.RunID)
	for _, p := range res.Pending {
		if sr.setup.typed {
			fmt.Fprintf(out, "waiting: %q has no decision; this flow was typed in, so skein resume cannot continue the run: :run again\n", p.Step)
			continue
		}
		fmt.Fprintf(out, "waiting: skein approve %s %s --resume\n", res.RunID, approveArg(runs.PendingPath(p), p.Step))
	}
}

// modelsCallable checks g's models before a run (vm.CheckModels), as skein
// run does; if they cannot be called it says so on w and returns false.
func modelsCallable(w io.Writer, g *graphir.Graph) bool {
	if err := vm.CheckModels(g, os.Environ()); err != nil {
		fmt.Fprintf(w, "error: %v\nnot run: the flow's models cannot be called\n", err)
		return false
	}
	return true
}

// diskSources are the texts of g's files as they are on disk now, those
// that can still be read as a flow is (lang.ReadFile).
func diskSources(g *graphir.Graph) []store.Source {
	var sources []store.Source
	for _, f := range g.Files {
		if text, err := lang.ReadFile(f); err == nil {
			sources = append(sources, store.Source{Path: confine.Abs(f), Text: text})
		}
	}
	return sources
}

// twoStage returns a context that the first call of next cancels (the
// run stops) and one that the second cancels (its exit handler stops at
// once), as skein run's first and second Ctrl-C do.
func twoStage(parent context.Context) (run, exit context.Context, next func(), stop func()) {
	run, cancelRun := context.WithCancel(parent)
	exit, cancelExit := context.WithCancel(context.Background())
	var mu sync.Mutex
	n := 0
	next = func() {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 1 {
			cancelRun()
		} else {
			cancelExit()
		}
	}
	return run, exit, next, func() { cancelRun(); cancelExit() }
}
