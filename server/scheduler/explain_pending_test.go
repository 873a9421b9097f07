package scheduler

import (
	"strings"
	"testing"

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
		"queue team-a/train: gpu 16 of 16 used, 1 more asked", "queue team-a is at its limit of 16 GPUs", "team-b: gpu 8/8", "cpu quota"}}
	rs := pendingReasons(m)
	if len(rs) != 4 {
		t.Fatalf("want 4 quota reasons (no no-nodes reason with a quota hit), got %+v", rs)
	}
	want := []api.PendingReason{
		{Kind: api.PendingQuota, Queue: "team-a/train", Message: "queue team-a/train is at its limit: gpu 16 of 16 used, 1 more asked"},
		{Kind: api.PendingQuota, Queue: "team-a", Message: "queue team-a is at its limit of 16 GPUs"},
		{Kind: api.PendingQuota, Queue: "team-b", Message: "queue team-b is at its limit: gpu 8/8"},
		{Kind: api.PendingQuota, Message: "cpu quota"},
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
	st.addNode(testNode("a", "dc1", 4000, 8192))
	for _, j := range []struct {
		id, queue string
		typ       string
	}{{"other", "team-b", "batch"}, {"mine", "team-a/train", "service"}} {
		job := testJob(j.id, j.typ, 1, 1800, 256)
		job.Queue, job.Priority = j.queue, 20
		job.Datacenters = []string{"dc1"}
		st.upsertJob(job)
		res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
		if err != nil || len(res.Eval.FailedTGAllocs) > 0 {
			t.Fatalf("place %s: %v %v", j.id, err, res.Eval.FailedTGAllocs)
		}
		st.apply(res.Plan)
	}
	job := testJob("new", "batch", 1, 2000, 256)
	job.Queue, job.Priority, job.Datacenters = "team-a", 25, []string{"dc1"}
	st.upsertJob(job)
	s := newPass(st, testEval(job, 2), Options{Now: testNow}, job)
	if err := s.loadNodes(); err != nil {
		t.Fatal(err)
	}
	allocs, _ := st.AllocsByJob(job.Namespace, job.ID)
	s.scheduleGeneric(allocs)
	m := s.failed["web"]
	if m == nil {
		t.Fatal("want the group failed: the node is full")
	}
	// Without a quota reason the batch job of team-b is named first.
	s.explainPending()
	if len(m.Counterfactuals) != 2 || m.Counterfactuals[1].JobID != "other" {
		t.Fatalf("without quota: counterfactuals %+v, want the batch job other to end", m.Counterfactuals)
	}
	m.QuotaExhausted = []string{"queue team-a: cpu 1800 of 2000 MHz used, 2000 more asked"}
	s.explainPending()
	if len(m.Counterfactuals) != 2 {
		t.Fatalf("at the limit: counterfactuals %+v, want a preemption and an end", m.Counterfactuals)
	}
	for _, c := range m.Counterfactuals {
		if c.JobID != "mine" || !strings.Contains(c.Message, "queue team-a/train") {
			t.Errorf("at team-a's limit: %+v, want job mine of team-a/train", c)
		}
	}
	if m.Reasons[0].Kind != api.PendingQuota || m.Reasons[0].Queue != "team-a" {
		t.Errorf("reasons %+v, want the quota first", m.Reasons)
	}
}
