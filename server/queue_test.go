package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// End to end through the worker, the applier and the reactor: a job over
// its queue's limit places what fits and stays pending with the limit
// explained; when the queue's other work finishes, its blocked eval is
// woken and places the rest; raising the limit wakes it too.
func TestQueueLimitBlocksThenWakes(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{{Name: "team", Limit: &api.QueueResources{CPU: 1000}}, {Name: "team/x"}}); err != nil {
		t.Fatal(err)
	}
	first := testJob("first", 2, 500, 128)
	first.Queue = "team/x"
	registerJob(t, s, first)
	done := waitLive(t, s, "first", 2)
	second := testJob("second", 1, 500, 128)
	second.Queue = "team"
	resp := registerJob(t, s, second)
	e := waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	m := e.FailedTGAllocs["web"]
	if m == nil || !slices.Contains(m.QuotaExhausted, "queue team: cpu 1000 of 1000 MHz used, 500 more asked") || e.BlockedEval == "" {
		t.Fatalf("eval %+v, failure %+v: want the limit explained and a blocked eval", e, m)
	}
	reportAllocs(t, s, "a", api.AllocClientStatusComplete, done[0])
	waitLive(t, s, "second", 1)

	third := testJob("third", 1, 1000, 128)
	third.Queue = "team/x"
	resp = registerJob(t, s, third)
	if e := waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete); e.BlockedEval == "" {
		t.Fatalf("third: %+v, want blocked on the limit", e.FailedTGAllocs)
	}
	if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{{Name: "team", Limit: &api.QueueResources{CPU: 2000}}}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, s, "third", 1)
	st, err := s.State().QueueStatus(nil, "team")
	if err != nil || st.Allocated.CPU != 2000 || st.RunningAllocs != 3 {
		t.Fatalf("team status %+v (%v), want 2000 MHz in 3 allocs", st, err)
	}
	if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{{Name: "team", Limit: &api.QueueResources{CPU: 100}, Guaranteed: &api.QueueResources{CPU: 200}}}); err == nil ||
		!strings.Contains(err.Error(), "above the limit") {
		t.Fatalf("guarantee above limit: %v", err)
	}
}

// The reactor: a lost alloc of a limited queue (or one on a node that
// can't take work) wakes its node's class (evals blocked on the limit
// escape the class filter); one of an unlimited queue does not; a queue
// write wakes every blocked eval.
func TestCommitReactorQueueLimits(t *testing.T) {
	st := state.NewStateStore()
	down := &api.Node{ID: "d", ComputedClass: "cd", Status: api.NodeStatusDown}
	if err := st.UpsertNode(1, down); err != nil {
		t.Fatal(err)
	}
	if err := st.UpsertQueues(2, []*api.Queue{{Name: "lim", Limit: &api.QueueResources{GPUs: 1}}, {Name: "lim/c"}, {Name: "free"}}); err != nil {
		t.Fatal(err)
	}
	w := &recWaiters{}
	r := &commitReactor{state: func() *state.StateStore { return st }, evals: &recQueue{}, blocked: w}
	change := func(queue string) fsm.AllocChange {
		run := &api.Allocation{ID: "x", NodeID: "d", Job: &api.Job{ID: "j", Queue: queue}, ClientStatus: api.AllocClientStatusRunning}
		lost := run.Copy()
		lost.ClientStatus = api.AllocClientStatusLost
		return fsm.AllocChange{Before: run, After: lost}
	}
	r.AllocsUpdated(3, []fsm.AllocChange{change("free"), change("")})
	if len(w.unblocked) != 0 {
		t.Fatalf("unlimited queues woke %v", w.unblocked)
	}
	r.AllocsUpdated(4, []fsm.AllocChange{change("lim/c")})
	if !slices.Equal(w.unblocked, []string{"cd"}) {
		t.Fatalf("a lost alloc of a limited queue woke %v, want cd", w.unblocked)
	}
	r.QueuesUpdated(5, nil)
	if !slices.Equal(w.unblocked, []string{"cd", "*"}) {
		t.Fatalf("a queue write woke %v, want all", w.unblocked)
	}
}

// Node loss: the allocs of a down node are lost and leave their queue's
// usage; the limit then admits exactly one of the job's replacement and
// a job blocked on the limit (woken by the lost alloc), never both.
func TestQueueLimitNodeLoss(t *testing.T) {
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	ctx := context.Background()
	if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{{Name: "team", Limit: &api.QueueResources{CPU: 500}}}); err != nil {
		t.Fatal(err)
	}
	registerNode(t, s, testNode("a", 4000, 8192))
	w := testJob("w", 1, 500, 256)
	w.Queue = "team"
	registerJob(t, s, w)
	first := waitLive(t, s, "w", 1)[0]
	reportAllocs(t, s, "a", api.AllocClientStatusRunning, first)
	registerNode(t, s, testNode("b", 4000, 8192))
	blocked := testJob("s", 1, 500, 256)
	blocked.Queue = "team"
	if e := waitEvalStatus(t, s, registerJob(t, s, blocked).EvalID, api.EvalStatusComplete); e.BlockedEval == "" {
		t.Fatalf("s: %+v, want blocked on the limit", e.FailedTGAllocs)
	}
	advanceB(t, s, clk, time.Minute) // a misses its heartbeats: down
	waitState(t, s, "alloc on a lost", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, first.ID)
		return a != nil && a.ClientStatus == api.AllocClientStatusLost, err
	})
	waitState(t, s, "one replacement or the blocked job placed", func(ws memdb.WatchSet) (bool, error) {
		lw, err := liveAllocs(s, ws, "w")
		if err != nil {
			return false, err
		}
		ls, err := liveAllocs(s, ws, "s")
		if err != nil {
			return false, err
		}
		if len(lw)+len(ls) > 1 {
			t.Fatalf("%d allocs of w and %d of s live: over the 500 MHz limit", len(lw), len(ls))
		}
		return len(lw)+len(ls) == 1, nil
	})
	st, err := s.State().QueueStatus(nil, "team")
	if err != nil || st.Allocated.CPU != 500 || st.RunningAllocs != 1 {
		t.Fatalf("team status %+v (%v), want the lost alloc gone: 500 MHz in 1 alloc", st, err)
	}
}

// A group asking more GPUs per allocation than its queue's limit allows
// by itself is accepted with a warning that it can never run under that
// limit (and stays pending, blocked, until the limit is raised).
func TestRegisterWarnsAskOverQueueLimit(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{{Name: "team", Limit: &api.QueueResources{GPUs: 4}}, {Name: "team/x"}}); err != nil {
		t.Fatal(err)
	}
	big := testJob("big", 1, 100, 64)
	big.Queue = "team/x"
	big.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 8}}
	resp := registerJob(t, s, big)
	want := `group "web" asks 8 GPUs per allocation, more than queue team's limit of 4: it can never run under this limit and stays pending until the limit is raised`
	if !strings.Contains(resp.Warnings, want) {
		t.Errorf("warnings %q, want %q", resp.Warnings, want)
	}
	small := testJob("small", 1, 100, 64)
	small.Queue = "team/x"
	small.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 4}}
	if resp := registerJob(t, s, small); strings.Contains(resp.Warnings, "never run") {
		t.Errorf("an ask within the limit got %q", resp.Warnings)
	}
}
