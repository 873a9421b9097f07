package fsm

import (
	"slices"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// nodeLossLog is a log where a plan places allocs on nodes the leader is
// about to write down from an older snapshot: a1 on n1 before n1's down
// write (whose evals, from the leader's read, cover no job), a3 on n1
// after it (a plan verified before n1 went down), and a2 on n2, whose down
// write carries an eval of a2's job.
func nodeLossLog(t *testing.T, hooks Hooks) (*FSM, *applier) {
	f := New(Config{Hooks: hooks})
	a := &applier{t: t, f: f}
	a.mustApply(JobRegisterType, JobRegisterRequest{Job: job("web")})
	a.mustApply(NodeRegisterType, NodeRegisterRequest{Node: node("n1")})
	a.mustApply(NodeRegisterType, NodeRegisterRequest{Node: node("n2")})
	place := func(id, nodeID string) {
		al := alloc(id, "web", nodeID)
		al.CreateTime = 7e9
		a.mustApply(ApplyPlanResultsType, ApplyPlanResultsRequest{Job: job("web"), AllocsPlaced: []*api.Allocation{al}})
	}
	place("a1", "n1")
	a.mustApply(NodeStatusUpdateType, NodeStatusUpdateRequest{NodeID: "n1", Status: api.NodeStatusDown, UpdatedAt: 9})
	place("a3", "n1")
	place("a2", "n2")
	covering := eval("e-n2", "web")
	covering.TriggeredBy, covering.NodeID = api.EvalTriggerNodeUpdate, "n2"
	a.mustApply(NodeStatusUpdateType, NodeStatusUpdateRequest{NodeID: "n2", Status: api.NodeStatusDown, UpdatedAt: 10,
		Evals: []*api.Evaluation{covering}})
	return f, a
}

// TestNodeDownLosesEveryLiveAlloc: whatever the leader read, every live
// alloc on a node is lost once the node is down (placed before its down
// write or committed after it), its job gets one node-update eval per
// write unless the write carries one, the hooks hear of both, and the
// evals' IDs are the same on every replay of the log.
func TestNodeDownLosesEveryLiveAlloc(t *testing.T) {
	hooks := &recHooks{}
	f, _ := nodeLossLog(t, hooks)
	st := f.State()
	for _, id := range []string{"a1", "a2", "a3"} {
		al, err := st.AllocByID(nil, id)
		if err != nil || al == nil {
			t.Fatalf("%s: %v %v", id, al, err)
		}
		if al.ClientStatus != api.AllocClientStatusLost || al.ClientDescription != state.AllocLostDescription {
			t.Errorf("%s on %s: client status %q (%q), want lost", id, al.NodeID, al.ClientStatus, al.ClientDescription)
		}
		if !slices.Contains(hooks.allocs, id) {
			t.Errorf("%s: not reported to the hooks (%v)", id, hooks.allocs)
		}
	}
	sum, err := st.JobSummaryByID(nil, "", "web")
	if err != nil || sum == nil {
		t.Fatalf("summary: %v %v", sum, err)
	}
	if g := sum.Summary["web"]; g.Lost != 3 || g.Starting != 0 || g.Running != 0 {
		t.Errorf("summary %+v, want 3 lost", g)
	}

	evals, err := st.EvalsByJob(nil, "", "web")
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string][]*api.Evaluation{}
	for _, e := range evals {
		if e.TriggeredBy != api.EvalTriggerNodeUpdate || e.Status != api.EvalStatusPending || e.Type != api.JobTypeService || e.Priority != 50 {
			t.Errorf("eval %+v", e)
		}
		byNode[e.NodeID] = append(byNode[e.NodeID], e)
		if !slices.Contains(hooks.evals, e.ID) {
			t.Errorf("eval %s not reported to the hooks", e.ID)
		}
	}
	// n1: one for a1 (its down write), one for a3 (the late plan); n2:
	// only the leader's.
	if len(byNode["n1"]) != 2 || len(byNode["n2"]) != 1 || byNode["n2"][0].ID != "e-n2" {
		t.Fatalf("evals by node: %v", byNode)
	}

	// A replay (a follower, a restart) creates the same evals.
	g, _ := nodeLossLog(t, nil)
	for _, e := range byNode["n1"] {
		if got, err := g.State().EvalByID(nil, e.ID); err != nil || got == nil {
			t.Errorf("eval %s missing after a replay: %v", e.ID, err)
		}
	}
}

// TestNodeDownLeavesTerminalAllocs: a node going down keeps what is over
// (a completed alloc, a stopped one) and makes no eval for it.
func TestNodeDownLeavesTerminalAllocs(t *testing.T) {
	hooks := &recHooks{}
	f := New(Config{Hooks: hooks})
	a := &applier{t: t, f: f}
	a.mustApply(JobRegisterType, JobRegisterRequest{Job: job("web")})
	a.mustApply(NodeRegisterType, NodeRegisterRequest{Node: node("n1")})
	done, stopped := alloc("done", "web", "n1"), alloc("stopped", "web", "n1")
	done.ClientStatus = api.AllocClientStatusComplete
	stopped.DesiredStatus = api.AllocDesiredStatusStop
	a.mustApply(AllocUpsertType, AllocUpsertRequest{Allocs: []*api.Allocation{done, stopped}})
	a.mustApply(NodeStatusUpdateType, NodeStatusUpdateRequest{NodeID: "n1", Status: api.NodeStatusDown, UpdatedAt: 9})
	for id, want := range map[string]string{"done": api.AllocClientStatusComplete, "stopped": api.AllocClientStatusPending} {
		if al, _ := f.State().AllocByID(nil, id); al == nil || al.ClientStatus != want {
			t.Errorf("%s: %+v, want client status %q", id, al, want)
		}
	}
	if evals, _ := f.State().EvalsByJob(nil, "", "web"); len(evals) != 0 || len(hooks.evals) != 0 {
		t.Errorf("evals %v (hooks %v), want none", evals, hooks.evals)
	}
}
