package clock

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Fake is a manually advanced clock for tests. Timers due at or before
// the new time fire, in due order, during Advance (synchronously, in
// Advance's goroutine, without the clock's lock held).
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	timers  map[uint64]*fakeTimer
	changed chan struct{} // closed and replaced when timers are armed, stopped or fired
}

type fakeTimer struct {
	c   *Fake
	id  uint64
	due time.Time
	f   func()         // AfterFunc, AtFunc
	ch  chan time.Time // After (buffered: a fire never blocks)
}

var _ Clock = (*Fake)(nil)

// NewFake starts at t.
func NewFake(t time.Time) *Fake {
	return &Fake{now: t, timers: map[uint64]*fakeTimer{}, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the time once the clock is
// advanced to now+d; d <= 0 delivers at once.
func (c *Fake) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.armLocked(&fakeTimer{due: c.now.Add(d), ch: ch})
	return ch
}

// AfterFunc registers f to run when the clock is advanced to now+d. As
// with time.AfterFunc, d <= 0 runs f at once, in its own goroutine.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.funcLocked(c.now.Add(d), f)
}

// AtFunc registers f to run when the clock is advanced to t or past it;
// a t not after now runs f at once, in its own goroutine.
func (c *Fake) AtFunc(t time.Time, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.funcLocked(t, f)
}

func (c *Fake) funcLocked(due time.Time, f func()) Timer {
	t := &fakeTimer{due: due, f: f}
	if !due.After(c.now) {
		c.seq++
		t.c, t.id = c, c.seq
		go f()
		return t // already fired: Stop reports false
	}
	c.armLocked(t)
	return t
}

func (c *Fake) armLocked(t *fakeTimer) {
	c.seq++
	t.c, t.id = c, c.seq
	c.timers[t.id] = t
	c.changedLocked()
}

func (c *Fake) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Pending returns how many timers are armed (After channels and
// callbacks not yet due).
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextIn is the time until the earliest armed timer (false when none).
func (c *Fake) NextIn() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first *fakeTimer
	for _, t := range c.timers {
		if first == nil || t.due.Before(first.due) {
			first = t
		}
	}
	if first == nil {
		return 0, false
	}
	return first.due.Sub(c.now), true
}

// WaitPending blocks until cond holds for the number of armed timers,
// checked now and after every arm, stop and fire: a test waits for a
// goroutine to park on the clock before it advances. It fails after
// timeout of wall-clock time, naming the last count.
func (c *Fake) WaitPending(timeout time.Duration, cond func(pending int) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if cond(n) {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("fake clock: %d timers pending after %s", n, timeout)
		}
	}
}

// Advance moves time forward by d and fires every timer that became due,
// including timers armed by fired callbacks that are due too. Time moves
// to each timer's due time as it fires.
func (c *Fake) Advance(d time.Duration) {
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
		c.changedLocked()
		if t.ch != nil {
			t.ch <- c.now
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		t.f()
	}
}

// Stop disarms the timer; it reports whether it was armed.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t.id]
	if ok {
		delete(t.c.timers, t.id)
		t.c.changedLocked()
	}
	return ok
}
