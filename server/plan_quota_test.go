package server

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// quotaStore is gangStore's cluster (nodes of 1,000 MHz) with queues.
func quotaStore(t *testing.T, nodes []string, queues []*api.Queue, allocs ...*api.Allocation) *state.StateStore {
	t.Helper()
	st := state.NewStateStore()
	for i, id := range nodes {
		n := testNode(id, 1000, 100000)
		n.Status, n.SchedulingEligibility = api.NodeStatusReady, api.NodeSchedulingEligible
		if err := st.UpsertNode(uint64(i+1), n); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.UpsertQueues(100, queues); err != nil {
		t.Fatal(err)
	}
	if len(allocs) > 0 {
		if err := st.UpsertAllocs(101, allocs); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func queueJob(id, queue string) *api.Job {
	return &api.Job{ID: id, Namespace: api.DefaultNamespace, Priority: 50, Queue: queue}
}

func mustSnap(t *testing.T, st *state.StateStore) *state.Snapshot {
	t.Helper()
	snap, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// The applier re-checks queue limits: a plan raising a queue (or its
// parent) above its limit loses nodes until it does not; a stop in the
// same plan makes room; an in-flight plan's usage counts once; a gang
// over the limit drops whole; an all-at-once plan drops entirely.
func TestEvaluatePlanQueueLimits(t *testing.T) {
	queues := []*api.Queue{{Name: "t", Limit: &api.QueueResources{CPU: 1000}}, {Name: "t/a", Parent: "t"}}
	ja, other := queueJob("a", "t/a"), queueJob("o", "")
	standing := squatAlloc(ja, "n0", 600)
	st := quotaStore(t, []string{"n0", "n1", "n2"}, queues, standing, squatAlloc(other, "n1", 900))
	snap := mustSnap(t, st)

	plan := &api.Plan{EvalID: "e1", Job: ja}
	plan.AppendAlloc(squatAlloc(ja, "n1", 100)) // n1 is full anyway (900 + 100 fits exactly)
	plan.AppendAlloc(squatAlloc(ja, "n2", 400))
	res, req, err := evaluatePlan(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 1 || res.RejectedNodes[0] != "n2" || len(req.AllocsPlaced) != 1 {
		t.Fatalf("rejected %v placed %d, want n2 rejected (600+100+400 MHz over t's 1000)", res.RejectedNodes, len(req.AllocsPlaced))
	}

	// Stopping the standing alloc in the same plan makes room.
	plan2 := &api.Plan{EvalID: "e2", Job: ja}
	plan2.AppendStoppedAlloc(standing, "replaced", "")
	plan2.AppendAlloc(squatAlloc(ja, "n2", 900))
	if res, _, _ := evaluatePlan(snap, plan2); len(res.RejectedNodes) != 0 {
		t.Fatalf("a plan freeing its own room was rejected: %v", res.RejectedNodes)
	}

	// An in-flight plan's placement counts, once.
	inflight := squatAlloc(ja, "n2", 300)
	overlay := newPlanCommit(&state.ApplyPlanResultsRequest{Job: ja, AllocsPlaced: []*api.Allocation{stripJob(inflight)}})
	plan3 := &api.Plan{EvalID: "e3", Job: ja}
	plan3.AppendAlloc(squatAlloc(ja, "n0", 200))
	if res, _, _ := evaluatePlanOverlay(snap, plan3, overlay); len(res.RejectedNodes) != 1 {
		t.Fatalf("the in-flight plan's usage was not counted: %+v", res)
	}
	if err := st.UpsertPlanResults(200, &state.ApplyPlanResultsRequest{Job: ja, AllocsPlaced: []*api.Allocation{stripJob(inflight)}}); err != nil {
		t.Fatal(err)
	}
	plan4 := &api.Plan{EvalID: "e4", Job: ja}
	plan4.AppendAlloc(squatAlloc(ja, "n0", 100))
	if res, _, _ := evaluatePlanOverlay(mustSnap(t, st), plan4, overlay); len(res.RejectedNodes) != 0 {
		t.Fatalf("the committed in-flight plan was counted twice: %+v", res)
	}

	// A gang over the limit drops whole; all-at-once drops everything.
	gang := &api.Plan{EvalID: "e5", Job: ja}
	g := &api.PlanGang{JobID: "a", ID: "g"}
	for _, n := range []string{"n0", "n2"} {
		a := squatAlloc(ja, n, 100) // 900 held: 1100 is over
		gang.AppendAlloc(a)
		g.AllocIDs = append(g.AllocIDs, a.ID)
	}
	gang.Gangs = []*api.PlanGang{g}
	if _, req, _ := evaluatePlan(mustSnap(t, st), gang); len(req.AllocsPlaced) != 0 {
		t.Fatalf("a gang over the limit committed %d members", len(req.AllocsPlaced))
	}
	gang.Gangs, gang.AllAtOnce = nil, true
	if _, req, _ := evaluatePlan(mustSnap(t, st), gang); len(req.AllocsPlaced) != 0 {
		t.Fatalf("an all-at-once plan over the limit committed %d allocs", len(req.AllocsPlaced))
	}
	// Other queues are not limited by t.
	free := &api.Plan{EvalID: "e6", Job: other}
	free.AppendAlloc(squatAlloc(other, "n2", 600))
	if res, _, _ := evaluatePlan(mustSnap(t, st), free); len(res.RejectedNodes) != 0 {
		t.Fatalf("a default-queue plan was rejected: %v", res.RejectedNodes)
	}
}

func stripJob(a *api.Allocation) *api.Allocation {
	c := *a
	c.Job = nil
	return &c
}

// Property: random queue trees and limits, random plans of jobs in random
// queues (placements, stops, preemptions, gangs), verified as the
// applier does, pipelined (each against the state before the previous
// commit plus that plan as the overlay) and committed in order: no
// commit ever leaves a queue subtree above its limit.
func TestPlanQueueLimitsNeverExceeded(t *testing.T) {
	rejected, placed := 0, 0
	for seed := range 60 {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		var nodes []string
		for i := range 2 + r.IntN(4) {
			nodes = append(nodes, fmt.Sprint("n", i))
		}
		names := []string{"a", "a/x", "a/y", "b", "b/z"}
		var queues []*api.Queue
		for _, n := range names {
			q := &api.Queue{Name: n, Parent: api.ParentOf(n)}
			if r.IntN(3) > 0 {
				q.Limit = &api.QueueResources{CPU: int64(300 + r.IntN(10)*200), MemoryMB: int64([]int{0, 512, 1024}[r.IntN(3)])}
			}
			queues = append(queues, q)
		}
		st := quotaStore(t, nodes, queues)
		jobs := map[string]*api.Job{}
		for _, n := range append(names, "") {
			jobs[n] = queueJob("j-"+strings.ReplaceAll(n, "/", "-"), n)
		}
		idx := uint64(1000)
		var prev *state.ApplyPlanResultsRequest
		var prevSnap *state.Snapshot
		for step := range 30 {
			job := jobs[append(names, "")[r.IntN(len(names)+1)]]
			snap := mustSnap(t, st)
			if prevSnap != nil && r.IntN(2) == 0 {
				snap = prevSnap // pipelined: the previous plan is still in flight
			}
			plan := &api.Plan{EvalID: fmt.Sprint("e", step), Job: job}
			live, _ := snap.Allocs(nil, "", "")
			for _, a := range live {
				if !a.TerminalStatus() && r.IntN(4) == 0 {
					if r.IntN(2) == 0 {
						plan.AppendStoppedAlloc(a, "stop", "")
					} else {
						ev := a.Copy()
						ev.DesiredStatus = api.AllocDesiredStatusEvict
						if plan.NodePreemptions == nil {
							plan.NodePreemptions = map[string][]*api.Allocation{}
						}
						plan.NodePreemptions[a.NodeID] = append(plan.NodePreemptions[a.NodeID], ev)
					}
				}
			}
			var gang *api.PlanGang
			if r.IntN(3) == 0 {
				gang = &api.PlanGang{JobID: job.ID, ID: "g"}
			}
			for range 1 + r.IntN(4) {
				a := squatAlloc(job, nodes[r.IntN(len(nodes))], int64(100+r.IntN(4)*100))
				plan.AppendAlloc(a)
				if gang != nil {
					gang.AllocIDs = append(gang.AllocIDs, a.ID)
				}
			}
			if gang != nil {
				plan.Gangs = []*api.PlanGang{gang}
			}
			plan.AllAtOnce = r.IntN(6) == 0
			var overlay *planCommit
			if snap == prevSnap && prev != nil {
				overlay = newPlanCommit(prev)
			}
			res, req, err := evaluatePlanOverlay(snap, plan, overlay)
			if err != nil {
				t.Fatal(err)
			}
			rejected += len(res.RejectedNodes)
			placed += len(req.AllocsPlaced)
			prevSnap = mustSnap(t, st) // the state this plan is verified against next time, before it commits
			idx++
			if err := st.UpsertPlanResults(idx, req); err != nil {
				t.Fatal(err)
			}
			prev = req
			checkLimits(t, st, queues, fmt.Sprintf("seed %d step %d", seed, step))
		}
	}
	if rejected < 50 || placed < 500 {
		t.Fatalf("rejected %d nodes, placed %d: the workload does not exercise the limits", rejected, placed)
	}
	t.Logf("rejected %d nodes, placed %d allocs", rejected, placed)
}

func checkLimits(t *testing.T, st *state.StateStore, queues []*api.Queue, at string) {
	t.Helper()
	usage, err := st.QueueUsage(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]api.QueueResources{}
	for name, u := range usage {
		m[name] = *u
	}
	for _, q := range queues {
		if over := subtreeOf(m, q.Name).Exceeds(q.Limit); len(over) > 0 {
			t.Fatalf("%s: queue %s above its limit: %v", at, q.Name, over)
		}
	}
}

// BenchmarkEvaluatePlanQuota is BenchmarkEvaluatePlan's plan (1,000
// allocs over 1,000 nodes) for a job whose queue's parent has a limit
// (held under), with 1,000 standing allocs of the queue: the limit
// re-check's cost on top of the fit re-check.
func BenchmarkEvaluatePlanQuota(b *testing.B) {
	var nodes []string
	for i := range 1000 {
		nodes = append(nodes, fmt.Sprintf("node-%04d", i))
	}
	t := &testing.T{}
	job := queueJob("bench", "t/x")
	var standing []*api.Allocation
	for _, n := range nodes {
		standing = append(standing, squatAlloc(job, n, 10))
	}
	st := quotaStore(t, nodes, []*api.Queue{{Name: "t", Limit: &api.QueueResources{CPU: 1 << 40}}, {Name: "t/x"}}, standing...)
	plan := &api.Plan{EvalID: "e", Job: job}
	for _, n := range nodes {
		plan.AppendAlloc(squatAlloc(job, n, 10))
	}
	snap := mustSnap(t, st)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res, _, err := evaluatePlan(snap, plan)
		if err != nil || len(res.RejectedNodes) > 0 {
			b.Fatal(err, res.RejectedNodes)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "placements/s")
}

// BenchmarkEvaluatePlanNoQuota is BenchmarkEvaluatePlanQuota without the limit.
func BenchmarkEvaluatePlanNoQuota(b *testing.B) {
	var nodes []string
	for i := range 1000 {
		nodes = append(nodes, fmt.Sprintf("node-%04d", i))
	}
	t := &testing.T{}
	job := queueJob("bench", "t/x")
	var standing []*api.Allocation
	for _, n := range nodes {
		standing = append(standing, squatAlloc(job, n, 10))
	}
	st := quotaStore(t, nodes, []*api.Queue{{Name: "t"}, {Name: "t/x"}}, standing...)
	plan := &api.Plan{EvalID: "e", Job: job}
	for _, n := range nodes {
		plan.AppendAlloc(squatAlloc(job, n, 10))
	}
	snap := mustSnap(t, st)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if res, _, err := evaluatePlan(snap, plan); err != nil || len(res.RejectedNodes) > 0 {
			b.Fatal(err, res.RejectedNodes)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "placements/s")
}

// subtreeOf sums m over the queue root and its descendants.
func subtreeOf(m map[string]api.QueueResources, root string) api.QueueResources {
	var out api.QueueResources
	for name, u := range m {
		if name == root || strings.HasPrefix(name, root+"/") {
			out.Add(u, 1)
		}
	}
	return out
}
