package server

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

func squatAlloc(job *api.Job, nodeID string, cpu int64) *api.Allocation {
	return &api.Allocation{
		ID: newID(), Namespace: api.DefaultNamespace, JobID: job.ID, Job: job, TaskGroup: "web",
		Name: api.AllocName(job.ID, "web", 0), NodeID: nodeID, EvalID: newID(),
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusPending,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"srv": {Cpu: api.AllocatedCpuResources{CpuShares: cpu}, Memory: api.AllocatedMemoryResources{MemoryMB: 128}}}},
	}
}

// A plan computed on state that another commit overtook is rejected for
// the overcommitted node; the worker re-plans on fresh state and lands on
// the other node.
func TestPlanRejectedAndRetriedOnFreshState(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NumSchedulers = 1 })
	registerNode(t, s, testNode("a", 1000, 4096))
	registerNode(t, s, testNode("b", 1000, 4096))
	registerJob(t, s, testJob("squat", 0, 100, 100))
	squatJob, _ := s.State().JobByID(nil, api.DefaultNamespace, "squat")

	var mu sync.Mutex
	var planned []string // node of each plan for job x
	hook := func(p *api.Plan) {
		if p.Job == nil || p.Job.ID != "x" {
			return
		}
		var node string
		for n := range p.NodeAllocation {
			node = n
		}
		mu.Lock()
		planned = append(planned, node)
		first := len(planned) == 1
		mu.Unlock()
		if !first {
			return
		}
		// Another commit takes the capacity first.
		req := &state.ApplyPlanResultsRequest{Job: squatJob, AllocsPlaced: []*api.Allocation{squatAlloc(squatJob, node, 600)}}
		if _, err := s.core.applyPlanResults(context.Background(), req); err != nil {
			t.Errorf("squat: %v", err)
		}
	}
	s.planHook.Store(&hook)

	resp := registerJob(t, s, testJob("x", 1, 600, 256))
	waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	live := waitLive(t, s, "x", 1)
	mu.Lock()
	defer mu.Unlock()
	if len(planned) != 2 || planned[0] == planned[1] {
		t.Fatalf("plans for x went to %v, want two plans on different nodes", planned)
	}
	if live[0].NodeID != planned[1] {
		t.Fatalf("alloc on %s, want %s (the retry's node)", live[0].NodeID, planned[1])
	}
}

func TestEvaluatePlanAllAtOnce(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("a", 1000, 4096))
	registerNode(t, s, testNode("b", 1000, 4096))
	registerJob(t, s, testJob("squat", 0, 100, 100))
	job, _ := s.State().JobByID(nil, api.DefaultNamespace, "squat")
	snap, err := s.State().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	plan := &api.Plan{EvalID: "e", Job: job}
	plan.AppendAlloc(squatAlloc(job, "a", 900))
	plan.AppendAlloc(squatAlloc(job, "b", 600))
	plan.AppendAlloc(squatAlloc(job, "b", 600)) // b overcommitted
	res, req, err := evaluatePlan(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 1 || res.RejectedNodes[0] != "b" || len(req.AllocsPlaced) != 1 || res.RefreshIndex == 0 {
		t.Fatalf("partial: rejected %v placed %d refresh %d", res.RejectedNodes, len(req.AllocsPlaced), res.RefreshIndex)
	}
	plan.AllAtOnce = true
	res, req, err = evaluatePlan(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 1 || len(req.AllocsPlaced) != 0 || len(res.NodeAllocation) != 0 {
		t.Fatalf("all-at-once: rejected %v placed %d", res.RejectedNodes, len(req.AllocsPlaced))
	}
}

func TestNodeFits(t *testing.T) {
	n := testNode("a", 1000, 1000)
	n.ReservedResources = &api.NodeReservedResources{ReservedHostPorts: "22,8000-8002"}
	n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
		Instances: []*api.NodeDevice{{ID: "GPU-0", Healthy: true}, {ID: "GPU-1", Healthy: true}}}}
	alloc := func(cpu int64, port int, gpu string) *api.Allocation {
		a := squatAlloc(&api.Job{ID: "j"}, "a", cpu)
		if port > 0 {
			a.AllocatedResources.Shared.Ports = []api.AllocatedPort{{Label: "http", Value: port}}
		}
		if gpu != "" {
			a.AllocatedResources.Tasks["srv"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{gpu}}}
		}
		return a
	}
	cases := []struct {
		name   string
		allocs []*api.Allocation
		want   bool
	}{
		{"fits", []*api.Allocation{alloc(500, 9000, "GPU-0"), alloc(500, 9001, "GPU-1")}, true},
		{"cpu", []*api.Allocation{alloc(600, 0, ""), alloc(500, 0, "")}, false},
		{"port collision", []*api.Allocation{alloc(100, 9000, ""), alloc(100, 9000, "")}, false},
		{"reserved port", []*api.Allocation{alloc(100, 8001, "")}, false},
		{"gpu collision", []*api.Allocation{alloc(100, 0, "GPU-1"), alloc(100, 0, "GPU-1")}, false},
		{"unknown gpu", []*api.Allocation{alloc(100, 0, "GPU-7")}, false},
	}
	for _, c := range cases {
		if got, why := nodeFits(n, c.allocs); got != c.want {
			t.Errorf("%s: fits = %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}

// Plan N+1 is verified while plan N's commit is in flight: N's placements
// count (once, whether or not the snapshot already has them).
func TestEvaluatePlanWithInflightOverlay(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("a", 1000, 4096))
	registerJob(t, s, testJob("squat", 0, 100, 100))
	job, _ := s.State().JobByID(nil, api.DefaultNamespace, "squat")

	inflight := squatAlloc(job, "a", 600)
	overlay := newPlanCommit(&state.ApplyPlanResultsRequest{AllocsPlaced: []*api.Allocation{inflight}})
	snap, _ := s.State().Snapshot()
	next := &api.Plan{EvalID: "n1", Job: job}
	next.AppendAlloc(squatAlloc(job, "a", 600))
	res, _, err := evaluatePlanOverlay(snap, next, overlay)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 1 {
		t.Fatalf("plan overcommitting with the in-flight plan was accepted: %+v", res)
	}

	// Once the in-flight plan is in the snapshot too, it is counted once.
	if _, err := s.core.applyPlanResults(context.Background(), &state.ApplyPlanResultsRequest{Job: job, AllocsPlaced: []*api.Allocation{inflight.Copy()}}); err != nil {
		t.Fatal(err)
	}
	snap, _ = s.State().Snapshot()
	small := &api.Plan{EvalID: "n2", Job: job}
	small.AppendAlloc(squatAlloc(job, "a", 300))
	res, req, err := evaluatePlanOverlay(snap, small, overlay)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 0 || len(req.AllocsPlaced) != 1 {
		t.Fatalf("in-flight alloc counted twice: rejected %v", res.RejectedNodes)
	}
	// A stop in flight frees its capacity for the next plan.
	stopOverlay := newPlanCommit(&state.ApplyPlanResultsRequest{AllocsStopped: []*api.Allocation{inflight}})
	big := &api.Plan{EvalID: "n3", Job: job}
	big.AppendAlloc(squatAlloc(job, "a", 900))
	if res, _, _ := evaluatePlanOverlay(snap, big, stopOverlay); len(res.RejectedNodes) != 0 {
		t.Fatalf("capacity freed by an in-flight stop not seen: %+v", res)
	}
}

// Many concurrent jobs competing for a small cluster never overcommit a
// node, whatever order the applier sees their plans in.
func TestConcurrentPlansNeverOvercommit(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.NumSchedulers = 4 })
	for _, n := range []string{"a", "b", "c"} {
		registerNode(t, s, testNode(n, 1000, 100000))
	}
	for i := range 8 {
		registerJob(t, s, testJob(fmt.Sprintf("j%d", i), 1, 400, 64))
	}
	// 3 nodes x 2 allocs of 400 MHz fit; 6 of the 8 jobs place.
	waitState(t, s, "six placements", func(ws memdb.WatchSet) (bool, error) {
		all, err := s.State().Allocs(ws, "*", "")
		return len(all) == 6, err
	})
	for _, n := range []string{"a", "b", "c"} {
		allocs, _ := s.State().AllocsByNode(nil, n)
		var cpu int64
		for _, a := range allocs {
			c, _, _ := a.AllocatedResources.Comparable()
			cpu += c
		}
		if cpu > 1000 {
			t.Fatalf("node %s overcommitted: %d MHz", n, cpu)
		}
	}
}
