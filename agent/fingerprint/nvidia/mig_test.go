package nvidia

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// deviceIDs lists every device instance of the node's device groups.
func deviceIDs(f *Fingerprinter) map[string]bool {
	out := map[string]bool{}
	for _, g := range f.Devices() {
		for _, in := range g.Instances {
			out[in.ID] = true
		}
	}
	return out
}

// TestApplyMIGLayout: a GPU is partitioned into the profiles asked (new
// MIG devices with those profiles, the GPU itself no longer a device),
// partitioned again into new instances, and made whole again; the other
// GPUs are untouched.
func TestApplyMIGLayout(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		f, _ := newFP(t, ctor, SimConfig{Shape: "dgxh100", NodeID: "n"})
		gpus := f.GPUs()
		if len(gpus) != 8 || !gpus[0].MIGCapable || gpus[0].MIGEnabled {
			t.Fatalf("GPUs = %+v, want 8 MIG-capable GPUs not in MIG mode", gpus)
		}
		var names []string
		for _, p := range gpus[0].MIGProfiles {
			names = append(names, p.Name)
		}
		if got, want := strings.Join(names, ","), "1g.10gb,1g.20gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb"; got != want {
			t.Errorf("GPU 0 offers %s, want %s", got, want)
		}
		gpu0, gpu1 := gpus[0].UUID, gpus[1].UUID

		apply := func(l api.MIGLayout) []api.NodeMIGInstance {
			t.Helper()
			if err := f.ApplyMIG(context.Background(), []api.MIGLayout{l}); err != nil {
				t.Fatalf("ApplyMIG(%+v): %v", l, err)
			}
			g := f.GPUs()[0]
			if g.MIGEnabled == l.Disable {
				t.Fatalf("after %+v: GPU 0 MIG mode %v", l, g.MIGEnabled)
			}
			devs := deviceIDs(f)
			if devs[gpu0] == g.MIGEnabled || !devs[gpu1] || len(devs) != 7+len(g.MIG)+boolInt(!g.MIGEnabled) {
				t.Errorf("after %+v: devices %v, want GPU 0 whole only without MIG, GPUs 1-7 whole, and GPU 0's MIG instances", l, devs)
			}
			for _, m := range g.MIG {
				if !devs[m.ID] || !strings.HasPrefix(m.ID, "MIG-") {
					t.Errorf("MIG instance %+v is not a device of the node", m)
				}
			}
			return g.MIG
		}
		first := apply(api.MIGLayout{GPU: gpu0, Profiles: []string{"1g.10gb", "3g.40gb", "2g.20gb"}})
		if got := profilesOf(first); got != "3g.40gb,2g.20gb,1g.10gb" {
			t.Errorf("MIG instances %s, want 3g.40gb,2g.20gb,1g.10gb (largest first)", got)
		}
		second := apply(api.MIGLayout{GPU: gpu0, Profiles: []string{"1g.10gb", "1g.10gb", "4g.40gb"}})
		if got := profilesOf(second); got != "4g.40gb,1g.10gb,1g.10gb" {
			t.Errorf("MIG instances %s, want 4g.40gb,1g.10gb,1g.10gb", got)
		}
		if slices.ContainsFunc(second, func(m api.NodeMIGInstance) bool { return m.ID == first[0].ID }) {
			t.Errorf("a new layout reused MIG UUID %s of the old one", first[0].ID)
		}
		apply(api.MIGLayout{GPU: gpu0, Disable: true})
	})
}

// TestApplyMIGRefusesWhatDoesNotFit: a layout the GPU cannot hold fails
// and leaves the GPU as it was.
func TestApplyMIGRefusesWhatDoesNotFit(t *testing.T) {
	forEachSim(t, func(t *testing.T, ctor simCtor) {
		f, _ := newFP(t, ctor, SimConfig{Shape: "dgxh100", NodeID: "n", MIG: true})
		before := f.GPUs()[3]
		for _, c := range []struct {
			profiles []string
			want     string
		}{
			{[]string{"3g.40gb", "3g.40gb", "1g.10gb"}, "MiB of memory"},
			{[]string{"4g.40gb", "4g.40gb"}, "at most 1 4g.40gb"},
			{[]string{"5g.50gb"}, "no MIG profile"},
			{[]string{"4g.40gb", "2g.20gb", "1g.20gb", "1g.10gb"}, "compute slices"},
		} {
			err := f.ApplyMIG(context.Background(), []api.MIGLayout{{GPU: before.UUID, Profiles: c.profiles}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ApplyMIG %v: %v, want an error saying %q", c.profiles, err, c.want)
			}
		}
		if after := f.GPUs()[3]; profilesOf(after.MIG) != profilesOf(before.MIG) || after.MIG[0].ID != before.MIG[0].ID {
			t.Errorf("GPU 3 changed by refused layouts: %+v -> %+v", before.MIG, after.MIG)
		}
	})
}

func profilesOf(ms []api.NodeMIGInstance) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Profile)
	}
	return strings.Join(out, ",")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
