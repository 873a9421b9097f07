package client

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

func TestNextGPUUsage(t *testing.T) {
	busy := &api.GPUUsage{UtilPercent: 80, SampledAt: 100}
	idle := &api.GPUUsage{UtilPercent: 0, SampledAt: 100, IdleSince: 50}
	cases := []struct {
		name      string
		prev      *api.GPUUsage
		util      float64
		mem       int64
		send      bool
		idleSince int64
	}{
		{"first reading busy", nil, 80, 0, true, 0},
		{"first reading idle", nil, 0.5, 0, true, 200},
		{"busy, small change", busy, 85, 0, false, 0},
		{"busy, big change", busy, 50, 0, true, 0},
		{"busy, memory grew", busy, 80, 4096, true, 0},
		{"turns idle", busy, 0, 0, true, 200},
		{"stays idle keeps since", idle, 0.2, 0, false, 50},
		{"turns busy", idle, 30, 0, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &api.GPUUsage{GPUs: 1, UtilPercent: c.util, MemoryUsedMiB: c.mem, SampledAt: 200}
			if got := nextGPUUsage(c.prev, u); got != c.send {
				t.Errorf("send = %v, want %v", got, c.send)
			}
			if u.IdleSince != c.idleSince {
				t.Errorf("IdleSince = %d, want %d", u.IdleSince, c.idleSince)
			}
		})
	}
}

func TestSimGPUUtil(t *testing.T) {
	job := &api.Job{TaskGroups: []*api.TaskGroup{{Name: "nb", Tasks: []*api.Task{{Name: "a"}, {Name: "b"}}}}}
	a := &api.Allocation{Job: job, TaskGroup: "nb"}
	if got := simGPUUtil(a); got != 100 {
		t.Errorf("no env: %v, want 100 (busy)", got)
	}
	job.TaskGroups[0].Tasks[1].Env = map[string]string{api.SimGPUUtilEnv: "0"}
	if got := simGPUUtil(a); got != 0 {
		t.Errorf("%s=0: %v, want 0", api.SimGPUUtilEnv, got)
	}
	job.TaskGroups[0].Tasks[0].Env = map[string]string{api.SimGPUUtilEnv: "40"}
	if got := simGPUUtil(a); got != 40 {
		t.Errorf("40 and 0: %v, want the largest, 40", got)
	}
}

// gpuDevices is fakeDevices whose GPU reports a settable utilization.
type gpuDevices struct {
	fakeDevices
	util atomic.Int64
}

func (g *gpuDevices) GPUUsage(ids []string) (map[string]GPUSample, bool, error) {
	out := map[string]GPUSample{}
	for _, id := range ids {
		out[id] = GPUSample{UtilPercent: float64(g.util.Load()), MemoryUsedMiB: 2048}
	}
	return out, false, nil
}

// lastGPUUsage is the latest GPU usage the server got for an alloc.
func (f *fakeServer) lastGPUUsage(id string) *api.GPUUsage {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.updates) - 1; i >= 0; i-- {
		for _, a := range f.updates[i] {
			if a.ID == id && a.GPUUsage != nil {
				return a.GPUUsage
			}
		}
	}
	return nil
}

// TestGPUUsageReported: a running alloc's GPU reading reaches the server
// with its alloc updates: idle (with IdleSince) at 0%, busy again at 80%.
func TestGPUUsageReported(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t.TempDir(), srv.addr())
	cfg.GPUSampleInterval = 10 * time.Millisecond
	fd := &gpuDevices{fakeDevices: fakeDevices{healthy: true, trigger: make(chan struct{})}}
	cfg.Devices = func(nodeID string) (DeviceSource, error) { fd.nodeID = nodeID; return fd, nil }
	c := startClient(t, cfg)
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	a := testAlloc(c.NodeID(), "dddddddd-0000-4000-8000-000000000001", nil)
	a.AllocatedResources = &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"web": {
		Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-" + c.NodeID()[:8]}}}}}}
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "idle GPU reported", func() bool {
		u := srv.lastGPUUsage(a.ID)
		return u != nil && u.GPUs == 1 && u.UtilPercent == 0 && u.IdleSince != 0 && u.MemoryUsedMiB == 2048
	})
	fd.util.Store(80)
	testproc.Eventually(t, 15*time.Second, "busy GPU reported", func() bool {
		u := srv.lastGPUUsage(a.ID)
		return u != nil && u.UtilPercent == 80 && u.IdleSince == 0
	})
}
