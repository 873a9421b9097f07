package clock

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the delay of a loop that retries: Base, doubled after each
// failed attempt, at most Max (0: no bound). With Jitter a delay d is
// drawn from [d/2, d], so many retrying clients spread out. The zero
// attempt count is the first retry; Reset after a success.
type Backoff struct {
	Base, Max time.Duration
	Jitter    bool

	attempt int
}

// maxShift keeps Base<<attempt from overflowing for any sane Base.
const maxShift = 20

// Next returns the delay before the next retry and counts the attempt.
func (b *Backoff) Next() time.Duration {
	d := b.Base << min(b.attempt, maxShift)
	if b.Max > 0 && (d > b.Max || d <= 0) {
		d = b.Max
	}
	b.attempt++
	if b.Jitter {
		d = d/2 + rand.N(d/2+1)
	}
	return d
}

// Reset starts over at Base (after a success).
func (b *Backoff) Reset() { b.attempt = 0 }

// Wait waits the next delay on c; false when ctx ended first.
func (b *Backoff) Wait(ctx context.Context, c Clock) bool {
	select {
	case <-c.After(b.Next()):
		return true
	case <-ctx.Done():
		return false
	}
}
