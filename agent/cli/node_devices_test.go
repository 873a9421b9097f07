package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestPrintDevices(t *testing.T) {
	mem := int64(81920)
	link := func(kind string, level, nv int) api.DeviceLink {
		return api.DeviceLink{Kind: kind, Level: level, NVLinks: nv}
	}
	n := &api.Node{ID: "n1", NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3",
		Attributes: map[string]*api.Attribute{"memory": {IntVal: &mem, Unit: "MiB"}},
		Instances: []*api.NodeDevice{
			{ID: "GPU-a", Healthy: true, Locality: &api.NodeDeviceLocality{PciBusID: "00000000:18:00.0"},
				Links: map[string]api.DeviceLink{"GPU-b": link("nvlink", 0, 18), "GPU-c": link("system", 3, 0)}},
			{ID: "GPU-b", Healthy: true, Locality: &api.NodeDeviceLocality{PciBusID: "00000000:2A:00.0"},
				Links: map[string]api.DeviceLink{"GPU-c": link("pcie-switch", 1, 0)}},
			{ID: "GPU-c", Healthy: false, HealthDescription: "XID 79 critical error", Locality: &api.NodeDeviceLocality{NUMANode: 1}},
		},
	}}}}
	allocs := []*api.Allocation{{ID: "0123456789", DesiredStatus: "run", ClientStatus: "running",
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"train": {Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", DeviceIDs: []string{"GPU-b"}}}},
		}}}}
	var b bytes.Buffer
	printDevices(&b, n, allocs)
	out := b.String()
	for _, want := range []string{
		"nvidia/gpu/NVIDIA H100 80GB HBM3", "memory = 81920 MiB",
		"GPU-b", "01234567", "UNHEALTHY: XID 79 critical error", "00000000:18:00.0",
		"Topology", "NV18", "PIX", "SYS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	printDeviceSummary(&b, n, allocs)
	if got, want := strings.TrimSpace(b.String()), "Devices: 3 nvidia/gpu/NVIDIA H100 80GB HBM3 (2 healthy, 1 in use)"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}

func TestMetricLinesDeviceShortfall(t *testing.T) {
	m := &api.AllocMetric{NodesEvaluated: 2, NodesExhausted: 2, DimensionExhausted: map[string]int{"devices: nvidia/gpu": 2},
		DeviceShortfalls: []string{"needs 4 nvidia/gpu with memory >= 80 GiB; node x has 2 free"}}
	out := strings.Join(metricLines(m), "\n")
	if want := "  * Devices: needs 4 nvidia/gpu with memory >= 80 GiB; node x has 2 free"; !strings.Contains(out, want) {
		t.Errorf("metric lines:\n%s\nwant %q", out, want)
	}
}

func TestMetricLinesPending(t *testing.T) {
	m := &api.AllocMetric{NodesEvaluated: 1, NodesExhausted: 1, DimensionExhausted: map[string]int{"devices: nvidia/gpu": 1},
		DeviceShortfalls: []string{"needs 4 nvidia/gpu; node g1 has 2 free"},
		Reasons: []api.PendingReason{
			{Kind: api.PendingQuota, Queue: "team-a", Message: "queue team-a is at its limit: gpu 16 of 16 used, 4 more asked"},
			{Kind: api.PendingDevices, Need: 4, Have: 2, Node: "g1", Message: "needs 4 nvidia/gpu on one node; largest free set is 2 on node g1"}},
		QuotaExhausted: []string{"queue team-a: gpu 16 of 16 used, 4 more asked"},
		Counterfactuals: []api.Counterfactual{
			{Kind: api.CounterPreempt, JobID: "y", Priority: 30, Message: "would run on node g1 if job y (priority 30) were preempted; not done: preemption is disabled for batch jobs"},
			{Kind: api.CounterJobEnds, JobID: "z", Message: "would run on node g1 when batch job z (priority 40) ends"}},
	}
	got := strings.Join(metricLines(m), "\n")
	want := `  * Dimension "devices: nvidia/gpu" exhausted on 1 nodes
  Why pending:
    - queue team-a is at its limit: gpu 16 of 16 used, 4 more asked
    - needs 4 nvidia/gpu on one node; largest free set is 2 on node g1
  Would run:
    - on node g1 if job y (priority 30) were preempted; not done: preemption is disabled for batch jobs
    - or on node g1 when batch job z (priority 40) ends`
	if !strings.HasSuffix(got, want) || strings.Contains(got, "Quota limit hit") || strings.Contains(got, "* Devices:") {
		t.Errorf("metric lines:\n%s\nwant them to end with\n%s\n(and no duplicate quota or device lines)", got, want)
	}
}

// A driver failure prints the scheduler's driver reason and none of the
// computed-class hashes ("v1:...") the metric carries for the API.
func TestMetricLinesDriverNoClassHash(t *testing.T) {
	m := &api.AllocMetric{NodesEvaluated: 2, NodesInPool: 2, NodesFiltered: 1, NodesExhausted: 1,
		ClassFiltered:      map[string]int{"v1:8a1c9e": 1},
		ClassExhausted:     map[string]int{"v1:77f0aa": 1},
		ConstraintFiltered: map[string]int{"missing drivers": 1},
		Reasons: []api.PendingReason{{Kind: api.PendingDriver, Driver: "containerd", Count: 1,
			Message: `driver "containerd" is not healthy on 1 node: containerd socket /run/containerd/containerd.sock not found`}},
	}
	got := strings.Join(metricLines(m), "\n")
	want := `  * Constraint "missing drivers": 1 nodes excluded by filter
  Why pending:
    - driver "containerd" is not healthy on 1 node: containerd socket /run/containerd/containerd.sock not found`
	if got != want || strings.Contains(got, "v1:") {
		t.Errorf("metric lines:\n%s\nwant\n%s", got, want)
	}
}
