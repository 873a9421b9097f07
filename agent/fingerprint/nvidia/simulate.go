//go:build cgo && nvml

package nvidia

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/drover/drover/api"
)

// Simulate builds a simulated DGX server on go-nvml's mock servers, with
// what those lack filled in: node-derived UUIDs, PCI bus IDs, NUMA nodes,
// the NVSwitch topology, ECC counters, events and MIG device handles.
func Simulate(cfg SimConfig) (Simulator, error) {
	sh, ok := Shapes[cfg.Shape]
	if !ok {
		return nil, fmt.Errorf("simulated GPU server %q: %w", cfg.Shape, ErrNoNVML)
	}
	var srv *server.Server
	switch cfg.Shape {
	case "dgxa100":
		srv = dgxa100.New()
	case "dgxh100":
		srv = dgxh100.New()
	case "dgxh200":
		srv = dgxh200.New()
	case "dgxb200":
		srv = dgxb200.New()
	}
	s := &mockSim{cfg: cfg, shape: sh, srv: srv}
	if err := s.setup(); err != nil {
		return nil, err
	}
	return s, nil
}

type mockSim struct {
	Library
	cfg   SimConfig
	shape Shape
	srv   *server.Server
	ev    events
	mu    sync.Mutex
	ecc   map[string]uint64 // UUID -> count
	ctx   context.Context   // of the WaitEvent in progress

	// MIG device handles by GPU index and how many layouts each GPU was
	// given (mig.go's simMIGUUID), under migMu; confMu serialises
	// ConfigureMIG.
	confMu sync.Mutex
	migMu  sync.Mutex
	migs   [8][]nvml.Device
	gen    [8]int
}

func (s *mockSim) setup() error {
	s.ecc = map[string]uint64{}
	if s.srv.InitFunc() != nvml.SUCCESS {
		return fmt.Errorf("go-nvml mock %s: init failed", s.cfg.Shape)
	}
	devs := make([]*server.Device, len(s.srv.Devices))
	for i, d := range s.srv.Devices {
		devs[i] = d.(*server.Device)
	}
	for i, d := range devs {
		d.UUID = simUUID("GPU", s.cfg.NodeID, i)
		d.Minor = s.cfg.minor(i)
		d.PciBusID = simBusIDs[i]
		d.Config.Name = strings.TrimPrefix(d.Config.Name, "Mock ")
		s.device(d)
	}
	s.srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
				ev, err := s.ev.wait(s.waitCtx(), time.Duration(ms)*time.Millisecond)
				if err != nil {
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
				for _, d := range devs {
					if d.UUID == ev.UUID {
						return nvml.EventData{Device: d, EventType: nvml.EventTypeXidCriticalError, EventData: ev.XID}, nvml.SUCCESS
					}
				}
				return nvml.EventData{}, nvml.ERROR_UNKNOWN
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	s.Library = FromNVML(s.srv)
	if s.cfg.MIG {
		for i, d := range devs {
			if err := s.carveMIG(d, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// device fills in one GPU's missing mock functions.
func (s *mockSim) device(d *server.Device) {
	i := d.Index
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId}
		for k, c := range d.PciBusID {
			p.BusId[k] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return simNUMA(i), nvml.SUCCESS }
	d.GetTopologyCommonAncestorFunc = func(peer nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		return nvml.GpuTopologyLevel(simAncestor(i, peer.(*server.Device).Index)), nvml.SUCCESS
	}
	// Every NVLink goes to one of the NVSwitches.
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		if l < 0 || l >= s.shape.NVLinks {
			return nvml.FEATURE_DISABLED, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		for k, c := range fmt.Sprintf("00000000:%02X:00.0", 0xC0+l%4) {
			p.BusId[k] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
	}
	d.GetP2PStatusFunc = func(peer nvml.Device, idx nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		return nvml.P2P_STATUS_OK, nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ecc[d.UUID], nvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return critical, nvml.SUCCESS }
	d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) {
		s.migMu.Lock()
		defer s.migMu.Unlock()
		return len(s.migs[i]), nvml.SUCCESS
	}
	d.GetMigDeviceHandleByIndexFunc = func(k int) (nvml.Device, nvml.Return) {
		s.migMu.Lock()
		defer s.migMu.Unlock()
		if k < 0 || k >= len(s.migs[i]) {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		return s.migs[i][k], nvml.SUCCESS
	}
	d.GetGpuInstanceByIdFunc = func(id int) (nvml.GpuInstance, nvml.Return) {
		d.RLock()
		defer d.RUnlock()
		for gi := range d.GpuInstances {
			if int(gi.Info.Id) == id {
				return gi, nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
}

// carveMIG gives GPU i Shape.MIGCount 1-slice instances, each with one
// compute instance, as `nvidia-smi mig -cgi 1g.10gb -C` would.
func (s *mockSim) carveMIG(d *server.Device, i int) error {
	l := api.MIGLayout{GPU: d.UUID}
	name := migProfile(1, s.shape.MIGMemMiB)
	for range s.shape.MIGCount {
		l.Profiles = append(l.Profiles, name)
	}
	if err := s.Library.(MIGConfigurer).ConfigureMIG(l); err != nil {
		return fmt.Errorf("mock gpu %d: %w", i, err)
	}
	s.handles(d, i)
	return nil
}

// ConfigureMIG runs the NVML adapter's ConfigureMIG on the mock GPU, then
// gives its MIG instances handles (the mock has none): GPU instances
// numbered from 0 after the teardown, UUIDs from the GPU's layout count.
func (s *mockSim) ConfigureMIG(l api.MIGLayout) error {
	s.confMu.Lock()
	defer s.confMu.Unlock()
	for i, dev := range s.srv.Devices {
		d := dev.(*server.Device)
		if d.UUID != l.GPU {
			continue
		}
		d.Lock()
		d.GpuInstanceCounter = 0
		d.Unlock()
		err := s.Library.(MIGConfigurer).ConfigureMIG(l)
		if err == nil {
			s.migMu.Lock()
			s.gen[i]++
			s.migMu.Unlock()
		}
		s.handles(d, i)
		return err
	}
	return fmt.Errorf("no GPU %s", l.GPU)
}

// handles builds the MIG device handles of GPU i from its mock GPU and
// compute instances, by GPU instance ID.
func (s *mockSim) handles(d *server.Device, i int) {
	d.RLock()
	gis := make([]*server.GpuInstance, 0, len(d.GpuInstances))
	for gi := range d.GpuInstances {
		gis = append(gis, gi)
	}
	d.RUnlock()
	sort.Slice(gis, func(a, b int) bool { return gis[a].Info.Id < gis[b].Info.Id })
	s.migMu.Lock()
	defer s.migMu.Unlock()
	var migs []nvml.Device
	for _, gi := range gis {
		gi.RLock()
		cis := make([]*server.ComputeInstance, 0, len(gi.ComputeInstances))
		for ci := range gi.ComputeInstances {
			cis = append(cis, ci)
		}
		gi.RUnlock()
		sort.Slice(cis, func(a, b int) bool { return cis[a].Info.Id < cis[b].Info.Id })
		giID := int(gi.Info.Id)
		mem := d.Config.MIGProfiles.GpuInstanceProfiles[int(gi.Info.ProfileId)].MemorySizeMB << 20
		for _, ci := range cis {
			ciID := int(ci.Info.Id)
			uuid := simMIGUUID(s.cfg.NodeID, i, giID, s.gen[i])
			migs = append(migs, &mock.Device{
				GetUUIDFunc:                            func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
				GetGpuInstanceIdFunc:                   func() (int, nvml.Return) { return giID, nvml.SUCCESS },
				GetComputeInstanceIdFunc:               func() (int, nvml.Return) { return ciID, nvml.SUCCESS },
				GetMemoryInfoFunc:                      func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: mem}, nvml.SUCCESS },
				IsMigDeviceHandleFunc:                  func() (bool, nvml.Return) { return true, nvml.SUCCESS },
				GetDeviceHandleFromMigDeviceHandleFunc: func() (nvml.Device, nvml.Return) { return d, nvml.SUCCESS },
			})
		}
	}
	s.migs[i] = migs
}

// WaitEvent passes ctx to the mock event set's Wait (NVML's has none).
func (s *mockSim) WaitEvent(ctx context.Context, timeout time.Duration) (Event, error) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	return s.Library.WaitEvent(ctx, timeout)
}

func (s *mockSim) waitCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

func (s *mockSim) InjectXID(index int, xid uint64) {
	s.ev.queue() <- Event{UUID: simUUID("GPU", s.cfg.NodeID, index), Kind: EventXID, XID: xid}
}

func (s *mockSim) SetECC(index int, n uint64) {
	s.mu.Lock()
	s.ecc[simUUID("GPU", s.cfg.NodeID, index)] = n
	s.mu.Unlock()
}
