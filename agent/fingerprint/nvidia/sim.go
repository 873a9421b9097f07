package nvidia

import (
	"context"
	"fmt"
	"sync"
	"time"
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
	cfg   SimConfig
	shape Shape
	ev    events
	mu    sync.Mutex
	ecc   [8]uint64
}

// NewPureSim returns the pure-Go simulator (also used in cgo builds' tests).
func NewPureSim(cfg SimConfig) (Simulator, error) {
	sh, ok := Shapes[cfg.Shape]
	if !ok {
		return nil, fmt.Errorf("simulated GPU server %q: %w", cfg.Shape, ErrNoNVML)
	}
	return &pureSim{cfg: cfg, shape: sh}, nil
}

func (s *pureSim) Snapshot() (*System, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := &System{DriverVersion: s.shape.Driver, CUDAVersion: cudaVersion(s.shape.CUDA), Links: map[[2]int]Link{}}
	for i := range 8 {
		g := GPU{Index: i, Minor: s.cfg.minor(i), UUID: simUUID("GPU", s.cfg.NodeID, i), Name: s.shape.Model,
			MemoryMiB: s.shape.MemoryMiB, CCMajor: s.shape.CCMajor, CCMinor: s.shape.CCMinor,
			PCIBusID: simBusIDs[i], NUMANode: simNUMA(i), MIGEnabled: s.cfg.MIG, ECCUncorrected: s.ecc[i]}
		if s.cfg.MIG {
			for gi := range s.shape.MIGCount {
				giCap, ciCap := driverMIGCaps(g.Minor, gi, 0)
				g.MIG = append(g.MIG, MIGDevice{UUID: simUUID("MIG", s.cfg.NodeID, i, gi), Profile: s.shape.MIGProfile,
					MemoryMiB: s.shape.MIGMemMiB, GI: gi, CI: 0, GICap: giCap, CICap: ciCap})
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
