package client

import (
	"context"
	"testing"
	"time"

	"github.com/drover/drover/agent/fingerprint/nvidia"
)

// TestNVIDIAXIDReachesServer wires the real NVIDIA fingerprinter (on the
// simulated DGX H100) into the client: the node registers 8 GPUs, and an
// XID critical error on one of them re-registers the node with that GPU
// unhealthy.
func TestNVIDIAXIDReachesServer(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t.TempDir(), srv.addr())
	var sim nvidia.Simulator
	cfg.Devices = func(nodeID string) (DeviceSource, error) {
		s, err := nvidia.NewPureSim(nvidia.SimConfig{Shape: "dgxh100", NodeID: nodeID})
		if err != nil {
			return nil, err
		}
		sim = s
		return nvidia.New(nvidia.Config{Library: s, EventWait: 50 * time.Millisecond})
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown(context.Background())
	eventually(t, "registered with 8 GPUs", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.node != nil && len(srv.node.NodeResources.Devices) == 1 && len(srv.node.NodeResources.Devices[0].Instances) == 8
	})
	sim.InjectXID(6, 79)
	eventually(t, "GPU 6 unhealthy on the server", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		bad := 0
		for i, in := range srv.node.NodeResources.Devices[0].Instances {
			if !in.Healthy {
				if i != 6 {
					return false
				}
				bad++
			}
		}
		return bad == 1
	})
}
