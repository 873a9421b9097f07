//go:build cgo && nvml

package nvidia

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"
)

func init() { simulators["go-nvml-mock"] = Simulate }

// TestPureSimMatchesGoNVMLMock keeps the CGO_ENABLED=0 simulator equal to
// the go-nvml mock based one, read through the NVML adapter.
func TestPureSimMatchesGoNVMLMock(t *testing.T) {
	for _, name := range ShapeNames() {
		for _, c := range []struct {
			mig    bool
			minors *[8]int
		}{{false, nil}, {true, nil}, {false, outOfOrder}, {true, outOfOrder}} {
			cfg := SimConfig{Shape: name, NodeID: "node-x", MIG: c.mig, Minors: c.minors}
			p, _ := NewPureSim(cfg)
			m, err := Simulate(cfg)
			if err != nil {
				t.Fatalf("Simulate(%+v): %v", cfg, err)
			}
			ps, _ := p.Snapshot()
			ms, err := m.Snapshot()
			if err != nil {
				t.Fatalf("mock snapshot %+v: %v", cfg, err)
			}
			if d := cmp.Diff(ps, ms); d != "" {
				t.Errorf("%+v: pure simulator differs from the go-nvml mock (-pure +mock):\n%s", cfg, d)
			}
		}
	}
}

// TestMinorFromNVML: the minor is what NVML's GetMinorNumber says; where
// it says nothing, the GPU gets no device node (no fallback to its index).
func TestMinorFromNVML(t *testing.T) {
	sim, err := Simulate(SimConfig{Shape: "dgxh100", NodeID: "n", Minors: outOfOrder})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	d := sim.(*mockSim).srv.Devices[2].(*server.Device)
	d.GetMinorNumberFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	sys, err := sim.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	ins := BuildDevices(sys, nil)[0].Instances
	if ins[2].Minor != nil || ins[2].DevicePaths != nil {
		t.Errorf("GPU 2 without a minor from NVML: minor %s paths %v, want none", minorStr(ins[2].Minor), ins[2].DevicePaths)
	}
	if ins[0].Minor == nil || *ins[0].Minor != outOfOrder[0] || ins[0].DevicePaths[0] != "/dev/nvidia5" {
		t.Errorf("GPU 0: minor %s paths %v, want 5 and /dev/nvidia5", minorStr(ins[0].Minor), ins[0].DevicePaths)
	}
}
