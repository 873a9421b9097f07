package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

func defragGPUNode(id string, gpus int) *api.Node {
	n := testNode(id, 64000, 262144)
	var inst []*api.NodeDevice
	for i := 0; i < gpus; i++ {
		inst = append(inst, &api.NodeDevice{ID: fmt.Sprintf("%s-gpu%d", id, i), Healthy: true})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: inst}}
	return n
}

func defragGPUJob(id string, gpus int) *api.Job {
	j := testJob(id, 1, 500, 512)
	j.Type = api.JobTypeBatch
	j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(gpus)}}
	return j
}

// TestDefragFreesNodeForPendingJob: two 4-GPU batch allocs share the only
// 8-GPU node; an 8-GPU job waits. The dry run plans both moves and
// commits nothing; the real run moves them to the 4-GPU nodes in one plan
// each, stopped with the reason "defragmentation", and the 8-GPU job then
// places on the freed node.
func TestDefragFreesNodeForPendingJob(t *testing.T) {
	s := newTestServer(t)
	aa, ba := defragScenario(t, s)

	dry, err := s.Operator().Defrag(context.Background(), true)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if len(dry.Moves) != 2 || !slices.Equal(dry.Unblocks, []string{"train.web"}) || !slices.Equal(dry.FreedNodes, []string{"n1"}) {
		t.Fatalf("dry run = %d moves, unblocks %v, freed %v; want 2 moves freeing n1 for train.web", len(dry.Moves), dry.Unblocks, dry.FreedNodes)
	}
	waitIdle(t, s)
	for _, id := range []string{aa.ID, ba.ID} {
		if cur, _ := s.State().AllocByID(nil, id); cur.TerminalStatus() || cur.NodeID != "n1" {
			t.Fatalf("dry run changed alloc %s: %s on %s", id, cur.DesiredStatus, cur.NodeID)
		}
	}

	res, err := s.Operator().Defrag(context.Background(), false)
	if err != nil {
		t.Fatalf("defrag: %v", err)
	}
	if len(res.Moves) != 2 || len(res.EvalIDs) != 2 {
		t.Fatalf("defrag = %d moves, %d evals; want 2 and 2", len(res.Moves), len(res.EvalIDs))
	}
	for _, id := range res.EvalIDs {
		waitEvalStatus(t, s, id, api.EvalStatusComplete)
	}
	for _, old := range []*api.Allocation{aa, ba} {
		cur, _ := s.State().AllocByID(nil, old.ID)
		if cur.DesiredStatus != api.AllocDesiredStatusStop || cur.DesiredDescription != api.DefragDescription {
			t.Errorf("old alloc %s: %s %q, want stop %q", old.ID, cur.DesiredStatus, cur.DesiredDescription, api.DefragDescription)
		}
		live := waitLive(t, s, old.JobID, 1)
		if live[0].NodeID == "n1" || live[0].PreviousAllocation != old.ID {
			t.Errorf("job %s: replacement on %s (previous %s), want off n1 replacing %s", old.JobID, live[0].NodeID, live[0].PreviousAllocation, old.ID)
		}
	}
	reportAllocs(t, s, "n1", api.AllocClientStatusComplete, aa, ba)
	got := waitLive(t, s, "train", 1)
	if got[0].NodeID != "n1" {
		t.Errorf("train placed on %s, want the freed n1", got[0].NodeID)
	}
}

// TestDefragMoveThatDoesNotFitKeepsAlloc: a defrag eval whose destination
// has no room leaves the alloc running: the stop is only committed with
// its placement. The job's blocked eval (its second alloc waits) stays:
// a defrag pass does not place the job's pending work.
func TestDefragMoveThatDoesNotFitKeepsAlloc(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, defragGPUNode("n2", 4))
	registerJob(t, s, defragGPUJob("full", 4))
	waitLive(t, s, "full", 1)
	registerNode(t, s, defragGPUNode("n1", 4))
	aj := defragGPUJob("a", 4)
	aj.TaskGroups[0].Count = 2
	registerJob(t, s, aj)
	waitIdle(t, s)
	aa := waitLive(t, s, "a", 1)[0]
	blocked := s.blocked.Blocked(api.DefaultNamespace, "a")
	if blocked == nil {
		t.Fatal("job a's second alloc is not blocked")
	}
	job, _ := s.State().JobByID(nil, api.DefaultNamespace, "a")
	e := s.operator.newJobEval(job, api.EvalTriggerDefrag)
	e.DefragMoves = map[string]string{aa.ID: "n2"}
	if _, err := s.operator.applyEvals(context.Background(), []*api.Evaluation{e}); err != nil {
		t.Fatalf("apply eval: %v", err)
	}
	done := waitEvalStatus(t, s, e.ID, api.EvalStatusComplete)
	if done.StatusDescription != "defragmentation: 0 of 1 allocs moved" {
		t.Errorf("eval description = %q", done.StatusDescription)
	}
	waitIdle(t, s)
	cur, _ := s.State().AllocByID(nil, aa.ID)
	if cur.TerminalStatus() || cur.NodeID != "n1" {
		t.Errorf("alloc %s: %s on %s, want still running on n1", aa.ID, cur.DesiredStatus, cur.NodeID)
	}
	var live []*api.Allocation
	waitState(t, s, "a's allocs", func(ws memdb.WatchSet) (bool, error) {
		var err error
		live, err = liveAllocs(s, ws, "a")
		return true, err
	})
	if len(live) != 1 {
		t.Errorf("job a has %d live allocs, want 1", len(live))
	}
	if got := s.blocked.Blocked(api.DefaultNamespace, "a"); got == nil || got.ID != blocked.ID {
		t.Errorf("job a's blocked eval = %v, want %s kept", got, blocked.ID)
	}
}

// defragScenario: two 4-GPU allocs (jobs a and b) on the 8-GPU node n1,
// two empty 4-GPU nodes, and an 8-GPU job train that cannot place.
func defragScenario(t *testing.T, s *Server) (aa, ba *api.Allocation) {
	t.Helper()
	registerNode(t, s, defragGPUNode("n1", 8))
	registerJob(t, s, defragGPUJob("a", 4))
	registerJob(t, s, defragGPUJob("b", 4))
	aa, ba = waitLive(t, s, "a", 1)[0], waitLive(t, s, "b", 1)[0]
	reportAllocs(t, s, "n1", api.AllocClientStatusRunning, aa, ba)
	registerNode(t, s, defragGPUNode("n2", 4))
	registerNode(t, s, defragGPUNode("n3", 4))
	registerJob(t, s, defragGPUJob("train", 8))
	waitIdle(t, s)
	if got, _ := liveAllocs(s, nil, "train"); len(got) != 0 {
		t.Fatalf("train placed before defragmentation: %d allocs", len(got))
	}
	return aa, ba
}

// TestDefragDuty: with defrag { enabled } the leader runs a round each
// interval (fake clock): nothing before the interval, the moves after.
func TestDefragDuty(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := newTestServer(t, withClock(clk), func(c *Config) { c.Defrag = DefragConfig{Enabled: true, Interval: time.Second} })
	aa, ba := defragScenario(t, s)
	for _, id := range []string{aa.ID, ba.ID} {
		if cur, _ := s.State().AllocByID(nil, id); cur.TerminalStatus() {
			t.Fatalf("alloc %s moved before the interval", id)
		}
	}
	clk.Advance(time.Second)
	for _, old := range []*api.Allocation{aa, ba} {
		waitState(t, s, "defragmentation of "+old.ID, func(ws memdb.WatchSet) (bool, error) {
			cur, err := s.State().AllocByID(ws, old.ID)
			return cur != nil && cur.DesiredDescription == api.DefragDescription, err
		})
	}
}

// TestDefragSkipsMovesTheSchedulerRefuses: job a may only run on n1 (a
// constraint the planner does not model); the scheduler refuses to move
// it, so no node can be freed and the round plans nothing rather than
// move b for nothing.
func TestDefragSkipsMovesTheSchedulerRefuses(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, defragGPUNode("n1", 8))
	a := defragGPUJob("a", 4)
	a.Constraints = []*api.Constraint{{LTarget: "${attr.unique.hostname}", Operand: "=", RTarget: "n1"}}
	registerJob(t, s, a)
	registerJob(t, s, defragGPUJob("b", 4))
	aa, ba := waitLive(t, s, "a", 1)[0], waitLive(t, s, "b", 1)[0]
	reportAllocs(t, s, "n1", api.AllocClientStatusRunning, aa, ba)
	registerNode(t, s, defragGPUNode("n2", 4))
	registerNode(t, s, defragGPUNode("n3", 4))
	registerJob(t, s, defragGPUJob("train", 8))
	waitIdle(t, s)
	plan, err := s.Operator().Defrag(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Moves) != 0 || len(plan.Unblocks) != 0 {
		t.Errorf("plan = %d moves, unblocks %v; want none", len(plan.Moves), plan.Unblocks)
	}
}

// TestDefragSkipsPendingThatStillWouldNotPlace: train may not run on n1
// (a constraint the planner does not model), so freeing n1 would not
// unblock it: after the scheduler's check the round plans nothing.
func TestDefragSkipsPendingThatStillWouldNotPlace(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, defragGPUNode("n1", 8))
	registerJob(t, s, defragGPUJob("a", 4))
	registerJob(t, s, defragGPUJob("b", 4))
	aa, ba := waitLive(t, s, "a", 1)[0], waitLive(t, s, "b", 1)[0]
	reportAllocs(t, s, "n1", api.AllocClientStatusRunning, aa, ba)
	registerNode(t, s, defragGPUNode("n2", 4))
	registerNode(t, s, defragGPUNode("n3", 4))
	train := defragGPUJob("train", 8)
	train.Constraints = []*api.Constraint{{LTarget: "${attr.unique.hostname}", Operand: "!=", RTarget: "n1"}}
	registerJob(t, s, train)
	waitIdle(t, s)
	plan, err := s.Operator().Defrag(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Moves) != 0 || len(plan.Unblocks) != 0 {
		t.Errorf("plan = %d moves, unblocks %v; want none", len(plan.Moves), plan.Unblocks)
	}
}
