// Package fakeclock is a clock for tests that moves only when someone
// sleeps on it: SleepUntil(t) moves it to t at once, so a test of pacing
// or waiting sees the times a real clock would show without any wall time
// passing. Its methods fit model.Pacers' Now and SleepUntil.
package fakeclock

import (
	"context"
	"sync"
	"time"
)

// Clock is a fake clock; its zero value reads the zero time. It is safe
// for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil moves the clock forward to t (never back) and returns at
// once, with ctx's error if ctx is done.
func (c *Clock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
	return ctx.Err()
}
