package client

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/drover/drover/agent/fingerprint/nvidia"
	"github.com/drover/drover/internal/testproc"
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
	testproc.Eventually(t, 15*time.Second, "registered with 8 GPUs", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.node != nil && len(srv.node.NodeResources.Devices) == 1 && len(srv.node.NodeResources.Devices[0].Instances) == 8
	})
	sim.InjectXID(6, 79)
	testproc.Eventually(t, 15*time.Second, "GPU 6 unhealthy on the server", func() bool {
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

// TestNVIDIADevicePathsReachServer: the node the client registers carries
// each GPU's minor and device node as NVML reports them, also where the
// minors do not follow the GPUs' order.
func TestNVIDIADevicePathsReachServer(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t.TempDir(), srv.addr())
	minors := [8]int{5, 3, 7, 1, 0, 2, 6, 4}
	cfg.Devices = func(nodeID string) (DeviceSource, error) {
		s, err := nvidia.NewPureSim(nvidia.SimConfig{Shape: "dgxh100", NodeID: nodeID, Minors: &minors})
		if err != nil {
			return nil, err
		}
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
	testproc.Eventually(t, 15*time.Second, "registered with 8 GPUs", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.node != nil && len(srv.node.NodeResources.Devices) == 1 && len(srv.node.NodeResources.Devices[0].Instances) == 8
	})
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, in := range srv.node.NodeResources.Devices[0].Instances {
		want := "/dev/nvidia" + strconv.Itoa(minors[i])
		if in.Minor == nil {
			t.Errorf("GPU %d on the server: no minor, want %d", i, minors[i])
		} else if *in.Minor != minors[i] {
			t.Errorf("GPU %d on the server: minor %d, want %d", i, *in.Minor, minors[i])
		}
		if len(in.DevicePaths) != 1 || in.DevicePaths[0] != want {
			t.Errorf("GPU %d on the server: device paths %v, want [%s]", i, in.DevicePaths, want)
		}
	}
}
