package nicfake

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock is virtual time for a NIC's link changes (NIC.Clock) and for
// nicctl's link wait (nicctl.Env.Clock): it moves only when Sleep is
// called, and runs the link changes that fall due on the way, in time
// order. A reset whose link comes back seconds later then plays in
// microseconds, in the order the kernel would show it, with no wall-clock
// wait in the test.
type Clock struct {
	mu  sync.Mutex
	now time.Time
	due []timer
}

type timer struct {
	at time.Time
	f  func()
}

// NewClock returns a clock at an arbitrary fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now is the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock d ahead, running the changes due meanwhile.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	to := c.now.Add(d)
	for len(c.due) > 0 && !c.due[0].at.After(to) {
		t := c.due[0]
		c.due = c.due[1:]
		c.now = t.at
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = to
	c.mu.Unlock()
	return ctx.Err()
}

// AfterFunc runs f when the clock reaches now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := timer{c.now.Add(d), f}
	i, _ := slices.BinarySearchFunc(c.due, t, func(a, b timer) int {
		if a.at.After(b.at) {
			return 1
		}
		return -1 // equal times keep their order
	})
	c.due = slices.Insert(c.due, i, t)
}
