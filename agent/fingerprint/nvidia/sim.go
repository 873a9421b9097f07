package nvidia

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drover/drover/api"
)

// Simulator is a Library backed by a simulated DGX server whose faults
// can be injected.
type Simulator interface {
	Library
	// InjectXID queues an XID critical error on GPU index.
	InjectXID(index int, xid uint64)
	// SetECC sets GPU index's volatile uncorrected ECC error count.
	SetECC(index int, n uint64)
}

// pureSim is the simulator of CGO_ENABLED=0 builds: the same server as
// the go-nvml mock based one, without NVML types.
type pureSim struct {
	cfg      SimConfig
	shape    Shape
	profiles []MIGProfile
	ev       events
	mu       sync.Mutex
	ecc      [8]uint64
	mig      [8]simMIG
}

// simMIG is the MIG state of one simulated GPU: its GPU instances by ID
// (each with compute instance 0), and how many layouts it was given.
type simMIG struct {
	on  bool
	gis []MIGProfile
	gen int
}

// NewPureSim returns the pure-Go simulator (also used in cgo builds' tests).
func NewPureSim(cfg SimConfig) (Simulator, error) {
	sh, ok := Shapes[cfg.Shape]
	if !ok {
		return nil, fmt.Errorf("simulated GPU server %q: %w", cfg.Shape, ErrNoNVML)
	}
	s := &pureSim{cfg: cfg, shape: sh, profiles: simMIGProfiles(sh)}
	if cfg.MIG {
		for i := range s.mig {
			s.mig[i].on = true
			for range sh.MIGCount {
				s.mig[i].gis = append(s.mig[i].gis, s.profiles[0])
			}
		}
	}
	return s, nil
}

func (s *pureSim) Snapshot() (*System, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := &System{DriverVersion: s.shape.Driver, CUDAVersion: cudaVersion(s.shape.CUDA), Links: map[[2]int]Link{}}
	for i := range 8 {
		g := GPU{Index: i, Minor: s.cfg.minor(i), UUID: simUUID("GPU", s.cfg.NodeID, i), Name: s.shape.Model,
			MemoryMiB: s.shape.MemoryMiB, CCMajor: s.shape.CCMajor, CCMinor: s.shape.CCMinor,
			PCIBusID: simBusIDs[i], NUMANode: simNUMA(i), MIGEnabled: s.mig[i].on, ECCUncorrected: s.ecc[i],
			MIGCapable: true, MIGProfiles: slices.Clone(s.profiles)}
		if m := s.mig[i]; m.on {
			for gi, p := range m.gis {
				giCap, ciCap := driverMIGCaps(g.Minor, gi, 0)
				g.MIG = append(g.MIG, MIGDevice{UUID: simMIGUUID(s.cfg.NodeID, i, gi, m.gen), Profile: p.Name,
					MemoryMiB: p.MemoryMiB, GI: gi, CI: 0, GICap: giCap, CICap: ciCap})
			}
		}
		sys.GPUs = append(sys.GPUs, g)
		for j := i + 1; j < 8; j++ {
			sys.Links[[2]int{i, j}] = Link{NVLinks: s.shape.NVLinks, Ancestor: simAncestor(i, j)}
		}
	}
	return sys, nil
}

func (s *pureSim) WaitEvent(ctx context.Context, timeout time.Duration) (Event, error) {
	return s.ev.wait(ctx, timeout)
}

func (s *pureSim) Close() error { return nil }

func (s *pureSim) InjectXID(index int, xid uint64) {
	s.ev.queue() <- Event{UUID: simUUID("GPU", s.cfg.NodeID, index), Kind: EventXID, XID: xid}
}

func (s *pureSim) SetECC(index int, n uint64) {
	s.mu.Lock()
	s.ecc[index] = n
	s.mu.Unlock()
}

// ConfigureMIG gives a simulated GPU a new layout: its GPU instances are
// numbered from 0 in creation order, largest first, as go-nvml's mock
// numbers them after a full teardown.
func (s *pureSim) ConfigureMIG(l api.MIGLayout) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := -1
	for k := range s.mig {
		if simUUID("GPU", s.cfg.NodeID, k) == l.GPU {
			i = k
		}
	}
	if i < 0 {
		return fmt.Errorf("no GPU %s", l.GPU)
	}
	plan, err := migPlan(GPU{Index: i, Name: s.shape.Model, MIGCapable: true, MIGProfiles: s.profiles}, l)
	if err != nil {
		return err
	}
	m := &s.mig[i]
	m.on, m.gis = !l.Disable, plan
	m.gen++
	return nil
}
