//go:build cgo && nvml

package nvidia

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Open loads and initialises the host's NVML (libnvidia-ml.so.1).
func Open() (Library, error) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("libnvidia-ml.so.1 not found: %w", ErrNoNVML)
		}
		return nil, fmt.Errorf("nvml init: %v: %w", ret, ErrNoNVML)
	}
	return &nvmlLib{lib: lib, caps: fileMIGCaps(migMinorsFile)}, nil
}

// FromNVML adapts an initialised nvml.Interface (the real library or a
// go-nvml mock) to Library. Close shuts it down. MIG capability minors
// follow the driver's numbering (Open reads the host's instead).
func FromNVML(lib nvml.Interface) Library { return &nvmlLib{lib: lib, caps: driverMIGCaps} }

// migMinorsFile is where the NVIDIA driver lists the minor numbers of its
// MIG capability device nodes (/dev/nvidia-caps/nvidia-cap<N>).
const migMinorsFile = "/proc/driver/nvidia-caps/mig-minors"

// fileMIGCaps reads the host's mig-minors file once. A driver without it
// has no /dev based MIG capabilities: the lookup then knows nothing, and
// a MIG instance's device nodes are its GPU's alone.
func fileMIGCaps(path string) migCaps {
	none := func(int, int, int) (int, int) { return 0, 0 }
	f, err := os.Open(path)
	if err != nil {
		return none
	}
	defer f.Close()
	caps, err := parseMIGMinors(f)
	if err != nil {
		return none
	}
	return caps
}

type nvmlLib struct {
	lib  nvml.Interface
	caps migCaps

	evOnce sync.Once
	evSet  nvml.EventSet
	evErr  error
}

// critical are the NVML events that make a device unhealthy.
const critical = uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError)

func (l *nvmlLib) Snapshot() (*System, error) {
	sys := &System{Links: map[[2]int]Link{}}
	if v, ret := l.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		sys.DriverVersion = v
	}
	if v, ret := l.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		sys.CUDAVersion = cudaVersion(v)
	}
	n, ret := l.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %v", ret)
	}
	devs := make([]nvml.Device, n)
	links := make([][]remoteLink, n)
	for i := range n {
		d, ret := l.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d: %v", i, ret)
		}
		g, err := readGPU(d, i, l.caps)
		if err != nil {
			return nil, err
		}
		devs[i] = d
		links[i] = nvLinks(d)
		sys.GPUs = append(sys.GPUs, g)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			lk := Link{Ancestor: TopoSystem}
			if t, ret := devs[i].GetTopologyCommonAncestor(devs[j]); ret == nvml.SUCCESS {
				lk.Ancestor = Topology(t)
			}
			lk.NVLinks = nvLinkCount(devs[i], devs[j], links[i], sys.GPUs[j].PCIBusID)
			sys.Links[[2]int{i, j}] = lk
		}
	}
	return sys, nil
}

func readGPU(d nvml.Device, i int, caps migCaps) (GPU, error) {
	g := GPU{Index: i, Minor: -1, NUMANode: -1}
	var ret nvml.Return
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("nvml device %d uuid: %v", i, ret)
	}
	g.Name, _ = d.GetName()
	if m, ret := d.GetMinorNumber(); ret == nvml.SUCCESS {
		g.Minor = m
	}
	if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.MemoryMiB = mem.Total >> 20
	}
	g.CCMajor, g.CCMinor, _ = d.GetCudaComputeCapability()
	if p, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		g.PCIBusID = busID(p)
	}
	if n, ret := d.GetNumaNodeId(); ret == nvml.SUCCESS {
		g.NUMANode = n
	} else if g.PCIBusID != "" {
		g.NUMANode = sysfsNUMA(g.PCIBusID)
	}
	if n, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ret == nvml.SUCCESS {
		g.ECCUncorrected = n
	}
	cur, _, ret := d.GetMigMode()
	if ret == nvml.SUCCESS {
		g.MIGCapable = true
		g.MIGProfiles = readProfiles(d)
	}
	if ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
		g.MIGEnabled = true
		mig, err := readMIG(d, g.Minor, caps)
		if err != nil {
			return g, fmt.Errorf("nvml device %d mig: %w", i, err)
		}
		g.MIG = mig
	}
	return g, nil
}

func readMIG(d nvml.Device, minor int, caps migCaps) ([]MIGDevice, error) {
	max, ret := d.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("max mig devices: %v", ret)
	}
	// Profile IDs -> names and memory, from every profile the GPU knows.
	type prof struct {
		name string
		mem  uint64
	}
	profiles := map[uint32]prof{}
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		if info, ret := d.GetGpuInstanceProfileInfo(p); ret == nvml.SUCCESS {
			profiles[info.Id] = prof{migProfile(info.SliceCount, info.MemorySizeMB), info.MemorySizeMB}
		}
	}
	var out []MIGDevice
	for i := range max {
		m, ret := d.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("mig device %d: %v", i, ret)
		}
		var md MIGDevice
		if md.UUID, ret = m.GetUUID(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("mig device %d uuid: %v", i, ret)
		}
		md.GI, _ = m.GetGpuInstanceId()
		md.CI, _ = m.GetComputeInstanceId()
		if mem, ret := m.GetMemoryInfo(); ret == nvml.SUCCESS {
			md.MemoryMiB = mem.Total >> 20
		}
		if gi, ret := d.GetGpuInstanceById(md.GI); ret == nvml.SUCCESS {
			if info, ret := gi.GetInfo(); ret == nvml.SUCCESS {
				if p, ok := profiles[info.ProfileId]; ok {
					md.Profile = p.name
					if md.MemoryMiB == 0 {
						md.MemoryMiB = p.mem
					}
				}
			}
		}
		if minor >= 0 {
			md.GICap, md.CICap = caps(minor, md.GI, md.CI)
		}
		out = append(out, md)
	}
	return out, nil
}

// remoteLink is one active NVLink of a GPU.
type remoteLink struct {
	bus      string
	toSwitch bool
}

func nvLinks(d nvml.Device) []remoteLink {
	var out []remoteLink
	for l := range nvml.NVLINK_MAX_LINKS {
		st, ret := d.GetNvLinkState(l)
		if ret != nvml.SUCCESS || st != nvml.FEATURE_ENABLED {
			continue
		}
		var r remoteLink
		if p, ret := d.GetNvLinkRemotePciInfo(l); ret == nvml.SUCCESS {
			r.bus = busID(p)
		}
		if t, ret := d.GetNvLinkRemoteDeviceType(l); ret == nvml.SUCCESS && t == nvml.NVLINK_DEVICE_TYPE_SWITCH {
			r.toSwitch = true
		}
		out = append(out, r)
	}
	return out
}

// nvLinkCount counts a's links to b: direct links to b's bus, or, on
// NVSwitch systems where b is reachable over NVLink, all of a's switch
// links.
func nvLinkCount(a, b nvml.Device, links []remoteLink, bBus string) int {
	direct, sw := 0, 0
	for _, r := range links {
		switch {
		case r.toSwitch:
			sw++
		case r.bus != "" && strings.EqualFold(r.bus, bBus):
			direct++
		}
	}
	if direct > 0 || sw == 0 {
		return direct
	}
	if st, ret := a.GetP2PStatus(b, nvml.P2P_CAPS_INDEX_NVLINK); ret == nvml.SUCCESS && st == nvml.P2P_STATUS_OK {
		return sw
	}
	return 0
}

func busID(p nvml.PciInfo) string {
	b := make([]byte, 0, len(p.BusId))
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// sysfsNUMA reads the NUMA node of a PCI device ("00000000:18:00.0").
func sysfsNUMA(bus string) int {
	addr := strings.ToLower(bus)
	if len(addr) == 16 { // NVML's 8-digit domain; sysfs uses 4
		addr = addr[4:]
	}
	b, err := os.ReadFile(filepath.Join("/sys/bus/pci/devices", addr, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

func (l *nvmlLib) events() (nvml.EventSet, error) {
	l.evOnce.Do(func() {
		set, ret := l.lib.EventSetCreate()
		if ret != nvml.SUCCESS {
			l.evErr = fmt.Errorf("nvml event set: %v", ret)
			return
		}
		n, _ := l.lib.DeviceGetCount()
		registered := 0
		for i := range n {
			d, ret := l.lib.DeviceGetHandleByIndex(i)
			if ret != nvml.SUCCESS {
				continue
			}
			sup, ret := d.GetSupportedEventTypes()
			if ret != nvml.SUCCESS || sup&critical == 0 {
				continue
			}
			if d.RegisterEvents(sup&critical, set) == nvml.SUCCESS {
				registered++
			}
		}
		if registered == 0 {
			set.Free()
			l.evErr = errors.New("no GPU supports XID or ECC events")
			return
		}
		l.evSet = set
	})
	return l.evSet, l.evErr
}

// WaitEvent waits in NVML (which cannot be interrupted: ctx is seen
// after at most timeout).
func (l *nvmlLib) WaitEvent(_ context.Context, timeout time.Duration) (Event, error) {
	set, err := l.events()
	if err != nil {
		return Event{}, err
	}
	data, ret := set.Wait(uint32(timeout / time.Millisecond))
	if ret == nvml.ERROR_TIMEOUT {
		return Event{}, ErrTimeout
	}
	if ret != nvml.SUCCESS {
		return Event{}, fmt.Errorf("nvml event wait: %v", ret)
	}
	ev := Event{Kind: EventECC}
	if data.EventType&nvml.EventTypeXidCriticalError != 0 {
		ev.Kind, ev.XID = EventXID, data.EventData
	}
	if data.Device != nil {
		ev.UUID, _ = data.Device.GetUUID()
	}
	return ev, nil
}

// Usage reads a GPU's utilization and memory in use (UsageReader).
func (l *nvmlLib) Usage(uuid string) (Usage, error) {
	d, ret := l.lib.DeviceGetHandleByUUID(uuid)
	if ret != nvml.SUCCESS {
		return Usage{}, fmt.Errorf("device %s: %v", uuid, ret)
	}
	u, ret := d.GetUtilizationRates()
	if ret != nvml.SUCCESS {
		return Usage{}, fmt.Errorf("utilization of %s: %v", uuid, ret)
	}
	m, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return Usage{}, fmt.Errorf("memory of %s: %v", uuid, ret)
	}
	return Usage{UtilPercent: float64(u.Gpu), MemoryUsedMiB: int64(m.Used >> 20)}, nil
}

var _ UsageReader = (*nvmlLib)(nil)

func (l *nvmlLib) Close() error {
	if l.evSet != nil {
		l.evSet.Free()
	}
	if ret := l.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml shutdown: %v", ret)
	}
	return nil
}
