package scheduler

import (
	"fmt"
	"testing"
)

// pendingCluster is n 4000-MHz nodes, each three-quarters full with an
// alloc of one of n/100 batch jobs of priority 45, and a job of priority
// 50 asking 2000 MHz: it fits nowhere, preemption is blocked by the
// priority gap, and any filler job's end would make room.
func pendingCluster(b *testing.B, n int) (*memState, *pass) {
	st := newMemState()
	for i := range n {
		st.addNode(testNode(fmt.Sprintf("n%05d", i), "dc1", 4000, 16384))
	}
	for j := range n / 100 {
		fill := testJob(fmt.Sprintf("fill%03d", j), "batch", 100, 3000, 1024)
		fill.Priority = 45
		st.upsertJob(fill)
		res, err := Schedule(st, testEval(fill, j), Options{Now: testNow})
		if err != nil || len(res.Eval.FailedTGAllocs) > 0 {
			b.Fatalf("fill %d: %v %v", j, err, res.Eval.FailedTGAllocs)
		}
		st.apply(res.Plan)
	}
	job := testJob("pending", "batch", 1, 2000, 1024)
	st.upsertJob(job)
	ev := testEval(job, 0)
	s := newPass(st, ev, Options{Now: testNow}, job)
	if err := s.loadNodes(); err != nil {
		b.Fatal(err)
	}
	allocs, _ := st.AllocsByJob(job.Namespace, job.ID)
	s.scheduleGeneric(allocs)
	if len(s.out.failed) != 1 {
		b.Fatalf("want the pending group failed, got %v", s.out.failed)
	}
	return st, s
}

// BenchmarkExplainPending measures why-pending on 10,000 full nodes: the
// reasons and counterfactuals of one failed group alone (explain-ns/op),
// and the whole Schedule of the pending eval it is part of (whose own
// failure walk, explain, visits every node; the counterfactual searches
// stop after maxPreemptNodes nodes with other jobs' allocs).
func BenchmarkExplainPending(b *testing.B) {
	const n = 10000
	st, s := pendingCluster(b, n)
	m := s.out.failed["web"]
	b.Run("explain", func(b *testing.B) {
		for b.Loop() {
			s.explainPending()
		}
		if len(m.Reasons) == 0 || len(m.Counterfactuals) != 2 {
			b.Fatalf("reasons %+v counterfactuals %+v", m.Reasons, m.Counterfactuals)
		}
	})
	b.Run("schedule", func(b *testing.B) {
		job, _ := st.JobByID("default", "pending")
		for b.Loop() {
			res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
			if err != nil || len(res.Eval.FailedTGAllocs["web"].Counterfactuals) != 2 {
				b.Fatalf("schedule: %v", err)
			}
		}
	})
}
