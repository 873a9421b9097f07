package nvidia

import (
	"context"
	"errors"
	"time"
)

// ErrNoNVML means the host has no usable NVML library (no NVIDIA driver,
// or a drover built without cgo). The node simply has no NVIDIA devices.
var ErrNoNVML = errors.New("nvml not available")

// ErrTimeout is returned by Library.WaitEvent when no event arrived in time.
var ErrTimeout = errors.New("no event before the timeout")

// Library is the part of NVML the fingerprinter needs. Implementations
// translate NVML's handles into the plain values below.
type Library interface {
	// Snapshot reads the system: versions, every GPU in NVML index
	// order with its MIG instances, and the links between GPUs.
	Snapshot() (*System, error)
	// WaitEvent waits up to timeout (or until ctx ends, where the
	// library can be interrupted) for a critical event (XID error,
	// double-bit ECC error); ErrTimeout when none came.
	WaitEvent(ctx context.Context, timeout time.Duration) (Event, error)
	// Close releases the library.
	Close() error
}

// System is what NVML reports about the host.
type System struct {
	DriverVersion string // "550.54.15"
	CUDAVersion   string // "12.4"
	GPUs          []GPU
	// Links between GPUs by NVML index pair {a, b} with a < b.
	Links map[[2]int]Link
}

// GPU is one physical GPU.
type GPU struct {
	Index     int
	Minor     int // the device minor: /dev/nvidia<Minor>; -1 when NVML does not say
	UUID      string
	Name      string // "NVIDIA H100 80GB HBM3"
	MemoryMiB uint64
	CCMajor   int
	CCMinor   int
	PCIBusID  string // "00000000:18:00.0"
	NUMANode  int    // -1 when unknown
	// MIGEnabled: the GPU is partitioned; only its MIG instances are
	// schedulable.
	MIGEnabled bool
	MIG        []MIGDevice
	// MIGCapable: NVML reports a MIG mode for the GPU; MIGProfiles are
	// the GPU instance profiles it offers, by profile ID (mig.go).
	MIGCapable  bool
	MIGProfiles []MIGProfile
	// ECCUncorrected is the volatile count of uncorrected ECC errors.
	ECCUncorrected uint64
}

// MIGDevice is one MIG instance (a GPU instance + compute instance).
type MIGDevice struct {
	UUID      string // "MIG-..."
	Profile   string // "1g.10gb"
	MemoryMiB uint64
	GI, CI    int
	// GICap and CICap are the minors of the capability device nodes
	// (/dev/nvidia-caps/nvidia-cap<N>) that grant access to the GPU
	// instance and the compute instance; 0 when unknown.
	GICap, CICap int
}

// Topology is NVML's PCIe common-ancestor level between two GPUs.
type Topology int

// NVML's topology levels (nvmlGpuTopologyLevel_t).
const (
	TopoInternal   Topology = 0  // same board
	TopoSingle     Topology = 10 // one PCIe switch
	TopoMultiple   Topology = 20 // several PCIe switches, no host bridge
	TopoHostBridge Topology = 30 // same host bridge
	TopoNode       Topology = 40 // same NUMA node, different host bridges
	TopoSystem     Topology = 50 // across NUMA nodes
)

// Link is how two GPUs are connected.
type Link struct {
	NVLinks  int // active NVLinks between them (directly or via NVSwitch)
	Ancestor Topology
}

// Event is a health event of one device.
type Event struct {
	UUID string // GPU UUID (or MIG UUID when NVML names the instance)
	// Kind is EventXID or EventECC.
	Kind string
	XID  uint64 // for EventXID
}

// Event kinds.
const (
	EventXID = "xid"
	EventECC = "ecc"
)
