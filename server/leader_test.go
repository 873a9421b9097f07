package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

func TestHeartbeatMissReschedulesElsewhere(t *testing.T) {
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	allocs := func() []*api.Allocation {
		registerJob(t, s, testJob("web", 1, 500, 256))
		return waitLive(t, s, "web", 1)
	}()
	first := allocs[0]
	registerNode(t, s, testNode("b", 4000, 8192))
	// TTL is at most 15 s (10 s + stagger) plus 10 s grace: 25 s.
	clk.Advance(19 * time.Second)
	if _, err := s.Nodes().HeartbeatNode(ctx, "b", "secret-b", nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.State().NodeByID(nil, "a"); n.Status != api.NodeStatusReady {
		t.Fatalf("node a is %s before its TTL ran out", n.Status)
	}
	clk.Advance(11 * time.Second) // a: 30 s without heartbeat; b: 11 s
	waitState(t, s, "node a down", func(ws memdb.WatchSet) (bool, error) {
		n, err := s.State().NodeByID(ws, "a")
		return n != nil && n.Status == api.NodeStatusDown, err
	})
	waitState(t, s, "alloc on a lost", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, first.ID)
		return a != nil && a.ClientStatus == api.AllocClientStatusLost, err
	})
	live := waitLive(t, s, "web", 1)
	if live[0].NodeID != "b" || live[0].ID == first.ID {
		t.Fatalf("replacement = %s on %s, want a new alloc on b", live[0].ID, live[0].NodeID)
	}
	if n, _ := s.State().NodeByID(nil, "b"); n.Status != api.NodeStatusReady {
		t.Fatalf("node b is %s, want ready", n.Status)
	}
	// The node comes back with a heartbeat.
	if _, err := s.Nodes().HeartbeatNode(ctx, "a", "secret-a", nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.State().NodeByID(nil, "a"); n.Status != api.NodeStatusReady {
		t.Fatalf("node a is %s after a heartbeat, want ready", n.Status)
	}
}

func TestHeartbeatTTLGrowsWithNodes(t *testing.T) {
	s := newTestServer(t)
	ttl := registerNode(t, s, testNode("n0", 1000, 1000)).HeartbeatTTL
	if ttl < 10*time.Second || ttl > 15*time.Second {
		t.Fatalf("ttl with one node = %v, want 10-15 s", ttl)
	}
	for i := range 1000 {
		s.hb.reset(newID(), time.Hour)
		_ = i
	}
	ttl = s.hb.ttl()
	if base := 1001 * time.Second / 50; ttl < base || ttl > base+base/2 {
		t.Fatalf("ttl with 1001 nodes = %v, want %v plus up to 50%% stagger", ttl, base)
	}
}

// TestHeartbeatFailoverWindow: a new leader gives every live node the
// longest TTL the old one may have handed out for that many nodes (base
// plus 50% stagger) and the grace on top, not the minimum TTL: at 2,000
// nodes and 50 heartbeats/s, 40 s + 20 s + 10 s; down nodes get no timer.
func TestHeartbeatFailoverWindow(t *testing.T) {
	clk := clock.NewFake(testT0)
	var mu sync.Mutex
	expired := map[string]bool{}
	h := &heartbeats{ttlMin: 10 * time.Second, grace: 10 * time.Second, maxPerSecond: 50, clock: clk,
		log: slog.New(slog.DiscardHandler), missed: prometheus.NewCounter(prometheus.CounterOpts{Name: "missed"}),
		expired: func(_ context.Context, id string) error {
			mu.Lock()
			defer mu.Unlock()
			expired[id] = true
			return nil
		},
		timers: map[string]clock.Timer{}, gens: map[string]uint64{}}
	var nodes []*api.Node
	for i := range 2000 {
		n := &api.Node{ID: fmt.Sprintf("n%d", i), Status: api.NodeStatusReady}
		if i == 0 {
			n.Status = api.NodeStatusDown
		}
		nodes = append(nodes, n)
	}
	h.enable(context.Background(), nodes)
	if got := h.count(); got != 1999 {
		t.Fatalf("%d timers armed, want 1,999 (the down node gets none)", got)
	}
	clk.Advance(70*time.Second - time.Millisecond)
	h.wg.Wait()
	mu.Lock()
	if len(expired) != 0 {
		t.Fatalf("%d nodes expired within the window", len(expired))
	}
	mu.Unlock()
	clk.Advance(time.Millisecond)
	h.disable()
	if len(expired) != 1999 || expired["n0"] {
		t.Fatalf("%d nodes expired after the window (n0: %v), want the 1,999 live ones", len(expired), expired["n0"])
	}
}

func TestDrainCompletesOnlyAfterClientStops(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	job := testJob("web", 2, 500, 256)
	job.TaskGroups[0].Migrate = &api.MigrateStrategy{MaxParallel: 1}
	registerJob(t, s, job)
	onA := waitLive(t, s, "web", 2)
	reportAllocs(t, s, "a", api.AllocClientStatusRunning, onA...)
	registerNode(t, s, testNode("b", 4000, 8192))

	if _, err := s.Nodes().UpdateNodeDrain(ctx, &api.NodeUpdateDrainRequest{NodeID: "a", DrainSpec: &api.DrainSpec{Deadline: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	// max_parallel 1: exactly one alloc is migrated and replaced on b.
	var stopped *api.Allocation
	waitState(t, s, "first migration placed on b", func(ws memdb.WatchSet) (bool, error) {
		all, err := s.State().AllocsByJob(ws, api.DefaultNamespace, "web", true)
		stopped = nil
		onB, stops := 0, 0
		for _, a := range all {
			if a.NodeID == "b" && !a.TerminalStatus() {
				onB++
			}
			if a.NodeID == "a" && a.DesiredStatus == api.AllocDesiredStatusStop {
				stops++
				stopped = a
			}
		}
		return onB == 1 && stops == 1, err
	})
	if !stopped.DesiredTransition.ShouldMigrate() {
		t.Fatalf("stopped alloc has no migrate transition: %+v", stopped.DesiredTransition)
	}
	assertDraining := func(when string) {
		t.Helper()
		n, _ := s.State().NodeByID(nil, "a")
		if n.DrainStrategy == nil || n.LastDrain == nil || n.LastDrain.Status == "complete" {
			t.Fatalf("%s: drain ended early: strategy %+v last %+v", when, n.DrainStrategy, n.LastDrain)
		}
	}
	assertDraining("before the client stopped anything")
	all, _ := s.State().AllocsByNode(nil, "a")
	migrating := 0
	for _, a := range all {
		if a.DesiredTransition.ShouldMigrate() {
			migrating++
		}
	}
	if migrating != 1 {
		t.Fatalf("%d allocs migrating, want 1 (max_parallel)", migrating)
	}

	reportAllocs(t, s, "a", api.AllocClientStatusComplete, stopped)
	waitState(t, s, "second migration", func(ws memdb.WatchSet) (bool, error) {
		live, err := liveAllocs(s, ws, "web")
		onB := 0
		for _, a := range live {
			if a.NodeID == "b" {
				onB++
			}
		}
		return onB == 2, err
	})
	assertDraining("after one of two allocs stopped")

	all, _ = s.State().AllocsByNode(nil, "a")
	var rest []*api.Allocation
	for _, a := range all {
		if !a.ClientTerminalStatus() {
			rest = append(rest, a)
		}
	}
	if len(rest) != 1 {
		t.Fatalf("%d allocs still running on a, want 1", len(rest))
	}
	reportAllocs(t, s, "a", api.AllocClientStatusComplete, rest...)
	waitState(t, s, "drain complete", func(ws memdb.WatchSet) (bool, error) {
		n, err := s.State().NodeByID(ws, "a")
		return n != nil && n.DrainStrategy == nil && n.LastDrain != nil && n.LastDrain.Status == "complete", err
	})
	n, _ := s.State().NodeByID(nil, "a")
	if n.SchedulingEligibility != api.NodeSchedulingIneligible {
		t.Fatalf("drained node eligibility %q, want ineligible", n.SchedulingEligibility)
	}
}

func TestDrainDeadlineForcesAll(t *testing.T) {
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	job := testJob("web", 3, 500, 256)
	job.TaskGroups[0].Migrate = &api.MigrateStrategy{MaxParallel: 1}
	registerJob(t, s, job)
	onA := waitLive(t, s, "web", 3)
	reportAllocs(t, s, "a", api.AllocClientStatusRunning, onA...)
	if _, err := s.Nodes().UpdateNodeDrain(ctx, &api.NodeUpdateDrainRequest{NodeID: "a", DrainSpec: &api.DrainSpec{Deadline: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	countMigrating := func(ws memdb.WatchSet) (int, error) {
		all, err := s.State().AllocsByNode(ws, "a")
		n := 0
		for _, a := range all {
			if a.DesiredTransition.ShouldMigrate() {
				n++
			}
		}
		return n, err
	}
	waitState(t, s, "one migration", func(ws memdb.WatchSet) (bool, error) {
		n, err := countMigrating(ws)
		return n == 1, err
	})
	// Reach the deadline in steps, heartbeating so the node stays up.
	for range 4 {
		clk.Advance(15 * time.Second)
		if _, err := s.Nodes().HeartbeatNode(ctx, "a", "secret-a", nil); err != nil {
			t.Fatal(err)
		}
	}
	waitState(t, s, "all migrating at the deadline", func(ws memdb.WatchSet) (bool, error) {
		n, err := countMigrating(ws)
		return n == 3, err
	})
}

// TestReadySignal: Ready is closed while the leader's duties run, open
// while they are paused (a snapshot restore), and closed again after.
func TestReadySignal(t *testing.T) {
	s := newTestServer(t) // waits on Ready
	if !s.broker.Enabled() || s.hb == nil {
		t.Fatal("ready before the broker was enabled")
	}
	err := s.withLeaderDutiesPaused(context.Background(), func() error {
		select {
		case <-s.Ready():
			t.Error("Ready closed while the leader's duties are paused")
		default:
		}
		if s.broker.Enabled() {
			t.Error("the broker is enabled while the duties are paused")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, s) // closed again once the duties restart
	if !s.broker.Enabled() {
		t.Error("ready again before the broker was enabled")
	}
}
