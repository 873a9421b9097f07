package clock

import "time"

// Clock is a time source.
type Clock interface {
	Now() time.Time
	// After delivers the time once d has passed (at once if d <= 0).
	After(d time.Duration) <-chan time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
	// AtFunc calls f in its own goroutine once the clock reaches t (at
	// once if it has). Unlike AfterFunc(t.Sub(Now())), no clock change
	// between reading the time and arming the timer can move the deadline.
	AtFunc(t time.Time, f func()) Timer
}

// Timer is a cancellable AfterFunc or AtFunc.
type Timer interface {
	// Stop prevents the call; it reports whether it did.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After is time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// AtFunc is time.AfterFunc(time.Until(t), f).
func (Real) AtFunc(t time.Time, f func()) Timer { return time.AfterFunc(time.Until(t), f) }

var _ Clock = Real{}
