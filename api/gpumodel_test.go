package api

import (
	"slices"
	"testing"
)

func TestGPUModelAliases(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		// go-nvml's mock servers (pkg/nvml/mock/gpus).
		{"NVIDIA H100 80GB HBM3", []string{"H100", "H100-80GB"}},
		{"NVIDIA H200 141GB HBM3e", []string{"H200", "H200-141GB"}},
		{"NVIDIA B200 180GB HBM3e", []string{"B200", "B200-180GB"}},
		{"NVIDIA A100-SXM4-40GB", []string{"A100", "A100-SXM4", "A100-40GB", "A100-SXM4-40GB"}},
		{"Mock NVIDIA A100-SXM4-40GB", []string{"A100", "A100-SXM4", "A100-40GB", "A100-SXM4-40GB"}},
		{"NVIDIA A100-PCIE-80GB", []string{"A100", "A100-PCIE", "A100-80GB", "A100-PCIE-80GB"}},
		{"NVIDIA A30-PCIE-24GB", []string{"A30", "A30-PCIE", "A30-24GB", "A30-PCIE-24GB"}},
		// Names seen in the wild.
		{"NVIDIA A100-SXM4-80GB", []string{"A100", "A100-SXM4", "A100-80GB", "A100-SXM4-80GB"}},
		{"NVIDIA A100 80GB PCIe", []string{"A100", "A100-PCIe", "A100-80GB", "A100-PCIe-80GB"}},
		{"Tesla V100-SXM2-32GB", []string{"V100", "V100-SXM2", "V100-32GB", "V100-SXM2-32GB"}},
		{"Tesla T4", []string{"T4", "T4-16GB"}},
		{"NVIDIA A10G", []string{"A10G", "A10G-24GB"}},
		{"NVIDIA A10", []string{"A10", "A10-24GB"}},
		{"NVIDIA L4", []string{"L4", "L4-24GB"}},
		{"NVIDIA L40S", []string{"L40S", "L40S-48GB"}},
		{"NVIDIA H100 PCIe", []string{"H100", "H100-PCIe"}},
		{"NVIDIA H100 NVL", []string{"H100", "H100-NVL"}},
		{"NVIDIA GB200", []string{"GB200"}},
		{"NVIDIA GH200 480GB", []string{"GH200", "GH200-480GB"}},
		{"NVIDIA GeForce RTX 4090", []string{"RTX-4090", "RTX-4090-24GB"}},
		{"NVIDIA GeForce RTX 3090 Ti", []string{"RTX-3090-Ti"}},
		{"NVIDIA RTX A6000", []string{"RTX-A6000", "RTX-A6000-48GB"}},
		{"NVIDIA RTX 6000 Ada Generation", []string{"RTX-6000-Ada"}},
		{"NVIDIA Graphics Device", nil},
		{"", nil},
		// MIG models, as the fingerprint names them.
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb", []string{"1g.10gb", "H100 MIG 1g.10gb", "H100-80GB MIG 1g.10gb"}},
		{"NVIDIA A100-SXM4-40GB MIG 3g.20gb", []string{"3g.20gb", "A100 MIG 3g.20gb", "A100-SXM4 MIG 3g.20gb",
			"A100-40GB MIG 3g.20gb", "A100-SXM4-40GB MIG 3g.20gb"}},
	} {
		if got := GPUModelAliases(tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("GPUModelAliases(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestGPUModelIs(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"NVIDIA H100 80GB HBM3", "H100", true},
		{"NVIDIA H100 80GB HBM3", "h100-80gb", true},
		{"NVIDIA H100 80GB HBM3", "H100 80GB", true},
		{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", true},
		{"NVIDIA H100 80GB HBM3", "H100-40GB", false},
		{"NVIDIA H100 80GB HBM3", "H10", false},
		{"NVIDIA H100 80GB HBM3", "H200", false},
		{"NVIDIA GH200 480GB", "H200", false},
		{"NVIDIA A10G", "A10", false},
		{"NVIDIA A100-SXM4-80GB", "A10", false},
		{"NVIDIA A100-SXM4-80GB", "A100_80GB", true},
		{"NVIDIA GeForce RTX 4090", "RTX 4090", true},
		{"NVIDIA GeForce RTX 4090", "rtx4090", true},
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "1g.10gb", true},
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "1G.10GB", true},
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "H100 MIG 1g.10gb", true},
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "H100", false},
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "2g.20gb", false},
	} {
		if got := GPUModelIs(tc.name, tc.want); got != tc.ok {
			t.Errorf("GPUModelIs(%q, %q) = %v, want %v", tc.name, tc.want, got, tc.ok)
		}
	}
}

func TestNodeDeviceResourceMatches(t *testing.T) {
	gpu := &NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3"}
	mig := &NodeDeviceResource{Vendor: "nvidia", Type: "mig", Name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb"}
	for _, tc := range []struct {
		ask       string
		gpu, mig  bool
		rationale string
	}{
		{"gpu", true, false, "a plain GPU ask never gets a MIG slice"},
		{"nvidia/gpu", true, false, "a plain GPU ask never gets a MIG slice"},
		{"mig", false, true, "the type"},
		{"nvidia/mig", false, true, "any MIG instance"},
		{"nvidia/gpu/NVIDIA H100 80GB HBM3", true, false, "the full name"},
		{"nvidia/gpu/H100", true, false, "the family alias"},
		{"nvidia/gpu/H100-80GB", true, false, "family and memory"},
		{"nvidia/gpu/A100", false, false, "another model"},
		{"amd/gpu/H100", false, false, "another vendor"},
		{"nvidia/gpu/1g.10gb", false, true, "a MIG model by profile"},
		{"nvidia/gpu/H100 MIG 1g.10gb", false, true, "a MIG model by GPU and profile"},
		{"nvidia/mig/1g.10gb", false, true, "the mig type with a profile"},
		{"nvidia/mig/NVIDIA H100 80GB HBM3 MIG 1g.10gb", false, true, "the full MIG name, as before"},
		{"nvidia/mig/H100", false, false, "a GPU alias is no MIG model"},
		{"nvidia/gpu/2g.20gb", false, false, "another profile"},
		{"nvidia/gpu/H100/x", false, false, "four parts"},
	} {
		if got := gpu.Matches(tc.ask); got != tc.gpu {
			t.Errorf("%s: GPU group Matches(%q) = %v, want %v", tc.rationale, tc.ask, got, tc.gpu)
		}
		if got := mig.Matches(tc.ask); got != tc.mig {
			t.Errorf("%s: MIG group Matches(%q) = %v, want %v", tc.rationale, tc.ask, got, tc.mig)
		}
	}
	other := &NodeDeviceResource{Vendor: "intel", Type: "fpga", Name: "H100"}
	if !other.Matches("intel/fpga/H100") || other.Matches("intel/fpga/h100") {
		t.Error("a non-GPU device's model is its exact name, without aliases")
	}
}

func TestGPUModelKeys(t *testing.T) {
	const h100 = "nvidia/gpu/NVIDIA H100 80GB HBM3"
	for _, tc := range []struct {
		key, id string
		ok      bool
	}{
		{"H100", h100, true},
		{"H100-80GB", h100, true},
		{"nvidia/gpu/H100", h100, true},
		{h100, h100, true},
		{"amd/gpu/H100", h100, false},
		{"A100", h100, false},
		{"H100", "nvidia/mig/NVIDIA H100 80GB HBM3 MIG 1g.10gb", false},
		{"nvidia/gpu/H100", "nvidia/gpu/H100", true}, // fair share keys asks by their name
		{"H100", "nvidia/gpu/H100", true},
		{"nvidia/gpu", h100, false},
	} {
		if got := GPUModelKeyMatches(tc.key, tc.id); got != tc.ok {
			t.Errorf("GPUModelKeyMatches(%q, %q) = %v, want %v", tc.key, tc.id, got, tc.ok)
		}
	}
	r := QueueResources{GPUsByModel: map[string]float64{h100: 2, "nvidia/gpu/NVIDIA H100 PCIe": 0.5, "nvidia/gpu/NVIDIA A100-SXM4-80GB": 4}}
	for key, want := range map[string]float64{"H100": 2.5, "H100-80GB": 2, "nvidia/gpu/A100": 4, "A100-40GB": 0, h100: 2} {
		if got := r.ModelGPUs(key); got != want {
			t.Errorf("ModelGPUs(%q) = %v, want %v", key, got, want)
		}
	}
	for key, ok := range map[string]bool{"H100": true, "nvidia/gpu/H100": true, h100: true, "A100-80GB": true,
		"nvidia/gpu": false, "": false, "a/b/c/d": false, "1g.10gb": false, "nvidia/gpu/1g.10gb": false,
		"nvidia/mig/NVIDIA H100 80GB HBM3 MIG 1g.10gb": false, "nvidia/fpga/x": false} {
		if err := CheckGPUModelKey(key); (err == nil) != ok {
			t.Errorf("CheckGPUModelKey(%q) = %v, want ok %v", key, err, ok)
		}
	}
}

func TestGPUAskModel(t *testing.T) {
	for _, tc := range []struct {
		ask, model string
		gpu        bool
	}{
		{"gpu", "", true},
		{"nvidia/gpu", "", true},
		{"nvidia/gpu/H100", "nvidia/gpu/H100", true},
		{"nvidia/gpu/1g.10gb", "", false},
		{"nvidia/gpu/H100 MIG 1g.10gb", "", false},
		{"nvidia/mig", "", false},
		{"mig", "", false},
		{"nvidia/fpga", "", false},
	} {
		if m, g := GPUAskModel(tc.ask); m != tc.model || g != tc.gpu {
			t.Errorf("GPUAskModel(%q) = %q, %v, want %q, %v", tc.ask, m, g, tc.model, tc.gpu)
		}
	}
}

// A share of a MIG instance is refused when the job is validated.
func TestValidateShareOnMIG(t *testing.T) {
	for ask, bad := range map[string]bool{"nvidia/gpu": false, "nvidia/gpu/H100": false, "nvidia/mig": true, "nvidia/gpu/1g.10gb": true} {
		j := &Job{ID: "j", Name: "j", Type: JobTypeBatch, Datacenters: []string{"dc1"}, TaskGroups: []*TaskGroup{{Name: "g", Count: 1,
			Tasks: []*Task{{Name: "t", Driver: "mock", Resources: &Resources{CPU: 100, MemoryMB: 64,
				Devices: []*RequestedDevice{{Name: ask, Count: 1, Share: &DeviceShare{Fraction: 0.5}}}}}}}}}
		j.Canonicalize()
		err := j.Validate()
		if got := err != nil; got != bad {
			t.Errorf("share on %q: Validate = %v, want error %v", ask, err, bad)
		}
	}
}
