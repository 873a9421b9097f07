package server

import (
	"context"
	"errors"
	"testing"

	"github.com/drover/drover/api"
)

func TestRegisterJobPlacesAllocs(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("n1", 4000, 8192))
	registerNode(t, s, testNode("n2", 4000, 8192))
	resp := registerJob(t, s, testJob("web", 3, 500, 256))
	if resp.EvalID == "" || resp.JobModifyIndex == 0 {
		t.Fatalf("register response = %+v", resp)
	}
	waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	allocs := waitLive(t, s, "web", 3)
	for _, a := range allocs {
		if a.NodeID != "n1" && a.NodeID != "n2" {
			t.Fatalf("alloc %s on unknown node %q", a.ID, a.NodeID)
		}
		if a.DesiredStatus != api.AllocDesiredStatusRun {
			t.Fatalf("alloc %s desired %q", a.ID, a.DesiredStatus)
		}
	}
	job, err := s.State().JobByID(nil, api.DefaultNamespace, "web")
	if err != nil || job == nil || job.Priority != api.DefaultPriority {
		t.Fatalf("stored job = %+v, %v (want canonicalized)", job, err)
	}
}

func TestEndpointErrors(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("n1", 4000, 8192))

	bad := testJob("bad", -1, 100, 100)
	if _, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: bad}); !errors.Is(err, api.ErrInvalidJob) {
		t.Fatalf("count -1: %v, want ErrInvalidJob", err)
	}
	if j, _ := s.State().JobByID(nil, api.DefaultNamespace, "bad"); j != nil {
		t.Fatal("invalid job was stored")
	}
	resp := registerJob(t, s, testJob("web", 1, 100, 100))
	_, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: testJob("web", 2, 100, 100), EnforceIndex: true,
		JobModifyIndex: resp.JobModifyIndex + 100})
	if !errors.Is(err, api.ErrIndexConflict) {
		t.Fatalf("enforce index mismatch: %v, want ErrIndexConflict", err)
	}
	if _, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: testJob("web", 2, 100, 100), EnforceIndex: true,
		JobModifyIndex: resp.JobModifyIndex}); err != nil {
		t.Fatalf("enforce index match: %v", err)
	}
	if _, err := s.Nodes().HeartbeatNode(ctx, "n1", "wrong", nil); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("heartbeat with wrong secret: %v, want ErrPermissionDenied", err)
	}
	if _, err := s.Nodes().UpdateAllocsFromClient(ctx, "n1", "wrong", nil); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("alloc update with wrong secret: %v", err)
	}
	n := testNode("n1", 1, 1)
	n.SecretID = "other"
	if _, err := s.Nodes().RegisterNode(ctx, n, api.NodeIntro{}); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("re-register with another secret: %v", err)
	}
	if _, err := s.Jobs().DeregisterJob(ctx, "", "missing", false); !errors.Is(err, api.ErrJobNotFound) {
		t.Fatalf("deregister missing: %v", err)
	}
	if _, err := s.Allocs().StopAlloc(ctx, "missing"); !errors.Is(err, api.ErrAllocNotFound) {
		t.Fatalf("stop missing alloc: %v", err)
	}
	if _, err := s.Nodes().UpdateNodeEligibility(ctx, &api.NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: "maybe"}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("bad eligibility: %v", err)
	}
}

func TestDeregisterPurge(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("n1", 4000, 8192))
	registerJob(t, s, testJob("web", 2, 100, 100))
	waitLive(t, s, "web", 2)
	resp, err := s.Jobs().DeregisterJob(context.Background(), "", "web", true)
	if err != nil {
		t.Fatal(err)
	}
	waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	waitLive(t, s, "web", 0)
	if j, _ := s.State().JobByID(nil, api.DefaultNamespace, "web"); j != nil {
		t.Fatalf("purged job still stored: %+v", j)
	}
}

func TestBlockedEvalWakesWhenNodeJoins(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("small", 600, 8192))
	resp := registerJob(t, s, testJob("big", 2, 500, 256))
	e := waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	if e.BlockedEval == "" {
		t.Fatalf("eval %+v has no blocked eval although only one alloc fits", e)
	}
	waitIdle(t, s) // the worker acks once the blocked eval is committed and tracked
	if n := s.blocked.Stats().TotalBlocked; n != 1 {
		t.Fatalf("%d blocked evals tracked, want 1", n)
	}
	waitLive(t, s, "big", 1)
	registerNode(t, s, testNode("large", 4000, 8192))
	allocs := waitLive(t, s, "big", 2)
	nodes := map[string]bool{}
	for _, a := range allocs {
		nodes[a.NodeID] = true
	}
	if !nodes["large"] {
		t.Fatalf("second alloc not on the new node: %v", nodes)
	}
}

func TestBlockedEvalCancelledWhenJobFitsAgain(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("small", 600, 8192))
	first := registerJob(t, s, testJob("big", 2, 500, 256))
	e := waitEvalStatus(t, s, first.EvalID, api.EvalStatusComplete)
	waitIdle(t, s) // the worker acks once the blocked eval is committed and tracked
	if n := s.blocked.Stats().TotalBlocked; n != 1 {
		t.Fatalf("%d blocked evals tracked, want 1", n)
	}
	// Scaling down to what fits makes the blocked eval obsolete.
	registerJob(t, s, testJob("big", 1, 500, 256))
	waitEvalStatus(t, s, e.BlockedEval, api.EvalStatusCancelled)
	if n := s.blocked.Stats().TotalBlocked; n != 0 {
		t.Fatalf("%d blocked evals still tracked", n)
	}
}

// Writes on a server that is not the leader fail with ErrNotLeader (the
// multi-server issue adds forwarding in raftApply).
func TestWritesOnNonLeaderFail(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("a", 4000, 8192))
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.IsLeader() {
		t.Fatal("still leader after shutdown")
	}
	ctx := context.Background()
	if _, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: testJob("web", 1, 100, 64)}); !errors.Is(err, api.ErrNotLeader) {
		t.Fatalf("register job: %v, want ErrNotLeader", err)
	}
	if _, err := s.Nodes().HeartbeatNode(ctx, "a", "secret-a", nil); !errors.Is(err, api.ErrNotLeader) {
		t.Fatalf("heartbeat: %v, want ErrNotLeader", err)
	}
	if _, _, err := s.raftApply(ctx, []byte{1}); !errors.Is(err, api.ErrNotLeader) {
		t.Fatalf("raftApply: %v, want ErrNotLeader", err)
	}
	// Reads still work.
	if n, err := s.State().NodeByID(nil, "a"); err != nil || n == nil {
		t.Fatalf("read after shutdown: %v, %v", n, err)
	}
}
