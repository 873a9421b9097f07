package client

import (
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/internal/testproc"
)

// disconnectClient starts a client with a fake clock against a fake
// server with a 10 s TTL and runs one alloc per given
// max_client_disconnect (0 = unset), waiting until each runs.
func disconnectClient(t *testing.T, windows ...time.Duration) (*Client, *fakeServer, *clock.Fake, []*api.Allocation) {
	t.Helper()
	srv := newFakeServer(t)
	srv.ttl = 10 * time.Second
	cfg := testConfig(t.TempDir(), srv.addr())
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	cfg.Clock = clk
	c := startClient(t, cfg)
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.registers == 1 })
	var allocs []*api.Allocation
	for i, w := range windows {
		a := testAlloc(c.NodeID(), "dddddddd-0000-4000-8000-00000000000"+string(rune('1'+i)), nil)
		a.Job.TaskGroups[0].MaxClientDisconnect = w
		srv.putAlloc(a)
		allocs = append(allocs, a)
	}
	for _, a := range allocs {
		testproc.Eventually(t, 15*time.Second, "alloc running on the server", func() bool {
			clk.Advance(25 * time.Millisecond) // the update coalescing runs on the clock
			return srv.lastStatus(a.ID) == api.AllocClientStatusRunning
		})
	}
	return c, srv, clk, allocs
}

func runnerDone(c *Client, id string) bool {
	c.mu.Lock()
	ar := c.runners[id]
	c.mu.Unlock()
	if ar == nil {
		return false
	}
	select {
	case <-ar.WaitCh():
		return true
	default:
		return false
	}
}

// TestCutOffClientStopsAllocs: cut off from the servers for its TTL, the
// client stops an alloc without max_client_disconnect at once and one
// with max_client_disconnect = 30s after 30 s more; once a heartbeat gets
// through again both are reported lost.
func TestCutOffClientStopsAllocs(t *testing.T) {
	c, srv, clk, allocs := disconnectClient(t, 0, 30*time.Second)
	now, mcd := allocs[0], allocs[1]
	srv.fail.Store(true)
	clk.Advance(10 * time.Second) // the TTL: cut off
	testproc.Eventually(t, 15*time.Second, "the alloc without max_client_disconnect stopped", func() bool {
		clk.Advance(10 * time.Millisecond)
		return runnerDone(c, now.ID)
	})
	if runnerDone(c, mcd.ID) {
		t.Fatal("the alloc with max_client_disconnect = 30s stopped at once")
	}
	clk.Advance(25 * time.Second)
	if runnerDone(c, mcd.ID) {
		t.Fatal("the alloc with max_client_disconnect = 30s stopped before its window")
	}
	clk.Advance(6 * time.Second)
	testproc.Eventually(t, 15*time.Second, "the alloc with max_client_disconnect stopped after its window", func() bool {
		clk.Advance(10 * time.Millisecond)
		return runnerDone(c, mcd.ID)
	})
	// Back in touch: both are reported lost (not complete).
	srv.fail.Store(false)
	testproc.Eventually(t, 15*time.Second, "both reported lost after the reconnect", func() bool {
		clk.Advance(time.Second) // heartbeat backoff, coalescing
		return srv.lastStatus(now.ID) == api.AllocClientStatusLost && srv.lastStatus(mcd.ID) == api.AllocClientStatusLost
	})
	srv.mu.Lock()
	defer srv.mu.Unlock()
	last := srv.updates[len(srv.updates)-1]
	for _, u := range last {
		if !strings.Contains(u.ClientDescription, "cut off from the servers") {
			t.Errorf("alloc %s reported %q, want a description saying why", u.ID, u.ClientDescription)
		}
	}
}

// TestShortCutOffResendsStatus: cut off for less than the window, the
// alloc keeps running, and after the reconnect its status is reported
// again (the server marked it unknown meanwhile).
func TestShortCutOffResendsStatus(t *testing.T) {
	c, srv, clk, allocs := disconnectClient(t, time.Minute)
	a := allocs[0]
	srv.mu.Lock()
	before := len(srv.updates)
	srv.mu.Unlock()
	srv.fail.Store(true)
	clk.Advance(10 * time.Second)
	clk.Advance(20 * time.Second)
	srv.fail.Store(false)
	testproc.Eventually(t, 15*time.Second, "the running status reported again after the reconnect", func() bool {
		clk.Advance(time.Second)
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, batch := range srv.updates[before:] {
			for _, u := range batch {
				if u.ID == a.ID && u.ClientStatus == api.AllocClientStatusRunning {
					return true
				}
			}
		}
		return false
	})
	if runnerDone(c, a.ID) {
		t.Fatal("alloc stopped though its client was back within max_client_disconnect")
	}
}
