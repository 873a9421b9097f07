//go:build cgo && nvml

package nvidia

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// TestNVMLUsage reads a GPU's utilization and memory in use through the
// NVML adapter, by UUID; an unknown UUID is an error.
func TestNVMLUsage(t *testing.T) {
	srv := dgxh100.New()
	d := srv.Devices[3].(*server.Device)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 37}, nvml.SUCCESS }
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Used: 3 << 30}, nvml.SUCCESS }
	uuid, ret := d.GetUUID()
	if ret != nvml.SUCCESS {
		t.Fatalf("uuid: %v", ret)
	}
	lib := FromNVML(srv).(UsageReader)
	u, err := lib.Usage(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if u.UtilPercent != 37 || u.MemoryUsedMiB != 3072 {
		t.Errorf("usage = %+v, want 37%% and 3072 MiB", u)
	}
	if _, err := lib.Usage("GPU-nope"); err == nil {
		t.Error("unknown UUID: no error")
	}
}
