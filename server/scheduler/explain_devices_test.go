package scheduler

import (
	"slices"
	"testing"

	"github.com/drover/drover/api"
)

// useGPUs gives the first n GPUs of node to a running alloc of another job.
func useGPUs(st *memState, nodeID string, n int) {
	var ids []string
	for _, nd := range st.nodes {
		if nd.ID == nodeID {
			for _, d := range nd.NodeResources.Devices[0].Instances[:n] {
				ids = append(ids, d.ID)
			}
		}
	}
	st.upsertAlloc(&api.Allocation{ID: "busy-" + nodeID, Namespace: "default", JobID: "busy", NodeID: nodeID, TaskGroup: "g",
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"t": {Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "A100-SXM4-80GB", DeviceIDs: ids}}}}}})
}

func TestDeviceShortfallNamesBestNode(t *testing.T) {
	st := newMemState()
	st.addNode(dgxLike("a"))
	st.addNode(dgxLike("b"))
	st.addNode(pcieLike("small")) // 40 GiB GPUs: never match
	useGPUs(st, "node-a", 7)
	useGPUs(st, "node-b", 6)
	mem := &api.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "80 GiB"}
	node, _, res := placedDevices(t, st, gpuJob("big", 4, mem))
	if node != "" {
		t.Fatalf("placed on %s, want failure", node)
	}
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil {
		t.Fatal("no failure metric")
	}
	want := []string{"needs 4 nvidia/gpu with memory >= 80 GiB; node b has 2 free"}
	if !slices.Equal(m.DeviceShortfalls, want) {
		t.Errorf("DeviceShortfalls = %q, want %q", m.DeviceShortfalls, want)
	}
}

func TestDeviceShortfallNoneFree(t *testing.T) {
	st := newMemState()
	st.addNode(pcieLike("small"))
	mem := &api.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "80 GiB"}
	_, _, res := placedDevices(t, st, gpuJob("big", 1, mem))
	m := res.Eval.FailedTGAllocs["web"]
	want := []string{"needs 1 nvidia/gpu with memory >= 80 GiB; no node has a matching one free"}
	if m == nil || !slices.Equal(m.DeviceShortfalls, want) {
		t.Errorf("metric = %+v, want DeviceShortfalls %q", m, want)
	}
}

// TestUnhealthyDevicesNotUsed: a GPU marked unhealthy by the client's
// fingerprint gets no new work, and the count of free devices drops.
func TestUnhealthyDevicesNotUsed(t *testing.T) {
	st := newMemState()
	n := dgxLike("dgx")
	for _, i := range []int{1, 3} {
		in := n.NodeResources.Devices[0].Instances[i]
		in.Healthy, in.HealthDescription = false, "XID 79 critical error"
	}
	st.addNode(n)
	_, ids, _ := placedDevices(t, st, gpuJob("six", 6))
	for _, id := range ids {
		if id == "dgx-GPU-1" || id == "dgx-GPU-3" {
			t.Fatalf("got %v, which includes an unhealthy GPU", ids)
		}
	}
	node, _, res := placedDevices(t, st, gpuJob("one", 1))
	if node != "" {
		t.Fatalf("a 7th GPU was placed on %s; only 6 are healthy", node)
	}
	if m := res.Eval.FailedTGAllocs["web"]; m == nil || len(m.DeviceShortfalls) != 1 {
		t.Errorf("metric = %+v, want one device shortfall line", m)
	}
}

// TestMIGProfileConstraint schedules onto MIG instances by profile, with
// the attribute names of agent/fingerprint/nvidia.
func TestMIGProfileConstraint(t *testing.T) {
	st := newMemState()
	n := testNode("mig", "dc1", 64000, 512000)
	var inst []*api.NodeDevice
	for _, id := range []string{"MIG-1", "MIG-2", "MIG-3"} {
		inst = append(inst, &api.NodeDevice{ID: id, Healthy: true})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "mig", Name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
		Instances: inst, Attributes: map[string]*api.Attribute{
			"memory": {IntVal: i64(10240), Unit: "MiB"}, "mig_profile": {StringVal: str("1g.10gb")},
			"compute_capability": {StringVal: str("9.0")},
		}}}
	st.addNode(n)
	j := gpuJob("mig", 2, &api.Constraint{LTarget: "${device.attr.mig_profile}", Operand: "=", RTarget: "1g.10gb"},
		&api.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "10 GiB"})
	j.TaskGroups[0].Tasks[0].Resources.Devices[0].Name = "nvidia/mig"
	node, ids, _ := placedDevices(t, st, j)
	if node != "mig" || len(ids) != 2 {
		t.Fatalf("placed on %q with %v, want 2 MIG instances on mig", node, ids)
	}
	j2 := gpuJob("mig2", 1, &api.Constraint{LTarget: "${device.attr.mig_profile}", Operand: "=", RTarget: "3g.40gb"})
	j2.TaskGroups[0].Tasks[0].Resources.Devices[0].Name = "nvidia/mig"
	if node, _, _ := placedDevices(t, st, j2); node != "" {
		t.Fatalf("a 3g.40gb ask was placed on %q", node)
	}
}
