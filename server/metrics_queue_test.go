package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// gaugeValues gathers reg: name{label=value,...} -> value.
func gaugeValues(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetGauge() == nil {
				continue
			}
			k := mf.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					k += ","
				}
				k += l.GetName() + "=" + l.GetValue()
			}
			out[k+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestQueueUsageGauges: a running GPU alloc's usage grows with the clock;
// once its node is lost it stops at the server's stamp of the loss. The
// queue status hook feeds the allocated/guaranteed/fair-share gauges.
func TestQueueUsageGauges(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	s := newTestServer(t, withClock(clk), func(c *Config) { c.Registry = reg })
	n := testNode("a", 4000, 8192) // 4 cores: 1000 MHz each
	n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
		Instances: []*api.NodeDevice{{ID: "g0", Healthy: true}, {ID: "g1", Healthy: true}}}}
	registerNode(t, s, n)
	if _, err := s.Tenancy().UpsertQueues(context.Background(), []*api.Queue{{Name: "team-a", Guaranteed: &api.QueueResources{GPUs: 1}}}); err != nil {
		t.Fatal(err)
	}
	j := testJob("train", 1, 2000, 1024)
	j.Queue = "team-a"
	j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 2}}
	registerJob(t, s, j)
	al := waitLive(t, s, "train", 1)[0]

	started := clk.Now().Add(-time.Hour)
	u := &api.Allocation{ID: al.ID, ClientStatus: api.AllocClientStatusRunning,
		TaskStates: map[string]*api.TaskState{"srv": {State: api.TaskStateRunning, StartedAt: started}}}
	if _, err := s.Nodes().UpdateAllocsFromClient(context.Background(), "a", "secret-a", []*api.Allocation{u}); err != nil {
		t.Fatal(err)
	}
	const gpuKey = "drover_queue_usage_gpu_seconds{model=nvidia/gpu/H100,queue=team-a}"
	if got := gaugeValues(t, reg); got[gpuKey] != 2*3600 || got["drover_queue_usage_cpu_core_seconds{queue=team-a}"] != 2*3600 ||
		got["drover_queue_usage_memory_gib_seconds{queue=team-a}"] != 3600 ||
		got["drover_queue_allocated_gpus{model=nvidia/gpu/H100,queue=team-a}"] != 2 || got["drover_queue_allocated_cpu{queue=team-a}"] != 2000 {
		t.Fatalf("after an hour running: %v", got)
	}
	clk.Advance(30 * time.Minute)
	if got := gaugeValues(t, reg)[gpuKey]; got != 2*5400 {
		t.Fatalf("after 90 minutes: %v GPU-seconds, want %v", got, 2*5400)
	}
	if err := s.nodes.down(context.Background(), "a", "test"); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "alloc lost", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, al.ID)
		return a != nil && a.ClientStatus == api.AllocClientStatusLost, err
	})
	clk.Advance(time.Hour)
	if got := gaugeValues(t, reg)[gpuKey]; got != 2*5400 {
		t.Errorf("an hour after the loss: %v GPU-seconds, want %v (stopped at the loss)", got, 2*5400)
	}

	// Without a hook: the state's queue statuses. The lost alloc holds
	// nothing.
	got := gaugeValues(t, reg)
	if v, ok := got["drover_queue_guaranteed_gpus{model=,queue=team-a}"]; !ok || v != 1 {
		t.Errorf("guaranteed GPUs of team-a = %v (present %v), want 1", v, ok)
	}
	if v, ok := got["drover_queue_allocated_gpus{model=,queue=team-a}"]; !ok || v != 0 {
		t.Errorf("allocated GPUs of team-a = %v (present %v), want 0", v, ok)
	}
	// The fair share is the leader's, as its workers last computed it.
	v, ok := got["drover_queue_fair_share_gpus{model=,queue=team-a}"]
	if fs := s.Tenancy().QueueFairShare("team-a"); fs == nil && ok {
		t.Error("a fair-share gauge without a fair share")
	} else if fs != nil && (!ok || v != float64(fs.GPUs)) {
		t.Errorf("fair-share GPUs of team-a = %v (present %v), want %v", v, ok, fs.GPUs)
	}

	s.queueStatus = func() ([]*api.QueueStatus, error) {
		return []*api.QueueStatus{{Queue: &api.Queue{Name: "team-a", Guaranteed: &api.QueueResources{GPUs: 4}},
			Allocated: api.QueueResources{GPUs: 2, GPUsByModel: map[string]float64{"nvidia/gpu/H100": 2}, CPU: 2000, MemoryMB: 1024},
			FairShare: &api.QueueResources{GPUs: 3}}}, nil
	}
	got = gaugeValues(t, reg)
	for k, want := range map[string]float64{
		"drover_queue_allocated_gpus{model=,queue=team-a}": 2, "drover_queue_allocated_gpus{model=nvidia/gpu/H100,queue=team-a}": 2,
		"drover_queue_allocated_cpu{queue=team-a}": 2000, "drover_queue_allocated_memory{queue=team-a}": 1024,
		"drover_queue_guaranteed_gpus{model=,queue=team-a}": 4, "drover_queue_fair_share_gpus{model=,queue=team-a}": 3,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
}
