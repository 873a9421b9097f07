package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/testproc"
)

// closingDriver is the fake driver with a Close that records when it ran
// and whether the driver's tasks were still running then.
type closingDriver struct {
	*fakeDriver
	mu          sync.Mutex
	closes      int
	killedFirst bool
}

func (d *closingDriver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closes++
	d.killedFirst = d.killedFirst || d.anyKilled()
	return nil
}

// anyKilled reports whether a task of this driver got an exit.
func (d *closingDriver) anyKilled() bool {
	d.fakeDriver.mu.Lock()
	defer d.fakeDriver.mu.Unlock()
	for _, ch := range d.tasks {
		if len(ch) > 0 {
			return true
		}
	}
	return false
}

// TestShutdownClosesDrivers: Shutdown calls Close on drivers that have it,
// once, after the alloc runners are detached, and the task keeps running.
func TestShutdownClosesDrivers(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t.TempDir(), srv.addr())
	var drv *closingDriver
	cfg.Drivers = map[string]drivers.Factory{"fake": func(o drivers.Options) (drivers.Driver, error) {
		f, err := fakeFactory(o)
		if err != nil {
			return nil, err
		}
		drv = &closingDriver{fakeDriver: f.(*fakeDriver)}
		return drv, nil
	}}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	a := testAlloc(c.NodeID(), "dddddddd-0000-4000-8000-000000000001", nil)
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "running", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })
	drv.mu.Lock()
	if drv.closes != 0 {
		t.Errorf("Close called %d times while the client runs, want 0", drv.closes)
	}
	drv.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	drv.mu.Lock()
	defer drv.mu.Unlock()
	if drv.closes != 1 {
		t.Errorf("Close called %d times by Shutdown, want 1", drv.closes)
	}
	if drv.killedFirst || drv.anyKilled() {
		t.Error("the task was stopped at client shutdown, want it left running for the next agent")
	}
}

// TestShutdownStopsAllocsWhenAsked: with StopAllocsOnShutdown (a dev agent
// whose data dir is temporary) a graceful Shutdown stops the tasks; a dev
// client with a kept data dir leaves them running (see TestShutdownClosesDrivers).
func TestShutdownStopsAllocsWhenAsked(t *testing.T) {
	for _, stop := range []bool{false, true} {
		srv := newFakeServer(t)
		cfg := testConfig(t.TempDir(), srv.addr())
		cfg.DevMode = true
		cfg.StopAllocsOnShutdown = stop
		var drv *closingDriver
		cfg.Drivers = map[string]drivers.Factory{"fake": func(o drivers.Options) (drivers.Driver, error) {
			f, err := fakeFactory(o)
			if err != nil {
				return nil, err
			}
			drv = &closingDriver{fakeDriver: f.(*fakeDriver)}
			return drv, nil
		}}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
		a := testAlloc(c.NodeID(), "dddddddd-0000-4000-8000-000000000002", nil)
		srv.putAlloc(a)
		testproc.Eventually(t, 15*time.Second, "running", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := drv.anyKilled(); got != stop {
			t.Errorf("StopAllocsOnShutdown=%v: task stopped = %v, want %v", stop, got, stop)
		}
	}
}
