package broker

import (
	"context"
	"testing"

	"github.com/drover/drover/api"
)

func blockedEv(id, job string, idx uint64, elig map[string]bool, escaped bool) *api.Evaluation {
	e := ev(id, job, 50, idx)
	e.Status = api.EvalStatusBlocked
	e.SnapshotIndex = idx
	e.ClassEligibility = elig
	e.EscapedComputedClass = escaped
	return e
}

func TestBlockedUnblockByClass(t *testing.T) {
	b, _, _ := newBroker(t, 3)
	var dups []string
	be := NewBlockedEvals(b.Enqueue, func(e *api.Evaluation) { dups = append(dups, e.ID) })
	be.SetEnabled(true)
	be.Block(blockedEv("gpu-only", "j1", 10, map[string]bool{"gpu": true, "cpu": false}, false))
	be.Block(blockedEv("escaped", "j2", 10, nil, true))
	be.Block(blockedEv("not-cpu", "j3", 10, map[string]bool{"cpu": false}, false))
	if s := be.Stats(); s.TotalBlocked != 3 || s.TotalEscaped != 1 {
		t.Fatalf("stats = %+v", s)
	}
	be.Unblock("cpu", 11)
	// escaped wakes on anything; gpu-only and not-cpu are ineligible for cpu.
	e, tok := mustDequeue(t, b)
	if e.ID != "escaped" {
		t.Fatalf("woken %s, want escaped", e.ID)
	}
	_ = b.Ack(e.ID, tok)
	assertNoneReady(t, b)
	be.Unblock("new-class", 12) // unknown class: may be feasible for all
	got := map[string]bool{}
	for range 2 {
		e, tok := mustDequeue(t, b)
		got[e.ID] = true
		_ = b.Ack(e.ID, tok)
	}
	if !got["gpu-only"] || !got["not-cpu"] {
		t.Fatalf("woken %v", got)
	}
	if s := be.Stats(); s.TotalBlocked != 0 {
		t.Fatalf("still blocked: %+v", s)
	}
	if len(dups) != 0 {
		t.Fatalf("dups = %v", dups)
	}
}

func TestBlockedNewestWinsAndMissedUnblock(t *testing.T) {
	b, _, _ := newBroker(t, 3)
	var dups []string
	be := NewBlockedEvals(b.Enqueue, func(e *api.Evaluation) { dups = append(dups, e.ID) })
	be.SetEnabled(true)
	be.Block(blockedEv("old", "j", 5, nil, true))
	be.Block(blockedEv("new", "j", 7, nil, true))
	be.Block(blockedEv("older", "j", 3, nil, true))
	if len(dups) != 2 || dups[0] != "old" || dups[1] != "older" {
		t.Fatalf("dups = %v, want [old older]", dups)
	}
	if got := be.Blocked("default", "j"); got == nil || got.ID != "new" {
		t.Fatalf("tracked = %v, want new", got)
	}
	// Capacity appeared at index 20; an eval computed on a snapshot at 15
	// must not block.
	be.UnblockAll(20)
	e, tok := mustDequeue(t, b)
	_ = b.Ack(e.ID, tok)
	be.Block(blockedEv("stale", "k", 15, map[string]bool{"x": true}, false))
	e, _ = mustDequeue(t, b)
	if e.ID != "stale" {
		t.Fatalf("got %s, want stale woken at once", e.ID)
	}
	if got := be.Untrack("default", "k"); got != nil {
		t.Fatalf("untrack returned %v", got.ID)
	}
}

func TestPlanQueuePriority(t *testing.T) {
	q := NewPlanQueue()
	if _, err := q.Enqueue(&api.Plan{}); err == nil {
		t.Fatal("enqueue on disabled queue succeeded")
	}
	q.SetEnabled(true)
	p1, _ := q.Enqueue(&api.Plan{EvalID: "low", Priority: 10})
	_, _ = q.Enqueue(&api.Plan{EvalID: "high", Priority: 90})
	_, _ = q.Enqueue(&api.Plan{EvalID: "low2", Priority: 10})
	ctx := context.Background()
	var order []string
	for range 3 {
		p, err := q.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, p.Plan.EvalID)
		p.Respond(&api.PlanResult{AllocIndex: 7}, nil)
	}
	if order[0] != "high" || order[1] != "low" || order[2] != "low2" {
		t.Fatalf("order = %v", order)
	}
	res, err := p1.Wait(ctx)
	if err != nil || res.AllocIndex != 7 {
		t.Fatalf("future = %+v, %v", res, err)
	}
	p4, _ := q.Enqueue(&api.Plan{EvalID: "x"})
	q.SetEnabled(false)
	if _, err := p4.Wait(ctx); err != ErrPlanQueueDisabled {
		t.Fatalf("flushed plan: %v", err)
	}
}
