package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
)

// memFairShare computes the queues' fair shares from a memState as the
// server does from its state: capacity from the ready nodes, allocation
// from the non-terminal allocs, demand = allocation + pending asks.
func memFairShare(st *memState, queues []*api.Queue, pending map[string]*api.QueueResources, hist *fairshare.History) *fairshare.Shares {
	in := fairshare.Input{Queues: queues, Demand: map[string]*api.QueueResources{}, Allocated: map[string]*api.QueueResources{},
		History: hist}
	for _, n := range st.nodes {
		in.Capacity.Add(fairshare.NodeOffers(n), 1)
	}
	for _, a := range st.allocs {
		if a.TerminalStatus() {
			continue
		}
		q := api.JobQueue(a.Job)
		addTo(in.Allocated, q, a.QueueUsage())
		addTo(in.Demand, q, a.QueueUsage())
	}
	for q, r := range pending {
		addTo(in.Demand, q, *r)
	}
	return fairshare.Compute(fairshare.Config{}, in)
}

// addTo adds r to m[q] (created when missing).
func addTo(m map[string]*api.QueueResources, q string, r api.QueueResources) {
	if m[q] == nil {
		m[q] = &api.QueueResources{}
	}
	m[q].Add(r, 1)
}

// prioGPUJob is a one-alloc batch job of queue asking gpus, at prio.
func prioGPUJob(id, queue string, gpus uint64, prio int) *api.Job {
	j := queueGPUJob(id, queue, 1, int(gpus))
	j.Datacenters, j.Priority = []string{"dc1"}, prio
	return j
}

// scheduleFair schedules job with the fair shares and applies the plan.
func scheduleFair(t *testing.T, st *memState, job *api.Job, n int, fs *fairshare.Shares) *Result {
	t.Helper()
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, n), Options{Now: testNow, FairShare: fs})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	return res
}

func heldGPUs(st *memState) map[string]int {
	out := map[string]int{}
	for _, a := range st.allocs {
		if !a.TerminalStatus() {
			out[api.JobQueue(a.Job)] += int(a.QueueUsage().GPUs)
		}
	}
	return out
}

func TestReclaimRegardlessOfPriority(t *testing.T) {
	st := newMemState()
	for i := 0; i < 2; i++ {
		st.addNode(nvswitchNode(fmt.Sprintf("n%d", i)))
	}
	queues := []*api.Queue{{Name: "a"}, {Name: "b"}}
	// a borrows the whole cluster with high-priority jobs while b is idle.
	for i := 0; i < 4; i++ {
		scheduleFair(t, st, prioGPUJob(fmt.Sprintf("a%d", i), "a", 4, 90), i, memFairShare(st, queues, nil, nil))
	}
	if got := heldGPUs(st)["a"]; got != 16 {
		t.Fatalf("a borrows: %d GPUs, want 16", got)
	}
	// b (low priority) reclaims its share of 8: two of a's allocs go.
	for i := 0; i < 3; i++ {
		fs := memFairShare(st, queues, map[string]*api.QueueResources{"b": {GPUs: 4}}, nil)
		res := scheduleFair(t, st, prioGPUJob(fmt.Sprintf("b%d", i), "b", 4, 10), 10+i, fs)
		placed := len(res.Plan.NodeAllocation) > 0
		if want := i < 2; placed != want {
			t.Fatalf("b%d placed = %v, want %v (held %v)", i, placed, want, heldGPUs(st))
		}
	}
	if got := heldGPUs(st); got["a"] != 8 || got["b"] != 8 {
		t.Fatalf("after reclaim: %v, want a 8, b 8", got)
	}
	// a, now at its share, cannot take capacity back from b, even by
	// priority; inside its own queue priority still preempts.
	fs := memFairShare(st, queues, map[string]*api.QueueResources{"a": {GPUs: 4}, "b": {GPUs: 4}}, nil)
	res := scheduleFair(t, st, prioGPUJob("a9", "a", 4, 100), 20, fs)
	for _, list := range res.Plan.NodePreemptions {
		for _, v := range list {
			if api.JobQueue(v.Job) != "a" {
				t.Fatalf("a at its share preempted %s of queue %s", v.JobID, api.JobQueue(v.Job))
			}
		}
	}
	if got := heldGPUs(st); got["a"] != 8 || got["b"] != 8 || len(res.Plan.NodePreemptions) == 0 {
		t.Fatalf("a9 (priority 100) in a: held %v, preemptions %d; want a 8 b 8 with one of a's own preempted",
			got, len(res.Plan.NodePreemptions))
	}
}

func TestReclaimKeepsVictimAtShareAndMinRuntime(t *testing.T) {
	st := newMemState()
	st.addNode(nvswitchNode("n0"))
	queues := []*api.Queue{{Name: "a"}, {Name: "b"}}
	// a holds 8 GPUs as one 8-GPU alloc; b wants 2: evicting the 8 would
	// drop a (share 6) below its share, so b waits.
	scheduleFair(t, st, prioGPUJob("a0", "a", 8, 50), 0, memFairShare(st, queues, nil, nil))
	fs := memFairShare(st, queues, map[string]*api.QueueResources{"b": {GPUs: 2}}, nil)
	res := scheduleFair(t, st, prioGPUJob("b0", "b", 2, 50), 1, fs)
	if len(res.Plan.NodePreemptions) > 0 {
		t.Fatalf("victim queue a dropped below its share: %v", heldGPUs(st))
	}

	// Fresh work is protected by min_runtime.
	st = newMemState()
	st.addNode(nvswitchNode("n0"))
	for i := 0; i < 4; i++ {
		j := prioGPUJob(fmt.Sprintf("a%d", i), "a", 2, 50)
		j.MinRuntime = time.Hour
		scheduleFair(t, st, j, i, memFairShare(st, queues, nil, nil))
	}
	fs = memFairShare(st, queues, map[string]*api.QueueResources{"b": {GPUs: 2}}, nil)
	res = scheduleFair(t, st, prioGPUJob("b0", "b", 2, 50), 9, fs)
	if len(res.Plan.NodePreemptions) > 0 {
		t.Fatalf("min_runtime did not protect fresh work: %v", heldGPUs(st))
	}
}

// TestPropertyReclaimConverges drives random workloads through Schedule
// with fair shares: queues of random weights with unbounded demand start
// from a cluster held by whichever joined first, jobs never end, and
// rounds repeat. No queue may ever reclaim from a queue that reclaimed
// from it (no capacity moves back and forth), no preemption may cross
// queues the wrong way (victim's queue at or below its share, or the
// preemptor's above), and the rounds must come to rest (a round with no
// reclaim).
func TestPropertyReclaimConverges(t *testing.T) {
	total := 0
	for seed := uint64(0); seed < 6; seed++ {
		r := rand.New(rand.NewPCG(seed, 17))
		n := 2 + r.IntN(3)
		var queues []*api.Queue
		for i := 0; i < n; i++ {
			queues = append(queues, &api.Queue{Name: fmt.Sprintf("q%d", i), Weight: 1 + r.IntN(4)})
		}
		s := newFairSim(t, seed, 8+r.IntN(9), queues)
		s.forever = true
		moved := map[[2]string]bool{}
		s.onReclaim = func(victim, by string) {
			if victim == by {
				return // priority preemption inside a queue
			}
			if moved[[2]string{by, victim}] {
				t.Fatalf("seed %d: %s reclaims from %s, which reclaimed from it", seed, by, victim)
			}
			moved[[2]string{victim, by}] = true
			tl := s.shares.Tally()
			if !tl.Above(victim) || !tl.Below(by) {
				t.Fatalf("seed %d: %s reclaimed from %s: victim above %v, preemptor below %v", seed, by, victim, tl.Above(victim), tl.Below(by))
			}
			total++
		}
		s.active["q0"] = true
		s.step() // q0 takes the whole cluster
		for _, q := range queues {
			s.active[q.Name] = true
		}
		rest := false
		for round := 0; round < 40 && !rest; round++ {
			rest = s.step() == 0
		}
		if !rest {
			t.Fatalf("seed %d: reclaims did not come to rest in 40 rounds", seed)
		}
	}
	if total < 20 {
		t.Fatalf("%d reclaims: the workload does not exercise reclaim", total)
	}
	t.Logf("%d reclaims", total)
}

// Gangs go whole in a reclaim too: a gang is evicted with all its members
// or not at all, so a queue whose only work is a gang keeps it when
// evicting it would drop the queue below its share; a lone alloc of the
// queue is taken instead when that suffices.
func TestReclaimGangsWhole(t *testing.T) {
	queues := []*api.Queue{{Name: "a"}, {Name: "b"}}
	// setup: three 8-GPU nodes filled by a: a gang of members x 8 GPUs and,
	// with lone, one more 8-GPU alloc; then b asks 8 (shares a 16, b 8).
	setup := func(members int, lone bool) (*memState, *Result) {
		st := newMemState()
		for i := 0; i < 3; i++ {
			st.addNode(nvswitchNode(fmt.Sprintf("n%d", i)))
		}
		g := gangJob("gang", members, 8, 0)
		g.Queue, g.Datacenters = "a", []string{"dc1"}
		scheduleFair(t, st, g, 0, memFairShare(st, queues, nil, nil))
		if lone {
			scheduleFair(t, st, prioGPUJob("lone", "a", 8, 50), 1, memFairShare(st, queues, nil, nil))
		}
		if got := heldGPUs(st)["a"]; got != 24 {
			t.Fatalf("a holds %d GPUs, want 24", got)
		}
		fs := memFairShare(st, queues, map[string]*api.QueueResources{"b": {GPUs: 8}}, nil)
		return st, scheduleFair(t, st, prioGPUJob("b0", "b", 8, 50), 2, fs)
	}
	// The lone alloc goes, the gang stays whole.
	_, res := setup(2, true)
	var gone []string
	for _, l := range res.Plan.NodePreemptions {
		for _, v := range l {
			gone = append(gone, v.JobID)
		}
	}
	if fmt.Sprint(gone) != "[lone]" {
		t.Fatalf("preempted %v, want [lone]", gone)
	}
	// Only a gang of 3: one member alone would break it, all of them
	// would drop a to 0, so b waits.
	st, res := setup(3, false)
	if n := len(res.Plan.NodePreemptions); n != 0 || heldGPUs(st)["a"] != 24 {
		t.Fatalf("gang broken or evicted: %d nodes with preemptions, a holds %d", n, heldGPUs(st)["a"])
	}
}
