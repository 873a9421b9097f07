package broker

import (
	"sort"
	"sync"
	"time"
)

// Clock is the time source of the broker, the blocked tracker and the
// server's leader duties (heartbeats, drains).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
	// AtFunc calls f in its own goroutine once the clock reaches t (at
	// once if it has). Unlike AfterFunc(t.Sub(Now())), no clock change
	// between reading the time and arming the timer can move the deadline.
	AtFunc(t time.Time, f func()) Timer
}

// Timer is a cancellable AfterFunc.
type Timer interface {
	// Stop prevents the call; it reports whether it did.
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// AtFunc is time.AfterFunc(time.Until(t), f).
func (RealClock) AtFunc(t time.Time, f func()) Timer { return time.AfterFunc(time.Until(t), f) }

// FakeClock is a manually advanced clock for tests. Timers due at or
// before the new time fire, in due order, during Advance (synchronously,
// in Advance's goroutine, without the clock's lock held).
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[uint64]*fakeTimer
}

type fakeTimer struct {
	c   *FakeClock
	id  uint64
	due time.Time
	f   func()
}

// NewFakeClock starts at t.
func NewFakeClock(t time.Time) *FakeClock {
	return &FakeClock{now: t, timers: map[uint64]*fakeTimer{}}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc registers f to run when the clock is advanced past now+d. As
// with time.AfterFunc, d <= 0 runs f at once, in its own goroutine.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.arm(c.now.Add(d), f)
}

// AtFunc registers f to run when the clock is advanced to t or past it;
// a t not after now runs f at once, in its own goroutine.
func (c *FakeClock) AtFunc(t time.Time, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.arm(t, f)
}

func (c *FakeClock) arm(due time.Time, f func()) Timer {
	c.seq++
	t := &fakeTimer{c: c, id: c.seq, due: due, f: f}
	if !due.After(c.now) {
		go f()
		return t // already fired: Stop reports false
	}
	c.timers[t.id] = t
	return t
}

// Pending returns how many timers are waiting.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves time forward by d and fires every timer that became due,
// including timers registered by fired callbacks that are due too.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due []*fakeTimer
		for _, t := range c.timers {
			if !t.due.After(target) {
				due = append(due, t)
			}
		}
		if len(due) == 0 {
			c.now = target
			c.mu.Unlock()
			return
		}
		sort.Slice(due, func(i, j int) bool {
			if due[i].due.Equal(due[j].due) {
				return due[i].id < due[j].id
			}
			return due[i].due.Before(due[j].due)
		})
		t := due[0]
		delete(c.timers, t.id)
		if t.due.After(c.now) {
			c.now = t.due
		}
		c.mu.Unlock()
		t.f()
	}
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t.id]
	delete(t.c.timers, t.id)
	return ok
}
