package vm

// This file defines races: a join = "first" step runs on the first live
// arrival, and every other branch still under way that can only reach it
// (its losers, see graphir's Graph.Race) is cancelled, its record saying
// which step won.

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinlang/skein/graphir"
	"github.com/skeinlang/skein/graphir/codes"
)

// racer is the visit under way of a step that may lose a race: the
// context its effects run under (an agent may have several at once), and
// a loop's body or a map's run.
type racer struct {
	ctx      context.Context
	cancel   context.CancelFunc
	inFlight int
	lost     bool // its race was lost: its effects' completions are dropped
	body     *frame
	m        *mapRun
}

// racerOf returns the racer of step n's visit in frame f, making it.
func (r *run) racerOf(f *frame, n *graphir.Node) *racer {
	if r.racing == nil {
		r.racing = map[boundKey]*racer{}
	}
	k := boundKey{f, n.ID}
	rc := r.racing[k]
	if rc == nil {
		rc = &racer{}
		r.racing[k] = rc
	}
	return rc
}

// raceCtx gives the effect c of step n, which may lose a race, a context
// its race can cancel, and returns it.
func (r *run) raceCtx(f *frame, n *graphir.Node, c *completion, ctx context.Context) context.Context {
	rc := r.racerOf(f.frameFor(n), n)
	if rc.ctx == nil {
		rc.ctx, rc.cancel = context.WithCancel(ctx)
	}
	rc.inFlight++
	c.racer = rc
	return rc.ctx
}

// raceDone takes the completion c of a racer's effect: true when the
// step lost its race meanwhile (it was recorded cancelled then), and the
// completion is dropped.
func (r *run) raceDone(c *completion) bool {
	rc := c.racer
	rc.inFlight--
	if rc.inFlight == 0 {
		rc.cancel()
		k := boundKey{c.f.frameFor(c.n), c.n.ID}
		if r.racing[k] == rc {
			delete(r.racing, k)
		}
	}
	return rc.lost
}

// race cancels the losers of join = "first" step n in frame f, which the
// branch through step from reached first: those under way are stopped,
// those yet to start never will. It runs while tokens are being
// delivered: the dead tokens it sends are delivered by the same flush.
func (r *run) race(f *frame, n, from *graphir.Node) {
	why := fmt.Sprintf("cancelled: %q reached %q first (join = \"first\")", from.Name, n.Name)
	if from.Kind.IsSentinel() {
		why = fmt.Sprintf("cancelled: another branch reached %q first (join = \"first\")", n.Name)
	}
	if r.lostWhy == nil {
		r.lostWhy = map[boundKey]string{}
	}
	for _, id := range r.p.info[n.ID].losers {
		s := r.g.Nodes[id]
		st := f.state(r, id)
		if st.lost {
			continue
		}
		st.lost = true
		k := boundKey{f, id}
		r.lostWhy[k] = why
		if rc := r.racing[k]; rc != nil {
			switch {
			case rc.body != nil || rc.m != nil:
				// A loop or map: its body stops now.
				bodies := []*frame{rc.body}
				if rc.m != nil {
					bodies, rc.m.frames = rc.m.frames, nil
				}
				for _, bf := range bodies {
					if bf != nil && !bf.dead {
						bf.dead = true
						bf.cancelExec()
					}
				}
				delete(r.racing, k)
				r.unbound(f, s)
				r.lostStep(f, s, false)
			case rc.cancel != nil:
				// Its effects end cancelled; what they report back
				// is dropped.
				rc.lost = true
				rc.cancel()
				delete(r.racing, k)
				r.lostStep(f, s, false)
			}
			continue
		}
		for c, stop := range r.timers {
			// A step waiting out a retry's backoff.
			if c.f == f && c.n == s && stop() {
				r.running--
				delete(r.timers, c)
				r.lostStep(f, s, false)
				break
			}
		}
	}
}

// raceOver starts a new generation of the race of a join = "first" step
// whose every forward in-edge has delivered: its losers may run again.
func (r *run) raceOver(f *frame, info *nodeInfo) {
	for _, id := range info.losers {
		f.state(r, id).lost = false
	}
}

// lostStep ends step n of frame f, which lost a race, as cancelled, and
// sends dead tokens along its out-edges, delivering them when flush (else
// the delivery under way does).
func (r *run) lostStep(f *frame, n *graphir.Node, flush bool) {
	k := boundKey{f, n.ID}
	why := r.lostWhy[k]
	if why == "" {
		why = "cancelled: another branch won the race"
	}
	st := f.state(r, n.ID)
	st.last = lastCancelled
	rec := r.recs[n.ID]
	var now time.Time
	var took time.Duration
	if st.started != 0 {
		now, took = r.endVisit(st, rec)
	}
	rec.Status, rec.Error, rec.Code = StepCancelled, why, codes.Cancelled
	if r.events {
		ev := r.stepEvent(StepFinished, now, f, n, st.visits)
		ev.Status, ev.Code, ev.Error, ev.Duration, ev.Output = string(StepCancelled), codes.Cancelled, why, took, rec.Output
		r.emit(ev)
	}
	out := r.p.info[n.ID].out
	for i := range out {
		if !out[i].back {
			r.work = append(r.work, arrival{e: &out[i], from: n, live: false})
		}
	}
	if flush {
		r.flush(f)
	}
	f.live--
	r.settle(f)
}
