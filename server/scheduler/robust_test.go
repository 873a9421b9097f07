package scheduler

import (
	"testing"

	"github.com/drover/drover/api"
)

// TestOddInputs feeds shapes a real cluster produces at the edges (nodes
// without resources or attributes, allocs without resources or on
// unknown nodes, groups with no tasks or count 0) and checks the pass
// completes with a sensible plan instead of failing or panicking.
func TestOddInputs(t *testing.T) {
	st := newMemState()
	bare := &api.Node{ID: "bare", Name: "bare", Datacenter: "dc1", Status: api.NodeStatusReady}
	st.addNode(bare)
	good := testNode("good", "dc1", 4000, 8192)
	st.addNode(good)
	job := testJob("j", api.JobTypeService, 2, 100, 64)
	job.TaskGroups[0].Tasks[0].Resources = nil // defaults apply
	job.TaskGroups = append(job.TaskGroups,
		&api.TaskGroup{Name: "empty", Count: 1},
		&api.TaskGroup{Name: "zero", Count: 0, Tasks: []*api.Task{{Name: "t", Driver: "raw_exec"}}})
	st.upsertJob(job)
	st.upsertAlloc(&api.Allocation{ID: "ghost", Namespace: "default", JobID: "j", Name: "j.web[0]", TaskGroup: "web",
		NodeID: "gone", DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning})
	st.upsertAlloc(&api.Allocation{ID: "oldgroup", Namespace: "default", JobID: "j", Name: "j.removed[0]", TaskGroup: "removed",
		NodeID: good.ID, DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning})
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	web := 0
	for node, list := range res.Plan.NodeAllocation {
		for _, a := range list {
			if node != good.ID {
				t.Errorf("%s placed on %s, a node without resources", a.Name, node)
			}
			if a.TaskGroup == "web" {
				web++
				if got := a.AllocatedResources.Tasks["server"].Memory.MemoryMB; got != api.DefaultMemoryMB {
					t.Errorf("default memory = %d, want %d", got, api.DefaultMemoryMB)
				}
			}
		}
	}
	if web != 2 {
		t.Errorf("placed %d web allocs, want 2 (one replacing the alloc on a vanished node)", web)
	}
	stops := map[string]string{}
	for _, list := range res.Plan.NodeUpdate {
		for _, a := range list {
			stops[a.ID] = a.ClientStatus
		}
	}
	if stops["ghost"] != api.AllocClientStatusLost {
		t.Errorf("alloc on a vanished node: stop status %q, want lost", stops["ghost"])
	}
	if _, ok := stops["oldgroup"]; !ok {
		t.Error("alloc of a removed group not stopped")
	}
}
