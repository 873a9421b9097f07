package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ev(id, job string, prio int, idx uint64) *api.Evaluation {
	return &api.Evaluation{ID: id, Namespace: "default", JobID: job, Type: api.JobTypeService,
		Priority: prio, CreateIndex: idx, ModifyIndex: idx, Status: api.EvalStatusPending}
}

func newBroker(t *testing.T, limit int) (*EvalBroker, *clock.Fake, *[]string) {
	t.Helper()
	clk := clock.NewFake(t0)
	var mu sync.Mutex
	failed := []string{}
	b := NewEvalBroker(Config{NackTimeout: 5 * time.Second, DeliveryLimit: limit, Clock: clk,
		OnFailed: func(e *api.Evaluation) { mu.Lock(); failed = append(failed, e.ID); mu.Unlock() }})
	b.SetEnabled(true)
	return b, clk, &failed
}

// mustDequeue takes a ready eval; the broker must have one.
func mustDequeue(t *testing.T, b *EvalBroker) (*api.Evaluation, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, tok, err := b.Dequeue(ctx, []string{api.JobTypeService, api.JobTypeBatch}, 0)
	if err != nil || e == nil {
		t.Fatalf("dequeue: eval %v err %v", e, err)
	}
	return e, tok
}

func assertNoneReady(t *testing.T, b *EvalBroker) {
	t.Helper()
	if s := b.Stats(); s.TotalReady != 0 {
		t.Fatalf("ready = %d, want 0 (stats %+v)", s.TotalReady, s)
	}
}

func TestPriorityThenCreateIndex(t *testing.T) {
	b, _, _ := newBroker(t, 3)
	b.Enqueue(ev("low", "j1", 10, 1))
	b.Enqueue(ev("high-late", "j2", 90, 5))
	b.Enqueue(ev("high-early", "j3", 90, 3))
	b.Enqueue(ev("mid", "j4", 50, 2))
	var got []string
	for range 4 {
		e, tok := mustDequeue(t, b)
		got = append(got, e.ID)
		if err := b.Ack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"high-early", "high-late", "mid", "low"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order = %v, want %v", got, want)
		}
	}
}

func TestOneInFlightPerJob(t *testing.T) {
	b, _, _ := newBroker(t, 3)
	b.Enqueue(ev("a1", "job", 50, 1))
	b.Enqueue(ev("a2", "job", 50, 2))
	b.Enqueue(ev("b1", "other", 50, 3))
	e1, tok1 := mustDequeue(t, b)
	if e1.ID != "a1" {
		t.Fatalf("first = %s, want a1", e1.ID)
	}
	e2, tok2 := mustDequeue(t, b)
	if e2.ID != "b1" {
		t.Fatalf("second = %s, want b1 (a2 must wait for a1)", e2.ID)
	}
	assertNoneReady(t, b)
	if s := b.Stats(); s.TotalPending != 1 || s.TotalUnacked != 2 {
		t.Fatalf("stats = %+v, want 1 pending 2 unacked", s)
	}
	if err := b.Ack(e2.ID, tok2); err != nil {
		t.Fatal(err)
	}
	assertNoneReady(t, b)
	if err := b.Ack(e1.ID, tok1); err != nil {
		t.Fatal(err)
	}
	e3, _ := mustDequeue(t, b)
	if e3.ID != "a2" {
		t.Fatalf("third = %s, want a2", e3.ID)
	}
}

func TestAckNackTokens(t *testing.T) {
	b, _, failed := newBroker(t, 3)
	b.Enqueue(ev("e", "job", 50, 1))
	e, tok := mustDequeue(t, b)
	if err := b.Ack(e.ID, "wrong"); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("ack with wrong token: %v, want ErrTokenMismatch", err)
	}
	if err := b.Nack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(e.ID, tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("ack after nack: %v, want ErrNotOutstanding", err)
	}
	e2, tok2 := mustDequeue(t, b)
	if e2.ID != "e" || tok2 == tok {
		t.Fatalf("redelivery = %s token reused %v", e2.ID, tok2 == tok)
	}
	if err := b.Ack(e2.ID, tok2); err != nil {
		t.Fatal(err)
	}
	if len(*failed) != 0 {
		t.Fatalf("failed = %v", *failed)
	}
	if s := b.Stats(); s.TotalReady+s.TotalUnacked+s.TotalPending != 0 {
		t.Fatalf("stats after ack = %+v", s)
	}
}

func TestDeliveryLimitFails(t *testing.T) {
	b, _, failed := newBroker(t, 2)
	b.Enqueue(ev("e", "job", 50, 1))
	b.Enqueue(ev("next", "job", 50, 2))
	for i := range 2 {
		e, tok := mustDequeue(t, b)
		if e.ID != "e" {
			t.Fatalf("delivery %d = %s, want e", i, e.ID)
		}
		if err := b.Nack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
	}
	if len(*failed) != 1 || (*failed)[0] != "e" {
		t.Fatalf("failed = %v, want [e]", *failed)
	}
	e, _ := mustDequeue(t, b)
	if e.ID != "next" {
		t.Fatalf("after failure got %s, want the job's next eval", e.ID)
	}
}

func TestNackTimeoutRedelivers(t *testing.T) {
	b, clk, _ := newBroker(t, 3)
	b.Enqueue(ev("e", "job", 50, 1))
	e, tok := mustDequeue(t, b)
	clk.Advance(4 * time.Second)
	if err := b.OutstandingReset(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	clk.Advance(4 * time.Second) // 8 s since dequeue, 4 s since reset
	if _, ok := b.Outstanding(e.ID); !ok {
		t.Fatal("eval redelivered although its timer was reset")
	}
	clk.Advance(2 * time.Second)
	if _, ok := b.Outstanding(e.ID); ok {
		t.Fatal("eval still outstanding after nack timeout")
	}
	if err := b.Ack(e.ID, tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("late ack: %v, want ErrNotOutstanding", err)
	}
	e2, _ := mustDequeue(t, b)
	if e2.ID != "e" {
		t.Fatalf("redelivered %s", e2.ID)
	}
}

func TestDelayedEval(t *testing.T) {
	b, clk, _ := newBroker(t, 3)
	d := ev("later", "job", 50, 1)
	d.WaitUntil = t0.Add(30 * time.Second)
	b.Enqueue(d)
	if s := b.Stats(); s.TotalDelayed != 1 || s.TotalReady != 0 {
		t.Fatalf("stats = %+v, want 1 delayed", s)
	}
	clk.Advance(29 * time.Second)
	assertNoneReady(t, b)
	clk.Advance(time.Second)
	e, _ := mustDequeue(t, b)
	if e.ID != "later" {
		t.Fatalf("got %s", e.ID)
	}
}

func TestDequeueTimeoutAndDisable(t *testing.T) {
	b, clk, _ := newBroker(t, 3)
	type res struct {
		e   *api.Evaluation
		err error
	}
	out := make(chan res, 1)
	go func() {
		e, _, err := b.Dequeue(context.Background(), []string{"service"}, time.Minute)
		out <- res{e, err}
	}()
	// Wait for the dequeue's timer to be registered, then expire it.
	if err := clk.WaitPending(5*time.Second, func(n int) bool { return n != 0 }); err != nil {
		t.Fatalf("dequeue never registered its timeout: %v", err)
	}
	clk.Advance(time.Minute)
	if r := <-out; r.e != nil || r.err != nil {
		t.Fatalf("timeout dequeue = %+v, want nil, nil", r)
	}
	b.Enqueue(ev("e", "j", 50, 1))
	b.SetEnabled(false)
	if _, _, err := b.Dequeue(context.Background(), []string{"service"}, 0); !errors.Is(err, ErrDisabled) {
		t.Fatalf("dequeue while disabled: %v", err)
	}
	b.SetEnabled(true)
	if s := b.Stats(); s.TotalReady != 0 {
		t.Fatalf("disable did not flush: %+v", s)
	}
}

func TestDuplicateEnqueueIgnored(t *testing.T) {
	b, _, _ := newBroker(t, 3)
	b.Enqueue(ev("e", "job", 50, 1))
	b.Enqueue(ev("e", "job", 50, 1))
	if s := b.Stats(); s.TotalReady != 1 || s.TotalPending != 0 {
		t.Fatalf("stats = %+v, want exactly one ready", s)
	}
}

func TestNackDelays(t *testing.T) {
	clk := clock.NewFake(t0)
	b := NewEvalBroker(Config{NackTimeout: time.Hour, DeliveryLimit: 5, Clock: clk,
		InitialNackDelay: time.Second, SubsequentNackDelay: 20 * time.Second})
	b.SetEnabled(true)
	b.Enqueue(ev("e", "job", 50, 1))
	b.Enqueue(ev("other", "job", 50, 2))
	e, tok := mustDequeue(t, b)
	if err := b.Nack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	assertNoneReady(t, b) // the job's next eval still waits behind e
	clk.Advance(999 * time.Millisecond)
	assertNoneReady(t, b)
	clk.Advance(time.Millisecond)
	e, tok = mustDequeue(t, b)
	if e.ID != "e" {
		t.Fatalf("redelivered %s, want e", e.ID)
	}
	if err := b.Nack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	clk.Advance(19 * time.Second)
	assertNoneReady(t, b)
	clk.Advance(time.Second)
	if e, _ = mustDequeue(t, b); e.ID != "e" {
		t.Fatalf("second redelivery %s", e.ID)
	}
}

func TestQueueDeficitThenPriorityThenAge(t *testing.T) {
	clk := clock.NewFake(t0)
	var mu sync.Mutex // the deficits change between dequeues
	queueOf := map[string]string{"j1": "a", "j2": "a", "j3": "b", "j4": "b", "j5": "c"}
	deficit := map[string]float64{"a": 0.1, "b": 0.3, "c": -0.2}
	on := true
	b := NewEvalBroker(Config{NackTimeout: 5 * time.Second, Clock: clk, QueueDeficit: func() func(*api.Evaluation) float64 {
		if !on {
			return nil // no queues: priority order
		}
		return func(e *api.Evaluation) float64 {
			mu.Lock()
			defer mu.Unlock()
			return deficit[queueOf[e.JobID]]
		}
	}})
	b.SetEnabled(true)
	b.Enqueue(ev("a-high", "j1", 90, 1))
	b.Enqueue(ev("a-low", "j2", 10, 2))
	b.Enqueue(ev("b-low-late", "j3", 10, 4))
	b.Enqueue(ev("b-low-early", "j4", 10, 3))
	b.Enqueue(ev("c-top", "j5", 100, 5))
	var got []string
	take := func() {
		e, tok := mustDequeue(t, b)
		got = append(got, e.ID)
		if err := b.Ack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
	}
	take()
	take()
	// b reached its share; c fell below everyone.
	mu.Lock()
	deficit["b"], deficit["c"] = 0, 0.5
	mu.Unlock()
	take()
	take()
	take()
	want := []string{"b-low-early", "b-low-late", "c-top", "a-high", "a-low"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	assertNoneReady(t, b)

	// Without queues the order is priority's again.
	on = false
	got = nil
	b.Enqueue(ev("b-again", "j3", 10, 6))
	b.Enqueue(ev("c-again", "j5", 100, 7))
	take()
	take()
	if want := []string{"c-again", "b-again"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order without queues %v, want %v", got, want)
	}
}

// isClosed reports whether ch is closed now.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestIdle: the idle signal closes once nothing is ready or in flight,
// and not before; evals waiting on the clock do not hold it open.
func TestIdle(t *testing.T) {
	b, clk, failed := newBroker(t, 2)
	b.cfg.InitialNackDelay = time.Second
	if !isClosed(b.Idle()) {
		t.Fatal("an empty broker is not idle")
	}
	b.Enqueue(ev("e1", "j1", 50, 1))
	b.Enqueue(ev("e2", "j1", 50, 2)) // pending behind e1
	b.Enqueue(ev("e3", "j2", 50, 3))
	idle := b.Idle()
	if isClosed(idle) {
		t.Fatal("idle with evals ready")
	}
	e, tok := mustDequeue(t, b)
	if err := b.Ack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	if isClosed(idle) {
		t.Fatal("idle with evals still ready")
	}
	e2, tok2 := mustDequeue(t, b)
	e3, tok3 := mustDequeue(t, b)
	if e2.ID != "e2" || e3.ID != "e3" {
		t.Fatalf("dequeued %s, %s; want e2, e3", e2.ID, e3.ID)
	}
	if err := b.Ack(e3.ID, tok3); err != nil {
		t.Fatal(err)
	}
	if isClosed(idle) {
		t.Fatal("idle with e2 in flight")
	}
	// Nacked with a redelivery delay: it waits on the clock.
	if err := b.Nack(e2.ID, tok2); err != nil {
		t.Fatal(err)
	}
	if !isClosed(idle) {
		t.Fatalf("not idle with only a nack-delayed eval (stats %+v)", b.Stats())
	}
	clk.Advance(time.Second) // redelivered: busy again
	idle = b.Idle()
	if isClosed(idle) {
		t.Fatal("idle with the redelivered eval ready")
	}
	e, tok = mustDequeue(t, b)
	if err := b.Nack(e.ID, tok); err != nil { // the delivery limit: failed
		t.Fatal(err)
	}
	if !isClosed(idle) || len(*failed) != 1 {
		t.Fatalf("after the last delivery failed: idle %v, failed %v", isClosed(idle), *failed)
	}
	b.Enqueue(ev("e4", "j3", 50, 4))
	idle = b.Idle()
	b.SetEnabled(false)
	if !isClosed(idle) {
		t.Fatal("a disabled broker is not idle")
	}
}
