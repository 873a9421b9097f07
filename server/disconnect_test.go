package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/internal/testproc"
)

// disconnectSetup: node a runs one alloc of web (max_client_disconnect
// 2m), node b is ready; a misses its heartbeat (b keeps heartbeating) and
// goes disconnected. It returns the original alloc.
func disconnectSetup(t *testing.T, s *Server, clk *clock.Fake) *api.Allocation {
	t.Helper()
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	job := testJob("web", 1, 500, 256)
	job.TaskGroups[0].MaxClientDisconnect = 2 * time.Minute
	registerJob(t, s, job)
	first := waitLive(t, s, "web", 1)[0]
	reportAllocs(t, s, "a", api.AllocClientStatusRunning, first)
	registerNode(t, s, testNode("b", 4000, 8192))
	clk.Advance(19 * time.Second)
	if _, err := s.Nodes().HeartbeatNode(ctx, "b", "secret-b", nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second) // a: 30 s without heartbeat (TTL <= 25 s)
	waitState(t, s, "node a disconnected", func(ws memdb.WatchSet) (bool, error) {
		n, err := s.State().NodeByID(ws, "a")
		return n != nil && n.Status == api.NodeStatusDisconnected, err
	})
	waitState(t, s, "alloc on a unknown", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, first.ID)
		return a != nil && a.ClientStatus == api.AllocClientStatusUnknown, err
	})
	// The unknown alloc is not stopped; its replacement goes to b.
	live := waitLive(t, s, "web", 2)
	for _, a := range live {
		switch {
		case a.ID == first.ID:
			if a.DesiredStatus != api.AllocDesiredStatusRun {
				t.Errorf("unknown alloc desired %q, want run (not stopped)", a.DesiredStatus)
			}
		case a.NodeID != "b" || a.PreviousAllocation != first.ID || a.Name != first.Name:
			t.Errorf("replacement %s on %s prev %q name %s, want on b replacing %s", a.ID, a.NodeID, a.PreviousAllocation, a.Name, first.ID)
		}
	}
	// The window timer is armed before the test moves the clock on.
	testproc.Eventually(t, 15*time.Second, "disconnect window armed", func() bool {
		s.hb.mu.Lock()
		defer s.hb.mu.Unlock()
		return s.hb.timers["a"] != nil
	})
	return first
}

// advanceB moves the clock on by d in steps node b's heartbeat survives
// (the heartbeat comes first: b's TTL may have little left).
func advanceB(t *testing.T, s *Server, clk *clock.Fake, d time.Duration) {
	t.Helper()
	for d > 0 {
		if _, err := s.Nodes().HeartbeatNode(context.Background(), "b", "secret-b", nil); err != nil {
			t.Fatal(err)
		}
		step := min(d, 15*time.Second)
		clk.Advance(step)
		d -= step
	}
	if _, err := s.Nodes().HeartbeatNode(context.Background(), "b", "secret-b", nil); err != nil {
		t.Fatal(err)
	}
}

// TestDisconnectWindowPassesNodeDown: without a heartbeat within
// max_client_disconnect the node goes down and the unknown alloc lost;
// the replacement is the only live copy.
func TestDisconnectWindowPassesNodeDown(t *testing.T) {
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	first := disconnectSetup(t, s, clk)
	advanceB(t, s, clk, 2*time.Minute+10*time.Second)
	waitState(t, s, "node a down", func(ws memdb.WatchSet) (bool, error) {
		n, err := s.State().NodeByID(ws, "a")
		return n != nil && n.Status == api.NodeStatusDown, err
	})
	waitState(t, s, "alloc on a lost", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, first.ID)
		return a != nil && a.ClientStatus == api.AllocClientStatusLost, err
	})
	live := waitLive(t, s, "web", 1)
	if live[0].NodeID != "b" {
		t.Fatalf("live alloc on %s, want the replacement on b", live[0].NodeID)
	}
}

// TestDisconnectReconnectOlderCopyStops: the node heartbeats again within
// the window (reconnect eval), its client reports the alloc running: the
// older copy (the original) stops, the replacement keeps running.
func TestDisconnectReconnectOlderCopyStops(t *testing.T) {
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	first := disconnectSetup(t, s, clk)
	advanceB(t, s, clk, 30*time.Second)
	if _, err := s.Nodes().HeartbeatNode(context.Background(), "a", "secret-a", nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.State().NodeByID(nil, "a"); n.Status != api.NodeStatusReady {
		t.Fatalf("node a is %s after a heartbeat, want ready", n.Status)
	}
	reportAllocs(t, s, "a", api.AllocClientStatusRunning, first)
	waitState(t, s, "the original stopped", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, first.ID)
		return a != nil && a.DesiredStatus == api.AllocDesiredStatusStop, err
	})
	live := waitLive(t, s, "web", 1)
	if live[0].NodeID != "b" || live[0].PreviousAllocation != first.ID {
		t.Fatalf("live alloc %s on %s, want the replacement on b", live[0].ID, live[0].NodeID)
	}
	evals, _ := s.State().EvalsByJob(nil, api.DefaultNamespace, "web")
	reconnects := 0
	for _, e := range evals {
		if e.TriggeredBy == api.EvalTriggerReconnect {
			reconnects++
		}
	}
	if reconnects == 0 {
		t.Errorf("no eval triggered by %q among %d", api.EvalTriggerReconnect, len(evals))
	}
}

// TestDisconnectWindowKeptAcrossLeaderChange: a new leadership term arms
// a disconnected node's timer with what is left of its window, not with
// a fresh TTL.
func TestDisconnectWindowKeptAcrossLeaderChange(t *testing.T) {
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	disconnectSetup(t, s, clk)
	s.hb.mu.Lock()
	ctx := s.hb.ctx
	s.hb.mu.Unlock()
	s.hb.disable()
	nodes, err := s.State().Nodes(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	s.hb.enable(ctx, nodes)
	advanceB(t, s, clk, time.Minute) // a fresh TTL + grace (<= 25 s) would have ended
	s.hb.wg.Wait()                   // timers fire inside Advance; their writes are tracked here
	if n, _ := s.State().NodeByID(nil, "a"); n.Status != api.NodeStatusDisconnected {
		t.Fatalf("node a is %s a minute into its 2m window after a new term, want disconnected", n.Status)
	}
	advanceB(t, s, clk, 70*time.Second)
	waitState(t, s, "node a down after its window", func(ws memdb.WatchSet) (bool, error) {
		n, err := s.State().NodeByID(ws, "a")
		return n != nil && n.Status == api.NodeStatusDown, err
	})
}
