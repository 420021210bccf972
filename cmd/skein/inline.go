package main

// This file is what the REPL's :run and watch --run share with skein run:
// recording the run in the store, asking for approvals inline (approve, or
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

	"github.com/skeinlang/skein/graphir"
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
}

// ask returns the decision, or ok false when the input ended or could not
// be read (the run is then parked). When ctx ends or the deadline passes
// first it returns a rejection the caller does not use: it looks at ctx
// and the deadline itself.
func (a *inlineAsker) ask(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (approved bool, reason string, ok bool) {
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
	q := fmt.Sprintf("approve %q: %s", req.Step, visible(req.Message, false))
	if !deadline.IsZero() {
		q += fmt.Sprintf(" (times out at %s)", deadline.Local().Format("15:04:05"))
	}
	fmt.Fprintf(a.out, "%s [y/N] ", q)
	for {
		line, err := a.readLine(ctx)
		if err != nil {
			return false, "", ctx.Err() != nil
		}
		answer, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToLower(answer) {
		case "y", "yes":
			return true, "", true
		case "", "n", "no":
			if rest = strings.TrimSpace(rest); rest != "" || answer == "" {
				return false, rest, true
			}
			fmt.Fprint(a.out, "reason (Enter for none): ")
			line, err := a.readLine(ctx)
			if err != nil {
				return false, "", ctx.Err() != nil
			}
			return false, strings.TrimSpace(line), true
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
		fmt.Fprintln(a.out, visible(line, false))
	}
	return line, err
}

// ask asks for a decision inline, through the REPL's or watch's asker or
// skein run's prompt; ok is false when there is no way to ask, or the
// input ended, and the run should park.
func (a *approver) ask(ctx context.Context, req *vm.EffectRequest, deadline time.Time) (approved bool, reason string, ok bool) {
	switch {
	case a.inline != nil:
		return a.inline.ask(ctx, req, deadline)
	case a.prompt != nil:
		approved, reason := a.prompt.ask(ctx, req, deadline)
		return approved, reason, true
	}
	return false, "", false
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

// beginRecord opens the store for g (storeFlag, else $SKEIN_STORE, else
// the nearest .skein at or above the flow root) and begins the record of a
// run of g from file (recorded as the run's file) and sources. The caller
// closes rec.Store() once the run is finished.
func beginRecord(storeFlag string, g *graphir.Graph, file string, sources []store.Source, inputs *stdlib.Map) (*store.Recorder, error) {
	st, err := store.Open(storePathFor(storeFlag, g.Root))
	if err != nil {
		return nil, err
	}
	started := time.Now()
	rec, err := st.Begin(&store.NewRun{ID: vm.NewRunID(started), Flow: g.Name, File: file, Root: absPath(g.Root),
		Sources: sources, Inputs: inputs, Started: started})
	if err != nil {
		st.Close()
		return nil, err
	}
	return rec, nil
}

// recordRun makes a run with opts recorded by rec, its approvals decided
// through ap and recorded as skein approve records them.
func recordRun(opts *vm.Options, rec *store.Recorder, ap *approver) {
	ap.rec, ap.st, ap.runID = rec, rec.Store(), rec.ID()
	rec.Inner = ap
	opts.RunID, opts.Effects, opts.LoadFlow = rec.ID(), rec, recordingLoader(rec)
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

// diskSources are the texts of g's files as they are on disk now.
func diskSources(g *graphir.Graph) []store.Source {
	var sources []store.Source
	for _, f := range g.Files {
		if text, err := os.ReadFile(f); err == nil {
			sources = append(sources, store.Source{Path: absPath(f), Text: text})
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
