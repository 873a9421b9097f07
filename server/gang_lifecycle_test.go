package server

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// gangCluster drives the real state store the way the leader does,
// without goroutines: a pass of the scheduler on a snapshot, the plan
// applier's verdict (evaluatePlan) committed as the FSM would, clients'
// status reports, and a leader change (the store saved to a Raft
// snapshot and restored into a new FSM).
type gangCluster struct {
	t   *testing.T
	f   *fsm.FSM
	idx uint64
	n   int // evals run
}

func newGangCluster(t *testing.T, nodes ...string) *gangCluster {
	c := &gangCluster{t: t, f: fsm.New(fsm.Config{})}
	for _, id := range nodes {
		n := testNode(id, 1000, 100000)
		n.Status, n.SchedulingEligibility = api.NodeStatusReady, api.NodeSchedulingEligible
		c.must(c.f.State().UpsertNode(c.next(), n))
	}
	return c
}

func (c *gangCluster) next() uint64 { c.idx++; return c.idx }

func (c *gangCluster) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *gangCluster) register(j *api.Job) {
	c.t.Helper()
	c.must(c.f.State().UpsertJob(c.next(), j))
}

// eval runs one pass for the job and commits what the plan applier
// accepts.
func (c *gangCluster) eval(ns, id string, opts scheduler.Options) {
	c.t.Helper()
	st := c.f.State()
	snap, err := st.Snapshot()
	c.must(err)
	job, err := snap.JobByID(nil, ns, id)
	c.must(err)
	c.n++
	e := &api.Evaluation{ID: fmt.Sprintf("eval-%d", c.n), Namespace: ns, JobID: id, Priority: job.Priority, Type: job.Type,
		TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending}
	opts.Now = time.Unix(0, 0).Add(time.Hour + time.Duration(c.n)*time.Second)
	res, err := scheduler.Schedule(snap.Scheduler(), e, opts)
	c.must(err)
	if res.Plan == nil || res.Plan.IsNoOp() {
		return
	}
	res.Plan.EvalID = e.ID
	_, req, err := evaluatePlan(snap, res.Plan)
	c.must(err)
	if !req.Empty() {
		c.must(st.UpsertPlanResults(c.next(), req))
	}
}

// report has the client of alloc id report status.
func (c *gangCluster) report(id, status string) {
	c.t.Helper()
	c.must(c.f.State().UpdateAllocsFromClient(c.next(), []*api.Allocation{{ID: id, ClientStatus: status}}))
}

// leaderChange saves the state to a Raft snapshot and restores it into a
// new FSM, which the cluster goes on with.
func (c *gangCluster) leaderChange() {
	c.t.Helper()
	snap, err := c.f.Snapshot()
	c.must(err)
	sink := &bufSink{} // snapshot.go's in-memory raft.SnapshotSink
	c.must(snap.Persist(sink))
	snap.Release()
	f := fsm.New(fsm.Config{})
	c.must(f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	c.f = f
}

// live returns the job's allocs that are not terminal, by name.
func (c *gangCluster) live(ns, id string) []*api.Allocation {
	c.t.Helper()
	all, err := c.f.State().AllocsByJob(nil, ns, id, true)
	c.must(err)
	var out []*api.Allocation
	for _, a := range all {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// The preempt -> replace case on the real store and plan applier:
// a two-member batch gang (no min) is evicted whole by a priority-90 job
// pinned to one of its nodes; then, in every order, each victim's client
// reports it finished (complete, as a killed task does) and the leader
// changes, with an eval of the gang before and after each step. With
// room for one member the gang holds nothing; with room for both it is
// placed whole, once, with ranks 0 and 1 and one leader address.
func TestPreemptedGangReplacedWholeOnStore(t *testing.T) {
	perms := [][]string{
		{"v0", "v1", "leader"}, {"v0", "leader", "v1"}, {"v1", "v0", "leader"},
		{"v1", "leader", "v0"}, {"leader", "v0", "v1"}, {"leader", "v1", "v0"},
	}
	opts := scheduler.Options{Preemption: &scheduler.PreemptionConfig{BatchSchedulerEnabled: true}}
	for _, nodes := range [][]string{{"a", "b"}, {"a", "b", "c"}} {
		for _, order := range perms {
			t.Run(fmt.Sprintf("%d-nodes/%v", len(nodes), order), func(t *testing.T) {
				c := newGangCluster(t, nodes...)
				g := testJob("torch", 2, 900, 1024)
				g.Namespace, g.Type, g.Priority = api.DefaultNamespace, api.JobTypeBatch, 50
				g.TaskGroups[0].Gang = &api.Gang{}
				c.register(g)
				c.eval(g.Namespace, g.ID, opts)
				members := c.live(g.Namespace, g.ID)
				if len(members) != 2 {
					t.Fatalf("%d members placed, want 2", len(members))
				}
				for _, a := range members {
					c.report(a.ID, api.AllocClientStatusRunning)
				}
				hi := testJob("hi", 1, 900, 1024)
				hi.Namespace, hi.Type, hi.Priority = api.DefaultNamespace, api.JobTypeBatch, 90
				hi.Constraints = []*api.Constraint{{LTarget: "${node.unique.id}", RTarget: members[0].NodeID, Operand: "="}}
				c.register(hi)
				c.eval(hi.Namespace, hi.ID, opts)
				if n := len(c.live(g.Namespace, g.ID)); n != 0 {
					t.Fatalf("after the preemption %d members run, want the whole gang evicted", n)
				}
				check := func(when string) {
					t.Helper()
					c.eval(g.Namespace, g.ID, opts)
					live := c.live(g.Namespace, g.ID)
					switch {
					case len(nodes) == 2 && len(live) != 0:
						t.Fatalf("%s: %d members placed with room for one, want none", when, len(live))
					case len(live) != 0 && len(live) != 2:
						t.Fatalf("%s: %d members placed, want 0 or 2", when, len(live))
					}
					ranks := map[int]bool{}
					for _, a := range live {
						if a.Gang == nil || a.Gang.Size != 2 || a.Gang.LeaderAddr != live[0].Gang.LeaderAddr || ranks[a.Gang.Rank] || a.Gang.Rank > 1 {
							t.Fatalf("%s: member %s has gang info %+v", when, a.Name, a.Gang)
						}
						ranks[a.Gang.Rank] = true
					}
				}
				check("before any report")
				for _, step := range order {
					switch step {
					case "v0":
						c.report(members[0].ID, api.AllocClientStatusComplete)
					case "v1":
						c.report(members[1].ID, api.AllocClientStatusComplete)
					case "leader":
						c.leaderChange()
					}
					check("after " + step)
				}
				if n := len(c.live(g.Namespace, g.ID)); len(nodes) == 3 && n != 2 {
					t.Fatalf("with room for both, %d members run at the end, want 2", n)
				}
			})
		}
	}
}

// A failed alloc given its follow-up eval on a node since gone down is
// only an annotation of the stored alloc: the applier accepts it (as
// scheduler.NodePlanFits does) instead of rejecting the node on every
// retry of the eval; a placement there is still rejected.
func TestEvaluatePlanTerminalOnDownNode(t *testing.T) {
	job := testJob("f", 0, 100, 100)
	job.Namespace = api.DefaultNamespace
	failed := squatAlloc(job, "a", 100)
	failed.ClientStatus = api.AllocClientStatusFailed
	c := newGangCluster(t, "a")
	c.must(c.f.State().UpsertAllocs(c.next(), []*api.Allocation{failed}))
	n, err := c.f.State().NodeByID(nil, "a")
	c.must(err)
	down := *n
	down.Status = api.NodeStatusDown
	c.must(c.f.State().UpsertNode(c.next(), &down))
	snap, err := c.f.State().Snapshot()
	c.must(err)
	note := failed.Copy()
	note.FollowupEvalID = "eval-later"
	plan := &api.Plan{EvalID: "e", Job: job}
	plan.AppendAlloc(note)
	res, req, err := evaluatePlan(snap, plan)
	c.must(err)
	if len(res.RejectedNodes) != 0 || len(req.AllocsPlaced) != 1 {
		t.Fatalf("rejected %v, placed %d: want the annotation accepted", res.RejectedNodes, len(req.AllocsPlaced))
	}
	plan.AppendAlloc(squatAlloc(job, "a", 100))
	if res, _, err = evaluatePlan(snap, plan); err != nil || len(res.RejectedNodes) != 1 {
		t.Fatalf("a placement on a down node: rejected %v (%v), want the node rejected", res.RejectedNodes, err)
	}
}

// A plan made before a preemption committed must not start its victims
// again: an in-place update (a gang member given its gang's new info, a
// job's in-place change) of an alloc evicted since is rejected for its
// node, whether the eviction is in the snapshot or in the plan still
// committing (the overlay), so the eval plans again on fresh state.
func TestEvaluatePlanRejectsRevivingStoppedAlloc(t *testing.T) {
	job := testJob("g", 0, 100, 100)
	job.Namespace = api.DefaultNamespace
	mA, mB := squatAlloc(job, "a", 100), squatAlloc(job, "b", 100)
	c := newGangCluster(t, "a", "b")
	c.must(c.f.State().UpsertAllocs(c.next(), []*api.Allocation{mA, mB}))
	before, err := c.f.State().Snapshot()
	c.must(err)
	refresh := mB.Copy()
	refresh.Gang = &api.AllocGang{ID: "web", Size: 2, Rank: 1}
	stale := &api.Plan{EvalID: "stale", Job: job}
	stale.AppendAlloc(refresh)
	if res, _, err := evaluatePlan(before, stale); err != nil || len(res.RejectedNodes) != 0 {
		t.Fatalf("before the preemption: rejected %v (%v), want the update accepted", res.RejectedNodes, err)
	}
	evict := &state.ApplyPlanResultsRequest{EvalID: "hi"}
	for _, a := range []*api.Allocation{mA, mB} {
		evict.AllocsPreempted = append(evict.AllocsPreempted, &api.Allocation{ID: a.ID, PreemptedByAllocation: "hi-0"})
	}
	// Still committing: the eviction is only in the overlay.
	if res, _, err := evaluatePlanOverlay(before, stale, newPlanCommit(evict)); err != nil || len(res.RejectedNodes) != 1 {
		t.Fatalf("eviction in flight: rejected %v (%v), want node b", res.RejectedNodes, err)
	}
	c.must(c.f.State().UpsertPlanResults(c.next(), evict))
	after, err := c.f.State().Snapshot()
	c.must(err)
	res, req, err := evaluatePlan(after, stale)
	c.must(err)
	if len(res.RejectedNodes) != 1 || len(req.AllocsPlaced) != 0 {
		t.Fatalf("eviction committed: rejected %v, placed %d; want node b rejected", res.RejectedNodes, len(req.AllocsPlaced))
	}
}
