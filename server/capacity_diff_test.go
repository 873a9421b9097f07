package server

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// The scheduler (its per-pass node bookkeeping, scheduler.NodePlanFits)
// and the plan applier (evaluateNodePlan) must give the same verdict on
// every node of a plan. Random clusters (resources, node reservations,
// small dynamic port ranges, reserved cores, GPUs, nodes not ready) with
// random live allocs get (1) the plans the scheduler makes for a random
// job, which both must accept, and (2) random hand-made plans (stops,
// in-place updates, placements with colliding ports, cores and devices,
// overcommits), on which they must agree either way.
func TestDifferentialSchedulerApplierVerdicts(t *testing.T) {
	var fitted, rejected, scheduledNodes int
	for seed := range uint64(1000) {
		r := rand.New(rand.NewPCG(seed, 0xd1ff))
		dc := newDiffCluster(t, r)
		snap, err := dc.store.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		view := snap.Scheduler()

		// (1) The scheduler's own plan: both accept every node.
		opts := scheduler.Options{Now: time.Unix(1700000000, 0), SampleLimit: -1}
		if r.IntN(2) == 0 {
			opts.Preemption = &scheduler.PreemptionConfig{ServiceSchedulerEnabled: true, BatchSchedulerEnabled: true,
				SystemSchedulerEnabled: true, SysBatchSchedulerEnabled: true}
		}
		if r.IntN(3) == 0 {
			opts.Algorithm = scheduler.AlgorithmSpread
		}
		eval := &api.Evaluation{ID: fmt.Sprintf("eval-%d", seed), Namespace: api.DefaultNamespace, Priority: dc.job.Priority,
			Type: dc.job.Type, JobID: dc.job.ID, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending}
		res, err := scheduler.Schedule(view, eval, opts)
		if err != nil {
			t.Fatalf("seed %d: schedule: %v", seed, err)
		}
		for node := range res.Plan.NodeAllocation {
			scheduledNodes++
			sOK, sWhy, err := scheduler.NodePlanFits(view, res.Plan, node)
			if err != nil {
				t.Fatal(err)
			}
			aOK, aWhy, err := evaluateNodePlan(snap, res.Plan, node, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !sOK || !aOK {
				t.Fatalf("seed %d node %s: the scheduler's own plan: scheduler verdict %v (%s), applier %v (%s)\n%s",
					seed, node, sOK, sWhy, aOK, aWhy, dc.describe(node, res.Plan))
			}
		}

		// (2) Random plans: the verdicts agree on every node.
		for range 4 {
			plan := dc.randomPlan(r)
			for _, n := range dc.nodes {
				sOK, sWhy, err := scheduler.NodePlanFits(view, plan, n.ID)
				if err != nil {
					t.Fatal(err)
				}
				aOK, aWhy, err := evaluateNodePlan(snap, plan, n.ID, nil)
				if err != nil {
					t.Fatal(err)
				}
				if sOK != aOK {
					t.Fatalf("seed %d node %s: scheduler verdict %v (%s), applier %v (%s)\n%s",
						seed, n.ID, sOK, sWhy, aOK, aWhy, dc.describe(n.ID, plan))
				}
				if len(plan.NodeAllocation[n.ID]) > 0 {
					if aOK {
						fitted++
					} else {
						rejected++
					}
				}
			}
		}
	}
	t.Logf("%d fitting and %d rejected random node plans, %d nodes of scheduler plans", fitted, rejected, scheduledNodes)
	// The generator must exercise both verdicts and real schedules.
	if fitted < 500 || rejected < 500 || scheduledNodes < 500 {
		t.Fatalf("weak generator: %d fitting and %d rejected node plans, %d scheduled nodes", fitted, rejected, scheduledNodes)
	}
}

type diffCluster struct {
	store *state.StateStore
	nodes []*api.Node
	live  map[string][]*api.Allocation // node -> live allocs
	job   *api.Job
	n     int
}

func (dc *diffCluster) id(kind string) string {
	dc.n++
	return fmt.Sprintf("%s-%04d", kind, dc.n)
}

func newDiffCluster(t *testing.T, r *rand.Rand) *diffCluster {
	t.Helper()
	dc := &diffCluster{store: state.NewStateStore(), live: map[string][]*api.Allocation{}}
	idx := uint64(10)
	next := func() uint64 { idx++; return idx }
	for i := range 2 + r.IntN(5) {
		n := testNode(fmt.Sprintf("node-%d", i), int64(1000+r.IntN(8)*500), int64(1024+r.IntN(8)*512))
		n.NodeResources.Cpu.TotalCpuCores = uint16(2 + r.IntN(4))
		n.NodeResources.MinDynamicPort = 20000
		n.NodeResources.MaxDynamicPort = 20000 + r.IntN(6)
		if r.IntN(4) == 0 {
			n.NodeResources.Disk.DiskMB = 0
		}
		if r.IntN(2) == 0 {
			n.ReservedResources = &api.NodeReservedResources{
				Cpu:               api.NodeCpuResources{CpuShares: int64(r.IntN(3) * 100), ReservableCpuCores: []uint16{uint16(r.IntN(2))}},
				Memory:            api.NodeMemoryResources{MemoryMB: int64(r.IntN(3) * 64)},
				ReservedHostPorts: []string{"", "22", "8080", "20000-20001", "22,8081,20003"}[r.IntN(5)],
			}
		}
		if r.IntN(2) == 0 {
			g := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100"}
			for j := range 1 + r.IntN(3) {
				g.Instances = append(g.Instances, &api.NodeDevice{ID: fmt.Sprintf("%s-GPU-%d", n.ID, j), Healthy: r.IntN(5) > 0})
			}
			n.NodeResources.Devices = []*api.NodeDeviceResource{g}
		}
		n.Status = api.NodeStatusReady
		switch r.IntN(12) {
		case 0:
			n.Drain = true
		case 1:
			n.SchedulingEligibility = api.NodeSchedulingIneligible
		case 2:
			n.Status = api.NodeStatusDown
		}
		if err := dc.store.UpsertNode(next(), n); err != nil {
			t.Fatal(err)
		}
		stored, _ := dc.store.NodeByID(nil, n.ID)
		dc.nodes = append(dc.nodes, stored)
	}

	// The job to schedule, and an older version whose allocs are live.
	types := []string{api.JobTypeService, api.JobTypeBatch, api.JobTypeSystem}
	job := testJob("diff", 1+r.IntN(8), 100+r.IntN(6)*100, 64+r.IntN(4)*64)
	job.Type = types[r.IntN(len(types))]
	job.Priority = 70
	job.Datacenters = []string{"dc1"}
	tg := job.TaskGroups[0]
	tg.Name = "g"
	res := tg.Tasks[0].Resources
	if r.IntN(3) == 0 {
		res.Cores, res.CPU = 1, 0
	}
	if r.IntN(2) == 0 {
		nw := &api.NetworkResource{}
		if r.IntN(2) == 0 {
			nw.ReservedPorts = []api.Port{{Label: "static", Value: []int{8080, 8081, 9000}[r.IntN(3)]}}
		}
		for k := range r.IntN(3) {
			nw.DynamicPorts = append(nw.DynamicPorts, api.Port{Label: "dyn" + strconv.Itoa(k)})
		}
		tg.Networks = []*api.NetworkResource{nw}
	}
	if r.IntN(3) == 0 {
		res.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(1 + r.IntN(2))}}
	}
	if r.IntN(2) == 0 {
		tg.EphemeralDisk = &api.EphemeralDisk{SizeMB: 100 + r.IntN(3)*50000}
	}
	if err := dc.store.UpsertJob(next(), job.Copy()); err != nil {
		t.Fatal(err)
	}

	// Live allocs: of low-priority "other" jobs (preemptible) and of the
	// job's current version; each is kept only if the node still fits it.
	other := testJob("other", 0, 100, 64)
	other.Priority = 20
	if err := dc.store.UpsertJob(next(), other); err != nil {
		t.Fatal(err)
	}
	otherJob, _ := dc.store.JobByID(nil, api.DefaultNamespace, "other")
	curJob, _ := dc.store.JobByID(nil, api.DefaultNamespace, "diff")
	var allocs []*api.Allocation
	for _, n := range dc.nodes {
		for range r.IntN(5) {
			a := dc.randomAlloc(r, n, otherJob, "web")
			if r.IntN(3) == 0 {
				a = dc.randomAlloc(r, n, curJob, "g")
				a.Name = api.AllocName(curJob.ID, "g", r.IntN(10))
			}
			if ok, _ := nodeFits(n, append(append([]*api.Allocation{}, dc.live[n.ID]...), a)); !ok {
				continue
			}
			dc.live[n.ID] = append(dc.live[n.ID], a)
			allocs = append(allocs, a)
		}
	}
	if err := dc.store.UpsertAllocs(next(), allocs); err != nil {
		t.Fatal(err)
	}
	if r.IntN(2) == 0 { // a new version: some updates in place, some destructive
		job.Meta = map[string]string{"v": "2"}
		if r.IntN(2) == 0 {
			job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
		}
		if err := dc.store.UpsertJob(next(), job.Copy()); err != nil {
			t.Fatal(err)
		}
	}
	dc.job, _ = dc.store.JobByID(nil, api.DefaultNamespace, "diff")
	return dc
}

// randomAlloc makes an alloc on n with random resources, ports from a
// small pool (so they collide), reserved cores and device instances (some
// not on the node).
func (dc *diffCluster) randomAlloc(r *rand.Rand, n *api.Node, job *api.Job, group string) *api.Allocation {
	tr := &api.AllocatedTaskResources{
		Cpu:    api.AllocatedCpuResources{CpuShares: int64(r.IntN(8) * 100)},
		Memory: api.AllocatedMemoryResources{MemoryMB: int64(r.IntN(8) * 64)},
	}
	for range r.IntN(2) {
		tr.Cpu.ReservedCores = append(tr.Cpu.ReservedCores, uint16(r.IntN(4)))
	}
	if r.IntN(3) == 0 {
		tr.Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
			DeviceIDs: []string{fmt.Sprintf("%s-GPU-%d", n.ID, r.IntN(4))}}}
	}
	ar := &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"srv": tr},
		Shared: api.AllocatedSharedResources{DiskMB: int64(r.IntN(3) * 300)}}
	pool := []int{22, 8080, 8081, 9000, 20000, 20001, 20002, 20003, 20004, 20005}
	for range r.IntN(3) {
		p := pool[r.IntN(len(pool))]
		if r.IntN(2) == 0 {
			ar.Shared.Ports = append(ar.Shared.Ports, api.AllocatedPort{Label: "p", Value: p})
		} else {
			ar.Shared.Networks = append(ar.Shared.Networks, &api.NetworkResource{DynamicPorts: []api.Port{{Label: "d", Value: p}}})
		}
	}
	return &api.Allocation{
		ID: dc.id("alloc"), Namespace: api.DefaultNamespace, JobID: job.ID, Job: job, TaskGroup: group,
		Name: api.AllocName(job.ID, group, 0), NodeID: n.ID, EvalID: "e",
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning, AllocatedResources: ar,
	}
}

// randomPlan stops, preempts and updates some live allocs and places new
// ones, on random nodes.
func (dc *diffCluster) randomPlan(r *rand.Rand) *api.Plan {
	plan := &api.Plan{EvalID: dc.id("eval"), Job: dc.job}
	for _, n := range dc.nodes {
		for _, a := range dc.live[n.ID] {
			switch r.IntN(6) {
			case 0:
				plan.AppendStoppedAlloc(a, "stop", "")
			case 1:
				if plan.NodePreemptions == nil {
					plan.NodePreemptions = map[string][]*api.Allocation{}
				}
				plan.NodePreemptions[n.ID] = append(plan.NodePreemptions[n.ID], a)
			case 2: // in-place update, possibly with other resources
				c := a.Copy()
				if r.IntN(2) == 0 {
					c.AllocatedResources = dc.randomAlloc(r, n, dc.job, "g").AllocatedResources
				}
				plan.AppendAlloc(c)
			}
		}
		for range r.IntN(4) {
			plan.AppendAlloc(dc.randomAlloc(r, n, dc.job, "g"))
		}
	}
	return plan
}

func (dc *diffCluster) describe(node string, plan *api.Plan) string {
	out := ""
	for _, n := range dc.nodes {
		if n.ID != node {
			continue
		}
		c := capacity.NewNode(n)
		out += fmt.Sprintf("node %s ready=%v cap cpu=%d mem=%d disk=%d dyn=%d-%d reserved=%+v devices=%v\n", n.ID, n.Ready(),
			c.CPU, c.MemoryMB, c.DiskMB, c.MinDynamicPort, c.MaxDynamicPort, n.ReservedResources, n.NodeResources.Devices)
	}
	line := func(kind string, a *api.Allocation) {
		out += fmt.Sprintf("  %s %s %+v\n", kind, a.ID, capacity.AllocVector(a.AllocatedResources))
	}
	for _, a := range dc.live[node] {
		line("live", a)
	}
	for _, a := range plan.NodeUpdate[node] {
		line("stop", a)
	}
	for _, a := range plan.NodePreemptions[node] {
		line("preempt", a)
	}
	for _, a := range plan.NodeAllocation[node] {
		line("place", a)
	}
	return out
}
