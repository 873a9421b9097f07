package nvidia

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// Device types reported for NVIDIA devices.
const (
	Vendor  = "nvidia"
	TypeGPU = api.DeviceTypeGPU
	TypeMIG = api.DeviceTypeMIG
)

// Attribute names of NVIDIA device groups, for ${device.attr.<name>}.
const (
	AttrMemory            = "memory"             // int, Unit MiB
	AttrComputeCapability = "compute_capability" // string "9.0" (compares as a version)
	AttrDriverVersion     = "driver_version"     // string "550.54.15"
	AttrCUDAVersion       = "cuda_version"       // string "12.4"
	AttrMIGProfile        = "mig_profile"        // string "1g.10gb" (MIG groups)
	AttrParentModel       = "parent_model"       // string, the MIG instance's GPU model
	// AttrAliases are the model's short names, comma separated, as device
	// asks, queue gpu_models and ${device.model} constraints accept them
	// ("H100,H100-80GB"; a MIG group's "1g.10gb,H100 MIG 1g.10gb,...").
	// The server derives the same names from the group's name
	// (api.GPUModelAliases): this attribute shows them and serves
	// set_contains constraints.
	AttrAliases = "aliases"
)

// BuildDevices turns a snapshot into the node's device groups: one group
// per GPU model (Type "gpu") and one per MIG model+profile (Type "mig",
// Name "<model> MIG <profile>"), each with its aliases (AttrAliases). A
// MIG group is a device model of its own: asked for as
// "nvidia/gpu/<profile>" or "nvidia/mig", never by a plain "nvidia/gpu"
// (api/gpumodel.go). GPUs in MIG mode are represented only by their
// instances. Each instance carries its device minor and device
// nodes (see devicePaths), the one source the client's drivers expose.
// unhealthy maps a device UUID to the reason it is unhealthy; a GPU's
// reason also covers its MIG instances.
func BuildDevices(sys *System, unhealthy map[string]string) []*api.NodeDeviceResource {
	if sys == nil || len(sys.GPUs) == 0 {
		return nil
	}
	var groups []*api.NodeDeviceResource
	byKey := map[string]*api.NodeDeviceResource{}
	group := func(typ, name string, attrs map[string]*api.Attribute) *api.NodeDeviceResource {
		k := typ + "/" + name
		if g := byKey[k]; g != nil {
			return g
		}
		if al := api.GPUModelAliases(name); len(al) > 0 {
			attrs[AttrAliases] = strAttr(strings.Join(al, ","))
		}
		g := &api.NodeDeviceResource{Vendor: Vendor, Type: typ, Name: name, Attributes: attrs}
		byKey[k] = g
		groups = append(groups, g)
		return g
	}
	common := func(g GPU, memMiB uint64) map[string]*api.Attribute {
		a := map[string]*api.Attribute{
			AttrMemory:            intAttr(int64(memMiB), "MiB"),
			AttrComputeCapability: strAttr(strconv.Itoa(g.CCMajor) + "." + strconv.Itoa(g.CCMinor)),
		}
		if sys.DriverVersion != "" {
			a[AttrDriverVersion] = strAttr(sys.DriverVersion)
		}
		if sys.CUDAVersion != "" {
			a[AttrCUDAVersion] = strAttr(sys.CUDAVersion)
		}
		return a
	}
	health := func(d *api.NodeDevice, g GPU, own string) {
		d.Healthy = true
		why := unhealthy[g.UUID]
		if why == "" && own != g.UUID {
			why = unhealthy[own]
		}
		if why == "" && g.ECCUncorrected > 0 {
			why = fmt.Sprintf("%d uncorrected ECC errors", g.ECCUncorrected)
		}
		if why != "" {
			d.Healthy, d.HealthDescription = false, why
		}
	}
	uuids := make([]string, len(sys.GPUs))
	for i, g := range sys.GPUs {
		uuids[i] = g.UUID
	}
	for i, g := range sys.GPUs {
		loc := &api.NodeDeviceLocality{PciBusID: g.PCIBusID, NUMANode: g.NUMANode}
		if g.MIGEnabled {
			for _, m := range g.MIG {
				a := common(g, m.MemoryMiB)
				a[AttrMIGProfile] = strAttr(m.Profile)
				a[AttrParentModel] = strAttr(g.Name)
				grp := group(TypeMIG, g.Name+" MIG "+m.Profile, a)
				d := &api.NodeDevice{ID: m.UUID, Locality: loc}
				d.Minor, d.DevicePaths = devicePaths(g, &m)
				health(d, g, m.UUID)
				grp.Instances = append(grp.Instances, d)
			}
			continue
		}
		grp := group(TypeGPU, g.Name, common(g, g.MemoryMiB))
		d := &api.NodeDevice{ID: g.UUID, Locality: loc}
		d.Minor, d.DevicePaths = devicePaths(g, nil)
		health(d, g, g.UUID)
		for j, peer := range sys.GPUs {
			if j == i || peer.MIGEnabled {
				continue
			}
			l, ok := sys.Links[pair(i, j)]
			if !ok {
				continue
			}
			if d.Links == nil {
				d.Links = map[string]api.DeviceLink{}
			}
			d.Links[uuids[j]] = DeviceLink(l)
		}
		grp.Instances = append(grp.Instances, d)
	}
	return groups
}

// devicePaths are the device minor and the device nodes of GPU g, or of
// its MIG instance m: the GPU's /dev/nvidia<minor>, and for an instance
// the capability nodes of its GPU instance and compute instance
// (/dev/nvidia-caps/nvidia-cap<N>) where the driver has them. Nothing
// when NVML did not give the GPU's minor: a task is never handed a node
// guessed from a position.
func devicePaths(g GPU, m *MIGDevice) (*int, []string) {
	if g.Minor < 0 {
		return nil, nil
	}
	minor := g.Minor
	paths := []string{"/dev/nvidia" + strconv.Itoa(minor)}
	if m != nil {
		for _, c := range []int{m.GICap, m.CICap} {
			if c > 0 {
				paths = append(paths, "/dev/nvidia-caps/nvidia-cap"+strconv.Itoa(c))
			}
		}
	}
	return &minor, paths
}

// DeviceLink maps an NVML link to the scheduler's link kinds: NVLink,
// PCIe switch, PCIe host bridge (same NUMA node) or system (across NUMA
// nodes).
func DeviceLink(l Link) api.DeviceLink {
	switch {
	case l.NVLinks > 0:
		return api.DeviceLink{Kind: api.LinkNVLink, Level: 0, NVLinks: l.NVLinks}
	case l.Ancestor <= TopoMultiple:
		return api.DeviceLink{Kind: api.LinkPCIeSwitch, Level: 1}
	case l.Ancestor <= TopoNode:
		return api.DeviceLink{Kind: api.LinkPCIeHost, Level: 2}
	default:
		return api.DeviceLink{Kind: api.LinkSystem, Level: 3}
	}
}

func pair(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

func intAttr(v int64, unit string) *api.Attribute { return &api.Attribute{IntVal: &v, Unit: unit} }
func strAttr(s string) *api.Attribute             { return &api.Attribute{StringVal: &s} }

// cudaVersion renders NVML's CUDA driver version (12040) as "12.4".
func cudaVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}
