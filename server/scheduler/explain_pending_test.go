package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// pendingCounts tallies what the why-pending property saw.
type pendingCounts struct {
	groups, reasons, preempt, blocked, ends int
}

// checkPending asserts, for every failed group of a pass: at least one
// reason, each with a kind and a message; every counterfactual names
// another job with a live alloc on the node it names, a preemption one a
// job of lower priority; and a preemption the scheduler could have made
// (nothing blocked it) is only offered for a gang, whose members must
// fit together.
func (w *propWorld) checkPending(job *api.Job, res *Result) {
	t, seed := w.t, w.seed
	for g, m := range res.Eval.FailedTGAllocs {
		w.pending.groups++
		if len(m.Reasons) == 0 {
			t.Fatalf("seed %d: %s group %s failed without a reason: %s", seed, job.ID, g, ExplainFailure(g, m))
		}
		w.pending.reasons += len(m.Reasons)
		for _, r := range m.Reasons {
			if r.Kind == "" || r.Message == "" {
				t.Fatalf("seed %d: %s group %s: empty reason %+v", seed, job.ID, g, r)
			}
		}
		for _, c := range m.Counterfactuals {
			if c.JobID == job.ID || c.Node == "" || c.Message == "" {
				t.Fatalf("seed %d: %s group %s: bad counterfactual %+v", seed, job.ID, g, c)
			}
			live := false
			for _, a := range w.st.byNode["node-"+c.Node] {
				live = live || (a.JobID == c.JobID && !a.TerminalStatus())
			}
			if !live {
				t.Fatalf("seed %d: %s group %s: counterfactual names %s, not live on %s", seed, job.ID, g, c.JobID, c.Node)
			}
			switch c.Kind {
			case api.CounterPreempt:
				w.pending.preempt++
				if c.Priority >= job.Priority {
					t.Fatalf("seed %d: %s (priority %d) would preempt %s of priority %d", seed, job.ID, job.Priority, c.JobID, c.Priority)
				}
				if c.Blocked != "" {
					w.pending.blocked++
				} else if gang, _ := job.GangOf(job.LookupTaskGroup(g)); gang == nil && !job.AllAtOnce {
					t.Fatalf("seed %d: %s group %s: unblocked preemption %q was not made", seed, job.ID, g, c.Message)
				}
			case api.CounterJobEnds:
				w.pending.ends++
			default:
				t.Fatalf("seed %d: %s group %s: counterfactual kind %q", seed, job.ID, g, c.Kind)
			}
		}
	}
}

// Property: over seeded random clusters and workloads (the preemption
// property's worlds), every failed group carries at least one reason and
// its counterfactuals are sound (checkPending); the workloads produce
// both kinds of counterfactual and blocked preemptions.
func TestPendingReasonsProperty(t *testing.T) {
	seeds := 80
	if testing.Short() {
		seeds = 20
	}
	var sum pendingCounts
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		w := newPropWorld(t, seed)
		w.run()
		p := w.pending
		sum.groups += p.groups
		sum.reasons += p.reasons
		sum.preempt += p.preempt
		sum.blocked += p.blocked
		sum.ends += p.ends
	}
	if sum.groups == 0 || sum.preempt == 0 || sum.blocked == 0 || sum.ends == 0 {
		t.Fatalf("%+v: the workloads do not exercise every property", sum)
	}
	t.Logf("%d seeds: %d failed groups, %d reasons, %d preemption counterfactuals (%d blocked), %d job-ends",
		seeds, sum.groups, sum.reasons, sum.preempt, sum.blocked, sum.ends)
}

func TestQuotaReasons(t *testing.T) {
	m := &api.AllocMetric{NodesEvaluated: 0, QuotaExhausted: []string{
		"queue team-a/train: gpu 16 of 16 used, 1 more asked", "queue team-a is at its limit of 16 GPUs", "team-b: gpu 8/8", "cpu quota",
		"queue team-c: gpu limit 4, 8 asked by one allocation" + neverFits}}
	rs := pendingReasons(m)
	if len(rs) != 5 {
		t.Fatalf("want 5 quota reasons (no no-nodes reason with a quota hit), got %+v", rs)
	}
	want := []api.PendingReason{
		{Kind: api.PendingQuota, Queue: "team-a/train", Message: "queue team-a/train is at its limit: gpu 16 of 16 used, 1 more asked"},
		{Kind: api.PendingQuota, Queue: "team-a", Message: "queue team-a is at its limit of 16 GPUs"},
		{Kind: api.PendingQuota, Queue: "team-b", Message: "queue team-b is at its limit: gpu 8/8"},
		{Kind: api.PendingQuota, Message: "cpu quota"},
		{Kind: api.PendingQuota, Queue: "team-c", Message: "queue team-c can never run it: gpu limit 4, 8 asked by one allocation (raise the limit or ask less)"},
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("reason %d = %+v, want %+v", i, rs[i], want[i])
		}
	}
}

// Every metric gets a reason, even one whose counters say nothing.
func TestPendingReasonsNeverEmpty(t *testing.T) {
	for _, m := range []*api.AllocMetric{{}, {NodesEvaluated: 3}, {NodesEvaluated: 2, NodesAvailable: map[string]int{"dc1": 2}}} {
		rs := pendingReasons(m)
		if len(rs) == 0 || !strings.Contains(rs[0].Message, "no") {
			t.Errorf("%+v: reasons %+v", m, rs)
		}
	}
}

// A group at a queue limit names only work of that queue (or below it)
// in its counterfactuals: other queues' work frees no quota.
func TestPendingQuotaCounterfactuals(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("a", "dc1", 8000, 8192))
	st.upsertQueue(&api.Queue{Name: "team-a", Limit: &api.QueueResources{CPU: 3000}})
	st.upsertQueue(&api.Queue{Name: "team-a/train", Parent: "team-a"})
	st.upsertQueue(&api.Queue{Name: "team-b"})
	place := func(id, queue, typ string, cpu, prio int) *Result {
		job := testJob(id, typ, 1, cpu, 256)
		job.Queue, job.Priority, job.Datacenters = queue, prio, []string{"dc1"}
		st.upsertJob(job)
		res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
		if err != nil {
			t.Fatalf("schedule %s: %v", id, err)
		}
		st.apply(res.Plan)
		return res
	}
	for _, j := range []struct{ id, queue, typ string }{{"other", "team-b", "batch"}, {"svc", "team-a", "service"}, {"mine", "team-a/train", "batch"}} {
		if res := place(j.id, j.queue, j.typ, 1400, 20); len(res.Eval.FailedTGAllocs) > 0 {
			t.Fatalf("place %s: %v", j.id, res.Eval.FailedTGAllocs)
		}
	}
	// team-a holds 2800 of its 3000 MHz; the node has 3800 free.
	res := place("new", "team-a", "batch", 1500, 25)
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil || len(m.Reasons) == 0 || m.Reasons[0].Kind != api.PendingQuota || m.Reasons[0].Queue != "team-a" {
		t.Fatalf("want the group failed on team-a's limit first, got %+v", m)
	}
	if len(m.Counterfactuals) != 2 {
		t.Fatalf("counterfactuals %+v, want a preemption and an end", m.Counterfactuals)
	}
	pre, end := m.Counterfactuals[0], m.Counterfactuals[1]
	// Either team-a alloc frees enough quota; batch mine is the one to end.
	if pre.Kind != api.CounterPreempt || (pre.JobID != "mine" && pre.JobID != "svc") || !strings.Contains(pre.Message, "queue team-a") ||
		!strings.Contains(pre.Blocked, "only 5 priority below") {
		t.Errorf("preemption %+v, want a team-a job blocked by the priority gap", pre)
	}
	if end.Kind != api.CounterJobEnds || end.JobID != "mine" || !strings.Contains(end.Message, "queue team-a/train") {
		t.Errorf("end %+v, want batch job mine of team-a/train", end)
	}
	t.Logf("%s", strings.Join(metricMessages(m), "\n"))
}

func metricMessages(m *api.AllocMetric) []string {
	var out []string
	for _, r := range m.Reasons {
		out = append(out, "why: "+r.Message)
	}
	for _, c := range m.Counterfactuals {
		out = append(out, c.Kind+": "+c.Message)
	}
	return out
}

// A reclaim across queues that min_runtime blocks is a counterfactual
// without a priority-gap blocker (reclaims go by fair share, not priority).
func TestPendingReclaimCounterfactual(t *testing.T) {
	st := newMemState()
	st.addNode(nvswitchNode("n0"))
	queues := []*api.Queue{{Name: "a"}, {Name: "b"}}
	for i := 0; i < 4; i++ {
		j := prioGPUJob(fmt.Sprintf("a%d", i), "a", 2, 50)
		j.MinRuntime = time.Hour
		scheduleFair(t, st, j, i, memFairShare(st, queues, nil, nil))
	}
	fs := memFairShare(st, queues, map[string]*api.QueueResources{"b": {GPUs: 2}}, nil)
	res := scheduleFair(t, st, prioGPUJob("b0", "b", 2, 50), 9, fs)
	var m *api.AllocMetric
	for _, fm := range res.Eval.FailedTGAllocs {
		m = fm
	}
	if m == nil || len(res.Plan.NodePreemptions) > 0 {
		t.Fatalf("want b0 pending (min_runtime protects a's work), got failed %v, preemptions %d", res.Eval.FailedTGAllocs, len(res.Plan.NodePreemptions))
	}
	if len(m.Counterfactuals) == 0 || m.Counterfactuals[0].Kind != api.CounterPreempt {
		t.Fatalf("counterfactuals %+v, want a blocked reclaim first", m.Counterfactuals)
	}
	c := m.Counterfactuals[0]
	if !strings.Contains(c.Blocked, "min_runtime 1h0m0s") || strings.Contains(c.Blocked, "priority below") || !strings.HasPrefix(c.JobID, "a") {
		t.Errorf("reclaim counterfactual %+v, want one of a's jobs blocked by min_runtime only", c)
	}
	t.Logf("%s", strings.Join(metricMessages(m), "\n"))
}
