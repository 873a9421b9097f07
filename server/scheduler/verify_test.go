package scheduler

import (
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// gpuAlloc is a running alloc of job j on node holding device gpu.
func gpuAlloc(id string, j *api.Job, node, gpu string) *api.Allocation {
	return &api.Allocation{
		ID: id, Namespace: j.Namespace, JobID: j.ID, Job: j, TaskGroup: "web", Name: api.AllocName(j.ID, "web", 0),
		NodeID: node, DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"server": {
			Cpu: api.AllocatedCpuResources{CpuShares: 100}, Memory: api.AllocatedMemoryResources{MemoryMB: 64},
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{gpu}}},
		}}},
	}
}

// A plan that gives a failed alloc its follow-up eval (an update of a
// terminal alloc) and places a new alloc on that alloc's GPU fits: the
// failed copy holds nothing. A live copy holding the GPU still collides.
func TestNodePlanFitsSkipsTerminalAllocs(t *testing.T) {
	st := newMemState()
	node := gangGPUNode("1", 1)
	st.addNode(node)
	job := testJob("j", api.JobTypeBatch, 2, 100, 64)
	st.upsertJob(job)
	failed := gpuAlloc("failed", job, node.ID, "1-GPU-0")
	failed.ClientStatus = api.AllocClientStatusFailed
	st.upsertAlloc(failed)

	update := failed.Copy()
	update.FollowupEvalID = "followup"
	plan := &api.Plan{EvalID: "e", Job: job}
	plan.AppendAlloc(update)
	plan.AppendAlloc(gpuAlloc("new", job, node.ID, "1-GPU-0"))
	if ok, why, err := NodePlanFits(st, plan, node.ID); err != nil || !ok {
		t.Fatalf("plan with a failed alloc's follow-up update does not fit: %s %v", why, err)
	}

	live := update.Copy()
	live.ClientStatus = api.AllocClientStatusRunning
	plan = &api.Plan{EvalID: "e2", Job: job}
	plan.AppendAlloc(live)
	plan.AppendAlloc(gpuAlloc("new", job, node.ID, "1-GPU-0"))
	if ok, _, err := NodePlanFits(st, plan, node.ID); err != nil || ok {
		t.Fatalf("two live allocs on one GPU fit (err %v)", err)
	}
}

// A failed alloc waiting for a delayed reschedule frees its GPU: the next
// eval places another alloc of the job on it, in the same plan as the
// failed alloc's follow-up update, and the plan passes the fit check.
func TestDelayedRescheduleFreesGPUInPlan(t *testing.T) {
	st := newMemState()
	node := gangGPUNode("1", 1)
	st.addNode(node)
	job := testJob("j", api.JobTypeBatch, 2, 100, 64)
	job.Datacenters = []string{"dc1"}
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: 3, Interval: 24 * time.Hour,
		Delay: time.Hour, DelayFunction: "constant"}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := placedCount(res.Plan); n != 1 {
		t.Fatalf("first eval placed %d allocs, want 1 (one GPU)", n)
	}
	st.apply(res.Plan)
	first := st.liveAllocs(api.DefaultNamespace, "j")[0]
	failed := first.Copy()
	failed.ClientStatus = api.AllocClientStatusFailed
	failed.ModifyTime = testNow.Add(time.Minute).UnixNano()
	st.upsertAlloc(failed)

	res, err = Schedule(st, testEval(job, 2), Options{Now: testNow.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var update, placed *api.Allocation
	for _, a := range res.Plan.NodeAllocation[node.ID] {
		if a.ID == first.ID {
			update = a
		} else {
			placed = a
		}
	}
	if update == nil || update.FollowupEvalID == "" || !update.ClientTerminalStatus() {
		t.Fatalf("plan has no follow-up update of the failed alloc: %+v", update)
	}
	if placed == nil {
		t.Fatal("the freed GPU was not given to the other alloc")
	}
	if ok, why, err := NodePlanFits(st, res.Plan, node.ID); err != nil || !ok {
		t.Fatalf("scheduler's plan does not fit its own check: %s %v", why, err)
	}
}
