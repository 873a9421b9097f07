package qemu

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drover/drover/drivers"
)

func TestVFIODevices(t *testing.T) {
	c, err := ParseTaskConfig(map[string]any{"kernel": "/k", "vfio_devices": []any{"0000:18:00.0", "00000000:2A:00.0", "3b:00.1"}})
	if err != nil {
		t.Fatalf("ParseTaskConfig: %v", err)
	}
	want := []string{"0000:18:00.0", "0000:2a:00.0", "0000:3b:00.1"}
	if !slices.Equal(c.VFIODevices, want) {
		t.Errorf("VFIODevices = %v, want %v", c.VFIODevices, want)
	}
	v := &vmSpec{Name: "gpu", Accelerator: "kvm", MemoryMB: 1024, VCPUs: 1, QMPSocket: "/q", Kernel: "/k", VFIO: c.VFIODevices}
	got := strings.Join(v.args(), " ")
	if !strings.Contains(got, "-device vfio-pci,host=0000:18:00.0 -device vfio-pci,host=0000:2a:00.0 -device vfio-pci,host=0000:3b:00.1") {
		t.Errorf("args %q lack the vfio-pci devices", got)
	}
	for _, bad := range []any{[]any{"18:00"}, []any{"0000:18:00.9"}, []any{"x,y"}, "0000:18:00.0"} {
		if _, err := ParseTaskConfig(map[string]any{"kernel": "/k", "vfio_devices": bad}); !errors.Is(err, drivers.ErrInvalidConfig) || !strings.Contains(err.Error(), "vfio_devices") {
			t.Errorf("vfio_devices = %v: error %v, want ErrInvalidConfig naming vfio_devices", bad, err)
		}
	}
}
