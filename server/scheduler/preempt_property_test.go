package scheduler

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// propWorld is one seeded random cluster and workload for the
// preemption and reservation properties.
type propWorld struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	st      *memState
	now     time.Time
	jobs    []*api.Job
	blocked map[string]*api.Evaluation // job ID -> its blocked eval
	evals   int

	evictedBy map[string]string          // alloc ID -> preempting job
	preempts  map[string]map[string]bool // preempting job -> victim jobs
	backfill  bool                       // a world of batch work near one priority: reservations and backfill
	plans     int
	evictions int
	gangHits  int // gangs a plan evicted members of
	heldPlans int // plans of jobs a reservation held back placing on a reserved node
	refused   int // placements refused nodes for a reservation (DimReserved)
	pending   pendingCounts
}

func newPropWorld(t *testing.T, seed uint64) *propWorld {
	w := &propWorld{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), st: newMemState(), now: testNow,
		blocked: map[string]*api.Evaluation{}, evictedBy: map[string]string{}, preempts: map[string]map[string]bool{}}
	w.backfill = seed%2 == 1
	for i, n := 0, 3+w.rng.IntN(6); i < n; i++ {
		if w.rng.IntN(3) == 0 {
			w.st.addNode(dgxLike(fmt.Sprintf("g%d", i)))
		} else {
			w.st.addNode(testNode(fmt.Sprintf("c%d", i), "dc1", int64(2000+1000*w.rng.IntN(3)), 16384))
		}
	}
	for i, n := 0, 8+w.rng.IntN(12); i < n; i++ {
		w.jobs = append(w.jobs, w.randomJob(i))
	}
	return w
}

// randomJob: batch or service, priority 10..100, some not preemptible or
// with a min_runtime, some gangs (rigid or elastic), some asking GPUs.
func (w *propWorld) randomJob(i int) *api.Job {
	r := w.rng
	typ := api.JobTypeBatch
	if r.IntN(2) == 0 {
		typ = api.JobTypeService
	}
	count := 1 + r.IntN(4)
	j := testJob(fmt.Sprintf("j%02d", i), typ, count, 300+100*r.IntN(12), 256+256*r.IntN(4))
	j.Datacenters = []string{"dc1"}
	j.Priority = 10 + 5*r.IntN(19)
	switch r.IntN(10) {
	case 0:
		no := false
		j.Preemptible = &no
	case 1, 2:
		j.MinRuntime = time.Duration(1+r.IntN(3)) * 10 * time.Minute
	}
	if w.backfill {
		j.Type = api.JobTypeBatch
		j.Priority = 40 + 5*r.IntN(3)
	}
	if count > 1 && r.IntN(3) == 0 {
		min := 0
		if r.IntN(2) == 0 {
			min = 1 + r.IntN(count-1)
		}
		j.TaskGroups[0].Gang = &api.Gang{Min: min}
	}
	if r.IntN(5) == 0 {
		// A big gang: most of a CPU node per member, so it often waits
		// with a reservation while smaller work arrives.
		j.TaskGroups[0].Count = 2 + r.IntN(3)
		j.TaskGroups[0].Gang = &api.Gang{}
		j.TaskGroups[0].Tasks[0].Resources.CPU = 1500 + 250*r.IntN(4)
		j.Priority = 40 + 10*r.IntN(3)
		if w.backfill {
			j.Priority = 50
		}
		return j
	}
	if r.IntN(4) == 0 {
		j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(1 << r.IntN(4))}}
	}
	return j
}

// schedule runs one eval of job (its blocked eval when it has one),
// checks the plan's properties, applies it and stores the blocked eval.
func (w *propWorld) schedule(job *api.Job) {
	w.evals++
	ev := &api.Evaluation{ID: fmt.Sprintf("eval-%d-%d", w.seed, w.evals), Namespace: api.DefaultNamespace, JobID: job.ID,
		Priority: job.Priority, Type: job.Type, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending}
	if b := w.blocked[job.ID]; b != nil {
		ev = b.Copy()
	}
	res, err := Schedule(w.st, ev, Options{Now: w.now})
	if err != nil {
		w.t.Fatalf("seed %d: schedule %s: %v", w.seed, job.ID, err)
	}
	w.check(job, res.Plan)
	w.checkPending(job, res) // explain_pending_test.go
	for _, m := range res.Eval.FailedTGAllocs {
		w.refused += m.DimensionExhausted[DimReserved]
	}
	w.st.apply(res.Plan)
	if b := w.blocked[job.ID]; b != nil {
		done := *b
		done.Status = api.EvalStatusComplete
		w.st.upsertEval(&done)
		delete(w.blocked, job.ID)
	}
	if res.Blocked != nil {
		w.st.upsertEval(res.Blocked)
		w.blocked[job.ID] = res.Blocked
	}
}

// check asserts, before the plan is applied: every victim is of another
// job at least 10 priority points lower and not protected, is evicted
// once, and never by a job it once evicted (no loop); every gang hit
// keeps at least its min or loses every member; each node fits; and no
// placement of a job a reservation holds back leaves a reserved node
// with less room than the reservation needs.
func (w *propWorld) check(job *api.Job, p *api.Plan) {
	t, seed := w.t, w.seed
	w.plans++
	type gangKey struct{ job, id string }
	evicted := map[gangKey]int{}
	seen := map[string]bool{}
	for node, list := range p.NodePreemptions {
		for _, c := range list {
			w.evictions++
			a := w.st.allocs[c.ID]
			switch {
			case a == nil || a.TerminalStatus():
				t.Fatalf("seed %d: %s preempts %s, not a live alloc", seed, job.ID, c.ID)
			case seen[a.ID] || w.evictedBy[a.ID] != "":
				t.Fatalf("seed %d: alloc %s preempted twice", seed, a.ID)
			case a.NodeID != node:
				t.Fatalf("seed %d: alloc %s of node %s recorded on %s", seed, a.ID, a.NodeID, node)
			case a.JobID == job.ID:
				t.Fatalf("seed %d: %s preempts its own alloc %s", seed, job.ID, a.ID)
			case allocPriority(a) > job.Priority-preemptPriorityDelta:
				t.Fatalf("seed %d: %s (priority %d) preempts %s of priority %d", seed, job.ID, job.Priority, a.ID, allocPriority(a))
			case preemptProtected(a, w.now.UnixNano()):
				t.Fatalf("seed %d: %s preempts protected %s (preemptible false: %v, min_runtime %v, age %v)", seed, job.ID, a.ID,
					a.Job.Preemptible != nil && !*a.Job.Preemptible, a.Job.MinRuntime, w.now.Sub(time.Unix(0, a.CreateTime)))
			case w.preempts[a.JobID][job.ID]:
				t.Fatalf("seed %d: loop: %s preempts %s, which preempted it before", seed, job.ID, a.JobID)
			}
			seen[a.ID] = true
			w.evictedBy[a.ID] = job.ID
			if w.preempts[job.ID] == nil {
				w.preempts[job.ID] = map[string]bool{}
			}
			w.preempts[job.ID][a.JobID] = true
			if id, _ := allocGangID(a); id != "" {
				evicted[gangKey{a.JobID, id}]++
			}
		}
	}
	w.gangHits += len(evicted)
	for k, n := range evicted {
		var live []*api.Allocation
		for _, a := range w.st.byJob[api.DefaultNamespace+"/"+k.job] {
			if id, _ := allocGangID(a); id == k.id && !a.TerminalStatus() {
				live = append(live, a)
			}
		}
		_, spec := allocGangID(live[0])
		min := gangMin(live[0], k.id, spec)
		if left := len(live) - n; left != 0 && left < min {
			t.Fatalf("seed %d: %s leaves gang %s of %s with %d of %d live members (min %d)", seed, job.ID, k.id, k.job, left, len(live), min)
		}
	}
	for node := range p.NodeAllocation {
		if ok, why, err := NodePlanFits(w.st, p, node); err != nil || !ok {
			t.Fatalf("seed %d: %s's plan does not fit node %s: %s %v", seed, job.ID, node, why, err)
		}
	}
	rs, _ := w.st.Reservations()
	for _, r := range rs {
		if !r.Holds(api.DefaultNamespace, job.ID, job.Priority, job.CreateIndex) {
			continue
		}
		for _, rn := range r.Nodes {
			if len(p.NodeAllocation[rn.NodeID]) == 0 {
				continue
			}
			w.heldPlans++
			cpu, mem := w.freeAfter(p, rn.NodeID)
			if cpu < rn.CPU || mem < rn.MemoryMB {
				t.Fatalf("seed %d: %s backfills node %s leaving %d MHz / %d MB of the %d / %d reserved for %s",
					seed, job.ID, rn.NodeID, cpu, mem, rn.CPU, rn.MemoryMB, r.JobID)
			}
		}
	}
}

// freeAfter is a node's free CPU and memory once the plan is applied.
func (w *propWorld) freeAfter(p *api.Plan, nodeID string) (int64, int64) {
	n, _ := w.st.NodeByID(nodeID)
	cpu, mem := n.NodeResources.Cpu.CpuShares, n.NodeResources.Memory.MemoryMB
	gone := map[string]bool{}
	for _, c := range p.NodeUpdate[nodeID] {
		gone[c.ID] = true
	}
	for _, c := range p.NodePreemptions[nodeID] {
		gone[c.ID] = true
	}
	use := func(a *api.Allocation) {
		c, m, _ := a.AllocatedResources.Comparable()
		cpu, mem = cpu-c, mem-m
	}
	for _, a := range w.st.byNode[nodeID] {
		if !a.TerminalStatus() && !gone[a.ID] {
			use(a)
		}
	}
	for _, a := range p.NodeAllocation[nodeID] {
		if w.st.allocs[a.ID] == nil { // new placements (in-place updates are counted above)
			use(a)
		}
	}
	return cpu, mem
}

// run lets the jobs arrive one per round (time moves 10 minutes a round,
// some batch allocs finish), evaluating every arrived job each round,
// then runs rounds with nothing arriving or finishing: the cluster must
// settle (no preemption in the last rounds).
func (w *propWorld) run() {
	var arrived []*api.Job
	for round := 0; round < len(w.jobs)+8; round++ {
		w.now = w.now.Add(10 * time.Minute)
		settling := round >= len(w.jobs)
		if !settling {
			j := w.jobs[round]
			w.st.upsertJob(j)
			arrived = append(arrived, j)
			ids := make([]string, 0, len(w.st.allocs))
			for id := range w.st.allocs {
				ids = append(ids, id)
			}
			sort.Strings(ids) // the random draws must not depend on map order
			for _, id := range ids {
				a := w.st.allocs[id]
				if !a.TerminalStatus() && a.Job.Type == api.JobTypeBatch && w.rng.IntN(8) == 0 {
					c := *a
					c.ClientStatus = api.AllocClientStatusComplete
					w.st.upsertAlloc(&c)
				}
			}
		}
		before := w.evictions
		for _, j := range arrived {
			w.schedule(j)
		}
		if round >= len(w.jobs)+5 && w.evictions != before {
			w.t.Fatalf("seed %d: still preempting %d rounds after the last arrival", w.seed, round-len(w.jobs))
		}
	}
}

// Property: over hundreds of seeded random clusters and workloads,
// preemption never leaves a partial gang, never evicts protected work or
// work less than 10 points lower, never evicts an alloc twice or a job
// that evicted the preemptor (no loop), settles once arrivals stop, and
// backfill never takes room a gang's reservation needs.
func TestPreemptionProperties(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	var plans, evictions, gangs, held, refused int
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		w := newPropWorld(t, seed)
		w.run()
		plans += w.plans
		evictions += w.evictions
		gangs += w.gangHits
		held += w.heldPlans
		refused += w.refused
	}
	if evictions == 0 || gangs == 0 || held == 0 || refused == 0 {
		t.Fatalf("%d plans, %d evictions, %d gangs hit, %d backfills on reserved nodes, %d nodes refused for reservations: "+
			"the workloads do not exercise every property", plans, evictions, gangs, held, refused)
	}
	t.Logf("%d seeds, %d plans, %d evictions, %d gangs hit, %d backfills on reserved nodes, %d nodes refused for reservations",
		seeds, plans, evictions, gangs, held, refused)
}
