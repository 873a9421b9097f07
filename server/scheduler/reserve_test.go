package scheduler

import (
	"fmt"
	"testing"

	"github.com/drover/drover/api"
)

// nodeFreeCPU is the node's CPU less its live allocs' in st.
func nodeFreeCPU(st *memState, nodeID string) int64 {
	n, _ := st.NodeByID(nodeID)
	free := n.NodeResources.Cpu.CpuShares
	for _, a := range st.byNode[nodeID] {
		if !a.TerminalStatus() {
			c, _, _ := a.AllocatedResources.Comparable()
			free -= c
		}
	}
	return free
}

// starvation runs a gang of 4 x 900 MHz (priority 50) against four 1,000
// MHz nodes, each running two older 400 MHz allocs, and a stream of new
// 400 MHz jobs of priority 40 or 50: each round one old alloc finishes,
// a new small job is scheduled, and the gang's blocked eval runs again.
// With reserve the blocked evals (and their reservations) are stored as
// the server does. It returns the round the gang was whole (-1: never)
// and checks that no stream placement took capacity a reservation needs.
func starvation(t *testing.T, reserve bool) int {
	st := newMemState()
	for i := 1; i <= 4; i++ {
		st.addNode(testNode(fmt.Sprint(i), "dc1", 1000, 8192))
	}
	st.addNode(testNode("5", "dc1", 500, 8192)) // room for backfill, never for a member
	var old []*api.Allocation
	for i := 0; i < 8; i++ {
		j := testJob(fmt.Sprintf("old%d", i), api.JobTypeBatch, 1, 400, 64)
		st.upsertJob(j)
		a := runningAlloc(j, 0, fmt.Sprintf("node-%d", i/2+1), 400, testNow)
		st.upsertAlloc(a)
		old = append(old, a)
	}
	gang := cpuGangJob("gang", 50, 4, 0, 900)
	st.upsertJob(gang)
	ev := testEval(gang, 0)
	run := func(e *api.Evaluation) *Result {
		res, err := Schedule(st, e, Options{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		st.apply(res.Plan)
		return res
	}
	var blocked *api.Evaluation
	runGang := func() bool {
		e := ev
		if blocked != nil {
			e = blocked
		}
		res := run(e)
		if blocked != nil {
			done := *blocked
			done.Status = api.EvalStatusComplete
			st.upsertEval(&done)
		}
		blocked = res.Blocked
		if blocked != nil && reserve {
			st.upsertEval(blocked)
		}
		return len(st.liveAllocs(api.DefaultNamespace, "gang")) == 4
	}
	if runGang() {
		t.Fatal("the gang placed at once on full nodes")
	}
	if reserve && (blocked == nil || blocked.Reservation == nil || len(blocked.Reservation.Nodes) != 4) {
		t.Fatalf("blocked eval %+v: want a reservation of the four big nodes", blocked)
	}
	for round := 0; round < 12; round++ {
		if round < len(old) {
			c := *old[round]
			c.ClientStatus = api.AllocClientStatusComplete
			st.upsertAlloc(&c)
		}
		small := testJob(fmt.Sprintf("new%d", round), api.JobTypeBatch, 1, 400, 64)
		small.Priority = 40 + 10*(round%2) // lower, or the same and newer
		st.upsertJob(small)
		holds := map[string]int64{}
		if rs, _ := st.Reservations(); len(rs) > 0 {
			for _, n := range rs[0].Nodes {
				holds[n.NodeID] = n.CPU
			}
		}
		res := run(testEval(small, round+1))
		for node, list := range res.Plan.NodeAllocation {
			if h, ok := holds[node]; ok && len(list) > 0 && nodeFreeCPU(st, node) < h {
				t.Fatalf("round %d: %s placed on %s, leaving %d MHz of the %d reserved", round, small.ID, node, nodeFreeCPU(st, node), h)
			}
		}
		if runGang() {
			return round
		}
	}
	return -1
}

// A big gang is not starved by a stream of small jobs: its reservation
// keeps the capacity the departing work frees, and the gang places once
// the old work is gone (round 7: the eighth departure). Without the
// reservation the stream takes every freed slot and the gang never runs.
func TestReservationPreventsStarvation(t *testing.T) {
	if got := starvation(t, true); got < 0 || got > 7 {
		t.Fatalf("with reservations the gang placed in round %d, want by round 7", got)
	}
	if got := starvation(t, false); got >= 0 {
		t.Fatalf("without reservations the gang placed in round %d: the scenario does not starve it", got)
	}
}

// A reservation holds lower-priority and newer same-priority jobs back,
// not higher-priority or older ones, nor its own job.
func TestReservationHolds(t *testing.T) {
	r := &api.Reservation{Namespace: "default", JobID: "gang", Priority: 50, JobCreateIndex: 10}
	for _, c := range []struct {
		id   string
		prio int
		idx  uint64
		want bool
	}{
		{"low", 40, 5, true}, {"newer", 50, 11, true}, {"older", 50, 9, false}, {"high", 60, 20, false}, {"gang", 10, 30, false},
	} {
		if got := r.Holds("default", c.id, c.prio, c.idx); got != c.want {
			t.Errorf("%s (priority %d, index %d): holds %v, want %v", c.id, c.prio, c.idx, got, c.want)
		}
	}
}

// A reservation counts only on work that will leave: batch work of the
// gang's priority or lower (it ends) and preemptible lower work. Service
// work of the same priority may run for ever: a gang behind it gets no
// reservation, so the node's spare room stays usable.
func TestReservationCountsOnlyReleasingWork(t *testing.T) {
	for _, c := range []struct {
		typ     string
		prio    int
		reserve bool
	}{{api.JobTypeBatch, 50, true}, {api.JobTypeService, 50, false}, {api.JobTypeBatch, 60, false}} {
		st := newMemState()
		st.addNode(testNode("1", "dc1", 1000, 4096))
		old := testJob("old", c.typ, 1, 600, 64)
		old.Priority = c.prio
		no := false
		old.Preemptible = &no
		st.upsertJob(old)
		st.upsertAlloc(runningAlloc(old, 0, "node-1", 600, testNow))
		gang := cpuGangJob("gang", 50, 1, 0, 900)
		st.upsertJob(gang)
		res, err := Schedule(st, testEval(gang, 1), Options{Now: testNow})
		if err != nil || res.Blocked == nil {
			t.Fatalf("%s priority %d: %v, blocked %v", c.typ, c.prio, err, res.Blocked)
		}
		r := res.Blocked.Reservation
		if got := r != nil; got != c.reserve {
			t.Errorf("behind %s work of priority %d: reservation %+v, want one: %v", c.typ, c.prio, r, c.reserve)
		}
		if r != nil && (len(r.Nodes) != 1 || r.Nodes[0].NodeID != "node-1" || r.Nodes[0].CPU != 900 || r.Nodes[0].Members != 1 ||
			r.JobID != "gang" || r.Priority != 50 || len(r.Groups) != 1) {
			t.Errorf("reservation %+v: want 900 MHz on node-1 for gang's group", r)
		}
	}
}

// On a GPU node held for a GPU gang, CPU-only work may backfill the spare
// CPU and memory, never the GPUs.
func TestReservationBackfillByDimension(t *testing.T) {
	st := newMemState()
	st.addNode(dgxLike("g")) // 64,000 MHz, 8 GPUs
	old := gpuJob("old", 4)
	old.Priority = 50
	st.upsertJob(old)
	a := runningAlloc(old, 0, "node-g", 1000, testNow)
	a.AllocatedResources.Tasks["server"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu",
		Name: "A100-SXM4-80GB", DeviceIDs: []string{"g-GPU-0", "g-GPU-1", "g-GPU-2", "g-GPU-3"}}}
	st.upsertAlloc(a)
	gang := gpuJob("gang", 8)
	gang.Priority = 50
	gang.TaskGroups[0].Gang = &api.Gang{}
	st.upsertJob(gang)
	res, err := Schedule(st, testEval(gang, 1), Options{Now: testNow})
	if err != nil || res.Blocked == nil || res.Blocked.Reservation == nil {
		t.Fatalf("gang: %v, blocked %+v: want a reservation", err, res.Blocked)
	}
	r := res.Blocked.Reservation
	if len(r.Nodes) != 1 || len(r.Nodes[0].Devices) != 1 || r.Nodes[0].Devices[0].Count != 8 {
		t.Fatalf("reservation %+v: want 8 GPUs on node-g", r.Nodes[0])
	}
	st.upsertEval(res.Blocked)

	cpu := testJob("cpu", api.JobTypeBatch, 1, 2000, 1024)
	cpu.Priority, cpu.Datacenters = 40, []string{"dc1"}
	st.upsertJob(cpu)
	if res, err := Schedule(st, testEval(cpu, 2), Options{Now: testNow}); err != nil || len(res.Plan.NodeAllocation["node-g"]) != 1 {
		t.Fatalf("CPU-only job: %v, placed %v: want it on node-g's spare CPU", err, res.Plan.NodeAllocation)
	}
	small := gpuJob("small", 1)
	small.Priority = 40
	st.upsertJob(small)
	res, err = Schedule(st, testEval(small, 3), Options{Now: testNow})
	if err != nil || placedCount(res.Plan) != 0 || res.Eval.FailedTGAllocs["web"].DimensionExhausted[DimReserved] != 1 {
		t.Fatalf("1-GPU job: %v, placed %v, failed %+v: want refused for the reservation", err, res.Plan.NodeAllocation, res.Eval.FailedTGAllocs)
	}
}
