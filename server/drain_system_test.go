package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// A system job is placed on a node again once its drain is disabled
// (drain -enable, the drain stops the system alloc, drain -disable).
func TestSystemJobReturnsAfterDrainDisabled(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	job := testJob("agent", 1, 100, 64)
	job.Type = api.JobTypeSystem
	registerJob(t, s, job)
	first := waitLive(t, s, "agent", 1)
	reportAllocs(t, s, "a", api.AllocClientStatusRunning, first...)

	if _, err := s.Nodes().UpdateNodeDrain(ctx, &api.NodeUpdateDrainRequest{NodeID: "a", DrainSpec: &api.DrainSpec{Deadline: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, s, "agent", 0)
	reportAllocs(t, s, "a", api.AllocClientStatusComplete, first...)
	waitState(t, s, "drain complete", func(ws memdb.WatchSet) (bool, error) {
		n, err := s.State().NodeByID(ws, "a")
		return n != nil && n.DrainStrategy == nil && n.LastDrain != nil && n.LastDrain.Status == "complete", err
	})

	resp, err := s.Nodes().UpdateNodeDrain(ctx, &api.NodeUpdateDrainRequest{NodeID: "a", MarkEligible: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.EvalIDs) == 0 {
		t.Errorf("drain disable created no evals")
	}
	again := waitLive(t, s, "agent", 1)
	if again[0].ID == first[0].ID || again[0].NodeID != "a" {
		t.Fatalf("system alloc after drain disable: %+v", again[0])
	}

	n, _ := s.State().NodeByID(nil, "a")
	if n.SchedulingEligibility != api.NodeSchedulingEligible {
		t.Fatalf("eligibility %q after drain disable", n.SchedulingEligibility)
	}
}
