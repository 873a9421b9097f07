package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// randGangCluster is 3-12 nodes with 0, 4 or 8 GPUs, varied CPU and
// memory, in up to three racks, with some low-priority standing work.
func randGangCluster(r *rand.Rand) *memState {
	st := newMemState()
	for i := range 3 + r.IntN(10) {
		n := gangGPUNode(fmt.Sprint(i), []int{0, 4, 8}[r.IntN(3)])
		n.NodeResources.Cpu.CpuShares = int64(4000 + r.IntN(4)*4000)
		n.NodeResources.Memory.MemoryMB = int64(8192 + r.IntN(4)*8192)
		if r.IntN(4) > 0 {
			n.Meta["topology.rack"] = fmt.Sprint("r", r.IntN(3))
		}
		st.addNode(n)
	}
	low := testJob("low", api.JobTypeBatch, 1+r.IntN(6), 1000+r.IntN(3)*1000, 1024)
	low.Priority = 10
	if r.IntN(2) == 0 {
		low.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(1 + r.IntN(4))}}
	}
	st.upsertJob(low)
	res, err := Schedule(st, testEval(low, 0), Options{Now: testNow})
	if err == nil {
		st.apply(res.Plan)
	}
	return st
}

// randGangJob is a job of one or two groups: group gangs, a job gang or
// no gang, random min, sometimes a topology.
func randGangJob(r *rand.Rand, id string) *api.Job {
	j := testJob(id, api.JobTypeBatch, 1+r.IntN(6), 500+r.IntN(4)*1000, 512+r.IntN(4)*1024)
	j.Priority = 20 + r.IntN(70)
	j.SubmitTime = testNow.UnixNano()
	if r.IntN(3) > 0 {
		j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64([]int{1, 2, 4, 8}[r.IntN(4)])}}
	}
	if r.IntN(2) == 0 {
		j.TaskGroups = append(j.TaskGroups, &api.TaskGroup{Name: "launcher", Count: 1 + r.IntN(2), EphemeralDisk: &api.EphemeralDisk{SizeMB: 10},
			Tasks: []*api.Task{{Name: "l", Driver: "raw_exec", Resources: &api.Resources{CPU: 200 + r.IntN(2000), MemoryMB: 256}}}})
	}
	gang := func(count int) *api.Gang {
		g := &api.Gang{StaleGrace: time.Minute}
		if r.IntN(3) == 0 {
			g.Min = 1 + r.IntN(count)
		}
		if r.IntN(3) == 0 {
			g.Topology = &api.Topology{Level: "rack", Mode: []string{api.TopologyRequired, api.TopologyPreferred}[r.IntN(2)]}
		}
		return g
	}
	switch r.IntN(4) {
	case 0: // no gang
	case 1:
		total := 0
		for _, tg := range j.TaskGroups {
			total += tg.Count
		}
		j.Gang = gang(total)
	default:
		for _, tg := range j.TaskGroups {
			if r.IntN(3) > 0 {
				tg.Gang = gang(tg.Count)
			}
		}
	}
	return j
}

// checkGangPlan holds a plan to the gang invariants: every gang either
// places nothing or reaches its min with the members still running; the
// plan's gangs list placed allocs; every preemption is for a placement of
// the plan; and every node of the plan fits (NodePlanFits).
func checkGangPlan(t *testing.T, desc string, st *memState, job *api.Job, plan *api.Plan) {
	t.Helper()
	placed := map[string]*api.Allocation{}
	for _, l := range plan.NodeAllocation {
		for _, a := range l {
			if st.allocs[a.ID] == nil {
				placed[a.ID] = a
			}
		}
	}
	gone := map[string]bool{}
	for _, l := range plan.NodeUpdate {
		for _, a := range l {
			gone[a.ID] = true
		}
	}
	for _, l := range plan.NodePreemptions {
		for _, a := range l {
			gone[a.ID] = true
			if placed[a.PreemptedByAllocation] == nil {
				t.Fatalf("%s: preemption of %s for %q, not a placement of the plan", desc, a.ID, a.PreemptedByAllocation)
			}
		}
	}
	type tally struct{ min, live, placed int }
	gangs := map[string]*tally{}
	for _, tg := range job.TaskGroups {
		g, id := job.GangOf(tg)
		if g == nil {
			continue
		}
		tl := gangs[id]
		if tl == nil {
			tl = &tally{}
			gangs[id] = tl
		}
		tl.min += tg.Count
		if g.Min > 0 {
			tl.min = g.Min // validated: min <= members
		}
		for _, a := range st.liveAllocs(job.Namespace, job.ID) {
			if a.TaskGroup == tg.Name && !gone[a.ID] {
				tl.live++
			}
		}
		for _, a := range placed {
			if a.TaskGroup == tg.Name {
				tl.placed++
			}
		}
	}
	for id, tl := range gangs {
		if tl.placed > 0 && tl.live+tl.placed < tl.min {
			t.Fatalf("%s: partial gang %s: %d placed, %d running, min %d", desc, id, tl.placed, tl.live, tl.min)
		}
	}
	inPlan := map[string]bool{}
	for _, l := range plan.NodeAllocation {
		for _, a := range l {
			inPlan[a.ID] = true
		}
	}
	for _, g := range plan.Gangs {
		for _, id := range g.AllocIDs {
			if !inPlan[id] {
				t.Fatalf("%s: plan gang %s lists %s, not in the plan", desc, g.ID, id)
			}
		}
	}
	for node := range plan.NodeAllocation {
		if ok, why, err := NodePlanFits(st, plan, node); err != nil || !ok {
			t.Fatalf("%s: node %s does not fit the plan: %s %v", desc, node, why, err)
		}
	}
}

// Property: over random clusters and workloads (with preemption, node
// loss, failures and stale gangs), no plan holds a partial gang.
func TestGangNoPartialPlacementProperty(t *testing.T) {
	placedGangs, failedGangs := 0, 0
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 3))
		st := randGangCluster(r)
		opts := Options{Now: testNow}
		if r.IntN(2) == 0 {
			opts.Preemption = &PreemptionConfig{BatchSchedulerEnabled: true}
		}
		var jobs []*api.Job
		for i := range 1 + r.IntN(4) {
			j := randGangJob(r, fmt.Sprint("j", i))
			st.upsertJob(j)
			jobs = append(jobs, j)
		}
		n := 0
		pass := func(now time.Time) {
			for _, j := range jobs {
				n++
				o := opts
				o.Now = now
				res, err := Schedule(st, testEval(j, n), o)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				checkGangPlan(t, fmt.Sprintf("seed %d job %s pass %d", seed, j.ID, n), st, j, res.Plan)
				if len(res.Plan.Gangs) > 0 {
					placedGangs++
				}
				for _, m := range res.Eval.FailedTGAllocs {
					if m.GangFailure != "" {
						failedGangs++
						break
					}
				}
				st.apply(res.Plan)
			}
		}
		pass(testNow)
		// Churn: a node goes down, some allocs fail; then again past the
		// stale grace.
		if len(st.nodes) > 0 {
			st.nodes[r.IntN(len(st.nodes))].Status = api.NodeStatusDown
		}
		for _, j := range jobs {
			for _, a := range st.liveAllocs(j.Namespace, j.ID) {
				if r.IntN(4) == 0 {
					c := a.Copy()
					c.ClientStatus = api.AllocClientStatusFailed
					c.ModifyTime = testNow.UnixNano()
					st.upsertAlloc(c)
				}
			}
		}
		pass(testNow.Add(10 * time.Second))
		pass(testNow.Add(2 * time.Minute))
	}
	if placedGangs == 0 || failedGangs == 0 {
		t.Fatalf("gangs placed %d, failed %d: the workload does not exercise both", placedGangs, failedGangs)
	}
	t.Logf("plans with gangs placed: %d, passes with a gang failure: %d", placedGangs, failedGangs)
}

// Property: two gangs that do not both fit never both hold resources:
// scheduled in sequence, each is whole (at its min) or holds nothing, and
// the first placed whole when it fits alone.
func TestGangCompetingNeverBothPending(t *testing.T) {
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 5))
		nodes := 2 + r.IntN(8)
		st := gpuCluster(nodes, 8)
		gpus := []int{2, 4, 8}[r.IntN(3)]
		per := 8 / gpus
		capacity := nodes * per
		a := gangJob("a", 1+r.IntN(capacity), gpus, 0)
		b := gangJob("b", 1+r.IntN(capacity), gpus, 0)
		st.upsertJob(a)
		st.upsertJob(b)
		ra := schedule(t, st, a, 1, Options{})
		st.apply(ra.Plan)
		rb := schedule(t, st, b, 2, Options{})
		st.apply(rb.Plan)
		na, nb := len(st.liveAllocs(api.DefaultNamespace, "a")), len(st.liveAllocs(api.DefaultNamespace, "b"))
		desc := fmt.Sprintf("seed %d: %d nodes x %d slots, gangs %d and %d: placed %d and %d", seed, nodes, per,
			a.TaskGroups[0].Count, b.TaskGroups[0].Count, na, nb)
		if na != 0 && na != a.TaskGroups[0].Count || nb != 0 && nb != b.TaskGroups[0].Count {
			t.Fatalf("%s: a partial gang holds resources", desc)
		}
		if na == 0 {
			t.Fatalf("%s: the first gang fits alone but was not placed", desc)
		}
		if fit := a.TaskGroups[0].Count+b.TaskGroups[0].Count <= capacity; fit != (nb > 0) {
			t.Fatalf("%s: both fit = %v, second placed = %v", desc, fit, nb > 0)
		}
	}
}
