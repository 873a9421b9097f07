package server

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

func prioJob(id string, prio, cpu int) *api.Job {
	j := testJob(id, 1, cpu, 256)
	j.Priority = prio
	return j
}

// preemptionEvalsOf returns the job's evals triggered by preemption.
func preemptionEvalsOf(s *Server, ws memdb.WatchSet, jobID string) ([]*api.Evaluation, error) {
	evals, err := s.State().EvalsByJob(ws, api.DefaultNamespace, jobID)
	if err != nil {
		return nil, err
	}
	var out []*api.Evaluation
	for _, e := range evals {
		if e.TriggeredBy == api.EvalTriggerPreemption {
			out = append(out, e)
		}
	}
	return out, nil
}

// With service preemption on in the scheduler configuration (set
// explicitly here; it is the default too), a high-priority service job
// evicts a low-priority one from a full node; the evicted job gets a
// preemption eval and is placed again once a node with room joins.
func TestServicePreemptionReplacesPreemptedJob(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	conf := api.DefaultSchedulerConfiguration()
	conf.PreemptionConfig.ServiceSchedulerEnabled = true
	if resp, err := s.Operator().SetSchedulerConfig(ctx, conf, false, 0); err != nil || !resp.Updated {
		t.Fatalf("set scheduler config: %+v, %v", resp, err)
	}
	registerNode(t, s, testNode("n1", 1000, 4096))
	registerJob(t, s, prioJob("low", 20, 800))
	lowAlloc := waitLive(t, s, "low", 1)[0]

	registerJob(t, s, prioJob("high", 80, 800))
	high := waitLive(t, s, "high", 1)[0]
	if high.NodeID != "n1" {
		t.Fatalf("high alloc on %q, want n1", high.NodeID)
	}
	waitLive(t, s, "low", 0)
	evicted, err := s.State().AllocByID(nil, lowAlloc.ID)
	if err != nil || evicted == nil {
		t.Fatalf("low alloc: %v, %v", evicted, err)
	}
	if evicted.DesiredStatus != api.AllocDesiredStatusEvict || evicted.PreemptedByAllocation != high.ID {
		t.Errorf("low alloc: desired %q preempted by %q, want evict by %s",
			evicted.DesiredStatus, evicted.PreemptedByAllocation, high.ID)
	}

	var pe []*api.Evaluation
	waitState(t, s, "a preemption eval of low", func(ws memdb.WatchSet) (bool, error) {
		var err error
		pe, err = preemptionEvalsOf(s, ws, "low")
		return len(pe) > 0, err
	})
	if len(pe) != 1 {
		t.Fatalf("preemption evals of low: %d, want 1", len(pe))
	}
	e := pe[0]
	if e.Priority != 20 || e.Type != api.JobTypeService || e.Namespace != api.DefaultNamespace {
		t.Errorf("preemption eval: priority %d type %q ns %q, want 20 service default", e.Priority, e.Type, e.Namespace)
	}
	if e.CreateIndex != evicted.ModifyIndex {
		t.Errorf("preemption eval created at %d, the eviction at %d: want the same Raft entry", e.CreateIndex, evicted.ModifyIndex)
	}
	if others, _ := preemptionEvalsOf(s, nil, "high"); len(others) != 0 {
		t.Errorf("the preempting job got %d preemption evals", len(others))
	}
	// No room left on n1: the eval runs and leaves a blocked eval.
	done := waitEvalStatus(t, s, e.ID, api.EvalStatusComplete)
	if done.BlockedEval == "" {
		t.Fatalf("preemption eval %+v placed nothing and left no blocked eval", done)
	}

	registerNode(t, s, testNode("n2", 1000, 4096))
	again := waitLive(t, s, "low", 1)[0]
	if again.NodeID != "n2" || again.ID == lowAlloc.ID {
		t.Errorf("low placed again as %s on %q, want a new alloc on n2", again.ID, again.NodeID)
	}
	if got := waitLive(t, s, "high", 1)[0]; got.ID != high.ID {
		t.Errorf("high alloc changed: %s, want %s", got.ID, high.ID)
	}
}

// The default configuration lets service and batch jobs preempt: a
// priority 90 batch job evicts priority 50 service work from a full node.
func TestDefaultSchedulerConfigBatchPreemptsService(t *testing.T) {
	s := newTestServer(t)
	conf, idx, err := s.Operator().SchedulerConfig()
	if err != nil || idx != 0 || conf.PreemptionConfig != api.DefaultPreemptionConfig() ||
		!conf.PreemptionConfig.ServiceSchedulerEnabled || !conf.PreemptionConfig.BatchSchedulerEnabled {
		t.Fatalf("default config: %+v at %d, %v", conf, idx, err)
	}
	registerNode(t, s, testNode("n1", 1000, 4096))
	registerJob(t, s, prioJob("svc", 50, 800))
	low := waitLive(t, s, "svc", 1)[0]
	hi := prioJob("train", 90, 800)
	hi.Type = api.JobTypeBatch
	registerJob(t, s, hi)
	got := waitLive(t, s, "train", 1)[0]
	waitLive(t, s, "svc", 0)
	evicted, err := s.State().AllocByID(nil, low.ID)
	if err != nil || evicted == nil || evicted.DesiredStatus != api.AllocDesiredStatusEvict || evicted.PreemptedByAllocation != got.ID {
		t.Fatalf("svc alloc after the batch job: %+v, %v; want evicted by %s", evicted, err, got.ID)
	}
}

// An operator turns preemption off through the scheduler configuration:
// the high-priority job waits blocked and the low-priority one keeps
// running.
func TestSchedulerConfigTurnsPreemptionOff(t *testing.T) {
	s := newTestServer(t)
	conf := api.DefaultSchedulerConfiguration()
	conf.PreemptionConfig.ServiceSchedulerEnabled = false
	if resp, err := s.Operator().SetSchedulerConfig(context.Background(), conf, false, 0); err != nil || !resp.Updated {
		t.Fatalf("set scheduler config: %+v, %v", resp, err)
	}
	registerNode(t, s, testNode("n1", 1000, 4096))
	registerJob(t, s, prioJob("low", 20, 800))
	low := waitLive(t, s, "low", 1)[0]
	resp := registerJob(t, s, prioJob("high", 80, 800))
	e := waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	if e.BlockedEval == "" {
		t.Fatalf("high eval %+v: want a blocked eval (nothing fits, no preemption)", e)
	}
	if got := waitLive(t, s, "low", 1)[0]; got.ID != low.ID || got.DesiredStatus != api.AllocDesiredStatusRun {
		t.Errorf("low alloc %s desired %q, want %s still running", got.ID, got.DesiredStatus, low.ID)
	}
	if live, _ := liveAllocs(s, nil, "high"); len(live) != 0 {
		t.Errorf("high placed %d allocs on a full node without preemption", len(live))
	}
}

func TestSetSchedulerConfigCAS(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	spread := &api.SchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmSpread}
	resp, err := s.Operator().SetSchedulerConfig(ctx, spread, true, 0)
	if err != nil || !resp.Updated || resp.Index == 0 {
		t.Fatalf("CAS 0 on an unset config: %+v, %v, want updated", resp, err)
	}
	first := resp.Index
	resp, err = s.Operator().SetSchedulerConfig(ctx, api.DefaultSchedulerConfiguration(), true, first-1)
	if err != nil || resp.Updated {
		t.Fatalf("stale CAS: %+v, %v, want not updated and no error", resp, err)
	}
	if c, _, _ := s.Operator().SchedulerConfig(); c.SchedulerAlgorithm != api.SchedulerAlgorithmSpread || c.ModifyIndex != first {
		t.Errorf("after stale CAS: %+v", c)
	}
	resp, err = s.Operator().SetSchedulerConfig(ctx, api.DefaultSchedulerConfiguration(), true, first)
	if err != nil || !resp.Updated {
		t.Fatalf("CAS at the current index: %+v, %v", resp, err)
	}
	c, idx, _ := s.Operator().SchedulerConfig()
	if c.SchedulerAlgorithm != api.SchedulerAlgorithmBinpack || c.CreateIndex != first || c.ModifyIndex != resp.Index || idx != resp.Index {
		t.Errorf("after CAS: %+v at %d, want binpack created %d modified %d", c, idx, first, resp.Index)
	}
	if _, err := s.Operator().SetSchedulerConfig(ctx, &api.SchedulerConfiguration{SchedulerAlgorithm: "fifo"}, false, 0); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("unknown algorithm: %v, want ErrBadRequest", err)
	}
}

// Preempted batch work is requeued: the evicted job's preemption eval
// leaves a blocked eval, and the work is placed again once a node with
// room joins.
func TestPreemptedBatchJobPlacedAgain(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("n1", 1000, 4096))
	low := prioJob("low", 20, 800)
	low.Type = api.JobTypeBatch
	registerJob(t, s, low)
	first := waitLive(t, s, "low", 1)[0]
	high := prioJob("high", 90, 800)
	high.Type = api.JobTypeBatch
	registerJob(t, s, high)
	waitLive(t, s, "high", 1)
	waitLive(t, s, "low", 0)
	var pe []*api.Evaluation
	waitState(t, s, "a preemption eval of low", func(ws memdb.WatchSet) (bool, error) {
		var err error
		pe, err = preemptionEvalsOf(s, ws, "low")
		return len(pe) > 0, err
	})
	if done := waitEvalStatus(t, s, pe[0].ID, api.EvalStatusComplete); done.BlockedEval == "" {
		t.Fatalf("preemption eval %+v left no blocked eval", done)
	}
	registerNode(t, s, testNode("n2", 1000, 4096))
	again := waitLive(t, s, "low", 1)[0]
	if again.ID == first.ID || again.NodeID != "n2" || again.Name != first.Name {
		t.Errorf("low placed again as %s %s on %q, want a new %s on n2", again.ID, again.Name, again.NodeID, first.Name)
	}
}
