//go:build cgo && nvml

package nvidia

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func init() { simulators["go-nvml-mock"] = Simulate }

// TestPureSimMatchesGoNVMLMock keeps the CGO_ENABLED=0 simulator equal to
// the go-nvml mock based one, read through the NVML adapter.
func TestPureSimMatchesGoNVMLMock(t *testing.T) {
	for _, name := range ShapeNames() {
		for _, mig := range []bool{false, true} {
			cfg := SimConfig{Shape: name, NodeID: "node-x", MIG: mig}
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
