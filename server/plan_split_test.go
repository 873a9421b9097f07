package server

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/drover/drover/api"
)

// TestSplitPlan: over random plans, every stop, placement and preemption
// lands in exactly one part, under its node, with all of that node's
// others; parts are at most max allocs unless they hold a single node;
// each part carries the plan's eval, token, job and snapshot index; plans
// that must commit whole come back as they are.
func TestSplitPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const limit = 50
	for round := range 200 {
		p := &api.Plan{EvalID: "e", EvalToken: "tok", Priority: 70, Job: &api.Job{ID: "j"}, SnapshotIndex: 9}
		want := map[string]string{} // alloc ID -> "kind/node"
		nodes := 1 + rng.IntN(60)
		for n := range nodes {
			node := fmt.Sprintf("n%02d", n)
			for _, k := range []struct {
				kind string
				m    *map[string][]*api.Allocation
			}{{"stop", &p.NodeUpdate}, {"place", &p.NodeAllocation}, {"preempt", &p.NodePreemptions}} {
				for i := range rng.IntN(8) * rng.IntN(3) {
					if *k.m == nil {
						*k.m = map[string][]*api.Allocation{}
					}
					id := fmt.Sprintf("%d-%s-%s-%d", round, k.kind, node, i)
					(*k.m)[node] = append((*k.m)[node], &api.Allocation{ID: id, NodeID: node})
					want[id] = k.kind + "/" + node
				}
			}
		}
		parts := splitPlan(p, limit)
		if len(want) <= limit && (len(parts) != 1 || parts[0] != p) {
			t.Fatalf("round %d: a plan of %d allocs was split in %d", round, len(want), len(parts))
		}
		got := map[string]string{}
		partOf := map[string]int{}
		for i, part := range parts {
			if part.EvalID != "e" || part.EvalToken != "tok" || part.Priority != 70 || part.Job != p.Job || part.SnapshotIndex != 9 {
				t.Fatalf("round %d part %d: %+v lost the plan's eval, token, priority, job or index", round, i, part)
			}
			size, nodesIn := 0, map[string]bool{}
			for kind, m := range map[string]map[string][]*api.Allocation{"stop": part.NodeUpdate, "place": part.NodeAllocation, "preempt": part.NodePreemptions} {
				for node, as := range m {
					if j, ok := partOf[node]; ok && j != i {
						t.Fatalf("round %d: node %s in parts %d and %d", round, node, j, i)
					}
					partOf[node] = i
					for _, a := range as {
						if _, dup := got[a.ID]; dup {
							t.Fatalf("round %d: %s twice", round, a.ID)
						}
						got[a.ID] = kind + "/" + node
					}
					size += len(as)
					nodesIn[node] = true
				}
			}
			if len(parts) > 1 && size > limit && len(nodesIn) > 1 {
				t.Fatalf("round %d part %d: %d allocs of %d nodes (max %d)", round, i, size, len(nodesIn), limit)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d allocs in the parts, %d in the plan", round, len(got), len(want))
		}
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("round %d: %s is %q in the parts, %q in the plan", round, id, got[id], w)
			}
		}
	}
	big := map[string][]*api.Allocation{}
	for i := range 3 * limit {
		n := fmt.Sprintf("n%d", i)
		big[n] = []*api.Allocation{{ID: n, NodeID: n}}
	}
	for name, p := range map[string]*api.Plan{
		"all at once":        {AllAtOnce: true, NodeAllocation: big},
		"gang":               {Gangs: []*api.PlanGang{{}}, NodeAllocation: big},
		"deployment":         {Deployment: &api.Deployment{ID: "d"}, NodeAllocation: big},
		"deployment updates": {DeploymentUpdates: []*api.DeploymentStatusUpdate{{DeploymentID: "d"}}, NodeAllocation: big},
	} {
		if parts := splitPlan(p, limit); len(parts) != 1 || parts[0] != p {
			t.Errorf("%s: split in %d", name, len(parts))
		}
	}
}

// TestLargeJobPlacedInSplitPlans: a job of 2.5 times maxPlanAllocs is
// placed whole, through several Raft entries (its allocs carry several
// create indexes), and its eval completes.
func TestLargeJobPlacedInSplitPlans(t *testing.T) {
	s := newTestServer(t)
	for i := range 40 {
		registerNode(t, s, testNode(fmt.Sprintf("n%02d", i), 1000, 4096)) // 100 allocs each
	}
	count := maxPlanAllocs * 5 / 2
	resp := registerJob(t, s, testJob("big", count, 10, 10))
	waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	allocs := waitLive(t, s, "big", count)
	entries := map[uint64]int{}
	for _, a := range allocs {
		entries[a.CreateIndex]++
	}
	if len(entries) < 3 {
		t.Errorf("%d allocs committed in %d entries %v, want at least 3", count, len(entries), entries)
	}
	for idx, n := range entries {
		if n > maxPlanAllocs {
			t.Errorf("entry %d holds %d allocs, more than %d", idx, n, maxPlanAllocs)
		}
	}
}
