package api

import (
	"reflect"
	"testing"
)

// An alloc's queue holding counts task CPU and memory and GPU device IDs
// (by vendor/type/name); other devices don't count; Add drops models at
// zero; Exceeds treats zero scalars as no cap and listed models as caps.
func TestQueueResources(t *testing.T) {
	a := &Allocation{AllocatedResources: &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{
		"a": {Cpu: AllocatedCpuResources{CpuShares: 500}, Memory: AllocatedMemoryResources{MemoryMB: 256, MemoryMaxMB: 1024},
			Devices: []*AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"0", "1"}},
				{Vendor: "x", Type: "fpga", Name: "f", DeviceIDs: []string{"9"}}}},
		"b": {Cpu: AllocatedCpuResources{CpuShares: 100}, Memory: AllocatedMemoryResources{MemoryMB: 64}},
	}}}
	u := a.QueueUsage()
	want := QueueResources{GPUs: 2, GPUsByModel: map[string]float64{"nvidia/gpu/H100": 2}, CPU: 600, MemoryMB: 320}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	sum := QueueResources{}
	sum.Add(u, 1)
	sum.Add(u, 1)
	if over := sum.Exceeds(&QueueResources{GPUs: 4, CPU: 1000, GPUsByModel: map[string]float64{"nvidia/gpu/H100": 3, "nvidia/gpu/A100": 0}}); !reflect.DeepEqual(over,
		[]string{"gpu nvidia/gpu/H100 4 of 3", "cpu 1200 of 1000 MHz"}) {
		t.Errorf("exceeds %v", over)
	}
	sum.Add(u, -1)
	sum.Add(u, -1)
	if !sum.IsZero() || sum.GPUsByModel != nil {
		t.Errorf("after removing both: %+v", sum)
	}
	if got := QueueAncestry("a/b/c"); !reflect.DeepEqual(got, []string{"a/b/c", "a/b", "a"}) {
		t.Errorf("ancestry %v", got)
	}
	if JobQueue(nil) != DefaultQueue || JobQueue(&Job{Queue: "q"}) != "q" {
		t.Error("JobQueue")
	}
}
