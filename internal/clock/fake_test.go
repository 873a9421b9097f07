package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover/drover/internal/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestFakeFiresInDueOrderAtDueTime(t *testing.T) {
	c := clock.NewFake(t0)
	var got []string
	var at []time.Duration
	record := func(name string) func() {
		return func() { got = append(got, name); at = append(at, c.Now().Sub(t0)) }
	}
	c.AfterFunc(3*time.Second, record("c"))
	c.AtFunc(t0.Add(time.Second), record("a"))
	c.AfterFunc(2*time.Second, func() {
		record("b")()
		c.AfterFunc(500*time.Millisecond, record("b+")) // armed by a callback, due within the advance
	})
	c.AfterFunc(10*time.Second, record("late"))
	c.Advance(5 * time.Second)
	want := []string{"a", "b", "b+", "c"}
	wantAt := []time.Duration{time.Second, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] || at[i] != wantAt[i] {
			t.Errorf("fire %d = %s at %v, want %s at %v", i, got[i], at[i], want[i], wantAt[i])
		}
	}
	if now := c.Now().Sub(t0); now != 5*time.Second {
		t.Errorf("now = t0+%v, want t0+5s", now)
	}
	if n := c.Pending(); n != 1 {
		t.Errorf("pending = %d, want 1 (late)", n)
	}
	if d, ok := c.NextIn(); !ok || d != 5*time.Second {
		t.Errorf("NextIn = %v %v, want 5s", d, ok)
	}
}

func TestFakeAfterAndStop(t *testing.T) {
	c := clock.NewFake(t0)
	ch := c.After(time.Minute)
	stopped := c.AfterFunc(time.Minute, func() { t.Error("stopped timer fired") })
	if !stopped.Stop() {
		t.Error("Stop of an armed timer = false")
	}
	if stopped.Stop() {
		t.Error("second Stop = true")
	}
	c.Advance(time.Minute - time.Nanosecond)
	select {
	case <-ch:
		t.Fatal("After fired early")
	default:
	}
	c.Advance(time.Nanosecond)
	select {
	case v := <-ch:
		if !v.Equal(t0.Add(time.Minute)) {
			t.Errorf("After delivered %v, want t0+1m", v)
		}
	default:
		t.Fatal("After did not fire at its due time")
	}
	select {
	case <-c.After(0):
	default:
		t.Error("After(0) did not deliver at once")
	}
	done := make(chan struct{})
	if c.AtFunc(t0, func() { close(done) }).Stop() {
		t.Error("Stop of a timer that fired at once = true")
	}
	<-done // a past due time runs at once, in its own goroutine
}

func TestFakeWaitPending(t *testing.T) {
	c := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woke := make(chan struct{})
	go func() {
		select {
		case <-c.After(time.Hour):
			close(woke)
		case <-ctx.Done():
		}
	}()
	if err := c.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	<-woke
	if err := c.WaitPending(10*time.Millisecond, func(n int) bool { return n == 1 }); err == nil {
		t.Error("WaitPending(1) held with no timer armed")
	}
}

func TestBackoff(t *testing.T) {
	b := clock.Backoff{Base: 250 * time.Millisecond, Max: 2 * time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next())
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	b.Reset()
	if d := b.Next(); d != 250*time.Millisecond {
		t.Errorf("after Reset: %v, want 250ms", d)
	}
	for range 100 {
		b.Next() // the shift is bounded: no overflow to a zero or negative delay
	}
	if d := b.Next(); d != 2*time.Second {
		t.Errorf("after many attempts: %v, want the max", d)
	}

	j := clock.Backoff{Base: time.Second, Max: 8 * time.Second, Jitter: true}
	for i, hi := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		if d := j.Next(); d < hi/2 || d > hi {
			t.Errorf("jittered delay %d = %v, want in [%v, %v]", i, d, hi/2, hi)
		}
	}
}

func TestBackoffWaitsOnTheClock(t *testing.T) {
	c := clock.NewFake(t0)
	b := clock.Backoff{Base: time.Second, Max: time.Minute}
	waited := make(chan bool)
	go func() { waited <- b.Wait(context.Background(), c) }()
	if err := c.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.NextIn(); d != time.Second {
		t.Errorf("first retry in %v, want 1s", d)
	}
	c.Advance(time.Second)
	if !<-waited {
		t.Error("Wait = false after the delay passed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx, c) {
		t.Error("Wait = true with ctx done")
	}
}
