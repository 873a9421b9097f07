package taskrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
)

// TestGPUDeviceSpecsByMinor: with the NVIDIA driver's /proc information,
// /dev/nvidia<N> follows the device minor of the GPU's PCI address, not
// its position in the fingerprint (models are grouped, MIG GPUs appear
// as their instances).
func TestGPUDeviceSpecsByMinor(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"dev/nvidia0", "dev/nvidia3", "dev/nvidia5", "dev/nvidiactl"} {
		write(f, "")
	}
	write("proc/driver/nvidia/gpus/0000:3a:00.0/information", "Model: \t NVIDIA H100\nIRQ:   12\nDevice Minor: \t 5\n")
	write("proc/driver/nvidia/gpus/0000:9a:00.0/information", "Model: \t NVIDIA A100\nDevice Minor: 3\n")
	loc := func(bus string) *api.NodeDeviceLocality { return &api.NodeDeviceLocality{PciBusID: bus} }
	n := &api.Node{NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: []*api.NodeDevice{
			{ID: "GPU-h", Locality: loc("00000000:3A:00.0")}, {ID: "GPU-x"}}},
		{Vendor: "nvidia", Type: "mig", Name: "A100 MIG 1g.5gb", Instances: []*api.NodeDevice{
			{ID: "MIG-1", Locality: loc("00000000:9A:00.0")}, {ID: "MIG-2", Locality: loc("00000000:9A:00.0")}}},
	}}}
	tr := &api.AllocatedTaskResources{Devices: []*api.AllocatedDeviceResource{
		{Vendor: "nvidia", Type: "gpu", DeviceIDs: []string{"GPU-h", "GPU-x"}},
		{Vendor: "nvidia", Type: "mig", DeviceIDs: []string{"MIG-1", "MIG-2"}},
	}}
	var got []string
	for _, s := range GPUDeviceSpecs(tr, n, root) {
		got = append(got, s.HostPath)
	}
	// GPU-h: minor 5; GPU-x: no PCI address, position 1 (no such node);
	// both MIG instances: their GPU's minor 3, once.
	want := []string{"/dev/nvidia5", "/dev/nvidia3", "/dev/nvidiactl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("device specs (-want +got):\n%s", diff)
	}
}
