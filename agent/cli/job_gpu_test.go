package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func gpuStub(id string, gpus int, util float64, idleSince int64) *api.AllocListStub {
	var ids []string
	for i := 0; i < gpus; i++ {
		ids = append(ids, id+"-gpu")
	}
	return &api.AllocListStub{ID: id + "00000000", Name: "nb.web[0]", NodeID: "node0000aaaa", TaskGroup: "web",
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
			Cpu: api.AllocatedCpuResources{CpuShares: 8000}, Memory: api.AllocatedMemoryResources{MemoryMB: 4096},
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: ids}}}}},
		GPUUsage: &api.GPUUsage{GPUs: gpus, UtilPercent: util, IdleSince: idleSince}}
}

func TestPrintResourceUse(t *testing.T) {
	now := time.Unix(100_000, 0)
	job := &api.Job{ID: "nb", TaskGroups: []*api.TaskGroup{{Name: "web"}}}
	q := &api.Queue{Name: "default", IdleTimeout: 2 * time.Hour}
	allocs := []*api.AllocListStub{
		gpuStub("aaaa", 4, 0, now.Add(-(2*time.Hour + 13*time.Minute + 5*time.Second)).UnixNano()),
		gpuStub("bbbb", 4, 10, 0),
	}
	stats := map[string]*api.AllocResourceUsage{allocs[0].ID: {ResourceUsage: &api.ResourceUsage{
		CpuStats: &api.CpuStats{TotalTicks: 2000}, MemoryStats: &api.MemoryStats{RSS: 1 << 30}}}}
	var b bytes.Buffer
	printResourceUse(&b, job, q, allocs, stats, now)
	out := b.String()
	for _, want := range []string{
		"GPU", "8 requested, 0.4 used (avg util 5%)",
		"16000 MHz requested, 2000 MHz used (1 of 2 allocs)",
		"8192 MB requested, 1024 MB used (1 of 2 allocs)",
		"Idle GPUs", "Alloc aaaa0000 (nb.web[0]) on node node0000: GPU idle 2h13m (idle_timeout 2h)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bbbb0000") {
		t.Errorf("busy alloc listed as idle:\n%s", out)
	}
	// Under the timeout: no idle line.
	b.Reset()
	q.IdleTimeout = 3 * time.Hour
	printResourceUse(&b, job, q, allocs, nil, now)
	if strings.Contains(b.String(), "Idle GPUs") || !strings.Contains(b.String(), "not measured") {
		t.Errorf("idle 2h13m, timeout 3h:\n%s", b.String())
	}
}
