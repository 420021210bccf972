package runs

// This file reads what a run's tasks printed from the store, for skein
// logs: each attempt's output once it has ended, and with follow the
// attempt still running as it prints, from the live files the process
// running it writes beside the store (vm/store's live.go).

import (
	"context"
	"slices"
	"time"

	"github.com/skeinlang/skein/vm/store"
)

// followEvery is how often Logs with follow reads the store again.
const followEvery = 100 * time.Millisecond

// Logs gives h what the task and shell steps of the run ref names printed
// (of step only, unless ""), attempt by attempt in the order they
// started. With follow it goes on until the run ends or ctx is done,
// giving h the attempt still running as it prints ([LogHooks.OnLive])
// and what starts after it once it has ended. A step that never ran is a
// [*NoStepError]. With an [Engine], it is the engine's [Engine.Logs].
func (s *Service) Logs(ctx context.Context, ref, step string, follow bool, h *LogHooks) error {
	if s.Engine != nil {
		return s.Engine.Logs(ctx, ref, step, follow, h)
	}
	st := s.Store
	r, err := st.Get(ref)
	if err != nil {
		return err
	}
	var last int64
	printed := 0
	var steps []string
	var lf *liveLog // the attempt given as it goes
	defer func() {
		if lf != nil {
			lf.tail.Close()
		}
	}()
	for cur := r; ; {
		// The run's status is read before its effects, so that once it is
		// seen not running, the effects read after it are all there are
		// (the first time, as Get read it).
		if cur == nil {
			if cur, err = st.Get(r.ID); err != nil {
				return err
			}
		}
		live := follow && cur.Status == store.Running
		effects, err := st.Effects(r.ID, last)
		if err != nil {
			return err
		}
		for i, e := range effects {
			task := e.Kind == "task" || e.Kind == "shell"
			if task && !slices.Contains(steps, e.Step) {
				steps = append(steps, e.Step)
			}
			if !task || (step != "" && e.Step != step) {
				last = e.ID // nothing of it is given
				continue
			}
			status := EffectStatus(cur, e, effects[i+1:])
			if status == store.Running && live {
				// Given as it goes; what comes after it waits, to be
				// given in order.
				if lf == nil || lf.id != e.ID {
					printed++
					lf = startLive(st, r.ID, e, h)
				}
				lf.next(h)
				break
			}
			last = e.ID
			if lf != nil && lf.id == e.ID {
				lf.finish(h, e, status)
				lf = nil
				continue
			}
			printed++
			stdout, stderr := e.Stdout, e.Stderr
			if status == store.Running || status == Interrupted && stdout == "" && stderr == "" {
				// Not followed, or cut short by its process dying before
				// a resume or gc kept it in the record: what it printed,
				// as far as its live files have it.
				t := st.TailLive(r.ID, e.ID)
				out, errOut := t.Next()
				t.Close()
				stdout, stderr = string(out), string(errOut)
			}
			if h.OnLog != nil {
				h.OnLog(&Log{Where: Place(e.Path, e.Step), Visit: e.Visit, Attempt: e.Attempt, Status: status, Error: e.Error, Stdout: stdout, Stderr: stderr})
			}
		}
		if !live {
			// Not following, or the run is no longer running: what was
			// read after its status is everything.
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
		cur = nil // read again
	}
	if step != "" && printed == 0 && !slices.Contains(steps, step) {
		return &NoStepError{Run: r.ID, Step: step, Steps: steps}
	}
	return nil
}

// LiveOutput is a piece of what an attempt still running printed, given
// to [LogHooks.OnLive] as [Service.Logs] follows it.
type LiveOutput struct {
	// Start is the attempt's first piece, with Log its place and status
	// (running) and no output yet; End its last, with Log how it ended.
	Start, End bool
	Log        *Log
	// Stream is the stream the piece is of: 0 stdout, 1 stderr.
	Stream int
	// Text is what it printed since the last piece.
	Text []byte
	// Cut is how many bytes it printed here that neither the live files
	// nor the record kept (-1: some, but how many is not known).
	Cut int64
}

// liveLog is the attempt Logs gives as it goes.
type liveLog struct {
	id   int64
	tail *store.LiveTail
	log  Log
}

func startLive(st *store.Store, runID string, e *store.Effect, h *LogHooks) *liveLog {
	lf := &liveLog{id: e.ID, tail: st.TailLive(runID, e.ID), log: Log{Where: Place(e.Path, e.Step), Visit: e.Visit, Attempt: e.Attempt, Status: store.Running}}
	start := lf.log
	lf.give(h, &LiveOutput{Start: true, Log: &start})
	return lf
}

// next gives what the attempt printed since the last call.
func (lf *liveLog) next(h *LogHooks) {
	out, errOut := lf.tail.Next()
	lf.text(h, 0, out)
	lf.text(h, 1, errOut)
}

// finish gives the rest, once the attempt's completion e is recorded
// (status is how it ended), and how it ended.
func (lf *liveLog) finish(h *LogHooks, e *store.Effect, status string) {
	for i, r := range lf.tail.Rest(e) {
		lf.text(h, i, r.Live)
		if r.Cut != 0 {
			lf.give(h, &LiveOutput{Stream: i, Cut: r.Cut})
		}
		lf.text(h, i, []byte(r.Record))
	}
	end := lf.log
	end.Status, end.Error = status, e.Error
	lf.give(h, &LiveOutput{End: true, Log: &end})
}

func (lf *liveLog) text(h *LogHooks, stream int, b []byte) {
	if len(b) > 0 {
		lf.give(h, &LiveOutput{Stream: stream, Text: b})
	}
}

func (lf *liveLog) give(h *LogHooks, o *LiveOutput) {
	if h.OnLive != nil {
		h.OnLive(o)
	}
}
