package scheduler

import (
	"fmt"
	"slices"
	"testing"

	"github.com/drover/drover/api"
)

func i64(v int64) *int64   { return &v }
func str(v string) *string { return &v }

// gpuNode builds a node with 8 GPUs; link(i, j) gives the link level
// between GPU-i and GPU-j, numa(i) the NUMA node.
func gpuNode(name string, memMiB int64, cc string, link func(i, j int) int, numa func(i int) int) *api.Node {
	n := testNode(name, "dc1", 64000, 512000)
	var inst []*api.NodeDevice
	for i := 0; i < 8; i++ {
		d := &api.NodeDevice{ID: fmt.Sprintf("%s-GPU-%d", name, i), Healthy: true,
			Locality: &api.NodeDeviceLocality{NUMANode: numa(i)}, Links: map[string]api.DeviceLink{}}
		inst = append(inst, d)
	}
	kinds := []string{api.LinkNVLink, api.LinkPCIeSwitch, api.LinkPCIeHost, api.LinkSystem}
	for i, a := range inst {
		for j, b := range inst {
			if i != j {
				l := link(i, j)
				a.Links[b.ID] = api.DeviceLink{Kind: kinds[l], Level: l}
			}
		}
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "A100-SXM4-80GB", Instances: inst,
		Attributes: map[string]*api.Attribute{
			"memory":             {IntVal: i64(memMiB), Unit: "MiB"},
			"compute_capability": {StringVal: str(cc)},
		},
	}}
	return n
}

// dgxLike: GPUs 1,3,5,7 are all NVLink-connected; other pairs go over
// the PCIe host bridge (same NUMA node) or the system interconnect.
func dgxLike(name string) *api.Node {
	numa := func(i int) int { return i / 4 }
	return gpuNode(name, 81920, "8.0", func(i, j int) int {
		if i%2 == 1 && j%2 == 1 {
			return 0
		}
		if numa(i) == numa(j) {
			return 2
		}
		return 3
	}, numa)
}

// pcieLike: switches {0,1} {2,3} on NUMA 0, {4,5} {6,7} on NUMA 1.
func pcieLike(name string) *api.Node {
	numa := func(i int) int { return i / 4 }
	return gpuNode(name, 40960, "8.6", func(i, j int) int {
		switch {
		case i/2 == j/2:
			return 1
		case numa(i) == numa(j):
			return 2
		}
		return 3
	}, numa)
}

func gpuJob(id string, count uint64, cons ...*api.Constraint) *api.Job {
	j := testJob(id, api.JobTypeBatch, 1, 1000, 1024)
	j.Datacenters = []string{"dc1"}
	j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: count, Constraints: cons}}
	return j
}

// placedDevices schedules the job, applies the plan and returns the node
// name and the sorted device IDs given to the one alloc.
func placedDevices(t *testing.T, st *memState, job *api.Job) (string, []string, *Result) {
	t.Helper()
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	for _, list := range res.Plan.NodeAllocation {
		for _, a := range list {
			ids := slices.Clone(a.AllocatedResources.Tasks["server"].Devices[0].DeviceIDs)
			slices.Sort(ids)
			return a.NodeName, ids, res
		}
	}
	return "", nil, res
}

func TestDevicesNVLinkTopology(t *testing.T) {
	st := newMemState()
	st.addNode(dgxLike("dgx"))
	mem := &api.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "40 GiB"}
	_, ids, _ := placedDevices(t, st, gpuJob("train1", 4, mem))
	want := []string{"dgx-GPU-1", "dgx-GPU-3", "dgx-GPU-5", "dgx-GPU-7"}
	if !slices.Equal(ids, want) {
		t.Fatalf("first job got %v, want the all-NVLink set %v", ids, want)
	}
	_, ids, _ = placedDevices(t, st, gpuJob("train2", 4, mem))
	want = []string{"dgx-GPU-0", "dgx-GPU-2", "dgx-GPU-4", "dgx-GPU-6"}
	if !slices.Equal(ids, want) {
		t.Fatalf("second job got %v, want the other four %v", ids, want)
	}
	job3 := gpuJob("train3", 4, mem)
	node, _, res := placedDevices(t, st, job3)
	if node != "" {
		t.Fatalf("third job placed on %s, want failure", node)
	}
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil || m.DimensionExhausted["devices: nvidia/gpu"] != 1 {
		t.Fatalf("metric = %+v, want devices: nvidia/gpu exhausted on 1 node", m)
	}
	got := ExplainGroup(job3.TaskGroups[0], m)
	if want := "web: needs 4 nvidia/gpu with memory >= 40 GiB; 1 alloc unplaced; 1 nodes evaluated: 1 exhausted (devices: nvidia/gpu: 1)"; got != want {
		t.Errorf("ExplainGroup = %q, want %q", got, want)
	}
	if res.Blocked == nil {
		t.Error("no blocked eval for the unplaced GPU job")
	}
}

func TestDevicesPCIeTopology(t *testing.T) {
	st := newMemState()
	st.addNode(pcieLike("pcie"))
	_, ids, _ := placedDevices(t, st, gpuJob("pair", 2))
	if want := []string{"pcie-GPU-0", "pcie-GPU-1"}; !slices.Equal(ids, want) {
		t.Fatalf("pair got %v, want same-switch %v", ids, want)
	}
	// Four more: {4..7} stay on one NUMA node (worst link pcie-host)
	// where {2,3,4,5} would cross the system interconnect.
	_, ids, _ = placedDevices(t, st, gpuJob("quad", 4))
	if want := []string{"pcie-GPU-4", "pcie-GPU-5", "pcie-GPU-6", "pcie-GPU-7"}; !slices.Equal(ids, want) {
		t.Fatalf("quad got %v, want one NUMA node %v", ids, want)
	}
}

func TestDevicesConstraintsAndTightFit(t *testing.T) {
	st := newMemState()
	st.addNode(pcieLike("small")) // 40 GiB, cc 8.6
	st.addNode(dgxLike("big"))    // 80 GiB, cc 8.0
	// 80 GiB needed: only big qualifies.
	node, _, _ := placedDevices(t, st, gpuJob("mem", 1, &api.Constraint{LTarget: "${device.attr.memory}", Operand: ">", RTarget: "64 GiB"}))
	if node != "big" {
		t.Fatalf("memory > 64 GiB placed on %q, want big", node)
	}
	// compute capability >= 8.5 compares as a version: only small.
	node, _, _ = placedDevices(t, st, gpuJob("cc", 2, &api.Constraint{LTarget: "${device.attr.compute_capability}", Operand: ">=", RTarget: "8.5"}))
	if node != "small" {
		t.Fatalf("compute_capability >= 8.5 placed on %q, want small", node)
	}
	// Model in the name.
	j := gpuJob("model", 1)
	j.TaskGroups[0].Tasks[0].Resources.Devices[0].Name = "nvidia/gpu/H100"
	if node, _, _ := placedDevices(t, st, j); node != "" {
		t.Fatalf("H100 ask placed on %q, want none", node)
	}
	// Tight fit: big has 7 free, small 6; a 6-GPU ask fills small exactly.
	node, ids, _ := placedDevices(t, st, gpuJob("six", 6))
	if node != "small" || len(ids) != 6 {
		t.Fatalf("six placed on %q with %v, want small (tight fit)", node, ids)
	}
}

func TestBestDeviceSetGreedyLargeNode(t *testing.T) {
	// 40 devices, ask 10: beyond the exhaustive bound, the greedy search
	// must still find the all-NVLink group of ten.
	var devs []*api.NodeDevice
	for i := 0; i < 40; i++ {
		devs = append(devs, &api.NodeDevice{ID: fmt.Sprintf("d%02d", i), Links: map[string]api.DeviceLink{}})
	}
	for i, a := range devs {
		for j, b := range devs {
			if i != j && i/10 == 2 && j/10 == 2 {
				a.Links[b.ID] = api.DeviceLink{Level: 0}
			}
		}
	}
	set, cost := bestDeviceSet(devs, 10)
	if cost.worst != 0 || len(set) != 10 || set[0].ID != "d20" {
		t.Fatalf("got worst %d, first %s, want the d20..d29 NVLink group", cost.worst, set[0].ID)
	}
}

// TestDevicesKeepWholeNodesFree: among many 8-GPU nodes, a 2-GPU ask goes
// to the node with exactly 2 free, keeping the empty nodes whole.
func TestDevicesKeepWholeNodesFree(t *testing.T) {
	st := newMemState()
	for i := 0; i < 10; i++ {
		st.addNode(pcieLike(fmt.Sprintf("n%d", i)))
	}
	busy := "node-n7"
	var ids []string
	for _, n := range st.nodes {
		if n.ID == busy {
			for _, d := range n.NodeResources.Devices[0].Instances[:6] {
				ids = append(ids, d.ID)
			}
		}
	}
	st.upsertAlloc(&api.Allocation{ID: "other", Namespace: "default", JobID: "other", NodeID: busy, TaskGroup: "g",
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"t": {Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "A100-SXM4-80GB", DeviceIDs: ids}}}}}})
	node, got, _ := placedDevices(t, st, gpuJob("pair", 2))
	if node != "n7" || !slices.Equal(got, []string{"n7-GPU-6", "n7-GPU-7"}) {
		t.Fatalf("pair placed on %s with %v, want n7 with its two free GPUs", node, got)
	}
}

// TestBestDeviceSetPrefersOneNUMANode: with equal link levels everywhere,
// the set that stays on one NUMA node wins.
func TestBestDeviceSetPrefersOneNUMANode(t *testing.T) {
	var devs []*api.NodeDevice
	for i := 0; i < 4; i++ {
		devs = append(devs, &api.NodeDevice{ID: fmt.Sprintf("g%d", i), Locality: &api.NodeDeviceLocality{NUMANode: []int{0, 1, 1, 0}[i]}})
	}
	set, _ := bestDeviceSet(devs, 2)
	if numaOf(set[0]) != numaOf(set[1]) {
		t.Fatalf("got %s,%s on NUMA %d and %d, want one NUMA node", set[0].ID, set[1].ID, numaOf(set[0]), numaOf(set[1]))
	}
}

func TestDeviceAffinityPicksPreferredModel(t *testing.T) {
	st := newMemState()
	st.addNode(pcieLike("p"))
	d := dgxLike("d")
	d.NodeResources.Devices[0].Name = "H100"
	st.addNode(d)
	for _, want := range []string{"H100", "A100-SXM4-80GB"} {
		j := gpuJob("aff-"+want, 1)
		j.TaskGroups[0].Tasks[0].Resources.Devices[0].Affinities = []*api.Affinity{{LTarget: "${device.model}", Operand: "=", RTarget: want, Weight: 100}}
		node, _, _ := placedDevices(t, st, j)
		wantNode := map[string]string{"H100": "d", "A100-SXM4-80GB": "p"}[want]
		if node != wantNode {
			t.Errorf("affinity for %s placed on %q, want %q", want, node, wantNode)
		}
	}
}

// TestDevicesKeepIslandsWhole: on a node with NVLink quads {0,2,4,6} and
// {1,3,5,7}, the sequence 2, 1, 4 leaves a whole quad for the 4 (a 1-GPU
// pick taking the lowest free ID would break it).
func TestDevicesKeepIslandsWhole(t *testing.T) {
	st := newMemState()
	st.addNode(quadNode("q"))
	for _, c := range []struct {
		n    uint64
		want []string
	}{
		{2, []string{"q-GPU-0", "q-GPU-2"}},
		{1, []string{"q-GPU-4"}}, // the used quad, not GPU-1 of the whole one
		{4, []string{"q-GPU-1", "q-GPU-3", "q-GPU-5", "q-GPU-7"}},
		{1, []string{"q-GPU-6"}},
	} {
		_, ids, _ := placedDevices(t, st, gpuJob(fmt.Sprintf("j%d-%d", c.n, len(st.allocs)), c.n))
		if !slices.Equal(ids, c.want) {
			t.Fatalf("ask of %d got %v, want %v", c.n, ids, c.want)
		}
	}
}

// TestDevicesKeepSocketsWhole: on an NVSwitch node with two sockets,
// single GPUs fill one socket so a 4-GPU ask gets the other whole.
func TestDevicesKeepSocketsWhole(t *testing.T) {
	st := newMemState()
	st.addNode(nvswitchNode("x"))
	for _, c := range []struct {
		n    uint64
		want []string
	}{
		{1, []string{"x-GPU-0"}},
		{1, []string{"x-GPU-1"}},
		{4, []string{"x-GPU-4", "x-GPU-5", "x-GPU-6", "x-GPU-7"}},
		{2, []string{"x-GPU-2", "x-GPU-3"}},
	} {
		_, ids, _ := placedDevices(t, st, gpuJob(fmt.Sprintf("j%d-%d", c.n, len(st.allocs)), c.n))
		if !slices.Equal(ids, c.want) {
			t.Fatalf("ask of %d got %v, want %v", c.n, ids, c.want)
		}
	}
}

// TestReservedCoresNearGPUs: reserved cores come from the NUMA node of
// the GPUs the alloc gets, while that node has free cores.
func TestReservedCoresNearGPUs(t *testing.T) {
	st := newMemState()
	n := nvswitchNode("x")
	n.NodeResources.Cpu.TotalCpuCores = 10
	n.NodeResources.Cpu.NUMA = []api.NodeNUMANode{{ID: 0, Cores: []uint16{0, 1, 2, 3, 4}}, {ID: 1, Cores: []uint16{5, 6, 7, 8, 9}}}
	st.addNode(n)
	placedDevices(t, st, gpuJob("one", 1)) // GPU-0: socket 0
	for _, c := range []struct {
		gpus, cores int
		want        []uint16
	}{
		{4, 3, []uint16{5, 6, 7}},    // GPUs 4-7 on socket 1
		{2, 2, []uint16{0, 1}},       // GPUs 1-2 on socket 0
		{1, 4, []uint16{2, 3, 4, 8}}, // GPU 3: socket 0 has three cores left
	} {
		job := gpuJob(fmt.Sprintf("c%d", c.gpus), uint64(c.gpus))
		job.TaskGroups[0].Tasks[0].Resources.Cores = c.cores
		st.upsertJob(job)
		res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		st.apply(res.Plan)
		var got []uint16
		for _, l := range res.Plan.NodeAllocation {
			got = l[0].AllocatedResources.Tasks["server"].Cpu.ReservedCores
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%d GPUs + %d cores: got cores %v, want %v", c.gpus, c.cores, got, c.want)
		}
	}
}
