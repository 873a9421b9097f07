package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/internal/testproc"
)

func TestSystemJobRunsOnNewNode(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("a", 4000, 8192))
	job := testJob("agent", 1, 100, 64)
	job.Type = api.JobTypeSystem
	registerJob(t, s, job)
	waitLive(t, s, "agent", 1)
	registerNode(t, s, testNode("b", 4000, 8192))
	allocs := waitLive(t, s, "agent", 2)
	if allocs[0].NodeID == allocs[1].NodeID {
		t.Fatalf("both system allocs on %s", allocs[0].NodeID)
	}
}

func TestFailedAllocCreatesEval(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("a", 4000, 8192))
	registerJob(t, s, testJob("web", 1, 100, 64))
	live := waitLive(t, s, "web", 1)
	evalsBefore, _ := s.State().EvalsByJob(nil, api.DefaultNamespace, "web")
	reportAllocs(t, s, "a", api.AllocClientStatusFailed, live[0])
	var retry *api.Evaluation
	waitState(t, s, "alloc-failure eval", func(ws memdb.WatchSet) (bool, error) {
		evals, err := s.State().EvalsByJob(ws, api.DefaultNamespace, "web")
		for _, e := range evals {
			if e.TriggeredBy == api.EvalTriggerRetryFailedAlloc && e.NodeID == "a" {
				retry = e
			}
		}
		return retry != nil && len(evals) > len(evalsBefore), err
	})
	if retry.NodeID != "a" || retry.JobID != "web" {
		t.Fatalf("retry eval = %+v", retry)
	}
	// A second report of the same failure creates no new eval.
	n := func() int { e, _ := s.State().EvalsByJob(nil, api.DefaultNamespace, "web"); return len(e) }()
	reportAllocs(t, s, "a", api.AllocClientStatusFailed, live[0])
	// (The scheduler's delayed reschedule follow-ups carry no NodeID.)
	failures := 0
	evals, _ := s.State().EvalsByJob(nil, api.DefaultNamespace, "web")
	for _, e := range evals {
		if e.TriggeredBy == api.EvalTriggerRetryFailedAlloc && e.NodeID == "a" {
			failures++
		}
	}
	if failures != 1 || len(evals) < n {
		t.Fatalf("%d alloc-failure evals after a repeated report, want 1", failures)
	}
	if _, err := s.Nodes().UpdateAllocsFromClient(context.Background(), "a", "secret-a", []*api.Allocation{{ID: "nope", ClientStatus: "running"}}); err == nil {
		t.Fatal("update of an unknown alloc succeeded")
	}
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newTestServer(t, func(c *Config) { c.Registry = reg })
	registerNode(t, s, testNode("a", 4000, 8192))
	registerJob(t, s, testJob("web", 2, 100, 64))
	waitLive(t, s, "web", 2)
	if _, err := s.Nodes().HeartbeatNode(context.Background(), "a", "secret-a", nil); err != nil {
		t.Fatal(err)
	}
	gather := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch {
				case m.GetCounter() != nil:
					got[mf.GetName()] = m.GetCounter().GetValue()
				case m.GetGauge() != nil:
					got[mf.GetName()] = m.GetGauge().GetValue()
				case m.GetHistogram() != nil:
					got[mf.GetName()] = float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		return got
	}
	// The applier counts after Raft returns, just after the allocs appear.
	var got map[string]float64
	testproc.Eventually(t, 15*time.Second, "placements counted", func() bool {
		got = gather()
		return got["drover_server_placements_total"] == 2
	})
	for _, name := range []string{"drover_broker_ready", "drover_broker_unacked", "drover_plan_queue_depth", "drover_broker_blocked"} {
		if _, ok := got[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	if got["drover_server_heartbeats_total"] != 1 || got["drover_server_plan_apply_seconds"] < 1 {
		t.Errorf("metrics = %v", got)
	}
	st := s.Stats()
	if st["broker"]["total_ready"] == "" || !strings.Contains(st["raft"]["state"], "Leader") {
		t.Errorf("stats = %v", st)
	}
}

func TestDeliveryLimitMarksEvalFailed(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, testNode("a", 4000, 8192))
	resp := registerJob(t, s, testJob("web", 1, 100, 64))
	e := waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	s.reap.failed(e)
	got := waitEvalStatus(t, s, e.ID, api.EvalStatusFailed)
	if got.StatusDescription == "" {
		t.Fatal("failed eval has no description")
	}
}

func TestEvalGC(t *testing.T) {
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	first := registerJob(t, s, testJob("web", 1, 100, 64))
	live := waitLive(t, s, "web", 1)
	reportAllocs(t, s, "a", api.AllocClientStatusRunning, live[0])
	stop, err := s.Jobs().DeregisterJob(ctx, "", "web", false)
	if err != nil {
		t.Fatal(err)
	}
	waitEvalStatus(t, s, stop.EvalID, api.EvalStatusComplete)
	waitLive(t, s, "web", 0)
	// Too young, and the alloc still runs on the client: nothing goes.
	if n, err := (&evalGC{serverCore: s.core, interval: s.cfg.EvalGCInterval, threshold: s.cfg.EvalGCThreshold}).collect(ctx); err != nil || n != 0 {
		t.Fatalf("gc of young evals = %d, %v", n, err)
	}
	reportAllocs(t, s, "a", api.AllocClientStatusComplete, live[0])
	// Two hours pass: the leader's GC timer fires (and node a's heartbeat
	// TTL runs out, which changes nothing here).
	clk.Advance(2 * time.Hour)
	// Collect now too (the background pass may have read the clock while
	// Advance was still on its way): whichever runs first deletes.
	if _, err := (&evalGC{serverCore: s.core, interval: s.cfg.EvalGCInterval, threshold: s.cfg.EvalGCThreshold}).collect(ctx); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "evals and alloc collected", func(ws memdb.WatchSet) (bool, error) {
		e1, err := s.State().EvalByID(ws, first.EvalID)
		if err != nil {
			return false, err
		}
		e2, _ := s.State().EvalByID(ws, stop.EvalID)
		a, _ := s.State().AllocByID(ws, live[0].ID)
		return e1 == nil && e2 == nil && a == nil, nil
	})
}
