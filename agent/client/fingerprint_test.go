package client

import (
	"context"
	"testing"
	"time"

	"github.com/drover/drover/agent/taskrunner/fakeclock"
)

func TestRefingerprintReportsOnlyChanges(t *testing.T) {
	t.Cleanup(func() { fakeUnhealthy.Store(false) })
	c, err := New(testConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown(context.Background())
	if c.refingerprint(context.Background(), true) {
		t.Error("refingerprint reported a change when nothing changed")
	}
	fakeUnhealthy.Store(true)
	if !c.refingerprint(context.Background(), false) {
		t.Error("refingerprint missed a driver health change")
	}
	n := c.Node()
	if _, ok := n.Attributes["driver.fake"]; ok {
		t.Error("unhealthy driver still advertised")
	}
	if n.Drivers["fake"].Healthy {
		t.Error("node still shows the driver healthy")
	}
}

func TestDriverChangeReregisters(t *testing.T) {
	t.Cleanup(func() { fakeUnhealthy.Store(false) })
	srv := newFakeServer(t)
	srv.ttl = time.Hour
	cfg := testConfig(t.TempDir(), srv.addr())
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	cfg.Clock = clock
	startClient(t, cfg)
	eventually(t, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.registers == 1 })
	// Timers: heartbeat, driver and resource fingerprints.
	eventually(t, "loops waiting", func() bool { return clock.Waiters() >= 3 })
	fakeUnhealthy.Store(true)
	clock.Advance(30 * time.Second)
	eventually(t, "re-registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.registers == 2 })
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if _, ok := srv.node.Attributes["driver.fake"]; ok || srv.node.Drivers["fake"].Healthy {
		t.Error("re-registered node still shows the fake driver healthy")
	}
}
