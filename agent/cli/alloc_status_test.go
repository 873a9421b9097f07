package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func TestFmtAgo(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		5 * time.Second:                "2026-12-03T11:59:55Z (5s ago)",
		3*time.Minute + 10*time.Second: "2026-12-03T11:56:50Z (3m10s ago)",
		2*time.Hour + 5*time.Minute:    "2026-12-03T09:55:00Z (2h5m ago)",
		76 * time.Hour:                 "2026-11-30T08:00:00Z (3d4h ago)",
		-30 * time.Second:              "2026-12-03T12:00:30Z (30s from now)",
	} {
		if got := fmtAgo(now.Add(-d).UnixNano(), now); got != want {
			t.Errorf("fmtAgo(now-%v) = %q, want %q", d, got, want)
		}
	}
	if fmtAgo(0, now) != "-" {
		t.Error("zero time not -")
	}
}

// alloc status shows the alloc's addresses and each task's resources and
// GPUs.
func TestPrintAllocResources(t *testing.T) {
	a := &api.Allocation{ID: "a1", Name: "web.g[0]", TaskStates: map[string]*api.TaskState{"t": {State: "running"}},
		AllocatedResources: &api.AllocatedResources{
			Tasks: map[string]*api.AllocatedTaskResources{"t": {
				Cpu: api.AllocatedCpuResources{CpuShares: 500, ReservedCores: []uint16{2, 3}}, Memory: api.AllocatedMemoryResources{MemoryMB: 256},
				Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-1", "GPU-2"}}}}},
			Shared: api.AllocatedSharedResources{Networks: []*api.NetworkResource{{IP: "10.0.0.5",
				ReservedPorts: []api.Port{{Label: "admin", Value: 9000}}, DynamicPorts: []api.Port{{Label: "http", Value: 23456, To: 8080}}}}},
		}}
	var b bytes.Buffer
	printAlloc(&b, a, false)
	out := b.String()
	for _, want := range []string{"Allocation Addresses:", "admin  no       10.0.0.5:9000", "http   yes      10.0.0.5:23456 -> 8080",
		"Task Resources:", "500 MHz  256 MiB  [2 3]", "Device nvidia/gpu/H100: GPU-1, GPU-2"} {
		if !strings.Contains(out, want) {
			t.Errorf("alloc status lacks %q:\n%s", want, out)
		}
	}
}
