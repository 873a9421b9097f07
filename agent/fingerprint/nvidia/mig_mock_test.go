//go:build cgo && nvml

package nvidia

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
)

// TestPureSimMatchesGoNVMLMockAfterMIGChanges: both simulators (the
// go-nvml mock one through the NVML adapter's ConfigureMIG, the code path
// of real hosts) read the same after the same layout changes.
func TestPureSimMatchesGoNVMLMockAfterMIGChanges(t *testing.T) {
	for _, name := range ShapeNames() {
		cfg := SimConfig{Shape: name, NodeID: "node-x", MIG: true}
		p, _ := NewPureSim(cfg)
		m, err := Simulate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sys, _ := p.Snapshot()
		prof := func(gpu, slices int) string {
			for _, pr := range sys.GPUs[gpu].MIGProfiles {
				if pr.Slices == slices {
					return pr.Name
				}
			}
			t.Fatalf("%s: no %d-slice profile", name, slices)
			return ""
		}
		steps := []api.MIGLayout{
			{GPU: sys.GPUs[0].UUID, Profiles: []string{prof(0, 1), prof(0, 3), prof(0, 2)}},
			{GPU: sys.GPUs[1].UUID, Disable: true},
			{GPU: sys.GPUs[0].UUID, Profiles: []string{prof(0, 7)}},
			{GPU: sys.GPUs[1].UUID, Profiles: []string{prof(1, 4), prof(1, 3)}},
			{GPU: sys.GPUs[2].UUID, Profiles: []string{prof(2, 4), prof(2, 4)}}, // refused by both
		}
		for i, l := range steps {
			perr := p.(MIGConfigurer).ConfigureMIG(l)
			merr := m.(MIGConfigurer).ConfigureMIG(l)
			if (perr == nil) != (merr == nil) {
				t.Fatalf("%s step %d: pure %v, mock %v", name, i, perr, merr)
			}
			ps, _ := p.Snapshot()
			ms, err := m.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(ps, ms); d != "" {
				t.Fatalf("%s after step %d (%+v): pure simulator differs from the go-nvml mock (-pure +mock):\n%s", name, i, l, d)
			}
		}
	}
}
