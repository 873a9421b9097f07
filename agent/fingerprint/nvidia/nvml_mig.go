//go:build cgo && nvml

package nvidia

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/drover/drover/api"
)

// readProfiles lists the GPU instance profiles d offers, by profile ID
// (none where NVML lists them only in MIG mode).
func readProfiles(d nvml.Device) []MIGProfile {
	var out []MIGProfile
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := d.GetGpuInstanceProfileInfo(p)
		if ret != nvml.SUCCESS || info.InstanceCount == 0 {
			continue
		}
		out = append(out, MIGProfile{ID: int(info.Id), Name: migProfile(info.SliceCount, info.MemorySizeMB),
			Slices: int(info.SliceCount), MemoryMiB: info.MemorySizeMB, Count: int(info.InstanceCount)})
	}
	return out
}

// ConfigureMIG changes a GPU's MIG layout as `nvidia-smi mig -dci -dgi`
// then `-cgi <profiles> -C` would. Where NVML lists a GPU's profiles only
// in MIG mode, MIG mode is turned on to read them (and off again when the
// layout does not fit). A layout that NVML cannot place once the old one
// is gone is rolled back to the old one (best effort) and fails.
//
// NVML refuses to destroy an instance a process still uses, and a MIG
// mode change that needs a GPU reset is reported, not forced: drover's
// servers and client make sure no task holds the GPU before they ask.
func (l *nvmlLib) ConfigureMIG(layout api.MIGLayout) error {
	d, ret := l.lib.DeviceGetHandleByUUID(layout.GPU)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml device %s: %v", layout.GPU, ret)
	}
	cur, _, ret := d.GetMigMode()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml mig mode: %v", ret)
	}
	on := cur == nvml.DEVICE_MIG_ENABLE
	g := GPU{MIGCapable: true, MIGProfiles: readProfiles(d)}
	g.Index, _ = d.GetIndex()
	g.Name, _ = d.GetName()
	enabledHere := false
	if len(g.MIGProfiles) == 0 && !layout.Disable && !on {
		if err := setMIGMode(d, nvml.DEVICE_MIG_ENABLE); err != nil {
			return err
		}
		enabledHere, on = true, true
		g.MIGProfiles = readProfiles(d)
	}
	plan, err := migPlan(g, layout)
	if err != nil {
		if enabledHere {
			err = errors.Join(err, setMIGMode(d, nvml.DEVICE_MIG_DISABLE))
		}
		return err
	}
	var old []MIGProfile
	if on {
		if old, err = destroyInstances(d); err != nil {
			return err
		}
	}
	if layout.Disable {
		if on {
			return setMIGMode(d, nvml.DEVICE_MIG_DISABLE)
		}
		return nil
	}
	if !on {
		if err := setMIGMode(d, nvml.DEVICE_MIG_ENABLE); err != nil {
			return err
		}
	}
	if err := createInstances(d, plan); err != nil {
		_, derr := destroyInstances(d)
		rerr := createInstances(d, old)
		if derr != nil || rerr != nil {
			return fmt.Errorf("%w; restoring the old layout: %w", err, errors.Join(derr, rerr))
		}
		return fmt.Errorf("%w (the old layout is back)", err)
	}
	return nil
}

// setMIGMode turns MIG mode on or off; a change that waits for a GPU
// reset is an error (the operator resets the GPU and applies again).
func setMIGMode(d nvml.Device, mode int) error {
	act, ret := d.SetMigMode(mode)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml set mig mode %d: %v", mode, ret)
	}
	if act != nvml.SUCCESS {
		return fmt.Errorf("nvml set mig mode %d: pending a GPU reset (%v): reset the GPU (nvidia-smi -r) and apply again", mode, act)
	}
	return nil
}

// destroyInstances destroys every compute and GPU instance of d and
// returns the profiles of the GPU instances it destroyed.
func destroyInstances(d nvml.Device) ([]MIGProfile, error) {
	var old []MIGProfile
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := d.GetGpuInstanceProfileInfo(p)
		if ret != nvml.SUCCESS {
			continue
		}
		gis, ret := d.GetGpuInstances(&info)
		if ret != nvml.SUCCESS {
			continue
		}
		for _, gi := range gis {
			for c := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
				ci, ret := gi.GetComputeInstanceProfileInfo(c, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
				if ret != nvml.SUCCESS {
					continue
				}
				cis, ret := gi.GetComputeInstances(&ci)
				if ret != nvml.SUCCESS {
					continue
				}
				for _, x := range cis {
					if r := x.Destroy(); r != nvml.SUCCESS {
						return old, fmt.Errorf("nvml destroy compute instance: %v", r)
					}
				}
			}
			if r := gi.Destroy(); r != nvml.SUCCESS {
				return old, fmt.Errorf("nvml destroy GPU instance: %v", r)
			}
			old = append(old, MIGProfile{ID: int(info.Id), Name: migProfile(info.SliceCount, info.MemorySizeMB),
				Slices: int(info.SliceCount), MemoryMiB: info.MemorySizeMB, Count: int(info.InstanceCount)})
		}
	}
	return old, nil
}

// createInstances creates one GPU instance per profile, in order, each
// with one compute instance spanning it.
func createInstances(d nvml.Device, plan []MIGProfile) error {
	for _, p := range plan {
		info, ret := d.GetGpuInstanceProfileInfo(p.ID)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("nvml profile %s: %v", p.Name, ret)
		}
		gi, ret := d.CreateGpuInstance(&info)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("nvml create %s GPU instance: %v", p.Name, ret)
		}
		ci, ok := fullComputeProfile(gi, int(info.SliceCount))
		if !ok {
			gi.Destroy()
			return fmt.Errorf("nvml %s: no compute instance profile", p.Name)
		}
		if _, ret := gi.CreateComputeInstance(&ci); ret != nvml.SUCCESS {
			gi.Destroy()
			return fmt.Errorf("nvml create %s compute instance: %v", p.Name, ret)
		}
	}
	return nil
}

// fullComputeProfile is the compute instance profile of gi that spans
// it: its slices, else the largest it offers.
func fullComputeProfile(gi nvml.GpuInstance, slices int) (nvml.ComputeInstanceProfileInfo, bool) {
	var best nvml.ComputeInstanceProfileInfo
	found := false
	for c := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
		ci, ret := gi.GetComputeInstanceProfileInfo(c, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS || int(ci.SliceCount) > slices {
			continue
		}
		if !found || ci.SliceCount > best.SliceCount {
			best, found = ci, true
		}
	}
	return best, found
}
