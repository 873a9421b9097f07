package client

import (
	"context"
	"testing"
	"time"

	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/internal/testproc"
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
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	cfg.Clock = clk
	startClient(t, cfg)
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.registers == 1 })
	// Timers: heartbeat, driver and resource fingerprints; the driver
	// fingerprint's (30 s) is the first due once it is armed (stale waits
	// of the heartbeat watch count too, so the count alone could be
	// reached before it).
	if err := clk.WaitPending(15*time.Second, func(n int) bool {
		d, ok := clk.NextIn()
		return n >= 3 && ok && d <= 30*time.Second
	}); err != nil {
		t.Fatalf("loops waiting: %v", err)
	}
	fakeUnhealthy.Store(true)
	clk.Advance(30 * time.Second)
	testproc.Eventually(t, 15*time.Second, "re-registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.registers == 2 })
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if _, ok := srv.node.Attributes["driver.fake"]; ok || srv.node.Drivers["fake"].Healthy {
		t.Error("re-registered node still shows the fake driver healthy")
	}
}
