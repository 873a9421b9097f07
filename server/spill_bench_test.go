package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// BenchmarkSpillDecision times the spill decision for one pending gang
// (4 x 8 GPUs) whose home region is full: the candidate scan, a dry-run
// plan in each of two other regions (in-memory servers with 64 GPU nodes
// each, behind their HTTP API on loopback) and the choice. Nothing is
// registered. It reports the p50 and p99 of 50 decisions (`make bench`).
func BenchmarkSpillDecision(b *testing.B) {
	clk := clock.NewFake(testT0)
	home := newBenchServer(b, clk, "eu")
	ap := newBenchServer(b, nil, "ap")
	us := newBenchServer(b, nil, "us")
	ctx := context.Background()
	for i := range 64 {
		for _, s := range []*Server{ap, us} {
			if _, err := s.Nodes().RegisterNode(ctx, defragGPUNode(fmt.Sprintf("n%d", i), 8), api.NodeIntro{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := home.Nodes().RegisterNode(ctx, defragGPUNode("eu-1", 4), api.NodeIntro{}); err != nil {
		b.Fatal(err)
	}
	regions := newFakeRegions(b, "eu", map[string]*fakeRegion{"ap": {srv: ap}, "us": {srv: us}})
	if _, err := home.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: spillGangJob("train", 4, 8, "eu", "ap", "us")}); err != nil {
		b.Fatal(err)
	}
	waitIdle(b, home)
	clk.Advance(time.Hour)
	sp := &spiller{serverCore: home.core.named("spill"), regions: regions, home: "eu"}

	const n = 50
	for b.Loop() {
		var took []time.Duration
		for range n {
			start := time.Now()
			snap, err := home.State().Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			cands, err := spillCandidates(snap, clk.Now())
			if err != nil || len(cands) != 1 {
				b.Fatalf("candidates = %d, %v; want 1", len(cands), err)
			}
			if best := chooseSpill(cands[0].job.Placement.Regions, sp.fits(ctx, cands[0].job)); len(best) == 0 {
				b.Fatal("the gang fits in no region")
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[n/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(took[n*99/100].Microseconds())/1000, "p99-ms")
	}
}

// newBenchServer is newTestServer for a benchmark: a single in-memory
// server of region (with clk when not nil) that leads.
func newBenchServer(b *testing.B, clk clock.Clock, region string) *Server {
	b.Helper()
	cfg := &Config{DevMode: true, NumSchedulers: 2, Logger: testLogger(), Region: region, HeartbeatTTLMin: 24 * time.Hour, Clock: clk}
	s, err := New(cfg)
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	waitLeader(b, s)
	return s
}
