package scheduler

import (
	"sort"
	"testing"

	"github.com/drover/drover/api"
)

// When a placement needs two victims, both are preempted, once each: the
// pruning pass once overwrote its own victim list (kept aliased victims),
// evicting the smaller victim twice and never the bigger one, while the
// node's usage forgot the bigger one, so the plan overcommitted the node.
func TestPreemptTwoVictimsEachOnce(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("1", "dc1", 1000, 4096))
	low := testJob("low", api.JobTypeService, 0, 100, 64)
	low.Priority = 20
	st.upsertJob(low)
	for i, cpu := range []int64{600, 400} {
		st.upsertAlloc(&api.Allocation{
			ID: []string{"big", "small"}[i], Namespace: api.DefaultNamespace, JobID: "low", Job: low, TaskGroup: "web",
			Name: api.AllocName("low", "web", i), NodeID: "node-1", DesiredStatus: api.AllocDesiredStatusRun,
			ClientStatus: api.AllocClientStatusRunning,
			AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
				"server": {Cpu: api.AllocatedCpuResources{CpuShares: cpu}, Memory: api.AllocatedMemoryResources{MemoryMB: 64}}}},
		})
	}
	high := testJob("high", api.JobTypeService, 1, 1000, 64)
	high.Priority = 80
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 1), Options{Now: testNow, Preemption: &PreemptionConfig{ServiceSchedulerEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	var evicted []string
	for _, a := range res.Plan.NodePreemptions["node-1"] {
		evicted = append(evicted, a.ID)
	}
	sort.Strings(evicted)
	if len(evicted) != 2 || evicted[0] != "big" || evicted[1] != "small" {
		t.Fatalf("preempted %v, want [big small]", evicted)
	}
	if ok, why, err := NodePlanFits(st, res.Plan, "node-1"); err != nil || !ok {
		t.Fatalf("the plan does not fit its node: %s %v", why, err)
	}
}
