package testproc

import (
	"fmt"
	"testing"
	"time"
)

// Eventually polls cond until it holds and fails the test, naming what,
// once timeout passes first. It is the one poll with a deadline of
// drover's tests, for what has no signal to wait on (see the package
// doc); cond runs in the test's goroutine, first at once, then at
// intervals growing from 1 ms to 25 ms. A cond that wants to leave a
// trail for a failure can t.Logf what it saw (shown only when the test
// fails or with -v).
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := poll(timeout, cond, nil); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// poll calls cond until it holds (nil), timeout passes or abort is closed.
func poll(timeout time.Duration, cond func() bool, abort <-chan struct{}) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	interval := time.Millisecond
	for !cond() {
		tick := time.NewTimer(interval)
		select {
		case <-deadline.C:
			tick.Stop()
			if cond() { // a last look: the deadline may have passed during a slow cond
				return nil
			}
			return fmt.Errorf("timed out after %s", timeout)
		case <-abort:
			tick.Stop()
			return fmt.Errorf("aborted")
		case <-tick.C:
		}
		interval = min(2*interval, 25*time.Millisecond)
	}
	return nil
}
