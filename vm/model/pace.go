package model

// This file defines client-side pacing: model(rpm=, tpm=) as token
// buckets (golang.org/x/time/rate) that every HTTP attempt to a model
// waits on, shared by whoever holds the same [Pacers].

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Pacers hands out one [Pacer] per model (base URL and model id) and
// rates: model() declarations of the same model with the same rates, in
// any flow, share one, as the provider's limits do. A run tree shares
// one Pacers, so its child flows and parallel map items wait in the same
// queues. A nil *Pacers paces nothing. It is safe for concurrent use.
type Pacers struct {
	// Now and SleepUntil are the clock (nil: the real one); SleepUntil
	// returns when t has come or ctx is done, with ctx's error then.
	Now        func() time.Time
	SleepUntil func(ctx context.Context, t time.Time) error

	mu sync.Mutex
	m  map[paceKey]*Pacer
}

type paceKey struct {
	baseURL, model string
	rpm, tpm       int
}

// NewPacers returns pacers on the real clock.
func NewPacers() *Pacers { return &Pacers{} }

// Pacer paces the attempts of one model: at most RPM requests and TPM
// tokens a minute (0: no bound).
type Pacer struct {
	ps *Pacers
	// mu is held to read the clock and reserve, so that the buckets are
	// never given a time before one they saw: a bucket asked at an
	// earlier time than its last hands out a turn early by the
	// difference (seconds, on a fake clock that another wait moved on
	// between this one's reading and its reserving).
	mu       sync.Mutex
	requests *rate.Limiter // nil: no rpm
	tokens   *rate.Limiter // nil: no tpm
	tpm      int
}

// pacer is the pacer of the model req is for, nil when it has no rates
// or ps is nil.
func (ps *Pacers) pacer(req Request) *Pacer {
	e := req.Endpoint
	if ps == nil || (e.RPM <= 0 && e.TPM <= 0) {
		return nil
	}
	k := paceKey{e.BaseURL, req.Model, e.RPM, e.TPM}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.m[k]; ok {
		return p
	}
	p := &Pacer{ps: ps, tpm: e.TPM}
	if e.RPM > 0 {
		// A burst of one: requests are spaced evenly, never more than
		// RPM in any minute.
		p.requests = rate.NewLimiter(rate.Limit(float64(e.RPM)/60), 1)
	}
	if e.TPM > 0 {
		p.tokens = rate.NewLimiter(rate.Limit(float64(e.TPM)/60), e.TPM)
	}
	if ps.m == nil {
		ps.m = map[paceKey]*Pacer{}
	}
	ps.m[k] = p
	return p
}

func (ps *Pacers) now() time.Time {
	if ps.Now != nil {
		return ps.Now()
	}
	return time.Now()
}

func (ps *Pacers) sleepUntil(ctx context.Context, t time.Time) error {
	if ps.SleepUntil != nil {
		return ps.SleepUntil(ctx, t)
	}
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// estimate is the tokens a request is taken to spend before its reply
// says: its text's bytes / 4, and its max_tokens.
func estimate(req Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Function.Arguments)
		}
	}
	return n/4 + 1 + req.MaxTokens
}

// wait takes the turn of one attempt of req: a request of the rpm bucket
// and the attempt's estimated tokens of the tpm one, waiting until both
// are there. A wait longer than limit (a step's timeout; 0: none) fails
// at once; cancelling ctx ends the wait. It returns the tokens taken.
func (p *Pacer) wait(ctx context.Context, req Request, limit time.Duration) (int, error) {
	if p == nil {
		return 0, nil
	}
	var rs []*rate.Reservation
	cancel := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		now := p.ps.now()
		for _, r := range rs {
			r.CancelAt(now)
		}
	}
	p.mu.Lock()
	now := p.ps.now()
	at := now
	if p.requests != nil {
		r := p.requests.ReserveN(now, 1)
		rs = append(rs, r)
		at = now.Add(r.DelayFrom(now))
	}
	took := 0
	if p.tokens != nil {
		took = min(estimate(req), p.tpm)
		r := p.tokens.ReserveN(now, took)
		rs = append(rs, r)
		if t := now.Add(r.DelayFrom(now)); t.After(at) {
			at = t
		}
	}
	p.mu.Unlock()
	if d := at.Sub(now); limit > 0 && d > limit {
		cancel()
		return 0, &Error{Code: CodeTimeout, Msg: fmt.Sprintf("model %q: its rpm/tpm pacing would wait %s, longer than the step's timeout of %s", req.Model, d.Round(time.Millisecond), limit)}
	}
	if err := p.ps.sleepUntil(ctx, at); err != nil {
		cancel()
		return 0, err
	}
	return took, nil
}

// spent charges the tokens an attempt reported beyond the took its wait
// reserved: the next attempts wait for them.
func (p *Pacer) spent(took int, u Usage) {
	if p == nil || p.tokens == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.ps.now()
	for extra := u.Total() - took; extra > 0; extra -= p.tpm {
		p.tokens.ReserveN(now, min(extra, p.tpm))
	}
}
