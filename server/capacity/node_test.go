package capacity

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/drover/drover/api"
)

func testNode() *api.Node {
	return &api.Node{
		ID: "n1",
		NodeResources: &api.NodeResources{
			Cpu:            api.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory:         api.NodeMemoryResources{MemoryMB: 8192},
			Disk:           api.NodeDiskResources{DiskMB: 10000},
			MinDynamicPort: 20000, MaxDynamicPort: 20009,
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
				Instances: []*api.NodeDevice{{ID: "GPU-0", Healthy: true}, {ID: "GPU-1", Healthy: false}}}},
		},
		ReservedResources: &api.NodeReservedResources{
			Cpu:               api.NodeCpuResources{CpuShares: 500, ReservableCpuCores: []uint16{0}},
			Memory:            api.NodeMemoryResources{MemoryMB: 192},
			Disk:              api.NodeDiskResources{DiskMB: 1000},
			ReservedHostPorts: "22,20000-20001",
		},
	}
}

func TestNewNodeCapacity(t *testing.T) {
	c := NewNode(testNode())
	if c.CPU != 3500 || c.MemoryMB != 8000 || c.DiskMB != 9000 {
		t.Fatalf("capacity cpu %d mem %d disk %d, want 3500 8000 9000", c.CPU, c.MemoryMB, c.DiskMB)
	}
	if got := c.FreeCores(10); !reflect.DeepEqual(got, []uint16{1, 2, 3}) {
		t.Fatalf("free cores %v, want [1 2 3] (core 0 reserved by the node)", got)
	}
	if !c.PortBusy(22) || !c.PortBusy(20001) || c.PortBusy(20002) {
		t.Fatalf("reserved ports not busy or a free port busy")
	}
	bare := NewNode(&api.Node{})
	if bare.MinDynamicPort != api.DefaultMinDynamicPort || bare.MaxDynamicPort != api.DefaultMaxDynamicPort {
		t.Fatalf("default dynamic range %d-%d", bare.MinDynamicPort, bare.MaxDynamicPort)
	}
	if e := bare.Fits(&Vector{CPU: 1}); e == nil || e.Dimension != DimCPU {
		t.Fatalf("a node without resources fits cpu: %v", e)
	}
}

// Fits names each exhausted dimension with what was asked and what is free.
func TestFitsExplains(t *testing.T) {
	c := NewNode(testNode())
	c.Add(&Vector{CPU: 1000, MemoryMB: 1000, DiskMB: 1000, Cores: []uint16{1}, Ports: []int{8080, 20005}, Devices: []string{"GPU-0"}})
	cases := []struct {
		name string
		v    Vector
		want Exhausted
		text string
	}{
		{"cpu", Vector{CPU: 3000}, Exhausted{Dimension: DimCPU, Need: 3000, Free: 2500}, "cpu exhausted: need 3000, free 2500"},
		{"core count", Vector{NumCores: 3}, Exhausted{Dimension: DimCores, Need: 3, Free: 2}, "cores exhausted: need 3, free 2"},
		{"core collision", Vector{Cores: []uint16{1}}, Exhausted{Dimension: DimCores, ID: "1", Why: "collision"}, "cpu core 1 collision"},
		{"core twice", Vector{Cores: []uint16{2, 2}}, Exhausted{Dimension: DimCores, ID: "2", Why: "collision"}, "cpu core 2 collision"},
		{"memory", Vector{MemoryMB: 7001}, Exhausted{Dimension: DimMemory, Need: 7001, Free: 7000}, "memory exhausted: need 7001, free 7000"},
		{"disk", Vector{DiskMB: 8001}, Exhausted{Dimension: DimDisk, Need: 8001, Free: 8000}, "disk exhausted: need 8001, free 8000"},
		{"port used", Vector{Ports: []int{8080}}, Exhausted{Dimension: DimPorts, ID: "8080", Why: "collision"}, "port 8080 collision"},
		{"port reserved", Vector{Ports: []int{22}}, Exhausted{Dimension: DimPorts, ID: "22", Why: "is reserved on the node"}, "port 22 is reserved on the node"},
		{"port twice", Vector{Ports: []int{9000, 9000}}, Exhausted{Dimension: DimPorts, ID: "9000", Why: "collision"}, "port 9000 collision"},
		// 10 dynamic ports, 2 reserved, 1 used, 1 asked statically: 6 free.
		{"dynamic", Vector{Ports: []int{20009}, NumDynamicPorts: 7}, Exhausted{Dimension: DimDynamicPorts, Need: 7, Free: 6}, "dynamic ports exhausted: need 7, free 6"},
		{"device used", Vector{Devices: []string{"GPU-0"}}, Exhausted{Dimension: DimDevices, ID: "GPU-0", Why: "collision"}, "device GPU-0 collision"},
		{"device unknown", Vector{Devices: []string{"GPU-7"}}, Exhausted{Dimension: DimDevices, ID: "GPU-7", Why: "not on node"}, "device GPU-7 not on node"},
	}
	for _, tc := range cases {
		e := c.Fits(&tc.v)
		if e == nil {
			t.Errorf("%s: fits, want %+v", tc.name, tc.want)
			continue
		}
		if *e != tc.want || e.Error() != tc.text {
			t.Errorf("%s: got %+v (%q), want %+v (%q)", tc.name, *e, e.Error(), tc.want, tc.text)
		}
	}
	fit := []Vector{
		{CPU: 2500, MemoryMB: 7000, DiskMB: 8000},
		{NumCores: 2},
		{Ports: []int{20009}, NumDynamicPorts: 6},
		{Devices: []string{"GPU-1"}}, // unhealthy instances are the scheduler's concern, not the ledger's
	}
	for _, v := range fit {
		if e := c.Fits(&v); e != nil {
			t.Errorf("%+v does not fit: %v", v, e)
		}
	}
	// A node that reports no disk does not check disk.
	n := testNode()
	n.NodeResources.Disk.DiskMB, n.ReservedResources.Disk.DiskMB = 0, 0
	if e := NewNode(n).Fits(&Vector{DiskMB: 1 << 40}); e != nil {
		t.Errorf("disk checked on a node without disk: %v", e)
	}
}

func randVector(r *rand.Rand) Vector {
	v := Vector{CPU: r.Int64N(500), MemoryMB: r.Int64N(500), DiskMB: r.Int64N(500)}
	for range r.IntN(3) {
		v.Cores = append(v.Cores, uint16(r.IntN(4)))
	}
	for range r.IntN(4) {
		v.Ports = append(v.Ports, 19998+r.IntN(14))
	}
	for range r.IntN(2) {
		v.Devices = append(v.Devices, "GPU-"+strconv.Itoa(r.IntN(2)))
	}
	for range r.IntN(3) {
		g := r.IntN(2)
		v.Shares = append(v.Shares, Share{ID: "GPU-" + strconv.Itoa(g), Milli: 1 + r.IntN(600), MemoryMB: r.Int64N(30000),
			Mode: []string{api.ShareModeMPS, api.ShareModeTimeSlicing}[g]})
	}
	return v
}

type ledgerState struct {
	used Usage
	busy int
	fits []*Exhausted
}

func snapshot(c *Node, probes []Vector) ledgerState {
	s := ledgerState{used: c.Used(), busy: c.busyDynamic}
	// Copy the maps: Used shares them.
	cp := func(m map[int]int) map[int]int {
		if m == nil {
			return nil
		}
		o := map[int]int{}
		for k, v := range m {
			o[k] = v
		}
		return o
	}
	s.used.Ports = cp(s.used.Ports)
	if s.used.Cores != nil {
		o := map[uint16]int{}
		for k, v := range s.used.Cores {
			o[k] = v
		}
		s.used.Cores = o
	}
	if s.used.Devices != nil {
		o := map[string]int{}
		for k, v := range s.used.Devices {
			o[k] = v
		}
		s.used.Devices = o
	}
	if s.used.Shared != nil {
		o := map[string]*SharedUse{}
		for k, v := range s.used.Shared {
			cp := *v
			o[k] = &cp
		}
		s.used.Shared = o
	}
	for i := range probes {
		s.fits = append(s.fits, c.Fits(&probes[i]))
	}
	return s
}

// Sub is the exact inverse of Add, in any interleaving: after adding a
// random sequence and subtracting it in a random order, the ledger (usage
// and every Fits verdict) is what it was, overlapping IDs included.
func TestAddSubInverse(t *testing.T) {
	probes := []Vector{{CPU: 3500}, {NumCores: 3}, {MemoryMB: 8000}, {DiskMB: 9000}, {NumDynamicPorts: 8},
		{Ports: []int{20005}}, {Devices: []string{"GPU-0"}}, {Cores: []uint16{2}},
		{Shares: []Share{{ID: "GPU-0", Milli: 500, Mode: api.ShareModeMPS}}}, {Shares: []Share{{ID: "GPU-1", Milli: 900, MemoryMB: 40000, Mode: api.ShareModeTimeSlicing}}}}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		c := NewNode(testNode())
		base := randVector(r)
		c.Add(&base)
		before := snapshot(c, probes)
		vs := make([]Vector, 1+r.IntN(8))
		for i := range vs {
			vs[i] = randVector(r)
			c.Add(&vs[i])
		}
		for _, i := range r.Perm(len(vs)) {
			c.Sub(&vs[i])
		}
		if after := snapshot(c, probes); !reflect.DeepEqual(before, after) {
			t.Fatalf("seed %d: ledger changed by add+sub:\nbefore %+v\nafter  %+v", seed, before, after)
		}
		c.Sub(&base)
		if u := c.Used(); !reflect.DeepEqual(u, Usage{}) || c.busyDynamic != 2 {
			t.Fatalf("seed %d: empty ledger is %+v busy %d, want zero and the 2 reserved dynamic ports", seed, u, c.busyDynamic)
		}
	}
}

func TestAllocVector(t *testing.T) {
	r := &api.AllocatedResources{
		Tasks: map[string]*api.AllocatedTaskResources{
			"a": {Cpu: api.AllocatedCpuResources{CpuShares: 100, ReservedCores: []uint16{3}},
				Memory:   api.AllocatedMemoryResources{MemoryMB: 64},
				Networks: []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "x", Value: 20004}}}},
				Devices:  []*api.AllocatedDeviceResource{{DeviceIDs: []string{"GPU-0"}}}},
			"b": {Cpu: api.AllocatedCpuResources{CpuShares: 50}, Memory: api.AllocatedMemoryResources{MemoryMB: 32}},
		},
		Shared: api.AllocatedSharedResources{DiskMB: 300, Ports: []api.AllocatedPort{{Label: "http", Value: 8080}},
			Networks: []*api.NetworkResource{{ReservedPorts: []api.Port{{Label: "http", Value: 8080}, {Label: "unset"}}}}},
	}
	v := AllocVector(r)
	want := Vector{CPU: 150, MemoryMB: 96, DiskMB: 300, Cores: []uint16{3}, Ports: []int{8080, 20004}, Devices: []string{"GPU-0"}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %+v, want %+v", v, want)
	}
	if cpu, mem, disk := r.Comparable(); v.CPU != cpu || v.MemoryMB != mem || v.DiskMB != disk {
		t.Errorf("CPU, memory, disk %d, %d, %d; Comparable says %d, %d, %d", v.CPU, v.MemoryMB, v.DiskMB, cpu, mem, disk)
	}
	if v := AllocVector(nil); !reflect.DeepEqual(v, Vector{}) {
		t.Fatalf("nil resources: %+v", v)
	}
	var sum Vector
	sum.Add(&want)
	sum.Add(&Vector{CPU: 1, NumDynamicPorts: 2, NumCores: 1})
	if sum.CPU != 151 || sum.NumDynamicPorts != 2 || sum.NumCores != 1 || len(sum.Ports) != 2 {
		t.Fatalf("sum %+v", sum)
	}
}

func TestFreeCoresPreferring(t *testing.T) {
	n := &api.Node{
		NodeResources:     &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000, TotalCpuCores: 8}},
		ReservedResources: &api.NodeReservedResources{Cpu: api.NodeCpuResources{ReservableCpuCores: []uint16{6}}},
	}
	c := NewNode(n)
	c.Add(&Vector{Cores: []uint16{5}})
	// 5 is used, 6 reserved by the node, 9 not on it: skipped; then node order.
	got := c.FreeCoresPreferring(4, []uint16{5, 6, 9, 7, 4, 7})
	if want := []uint16{7, 4, 0, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := c.FreeCoresPreferring(2, nil); !reflect.DeepEqual(got, []uint16{0, 1}) {
		t.Fatalf("no preference: got %v, want [0 1]", got)
	}
}

// Shares of a device instance: whole asks need an untouched instance, a
// shared one takes shares of its mode only, within 1000 thousandths and
// its memory; Clone copies the shares; AllocVector reads them.
func TestSharesFit(t *testing.T) {
	n := testNode()
	mem := int64(81559)
	n.NodeResources.Devices[0].Attributes = map[string]*api.Attribute{"memory": {IntVal: &mem, Unit: "MiB"}}
	c := NewNode(n)
	c.Add(&Vector{Shares: []Share{{ID: "GPU-0", Milli: 600, MemoryMB: 40000, Mode: api.ShareModeMPS}}})
	for _, tc := range []struct {
		name string
		v    Vector
		want string // "" fits
	}{
		{"a whole ask of a shared instance", Vector{Devices: []string{"GPU-0"}}, "device GPU-0 collision"},
		{"the rest in the same mode", Vector{Shares: []Share{{ID: "GPU-0", Milli: 400, MemoryMB: 41559, Mode: api.ShareModeMPS}}}, ""},
		{"more than the rest", Vector{Shares: []Share{{ID: "GPU-0", Milli: 401, Mode: api.ShareModeMPS}}}, "device GPU-0 compute share exhausted"},
		{"more memory than the rest", Vector{Shares: []Share{{ID: "GPU-0", Milli: 100, MemoryMB: 41560, Mode: api.ShareModeMPS}}}, "device GPU-0 memory share exhausted"},
		{"another mode", Vector{Shares: []Share{{ID: "GPU-0", Milli: 100, Mode: api.ShareModeTimeSlicing}}}, "device GPU-0 is shared in mode mps"},
		{"two of the ask's own over the rest", Vector{Shares: []Share{{ID: "GPU-0", Milli: 300, Mode: api.ShareModeMPS}, {ID: "GPU-0", Milli: 300, Mode: api.ShareModeMPS}}}, "device GPU-0 compute share exhausted"},
		{"a share of an instance the ask takes whole", Vector{Devices: []string{"GPU-1"}, Shares: []Share{{ID: "GPU-1", Milli: 10, Mode: api.ShareModeMPS}}}, "device GPU-1 collision"},
		{"an instance not on the node", Vector{Shares: []Share{{ID: "GPU-9", Milli: 10, Mode: api.ShareModeMPS}}}, "device GPU-9 not on node"},
	} {
		got := ""
		if e := c.Fits(&tc.v); e != nil {
			got = e.Error()
		}
		if got != tc.want {
			t.Errorf("%s: Fits = %q, want %q", tc.name, got, tc.want)
		}
	}
	if m, mm := c.DeviceShareFree("GPU-0", api.ShareModeMPS); m != 400 || mm != 41559 {
		t.Errorf("free share of GPU-0 in mps = %d, %d MiB, want 400, 41559", m, mm)
	}
	if m, _ := c.DeviceShareFree("GPU-0", api.ShareModeTimeSlicing); m != 0 {
		t.Errorf("free share of GPU-0 in time-slicing = %d, want 0 (shared in mps)", m)
	}
	if !c.DeviceUsed("GPU-0") || c.DeviceUsed("GPU-1") {
		t.Error("DeviceUsed: a shared instance is used for whole asks, an untouched one is not")
	}
	d := c.Clone()
	d.Add(&Vector{Shares: []Share{{ID: "GPU-0", Milli: 400, Mode: api.ShareModeMPS}}})
	if m, _ := c.DeviceShareFree("GPU-0", api.ShareModeMPS); m != 400 {
		t.Errorf("a clone's share changed the original: %d free", m)
	}
	v := AllocVector(&api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {Devices: []*api.AllocatedDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-0", "GPU-1"}, Share: &api.AllocatedShare{Milli: 250, MemoryMB: 20000, Mode: api.ShareModeMPS}}}}}})
	want := []Share{{ID: "GPU-0", Milli: 250, MemoryMB: 20000, Mode: api.ShareModeMPS}, {ID: "GPU-1", Milli: 250, MemoryMB: 20000, Mode: api.ShareModeMPS}}
	if !reflect.DeepEqual(v.Shares, want) || v.Devices != nil {
		t.Errorf("AllocVector shares %+v devices %v, want %+v and no whole device", v.Shares, v.Devices, want)
	}
}
