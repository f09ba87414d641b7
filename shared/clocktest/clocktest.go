// Package clocktest is a settable clock for tests of code that takes a
// `Now func() time.Time`: leases, schedules, workflow waits, audit times.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a fake clock, safe for concurrent use. Its zero value reads the
// zero time; use New.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock reading t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time; pass c.Now where a clock func is wanted.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
