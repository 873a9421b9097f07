package server

import (
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

func TestPreemptionEvalsOnePerJob(t *testing.T) {
	st := state.NewStateStore()
	low := prioJob("low", 20, 100)
	low.Namespace = api.DefaultNamespace
	if err := st.UpsertJob(1, low); err != nil {
		t.Fatal(err)
	}
	snap, _ := st.Snapshot()
	gone := &api.Job{ID: "gone", Namespace: "ops", Type: api.JobTypeBatch, Priority: 30}
	preempted := map[string][]*api.Allocation{
		"n1": {{ID: "a1", JobID: "low", Namespace: api.DefaultNamespace}, {ID: "a2", JobID: "low", Namespace: api.DefaultNamespace}},
		"n2": {{ID: "a3", JobID: "low", Namespace: api.DefaultNamespace}, {ID: "a4", JobID: "gone", Namespace: "ops", Job: gone},
			{ID: "a5", JobID: "nojob", Namespace: api.DefaultNamespace}},
	}
	got := preemptionEvals(snap, preempted, 42)
	if len(got) != 2 {
		t.Fatalf("got %d evals, want 2 (one per job with a job to evaluate): %+v", len(got), got)
	}
	want := []struct {
		ns, job, typ string
		prio         int
	}{{api.DefaultNamespace, "low", api.JobTypeService, 20}, {"ops", "gone", api.JobTypeBatch, 30}}
	for i, w := range want {
		e := got[i]
		if e.Namespace != w.ns || e.JobID != w.job || e.Type != w.typ || e.Priority != w.prio ||
			e.TriggeredBy != api.EvalTriggerPreemption || e.Status != api.EvalStatusPending || e.ID == "" || e.CreateTime != 42 {
			t.Errorf("eval %d: %+v, want %+v pending, triggered by preemption", i, e, w)
		}
	}
	if got := preemptionEvals(snap, nil, 42); len(got) != 0 {
		t.Errorf("no preemptions: %d evals", len(got))
	}
}

// A placement's victims are committed only with the placement: when the
// preempting alloc's node is rejected, its victims stay running, the
// member of the victim gang on the other (accepted) node included, so no
// gang is left partly evicted.
func TestOrphanPreemptionsDropped(t *testing.T) {
	st := state.NewStateStore()
	low := prioJob("low", 20, 100)
	low.Namespace = api.DefaultNamespace
	low.TaskGroups[0].Count = 2
	low.TaskGroups[0].Gang = &api.Gang{}
	high := prioJob("high", 80, 900)
	high.Namespace = api.DefaultNamespace
	for i, n := range []*api.Node{testNode("a", 1000, 4096), testNode("b", 1000, 4096)} {
		n.Status, n.SchedulingEligibility = api.NodeStatusReady, api.NodeSchedulingEligible
		if err := st.UpsertNode(uint64(1+i), n); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.UpsertJob(3, low); err != nil {
		t.Fatal(err)
	}
	if err := st.UpsertJob(4, high); err != nil {
		t.Fatal(err)
	}
	va, vb := squatAlloc(low, "a", 100), squatAlloc(low, "b", 100)
	squat := squatAlloc(high, "a", 950) // node a has no room left for the preemptor
	if err := st.UpsertAllocs(5, []*api.Allocation{va, vb, squat}); err != nil {
		t.Fatal(err)
	}
	snap, _ := st.Snapshot()
	placed := squatAlloc(high, "a", 900)
	evict := func(v *api.Allocation) *api.Allocation {
		c := v.Copy()
		c.DesiredStatus, c.PreemptedByAllocation = api.AllocDesiredStatusEvict, placed.ID
		return c
	}
	plan := &api.Plan{Job: high, NodeAllocation: map[string][]*api.Allocation{"a": {placed}},
		NodePreemptions: map[string][]*api.Allocation{"a": {evict(va)}, "b": {evict(vb)}}}
	res, req, err := evaluatePlan(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 1 || res.RejectedNodes[0] != "a" {
		t.Fatalf("rejected %v, want [a]", res.RejectedNodes)
	}
	if len(req.AllocsPreempted) != 0 || len(res.NodePreemptions) != 0 {
		t.Errorf("preempted %d allocs (%v) for a placement that was rejected", len(req.AllocsPreempted), res.NodePreemptions)
	}
	// A placement on b that counted on the room of the gang member evicted
	// there: once that preemption is dropped, b no longer fits and is
	// rejected too.
	onB := squatAlloc(high, "b", 950)
	plan2 := *plan
	plan2.NodeAllocation = map[string][]*api.Allocation{"a": {placed}, "b": {onB}}
	res, req, err = evaluatePlan(snap, &plan2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 2 || len(req.AllocsPlaced) != 0 || len(req.AllocsPreempted) != 0 {
		t.Errorf("rejected %v, placed %d, preempted %d: want both nodes rejected, nothing placed or preempted",
			res.RejectedNodes, len(req.AllocsPlaced), len(req.AllocsPreempted))
	}
	if len(plan.NodePreemptions["b"]) != 1 {
		t.Error("the submitted plan was modified")
	}
	// With room on a, the placement and both victims commit together.
	st2 := state.NewStateStore()
	for i, n := range []*api.Node{testNode("a", 1000, 4096), testNode("b", 1000, 4096)} {
		n.Status, n.SchedulingEligibility = api.NodeStatusReady, api.NodeSchedulingEligible
		_ = st2.UpsertNode(uint64(1+i), n)
	}
	_ = st2.UpsertJob(3, low)
	_ = st2.UpsertJob(4, high)
	_ = st2.UpsertAllocs(5, []*api.Allocation{va, vb})
	snap2, _ := st2.Snapshot()
	res, req, err = evaluatePlan(snap2, plan)
	if err != nil || len(res.RejectedNodes) != 0 || len(req.AllocsPreempted) != 2 || len(req.AllocsPlaced) != 1 {
		t.Errorf("fitting plan: rejected %v, %d preempted, %d placed, %v; want 0, 2, 1", res.RejectedNodes,
			len(req.AllocsPreempted), len(req.AllocsPlaced), err)
	}
}
