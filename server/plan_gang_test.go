package server

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/server/state"
)

// gangStore is a state store with ready nodes of 1,000 MHz each and the
// given allocs committed.
func gangStore(t *testing.T, nodes []string, allocs ...*api.Allocation) *state.Snapshot {
	t.Helper()
	st := state.NewStateStore()
	idx := uint64(1)
	for _, id := range nodes {
		n := testNode(id, 1000, 100000)
		n.Status, n.SchedulingEligibility = api.NodeStatusReady, api.NodeSchedulingEligible
		if err := st.UpsertNode(idx, n); err != nil {
			t.Fatal(err)
		}
		idx++
	}
	if len(allocs) > 0 {
		if err := st.UpsertAllocs(idx, allocs); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func placedIDs(req *state.ApplyPlanResultsRequest) map[string]bool {
	out := map[string]bool{}
	for _, a := range req.AllocsPlaced {
		out[a.ID] = true
	}
	return out
}

// A rejected node drops every member of its gang from every node; other
// placements stay.
func TestEvaluatePlanDropsWholeGang(t *testing.T) {
	job := testJob("g", 0, 100, 100)
	job.Namespace = api.DefaultNamespace
	squat := squatAlloc(job, "b", 600)
	snap := gangStore(t, []string{"a", "b", "c"}, squat)
	plan := &api.Plan{EvalID: "e", Job: job}
	m1, m2, other := squatAlloc(job, "a", 600), squatAlloc(job, "b", 600), squatAlloc(job, "c", 600)
	for _, a := range []*api.Allocation{m1, m2, other} {
		plan.AppendAlloc(a)
	}
	plan.Gangs = []*api.PlanGang{{JobID: "g", ID: "web", AllocIDs: []string{m1.ID, m2.ID}}}
	// m1 replaces an updated alloc (its stop is taken back) and a lost
	// one (that stop stays).
	old, lost := squatAlloc(job, "a", 100), squatAlloc(job, "c", 100)
	plan.AppendStoppedAlloc(old, "updated", "")
	plan.AppendStoppedAlloc(lost, "lost", api.AllocClientStatusLost)
	plan.NodeUpdate["a"][0].NextAllocation = m1.ID
	plan.NodeUpdate["c"][0].NextAllocation = m1.ID
	res, req, err := evaluatePlan(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.AllocsStopped) != 1 || req.AllocsStopped[0].ID != lost.ID {
		t.Fatalf("stopped %v, want only the lost alloc", req.AllocsStopped)
	}
	got := placedIDs(req)
	if got[m1.ID] || got[m2.ID] || !got[other.ID] || len(got) != 1 {
		t.Fatalf("placed %v: want only the non-gang alloc", got)
	}
	if len(res.RejectedNodes) != 1 || res.RejectedNodes[0] != "b" || res.RefreshIndex == 0 {
		t.Fatalf("rejected %v refresh %d", res.RejectedNodes, res.RefreshIndex)
	}
	if len(plan.NodeAllocation["a"]) != 1 {
		t.Fatal("the submitted plan was modified")
	}
}

// Dropping a gang drops the preemptions made for it, and a node that
// then no longer fits its other placements is rejected too.
func TestEvaluatePlanGangDropCascades(t *testing.T) {
	job := testJob("g", 0, 100, 100)
	job.Namespace = api.DefaultNamespace
	low := &api.Job{ID: "low", Namespace: api.DefaultNamespace, Priority: 10}
	victim, squat := squatAlloc(low, "a", 600), squatAlloc(low, "b", 900)
	snap := gangStore(t, []string{"a", "b"}, victim, squat)
	plan := &api.Plan{EvalID: "e", Job: job}
	m1, m2, p := squatAlloc(job, "a", 400), squatAlloc(job, "b", 400), squatAlloc(job, "a", 500)
	for _, a := range []*api.Allocation{m1, m2, p} {
		plan.AppendAlloc(a)
	}
	ev := victim.Copy()
	ev.DesiredStatus, ev.PreemptedByAllocation = api.AllocDesiredStatusEvict, m1.ID
	plan.NodePreemptions = map[string][]*api.Allocation{"a": {ev}}
	plan.Gangs = []*api.PlanGang{{JobID: "g", ID: "web", AllocIDs: []string{m1.ID, m2.ID}}}
	res, req, err := evaluatePlan(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.AllocsPlaced) != 0 || len(req.AllocsPreempted) != 0 {
		t.Fatalf("placed %d preempted %d; want nothing (p only fitted with the gang's preemption)", len(req.AllocsPlaced), len(req.AllocsPreempted))
	}
	if len(res.RejectedNodes) != 2 {
		t.Fatalf("rejected %v, want a and b", res.RejectedNodes)
	}
}

// Property: random clusters, standing allocs and plans of several gangs
// (with preemptions) never commit part of a gang, never a preemption for
// a member not placed, and never overcommit a node.
func TestEvaluatePlanNeverPartialGang(t *testing.T) {
	var whole, dropped int
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		job := testJob("g", 0, 100, 100)
		job.Namespace = api.DefaultNamespace
		low := &api.Job{ID: "low", Namespace: api.DefaultNamespace, Priority: 10}
		var nodes []string
		for i := range 2 + r.IntN(5) {
			nodes = append(nodes, fmt.Sprintf("n%d", i))
		}
		var standing []*api.Allocation
		for _, n := range nodes {
			for range r.IntN(3) {
				standing = append(standing, squatAlloc(low, n, int64(100+r.IntN(5)*100)))
			}
		}
		snap := gangStore(t, nodes, standing...)
		plan := &api.Plan{EvalID: "e", Job: job}
		member := map[string]int{}
		for g := range 1 + r.IntN(3) {
			pg := &api.PlanGang{JobID: "g", ID: fmt.Sprint("gang", g)}
			for range 1 + r.IntN(4) {
				a := squatAlloc(job, nodes[r.IntN(len(nodes))], int64(100+r.IntN(4)*100))
				plan.AppendAlloc(a)
				pg.AllocIDs = append(pg.AllocIDs, a.ID)
				member[a.ID] = g
				if r.IntN(3) == 0 {
					for _, s := range standing {
						if s.NodeID == a.NodeID && r.IntN(2) == 0 {
							ev := s.Copy()
							ev.DesiredStatus, ev.PreemptedByAllocation = api.AllocDesiredStatusEvict, a.ID
							if plan.NodePreemptions == nil {
								plan.NodePreemptions = map[string][]*api.Allocation{}
							}
							plan.NodePreemptions[s.NodeID] = append(plan.NodePreemptions[s.NodeID], ev)
							break
						}
					}
				}
			}
			plan.Gangs = append(plan.Gangs, pg)
		}
		for range r.IntN(3) {
			plan.AppendAlloc(squatAlloc(job, nodes[r.IntN(len(nodes))], int64(100+r.IntN(4)*100)))
		}
		_, req, err := evaluatePlan(snap, plan)
		if err != nil {
			t.Fatal(err)
		}
		placed := placedIDs(req)
		for _, g := range plan.Gangs {
			n := 0
			for _, id := range g.AllocIDs {
				if placed[id] {
					n++
				}
			}
			if n != 0 && n != len(g.AllocIDs) {
				t.Fatalf("seed %d: gang %s committed %d of %d members", seed, g.ID, n, len(g.AllocIDs))
			}
			if n == 0 {
				dropped++
			} else {
				whole++
			}
		}
		removed := map[string]bool{}
		for _, a := range req.AllocsPreempted {
			if _, in := member[a.PreemptedByAllocation]; in && !placed[a.PreemptedByAllocation] {
				t.Fatalf("seed %d: preemption of %s for a member not placed", seed, a.ID)
			}
			removed[a.ID] = true
		}
		for _, n := range nodes {
			var on []*api.Allocation
			for _, a := range standing {
				if a.NodeID == n && !removed[a.ID] {
					on = append(on, a)
				}
			}
			for _, a := range req.AllocsPlaced {
				if a.NodeID == n {
					on = append(on, a)
				}
			}
			node, _ := snap.NodeByID(nil, n)
			if ok, why := nodeFits(node, on); !ok {
				t.Fatalf("seed %d: node %s overcommitted: %s", seed, n, why)
			}
		}
	}
	if whole == 0 || dropped == 0 {
		t.Fatalf("gangs committed %d, dropped %d: the workload does not exercise both", whole, dropped)
	}
	t.Logf("gangs committed whole %d, dropped %d", whole, dropped)
}

// End to end through the worker and the applier: a gang that does not
// fit holds nothing and says why; when a node joins, its blocked eval
// places it whole, with a leader address.
func TestGangPendingThenPlacedWhole(t *testing.T) {
	s := newTestServer(t)
	for _, n := range []string{"a", "b", "c"} {
		registerNode(t, s, testNode(n, 1000, 4096))
	}
	job := testJob("gang", 4, 600, 256)
	job.TaskGroups[0].Gang = &api.Gang{}
	resp := registerJob(t, s, job)
	ev := waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	if m := ev.FailedTGAllocs["web"]; m == nil || !strings.Contains(m.GangFailure, "gang web needs 4 members, 3 fit") {
		t.Fatalf("eval failure %+v, want the gang reason", ev.FailedTGAllocs)
	}
	if ev.BlockedEval == "" {
		t.Fatal("no blocked eval for the pending gang")
	}
	if live, _ := liveAllocs(s, nil, "gang"); len(live) != 0 {
		t.Fatalf("%d allocs of a pending gang exist", len(live))
	}
	registerNode(t, s, testNode("d", 1000, 4096))
	live := waitLive(t, s, "gang", 4)
	for _, a := range live {
		if a.Gang == nil || a.Gang.Size != 4 || a.Gang.LeaderAddr == "" {
			t.Fatalf("alloc %s gang %+v", a.Name, a.Gang)
		}
	}
}

// A gang that stays unplaced past its timeout fails: its follow-up eval
// says so, no blocked eval is left and the job is dead.
func TestGangTimeoutEndToEnd(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("a", 1000, 4096))
	job := testJob("late", 2, 600, 256)
	job.TaskGroups[0].Gang = &api.Gang{Timeout: 200 * time.Millisecond}
	registerJob(t, s, job)
	var timedOut *api.Evaluation
	waitState(t, s, "the gang's timeout eval", func(ws memdb.WatchSet) (bool, error) {
		evals, err := s.State().EvalsByJob(ws, api.DefaultNamespace, "late")
		for _, e := range evals {
			if e.Status == api.EvalStatusComplete && strings.Contains(e.StatusDescription, "gang web timed out after 200ms") {
				timedOut = e
			}
		}
		return timedOut != nil, err
	})
	if m := timedOut.FailedTGAllocs["web"]; m == nil || !strings.Contains(m.GangFailure, "timed out") {
		t.Fatalf("failure %+v", timedOut.FailedTGAllocs)
	}
	defer func() {
		if !t.Failed() {
			return
		}
		j, _ := s.State().JobByID(nil, api.DefaultNamespace, "late")
		evals, _ := s.State().EvalsByJob(nil, api.DefaultNamespace, "late")
		for _, e := range evals {
			t.Logf("eval %s %s %s %q wait %v blocked %q", e.ID, e.TriggeredBy, e.Status, e.StatusDescription, e.WaitUntil, e.BlockedEval)
		}
		t.Logf("job %s tracked %v", j.Status, s.blocked.Blocked(api.DefaultNamespace, "late"))
	}()
	testproc.Eventually(t, 15*time.Second, "job dead, no blocked eval", func() bool {
		j, _ := s.State().JobByID(nil, api.DefaultNamespace, "late")
		return j != nil && j.Status == api.JobStatusDead && s.blocked.Blocked(api.DefaultNamespace, "late") == nil
	})
}
