//go:build cgo && nvml

package nvidia

import (
	"context"
	"fmt"
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
		if s.cfg.MIG {
			if err := s.carveMIG(d, i); err != nil {
				return err
			}
		}
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
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_NOT_FOUND }
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

// carveMIG enables MIG and creates Shape.MIGCount 1-slice instances, each
// with one compute instance, as `nvidia-smi mig -cgi 1g.10gb -C` would.
func (s *mockSim) carveMIG(d *server.Device, i int) error {
	if r, _ := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); r != nvml.SUCCESS {
		return fmt.Errorf("mock gpu %d: enable mig: %v", i, r)
	}
	info, r := d.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_1_SLICE)
	if r != nvml.SUCCESS {
		return fmt.Errorf("mock gpu %d: 1-slice profile: %v", i, r)
	}
	var migs []nvml.Device
	for k := range s.shape.MIGCount {
		gi, r := d.CreateGpuInstance(&info)
		if r != nvml.SUCCESS {
			return fmt.Errorf("mock gpu %d: gpu instance: %v", i, r)
		}
		ciInfo, r := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if r != nvml.SUCCESS {
			return fmt.Errorf("mock gpu %d: compute profile: %v", i, r)
		}
		ci, r := gi.CreateComputeInstance(&ciInfo)
		if r != nvml.SUCCESS {
			return fmt.Errorf("mock gpu %d: compute instance: %v", i, r)
		}
		giID := int(gi.(*server.GpuInstance).Info.Id)
		ciID := int(ci.(*server.ComputeInstance).Info.Id)
		uuid := simUUID("MIG", s.cfg.NodeID, i, k)
		mem := info.MemorySizeMB << 20
		migs = append(migs, &mock.Device{
			GetUUIDFunc:                            func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
			GetGpuInstanceIdFunc:                   func() (int, nvml.Return) { return giID, nvml.SUCCESS },
			GetComputeInstanceIdFunc:               func() (int, nvml.Return) { return ciID, nvml.SUCCESS },
			GetMemoryInfoFunc:                      func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: mem}, nvml.SUCCESS },
			IsMigDeviceHandleFunc:                  func() (bool, nvml.Return) { return true, nvml.SUCCESS },
			GetDeviceHandleFromMigDeviceHandleFunc: func() (nvml.Device, nvml.Return) { return d, nvml.SUCCESS },
		})
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return len(migs), nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(k int) (nvml.Device, nvml.Return) {
		if k < 0 || k >= len(migs) {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		return migs[k], nvml.SUCCESS
	}
	return nil
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
