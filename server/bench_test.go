package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover/drover/api"
)

// BenchmarkPlanApply measures the plan applier: verify and commit (through
// in-memory Raft) one 1,000-alloc plan spread over 1,000 nodes.
func BenchmarkPlanApply(b *testing.B) {
	const nodes, allocs = 1000, 1000
	s, err := New(&Config{DevMode: true, NumSchedulers: 1, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	waitLeader(b, s)
	ctx := context.Background()
	for i := range nodes {
		if _, err := s.Nodes().RegisterNode(ctx, testNode(fmt.Sprintf("node-%04d", i), 64000, 256000), api.NodeIntro{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: testJob("bench", 0, 100, 64)}); err != nil {
		b.Fatal(err)
	}
	job, _ := s.State().JobByID(nil, api.DefaultNamespace, "bench")
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		// An eval of a type no worker takes, so the benchmark holds its token.
		ev := &api.Evaluation{ID: newID(), Namespace: api.DefaultNamespace, JobID: fmt.Sprintf("bench-%d", i),
			Type: "_bench", Priority: 50, Status: api.EvalStatusPending}
		s.broker.Enqueue(ev)
		e, tok, err := s.broker.Dequeue(ctx, []string{"_bench"}, 0)
		if err != nil {
			b.Fatal(err)
		}
		plan := &api.Plan{EvalID: e.ID, EvalToken: tok, Priority: 50, Job: job}
		for k := range allocs {
			a := squatAlloc(job, fmt.Sprintf("node-%04d", k%nodes), 10)
			a.Name = api.AllocName(job.ID, "web", i*allocs+k)
			plan.AppendAlloc(a)
		}
		b.StartTimer()
		p, err := s.planQueue.Enqueue(plan)
		if err != nil {
			b.Fatal(err)
		}
		res, err := p.Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.RejectedNodes) > 0 {
			b.Fatalf("rejected %v", res.RejectedNodes)
		}
		b.StopTimer()
		_ = s.broker.Ack(e.ID, tok)
		b.StartTimer()
	}
	b.ReportMetric(float64(allocs*b.N)/b.Elapsed().Seconds(), "placements/s")
}

// BenchmarkEvaluatePlan measures the applier's fit re-check alone (no
// Raft): 1,000 allocs over 1,000 nodes.
func BenchmarkEvaluatePlan(b *testing.B) {
	s, err := New(&Config{DevMode: true, NumSchedulers: 1, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	waitLeader(b, s)
	ctx := context.Background()
	for i := range 1000 {
		if _, err := s.Nodes().RegisterNode(ctx, testNode(fmt.Sprintf("node-%04d", i), 64000, 256000), api.NodeIntro{}); err != nil {
			b.Fatal(err)
		}
	}
	job := &api.Job{ID: "bench", Namespace: api.DefaultNamespace}
	plan := &api.Plan{EvalID: "e", Job: job}
	for k := range 1000 {
		plan.AppendAlloc(squatAlloc(job, fmt.Sprintf("node-%04d", k), 10))
	}
	snap, _ := s.State().Snapshot()
	b.ResetTimer()
	for range b.N {
		res, _, err := evaluatePlan(snap, plan)
		if err != nil || len(res.RejectedNodes) > 0 {
			b.Fatal(err, res.RejectedNodes)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "placements/s")
}
