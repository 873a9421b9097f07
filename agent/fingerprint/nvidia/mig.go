package nvidia

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/drover/drover/api"
)

// MIGProfile is one GPU instance profile a GPU offers, as NVML describes
// it (nvmlGpuInstanceProfileInfo_t).
type MIGProfile struct {
	ID        int    // NVML's profile ID (NVML_GPU_INSTANCE_PROFILE_*)
	Name      string // "3g.40gb"
	Slices    int
	MemoryMiB uint64
	Count     int // most instances of it on one GPU
}

// MIGConfigurer is a Library that can change a GPU's MIG layout (the
// host's NVML and both simulators).
type MIGConfigurer interface {
	// ConfigureMIG makes GPU l.GPU (a UUID) as l asks: every GPU and
	// compute instance it has is destroyed, then, unless l.Disable (which
	// leaves MIG mode), MIG mode is on with one GPU instance per profile,
	// largest first, each with one compute instance spanning it. Nothing
	// is destroyed when the layout cannot fit the GPU's profiles.
	ConfigureMIG(l api.MIGLayout) error
}

// ErrNoMIGConfig: the library cannot change MIG layouts.
var ErrNoMIGConfig = errors.New("this GPU library cannot change MIG layouts")

// ApplyMIG gives each GPU of layouts its layout, one after the other, then
// reads the devices again (Devices, GPUs). It stops at the first GPU that
// fails; the devices are read again either way.
func (f *Fingerprinter) ApplyMIG(ctx context.Context, layouts []api.MIGLayout) error {
	mc, ok := f.cfg.Library.(MIGConfigurer)
	if !ok {
		return ErrNoMIGConfig
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	var err error
	for _, l := range layouts {
		if err = ctx.Err(); err != nil {
			break
		}
		if err = mc.ConfigureMIG(l); err != nil {
			err = fmt.Errorf("GPU %s: %w", l.GPU, err)
			break
		}
		f.log.Info("gpu mig layout applied", "gpu", l.GPU, "profiles", l.Profiles, "disable", l.Disable)
	}
	f.Refresh()
	return err
}

// GPUs returns the physical GPUs as last read, for the node (api.NodeGPU):
// each with its MIG instances and the profiles it offers (one per name,
// the lowest profile ID's, smallest first).
func (f *Fingerprinter) GPUs() []*api.NodeGPU {
	f.mu.Lock()
	defer f.mu.Unlock()
	return nodeGPUs(f.sys)
}

func nodeGPUs(sys *System) []*api.NodeGPU {
	if sys == nil {
		return nil
	}
	out := make([]*api.NodeGPU, 0, len(sys.GPUs))
	for _, g := range sys.GPUs {
		n := &api.NodeGPU{UUID: g.UUID, Index: g.Index, Name: g.Name, MemoryMiB: int64(g.MemoryMiB),
			MIGCapable: g.MIGCapable, MIGEnabled: g.MIGEnabled, MIGProfiles: apiProfiles(g.MIGProfiles)}
		for _, m := range g.MIG {
			n.MIG = append(n.MIG, api.NodeMIGInstance{ID: m.UUID, Profile: m.Profile})
		}
		out = append(out, n)
	}
	return out
}

// apiProfiles lists profiles once per name (the lowest ID: NVML's
// variants with media extensions share a name), smallest first.
func apiProfiles(ps []MIGProfile) []api.MIGProfile {
	var out []api.MIGProfile
	seen := map[string]bool{}
	for _, p := range byID(ps) {
		if seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		out = append(out, api.MIGProfile{Name: p.Name, Slices: p.Slices, MemoryMiB: int64(p.MemoryMiB), Max: p.Count})
	}
	slices.SortStableFunc(out, func(a, b api.MIGProfile) int {
		return cmp.Or(cmp.Compare(a.Slices, b.Slices), cmp.Compare(a.MemoryMiB, b.MemoryMiB))
	})
	return out
}

func byID(ps []MIGProfile) []MIGProfile {
	s := slices.Clone(ps)
	slices.SortFunc(s, func(a, b MIGProfile) int { return cmp.Compare(a.ID, b.ID) })
	return s
}

// migPlan checks layout l against a GPU's profiles and returns the
// profiles to create, largest first (the order that leaves the driver
// room to place them). Empty for l.Disable.
func migPlan(g GPU, l api.MIGLayout) ([]MIGProfile, error) {
	ng := &api.NodeGPU{Index: g.Index, Name: g.Name, MIGCapable: g.MIGCapable, MIGProfiles: apiProfiles(g.MIGProfiles)}
	if len(ng.MIGProfiles) == 0 && !l.Disable {
		return nil, errors.New("NVML lists no MIG profiles for the GPU")
	}
	if err := ng.CheckMIGLayout(l); err != nil {
		return nil, err
	}
	var out []MIGProfile
	for _, name := range l.Profiles {
		for _, p := range byID(g.MIGProfiles) {
			if p.Name == name {
				out = append(out, p)
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b MIGProfile) int {
		return cmp.Or(cmp.Compare(b.Slices, a.Slices), cmp.Compare(b.MemoryMiB, a.MemoryMiB))
	})
	return out, nil
}

// migProfile names a MIG profile the way nvidia-smi does: "1g.10gb".
func migProfile(slices uint32, memMiB uint64) string {
	gb := (memMiB + 512) / 1024
	return fmt.Sprintf("%dg.%dgb", slices, gb)
}

// simMIGProfiles are the GPU instance profiles of the simulated GPUs, as
// go-nvml's mock GPUs list them (NVML profile IDs 0-4: 1, 2, 3, 4 and 7
// slices; 7: 1 slice with media extensions; 9: 1 slice with 2 memory
// slices), from the memory of the 1, 2, 3 and 7 slice profiles.
func simMIGProfiles(sh Shape) []MIGProfile {
	mem, ok := simMIGMemory[sh.Name]
	if !ok {
		return nil
	}
	p := func(id, slices int, memMiB uint64, count int) MIGProfile {
		return MIGProfile{ID: id, Name: migProfile(uint32(slices), memMiB), Slices: slices, MemoryMiB: memMiB, Count: count}
	}
	return []MIGProfile{p(0, 1, mem[0], 7), p(1, 2, mem[1], 3), p(2, 3, mem[2], 2), p(3, 4, mem[2], 1),
		p(4, 7, mem[3], 1), p(7, 1, mem[0], 1), p(9, 1, mem[1], 4)}
}

// simMIGMemory: MiB of the 1, 2, 3 and 7 slice profiles of each shape.
var simMIGMemory = map[string][4]uint64{
	"dgxa100": {4864, 9856, 19968, 40192},
	"dgxh100": {10240, 20480, 40960, 81920},
	"dgxh200": {18432, 35840, 72704, 144384},
	"dgxb200": {23552, 46080, 92160, 184320},
}

// simMIGUUID is the UUID of a simulated MIG instance: GPU instance gi of
// GPU index, in the GPU's gen-th layout (0: the one it started with).
func simMIGUUID(nodeID string, index, gi, gen int) string {
	if gen == 0 {
		return simUUID("MIG", nodeID, index, gi)
	}
	return simUUID("MIG", nodeID, index, gi, gen)
}
