package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// oneGPUNode is testNode with one healthy GPU, "<id>-GPU-0".
func oneGPUNode(id string) *api.Node {
	n := testNode(id, 4000, 8192)
	n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
		Instances: []*api.NodeDevice{{ID: id + "-GPU-0", Healthy: true}}}}
	return n
}

// gpuSquat is squatAlloc holding GPU gpu.
func gpuSquat(job *api.Job, nodeID, gpu string) *api.Allocation {
	a := squatAlloc(job, nodeID, 100)
	a.AllocatedResources.Tasks["srv"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{gpu}}}
	return a
}

// A plan that gives a failed alloc its follow-up eval (an update of a
// client-terminal alloc) and places a new alloc on the failed alloc's GPU
// is accepted: the failed copy holds nothing, as in the scheduler.
func TestEvaluatePlanSkipsTerminalAllocs(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, oneGPUNode("a"))
	registerJob(t, s, testJob("squat", 0, 100, 100))
	job, _ := s.State().JobByID(nil, api.DefaultNamespace, "squat")
	failed := gpuSquat(job, "a", "a-GPU-0")
	failed.ClientStatus = api.AllocClientStatusFailed
	if _, err := s.core.applyPlanResults(context.Background(), &state.ApplyPlanResultsRequest{Job: job, AllocsPlaced: []*api.Allocation{failed}}); err != nil {
		t.Fatal(err)
	}
	stored, err := s.State().AllocByID(nil, failed.ID)
	if err != nil || stored == nil || stored.ClientStatus != api.AllocClientStatusFailed {
		t.Fatalf("failed alloc not stored as failed: %+v %v", stored, err)
	}
	snap, err := s.State().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	update := stored.Copy()
	update.FollowupEvalID = "followup"
	plan := &api.Plan{EvalID: "e", Job: job}
	plan.AppendAlloc(update)
	plan.AppendAlloc(gpuSquat(job, "a", "a-GPU-0"))
	ok, why, err := evaluateNodePlan(snap, plan, "a", nil)
	if err != nil || !ok {
		t.Fatalf("node plan rejected: %s %v", why, err)
	}
	res, req, err := evaluatePlan(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 0 || len(req.AllocsPlaced) != 2 {
		t.Fatalf("plan: rejected %v, placed %d, want none rejected and 2 placed", res.RejectedNodes, len(req.AllocsPlaced))
	}

	// A live copy of the alloc still holds the GPU.
	live := update.Copy()
	live.ClientStatus = api.AllocClientStatusRunning
	plan = &api.Plan{EvalID: "e2", Job: job}
	plan.AppendAlloc(live)
	plan.AppendAlloc(gpuSquat(job, "a", "a-GPU-0"))
	if ok, _, err := evaluateNodePlan(snap, plan, "a", nil); err != nil || ok {
		t.Fatalf("two live allocs on one GPU accepted (err %v)", err)
	}
}

// End to end: a batch job's alloc fails with a delayed reschedule policy
// on a node with one GPU; the job's other alloc, blocked so far, gets the
// GPU in the same plan that gives the failed alloc its follow-up eval.
func TestDelayedRescheduleFreesGPU(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, oneGPUNode("a"))
	job := testJob("train", 2, 100, 64)
	job.Type = api.JobTypeBatch
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: 3, Interval: 24 * time.Hour,
		Delay: time.Hour, DelayFunction: "constant"}
	resp := registerJob(t, s, job)
	waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	first := waitLive(t, s, "train", 1)[0]
	reportAllocs(t, s, "a", api.AllocClientStatusFailed, first)

	var next *api.Allocation
	waitState(t, s, "the freed GPU placed", func(ws memdb.WatchSet) (bool, error) {
		live, err := liveAllocs(s, ws, "train")
		for _, a := range live {
			if a.ID != first.ID {
				next = a
			}
		}
		return next != nil, err
	})
	failed, err := s.State().AllocByID(nil, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if failed.FollowupEvalID == "" {
		t.Errorf("failed alloc has no follow-up eval (delayed reschedule)")
	}
	if next.NodeID != "a" || next.AllocatedResources.Tasks["srv"].Devices[0].DeviceIDs[0] != "a-GPU-0" {
		t.Errorf("next alloc on %s with %+v, want a-GPU-0 on a", next.NodeID, next.AllocatedResources.Tasks["srv"].Devices)
	}
}
