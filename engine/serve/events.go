package serve

// This file is a run's event stream (GET /api/runs/{id}/events): it
// follows the store as skein logs --follow does, so it is the same for a
// run this process runs and one another process runs on this machine,
// and sends what it finds as server-sent events.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skeinlang/skein/engine/runs"
	"github.com/skeinlang/skein/vm/store"
)

// pollEvery is how often a stream looks at the store again, when nothing
// woke it sooner (a run of this process wakes it as it records): it reads
// the run again only if something was committed to the store since it
// last did (Store.DataVersion), and otherwise only the live output of the
// tasks it follows.
var pollEvery = 100 * time.Millisecond

// polled, when set, is told at each look whether the stream reads the
// run again (tests count the looks that do not).
var polled func(read bool)

// readEvery is how often a stream reads the run again even when nothing
// was committed: a run whose process died is seen interrupted (which the
// store derives; nothing is written).
var readEvery = time.Second

// pingEvery is how often a quiet stream sends a comment, so that proxies
// do not close it.
var pingEvery = 15 * time.Second

// sse writes server-sent events.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (e *sse) send(event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	return e.rc.Flush()
}

// outputJSON is what a task printed.
type outputJSON struct {
	Attempt int64  `json:"attempt"`
	Stream  string `json:"stream"`
	Text    string `json:"text"`
}

// follower is one stream's view of a run: what it has sent.
type follower struct {
	s      *Server
	id     string
	out    *sse
	status string
	sent   map[int64]string          // attempts sent, by id: the status sent
	tails  map[int64]*store.LiveTail // tasks followed as they print
	aps    map[string]string         // approvals sent, by place and visit: the status sent
	from   int64                     // effects before this id are all ended and sent
}

// runEvents is GET /api/runs/{id}/events.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	run, ok := s.getRunRef(w, r)
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // it lasts
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f := &follower{s: s, id: run.ID, out: &sse{w: w, rc: rc}, sent: map[int64]string{}, tails: map[int64]*store.LiveTail{}, aps: map[string]string{}}
	defer f.close()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	version, read := int64(-1), time.Time{}
	for {
		wake := s.woken(run.ID)
		// The version is read before the run: a commit after it is
		// read next time round.
		v, err := s.cfg.Store.DataVersion()
		again := err != nil || v != version || time.Since(read) >= readEvery
		if polled != nil {
			polled(again)
		}
		if again {
			version, read = v, time.Now()
			done, err := f.step()
			if err != nil || done {
				if err == nil {
					f.out.send("end", struct{}{})
				}
				return
			}
		} else if f.live() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-wake:
		case <-time.After(pollEvery):
			// The journal reaches the database in batches, after the
			// events that wake us: look again.
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// step reads the store once and sends what is new; done once the run has
// ended or parked and everything is sent.
func (f *follower) step() (done bool, err error) {
	// The run's status is read before its effects, so that once it is
	// seen not running, the effects read after it are all there are.
	cur, err := f.s.cfg.Store.Get(f.id)
	if err != nil {
		return false, err
	}
	if f.status == "" {
		// The run as it was when the stream began: first.
		f.status = cur.Status
		if err := f.out.send("run", f.s.runJSON(cur)); err != nil {
			return false, err
		}
	}
	effects, err := f.s.cfg.Store.RunEffects(cur, f.from)
	if err != nil {
		return false, err
	}
	allEnded := true
	for i, e := range effects {
		status := runs.EffectStatus(cur, e, effects[i+1:])
		if err := f.attempt(cur, e, status); err != nil {
			return false, err
		}
		if status == store.Running {
			allEnded = false
		} else if allEnded {
			f.from = e.ID
		}
	}
	if err := f.approvals(); err != nil {
		return false, err
	}
	if cur.Status != f.status {
		// After what happened before it.
		f.status = cur.Status
		if err := f.out.send("run", f.s.runJSON(cur)); err != nil {
			return false, err
		}
	}
	return cur.Status != store.Running, nil
}

// attempt sends what is new of attempt e: its start, what it printed, its
// end.
func (f *follower) attempt(cur *store.Run, e *store.Effect, status string) error {
	prev, seen := f.sent[e.ID]
	task := e.Kind == "task" || e.Kind == "shell"
	if !seen {
		start := attempt(e, store.Running, false)
		start.Ended, start.DurationMS, start.Code, start.Error, start.Output = nil, 0, "", "", json.RawMessage("null")
		if err := f.out.send("attempt", start); err != nil {
			return err
		}
		f.sent[e.ID] = store.Running
		prev = store.Running
		if task && status == store.Running {
			f.tails[e.ID] = f.s.cfg.Store.TailLive(f.id, e.ID)
		}
	}
	if prev != store.Running {
		return nil
	}
	t := f.tails[e.ID]
	if status == store.Running {
		if t != nil {
			out, errOut := t.Next()
			return f.output(e.ID, out, errOut)
		}
		return nil
	}
	// It ended: the rest of what it printed, then its end.
	if task {
		if t != nil {
			rest := t.Rest(e)
			delete(f.tails, e.ID)
			for i, r := range rest {
				text := string(r.Live)
				if r.Cut > 0 {
					text += fmt.Sprintf("\n--- %d bytes not kept ---\n", r.Cut)
				} else if r.Cut < 0 {
					text += "\n--- some output not kept ---\n"
				}
				text += r.Record
				if err := f.output1(e.ID, i, text); err != nil {
					return err
				}
			}
		} else if err := f.output(e.ID, []byte(e.Stdout), []byte(e.Stderr)); err != nil {
			return err
		}
	}
	f.sent[e.ID] = status
	return f.out.send("attempt", attempt(e, status, false))
}

// live sends what the tasks followed printed since the last look, in the
// order they started.
func (f *follower) live() error {
	for _, id := range slices.Sorted(maps.Keys(f.tails)) {
		out, errOut := f.tails[id].Next()
		if err := f.output(id, out, errOut); err != nil {
			return err
		}
	}
	return nil
}

func (f *follower) output(id int64, stdout, stderr []byte) error {
	if err := f.output1(id, 0, string(stdout)); err != nil {
		return err
	}
	return f.output1(id, 1, string(stderr))
}

func (f *follower) output1(id int64, stream int, text string) error {
	if text == "" {
		return nil
	}
	return f.out.send("output", outputJSON{Attempt: id, Stream: [...]string{"stdout", "stderr"}[stream], Text: strings.ToValidUTF8(text, "\uFFFD")})
}

// approvals sends the run's approvals that are new or changed.
func (f *follower) approvals() error {
	aps, err := f.s.cfg.Store.Approvals(f.id)
	if err != nil {
		return err
	}
	for _, a := range aps {
		j := approval(a)
		key := fmt.Sprintf("%s\x00%d", j.Place, a.Visit)
		if f.aps[key] == j.Status {
			continue
		}
		f.aps[key] = j.Status
		if err := f.out.send("approval", j); err != nil {
			return err
		}
	}
	return nil
}

func (f *follower) close() {
	for _, t := range f.tails {
		t.Close()
	}
}
