package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// fakeDevices stands in for the NVML fingerprinter (fakes are allowed for NVML).
type fakeDevices struct {
	mu      sync.Mutex
	healthy bool
	nodeID  string
	trigger chan struct{}
	closed  bool
}

func (f *fakeDevices) Devices() []*api.NodeDeviceResource {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
		Instances: []*api.NodeDevice{{ID: "GPU-" + f.nodeID[:8], Healthy: f.healthy}}}}
}

func (f *fakeDevices) Watch(ctx context.Context, changed func()) {
	for {
		select {
		case <-f.trigger:
			f.mu.Lock()
			f.healthy = false
			f.mu.Unlock()
			changed()
		case <-ctx.Done():
			return
		}
	}
}

func (f *fakeDevices) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

func TestDeviceFingerprint(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t.TempDir(), srv.addr())
	fd := &fakeDevices{healthy: true, trigger: make(chan struct{})}
	cfg.Devices = func(nodeID string) (DeviceSource, error) { fd.nodeID = nodeID; return fd, nil }
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 15*time.Second, "registered with devices", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.node != nil && len(srv.node.NodeResources.Devices) == 1
	})
	srv.mu.Lock()
	inst := srv.node.NodeResources.Devices[0].Instances[0]
	srv.mu.Unlock()
	if inst.ID != "GPU-"+c.NodeID()[:8] || !inst.Healthy {
		t.Errorf("device = %+v, want a healthy GPU derived from the node ID", inst)
	}
	fd.trigger <- struct{}{}
	testproc.Eventually(t, 15*time.Second, "re-registered with the unhealthy GPU", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.registers == 2 && !srv.node.NodeResources.Devices[0].Instances[0].Healthy
	})
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if !fd.closed {
		t.Error("device source not closed on shutdown")
	}
}
